public import SystemPackage

/// A ubiquity container: a folder whose `Documents/` subfolder is the
/// documents scope and whose remainder is the data scope.
public struct UbiquityContainer: Hashable, Sendable {
    /// The container folder.
    public let path: FilePath

    /// A container at a known folder (not checked until crawled).
    public init(path: FilePath) {
        self.path = path
    }

    /// The documents scope's folder.
    public var documentsPath: FilePath { path.appending("Documents") }

    /// Where identifiers resolve: `$MDQ_CONTAINERS`, else
    /// `$XDG_DATA_HOME/mdq/containers`, else `~/.local/share/mdq/containers`.
    public static var containersRoot: FilePath {
        if let root = ProcessEnvironment.variable("MDQ_CONTAINERS") { return FilePath(root) }
        if let data = ProcessEnvironment.variable("XDG_DATA_HOME") { return FilePath(data).appending("mdq/containers") }
        let home = ProcessEnvironment.variable("HOME") ?? "/"
        return FilePath(home).appending(".local/share/mdq/containers")
    }

    /// The container for an identifier under `containersRoot`, like
    /// `URLForUbiquityContainerIdentifier:`.
    ///
    /// - Throws: `MetadataError` `.containerNotFound` naming the path tried.
    public init(identifier: String) throws(MetadataError) {
        let candidate = Self.containersRoot.appending(identifier)
        guard Self.isFolder(candidate) else {
            throw MetadataError(
                code: .containerNotFound, message: "no ubiquity container '\(identifier)'", path: candidate)
        }
        self.init(path: candidate)
    }

    /// Resolves a command-line `--container` value: a path when it contains a
    /// `/` or names an existing folder, otherwise an identifier.
    ///
    /// - Throws: `MetadataError` `.containerNotFound` naming the path tried.
    public init(pathOrIdentifier value: FilePath, relativeTo base: FilePath) throws(MetadataError) {
        let text = value.string
        if text.contains("/") || Self.isFolder(base.pushing(value)) {
            let absolute = base.pushing(value).lexicallyNormalized()
            guard Self.isFolder(absolute) else {
                throw MetadataError(code: .containerNotFound, message: "no container folder", path: absolute)
            }
            self.init(path: absolute)
        } else {
            try self.init(identifier: text)
        }
    }

    private static func isFolder(_ path: FilePath) -> Bool {
        guard case .success(let handle) = DirectoryHandle.open(path: path) else { return false }
        _ = handle
        return true
    }

    /// The crawl roots covering `scopes` of this container.
    ///
    /// Documents and data together are the whole container (one root);
    /// the data scope alone is the container with `Documents` left out.
    public func crawlRoots(for scopes: Set<SearchScope>) -> [CrawlRoot] {
        let documents = scopes.contains(.ubiquitousDocuments)
        let data = scopes.contains(.ubiquitousData)
        switch (documents, data) {
        case (true, true): return [CrawlRoot(path: path)]
        case (true, false): return [CrawlRoot(path: documentsPath)]
        case (false, true): return [CrawlRoot(path: path, excludedChildNames: [Array("Documents".utf8)])]
        case (false, false): return []
        }
    }
}
