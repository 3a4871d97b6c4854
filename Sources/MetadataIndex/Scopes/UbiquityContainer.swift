import Foundation
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
        try Self.checkFolder(candidate, missing: "no ubiquity container '\(identifier)'")
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
            try Self.checkFolder(absolute, missing: "no container folder")
            self.init(path: absolute)
        } else {
            try self.init(identifier: text)
        }
    }

    /// Throws unless `path` is a folder this process can open: a missing
    /// one (or not a folder) is `missing`, any other failure (permissions)
    /// says it cannot be opened, with the reason.
    private static func checkFolder(_ path: FilePath, missing: String) throws(MetadataError) {
        switch DirectoryHandle.open(path: path) {
        case .success: return
        case .failure(let error) where error == .noSuchFileOrDirectory || error == .notDirectory:
            throw MetadataError(code: .containerNotFound, message: missing, path: path)
        case .failure(let error):
            throw MetadataError(
                code: .scopeUnreadable, message: "cannot open the container folder", path: path, underlying: error)
        }
    }

    private static func isFolder(_ path: FilePath) -> Bool {
        guard case .success(let handle) = DirectoryHandle.open(path: path) else { return false }
        _ = handle
        return true
    }

    // MARK: External documents

    /// Where the registrations live: a hidden file in the container (left
    /// out of scans by default), so every process using the container sees
    /// the same folders. One absolute path per record, NUL-terminated.
    public var externalDocumentsRegistry: FilePath { path.appending(".mdq/external-documents") }

    /// The registered external document folders, in registration order.
    public var externalDocumentFolders: [FilePath] {
        guard let data = FileManager.default.contents(atPath: externalDocumentsRegistry.string) else { return [] }
        return data.split(separator: 0).map { FilePath.fromBytes(Array($0)) }
    }

    /// Registers a folder outside the container as accessible external
    /// documents (`NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope`).
    /// Registering twice is harmless.
    ///
    /// - Throws: `MetadataError` when the folder does not exist, lies inside
    ///   the container, or the registry cannot be written (each naming the path).
    public func registerExternalDocuments(_ folder: FilePath) throws(MetadataError) {
        let absolute = (folder.isAbsolute ? folder : ProcessEnvironment.currentDirectory.pushing(folder))
            .lexicallyNormalized()
        guard Self.isFolder(absolute) else {
            throw MetadataError(code: .scopeNotFound, message: "no such folder to register", path: absolute)
        }
        guard !CrawlRoot(path: path).covers(absolute) else {
            throw MetadataError(
                code: .invalidArgument, message: "external documents must lie outside the container", path: absolute)
        }
        var folders = externalDocumentFolders
        guard !folders.contains(absolute) else { return }
        folders.append(absolute)
        try writeRegistry(folders)
    }

    /// Removes a registration; unknown folders are ignored.
    public func unregisterExternalDocuments(_ folder: FilePath) throws(MetadataError) {
        let absolute = (folder.isAbsolute ? folder : ProcessEnvironment.currentDirectory.pushing(folder))
            .lexicallyNormalized()
        let folders = externalDocumentFolders
        guard folders.contains(absolute) else { return }
        try writeRegistry(folders.filter { $0 != absolute })
    }

    private func writeRegistry(_ folders: [FilePath]) throws(MetadataError) {
        var data = Data()
        for folder in folders {
            data.append(contentsOf: folder.bytes)
            data.append(0)
        }
        let registry = externalDocumentsRegistry
        do {
            try FileManager.default.createDirectory(
                atPath: registry.removingLastComponent().string, withIntermediateDirectories: true)
            // Atomic: a reader in another process sees the old or the new list.
            try data.write(to: URL(fileURLWithPath: registry.string), options: .atomic)
        } catch {
            throw MetadataError(
                code: .scopeUnreadable, message: "cannot write the external documents registry", path: registry)
        }
    }

    /// The crawl roots covering `scopes` of this container.
    ///
    /// Documents and data together are the whole container (one root);
    /// the data scope alone is the container with `Documents` left out.
    public func crawlRoots(for scopes: Set<SearchScope>) -> [CrawlRoot] {
        let documents = scopes.contains(.ubiquitousDocuments)
        let data = scopes.contains(.ubiquitousData)
        var roots: [CrawlRoot]
        switch (documents, data) {
        case (true, true): roots = [CrawlRoot(path: path)]
        case (true, false): roots = [CrawlRoot(path: documentsPath)]
        case (false, true): roots = [CrawlRoot(path: path, excludedChildNames: [Array("Documents".utf8)])]
        case (false, false): roots = []
        }
        if scopes.contains(.accessibleExternalDocuments) {
            roots += externalDocumentFolders.map { CrawlRoot(path: $0) }
        }
        return roots
    }
}
