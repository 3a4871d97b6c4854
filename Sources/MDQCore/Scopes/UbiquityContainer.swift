public import MDQSystem
public import SystemPackage

/// A ubiquity container: a folder whose `Documents/` subfolder is the
/// documents scope and whose remainder is the data scope.
///
/// A container is named by its folder, or by an identifier resolved under
/// `containersRoot` as Apple's `URLForUbiquityContainerIdentifier:` resolves
/// it: `iCloud.com.example.app` is the folder `iCloud~com~example~app` (the
/// name iCloud Drive gives it on a Mac), and the folder's own name is
/// accepted as well. `defaultContainer()` is the container a nil identifier
/// means.
///
/// mdq never writes inside a container: the external document folders
/// registered with it live in the user's state folder (see
/// `externalDocumentsRegistry`).
public struct UbiquityContainer: Hashable, Sendable {
    /// The container folder.
    public let path: FilePath
    /// The user's state folder, where the container's external documents
    /// registry lives: `$MDQ_STATE_DIR`, else `$XDG_STATE_HOME/mdq`, else
    /// `~/.local/state/mdq` (the index daemon's state folder, see
    /// `DaemonPaths`), read when the container value is made.
    public let stateDirectory: FilePath
    /// The external document folders, when the container's user said them
    /// (a client of the system index, which must not read a user's
    /// registry with its own rights): then no registry is read.
    package var knownExternalFolders: [FilePath]?

    /// A container at a known folder (not checked until crawled).
    ///
    /// - Parameters:
    ///   - path: the container folder.
    ///   - stateDirectory: where its external documents registry lives;
    ///     every process using the container must agree on it (the
    ///     default reads the environment as `DaemonPaths.standard` does).
    public init(path: FilePath, stateDirectory: FilePath = DaemonPaths.standard.stateDirectory) {
        self.path = path
        self.stateDirectory = stateDirectory
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

    // MARK: Identifiers

    /// The folder name an identifier resolves to under `containersRoot`:
    /// Apple's dotted form with its dots as tildes (`iCloud.com.example.app`
    /// is `iCloud~com~example~app`); a name without dots is its own folder
    /// name.
    ///
    /// - Parameter identifier: a container identifier, in either spelling.
    /// - Returns: the folder name, in the tilde spelling.
    public static func folderName(forIdentifier identifier: String) -> String {
        String(identifier.map { $0 == "." ? "~" : $0 })
    }

    /// The container for an identifier under `containersRoot`, like
    /// `URLForUbiquityContainerIdentifier:`.
    ///
    /// Both spellings resolve: `iCloud.com.example.app` finds the folder
    /// `iCloud~com~example~app`, or failing that a folder named exactly
    /// `iCloud.com.example.app`; `iCloud~com~example~app` finds its folder.
    ///
    /// - Parameter identifier: the container identifier.
    /// - Throws: `MetadataError` `.containerNotFound` naming the folder
    ///   tried (the tilde spelling) when neither exists; `.invalidArgument`
    ///   for an identifier that is empty, `.`, `..` or contains `/`; a scope
    ///   error (`.scopeUnreadable`) when the folder exists but cannot be
    ///   opened.
    public init(identifier: String) throws(MetadataError) {
        try self.init(identifier: identifier, root: Self.containersRoot)
    }

    /// `init(identifier:)` under a given containers root.
    package init(identifier: String, root: FilePath) throws(MetadataError) {
        guard !identifier.isEmpty, identifier != ".", identifier != "..", !identifier.contains("/") else {
            throw .invalidArgument(
                "'\(identifier)' is not a container identifier (a name such as iCloud.com.example.app)", path: root)
        }
        let tilde = root.appending(Self.folderName(forIdentifier: identifier))
        let literal = root.appending(identifier)
        if tilde != literal && !Self.isFolder(tilde) && Self.isFolder(literal) {
            self.init(path: literal)
            return
        }
        try Self.checkFolder(tilde, missing: "no ubiquity container '\(identifier)'")
        self.init(path: tilde)
    }

    /// Resolves a command-line `--container` value: a path when it contains a
    /// `/` or names an existing folder, otherwise an identifier (either
    /// spelling, see `init(identifier:)`).
    ///
    /// - Parameters:
    ///   - value: the path or identifier.
    ///   - base: the folder a relative path is relative to.
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

    // MARK: The default container

    /// The environment variable that names the default container when the
    /// containers root holds several: an identifier (either spelling) or an
    /// absolute path.
    public static let defaultContainerVariable = "MDQ_DEFAULT_CONTAINER"

    /// The container a nil identifier means
    /// (`URLForUbiquityContainerIdentifier:nil`), and the one a query on
    /// the ubiquitous scopes uses when it has no container: the one
    /// `$MDQ_DEFAULT_CONTAINER` names, else the first one this process
    /// asked for by identifier (`noteRequested`), else the only container
    /// under `containersRoot` (see `isContainerFolderName`).
    ///
    /// Read anew on each call, so a container made or removed since is seen.
    ///
    /// - Returns: the default container.
    /// - Throws: `MetadataError` `.containerNotFound` naming the containers
    ///   root when it does not exist, holds no container, or holds several
    ///   and `$MDQ_DEFAULT_CONTAINER` is not set (the message names them);
    ///   or naming the folder `$MDQ_DEFAULT_CONTAINER` leads to when that is
    ///   missing.
    ///
    /// - Complexity: O(n) in the entries of the containers root.
    public static func defaultContainer() throws(MetadataError) -> UbiquityContainer {
        if ProcessEnvironment.variable(defaultContainerVariable) == nil {
            // The first asked for that is still there, under today's root
            // (the account's: `$MDQ_CONTAINERS` may have changed since).
            let root = containersRoot.lexicallyNormalized()
            let asked = requested.withLock { $0 }
            if let first = asked.first(where: { $0.path.removingLastComponent() == root && isFolder($0.path) }) {
                return first
            }
        }
        return try defaultContainer(in: containersRoot, setting: ProcessEnvironment.variable(defaultContainerVariable))
    }

    /// The containers this process asked for by identifier
    /// (`FileManager.url(forUbiquityContainerIdentifier:)`), in order.
    private static let requested = Locked<[UbiquityContainer]>([])

    /// Records that the process asked for `container` by its identifier:
    /// the first one asked for becomes its default container, as the first
    /// container of an app's entitlements is on Apple platforms (a nil
    /// identifier and the ubiquitous scopes mean it), unless
    /// `$MDQ_DEFAULT_CONTAINER` says otherwise.
    package static func noteRequested(_ container: UbiquityContainer) {
        requested.withLock { list in
            if !list.contains(where: { $0.path == container.path }) { list.append(container) }
        }
    }

    /// `defaultContainer()` for a given root and setting.
    static func defaultContainer(in root: FilePath, setting: String?) throws(MetadataError) -> UbiquityContainer {
        if let setting {
            guard setting.hasPrefix("/") else { return try UbiquityContainer(identifier: setting, root: root) }
            let folder = FilePath(setting).lexicallyNormalized()
            try checkFolder(folder, missing: "no container folder ($\(defaultContainerVariable))")
            return UbiquityContainer(path: folder)
        }
        try checkFolder(root, missing: "the containers root does not exist (set $MDQ_CONTAINERS or make it)")
        let names = containerNames(in: root)
        guard names.count == 1 else {
            let listed = names.map { "'\(String(decoding: $0, as: UTF8.self))'" }.joined(separator: ", ")
            throw .containerNotFound(
                names.isEmpty
                    ? "no ubiquity container in the containers root (make a folder there, or name a container)"
                    : "\(names.count) ubiquity containers in the containers root (\(listed)); "
                        + "set $\(defaultContainerVariable) to the one to use",
                path: root)
        }
        return UbiquityContainer(path: FilePath.fromBytes(root.bytes + [0x2F] + names[0]))
    }

    /// The names of the folders in `root` that are containers, in byte
    /// order; a symlink to a folder counts.
    private static func containerNames(in root: FilePath) -> [[UInt8]] {
        guard case .success(let handle) = DirectoryHandle.open(path: root) else { return [] }
        var reader = DirectoryReader(capacity: 64 * 1024)
        var names: [[UInt8]] = []
        _ = reader.forEachEntry(of: handle.descriptor) { entry in
            let name = UnsafeRawBufferPointer(start: entry.name, count: entry.nameLength)
            guard isContainerFolderName(name) else { return }
            names.append(Array(name))
        }
        let rootBytes = root.bytes
        return names.filter { isFolder(FilePath.fromBytes(rootBytes + [0x2F] + $0)) }
            .sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Whether a folder of the containers root is a container: its name is
    /// shaped like a container identifier, three or more non-empty parts of
    /// letters, digits, `-` and `_` joined by `~` (as Apple's Mobile
    /// Documents folder holds them: `iCloud~com~example~app`,
    /// `com~apple~CloudDocs`, a team-prefixed `ABCDE12345~com~example~app`)
    /// or by `.` (a folder made by hand). Other folders there, such as a
    /// sync client's own staging folder (`outside-1234`) or hidden ones, are
    /// not containers: counting them would leave no default container.
    static func isContainerFolderName(_ name: UnsafeRawBufferPointer) -> Bool {
        guard let first = name.first, first != UInt8(ascii: ".") else { return false }
        let separator = name.contains(UInt8(ascii: "~")) ? UInt8(ascii: "~") : UInt8(ascii: ".")
        let parts = name.split(separator: separator, omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty
                && part.allSatisfy { byte in
                    byte &- 0x30 < 10 || (byte | 0x20) &- 0x61 < 26 || byte == UInt8(ascii: "-")
                        || byte == UInt8(ascii: "_")
                }
        }
    }

    /// The container under `containersRoot` that holds `path` (strictly
    /// inside it), compared lexically; nil when `path` lies elsewhere.
    ///
    /// - Parameter path: an absolute path.
    /// - Returns: the container whose folder is the root's child on `path`.
    public static func container(holding path: FilePath) -> UbiquityContainer? {
        let root = Array(containersRoot.lexicallyNormalized().components)
        let components = Array(path.lexicallyNormalized().components)
        guard path.isAbsolute, components.count > root.count + 1, components.starts(with: root),
            Array(components[root.count].string.utf8).withUnsafeBytes(isContainerFolderName)
        else { return nil }
        return UbiquityContainer(path: FilePath(root: path.root, components[...root.count]))
    }

    // MARK: Folders

    /// Throws unless `path` is a folder this process can open: a missing
    /// one (or not a folder) is `.containerNotFound` with `missing`, any
    /// other failure (permissions) `.scopeUnreadable` saying the container
    /// folder cannot be opened, and why.
    static func checkFolder(_ path: FilePath, missing: String) throws(MetadataError) {
        switch DirectoryHandle.open(path: path) {
        case .success: return
        case .failure(let error) where error == .noSuchFileOrDirectory || error == .notDirectory:
            throw .containerNotFound(missing, path: path)
        case .failure(let error):
            throw MetadataError(
                code: .scopeUnreadable, message: "cannot open the container folder", path: path, underlying: error)
        }
    }

    static func isFolder(_ path: FilePath) -> Bool {
        guard case .success(let handle) = DirectoryHandle.open(path: path) else { return false }
        _ = handle
        return true
    }

    // MARK: Scopes

    /// The crawl roots covering `scopes` of this container.
    ///
    /// Documents and data together are the whole container (one root);
    /// the data scope alone is the container with `Documents` left out.
    ///
    /// - Parameter scopes: the ubiquitous scopes searched.
    /// - Returns: the folders to crawl, with the children they leave out.
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
