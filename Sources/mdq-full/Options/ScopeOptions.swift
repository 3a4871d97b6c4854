import ArgumentParser
import MDQShared
import MetadataIndex
import SystemPackage

/// Where to search.
struct ScopeOptions: ParsableArguments {
    @Option(
        name: .customLong("onlyin"),
        help: ArgumentHelp(
            "Search only this folder's subtree (repeatable; also DIR after the query).", valueName: "DIR"),
        completion: .directory)
    var onlyIn: [String] = []

    @Option(
        name: .customLong("host"),
        help: ArgumentHelp(
            "Search this host of the shared index across hosts (repeatable, or a comma list); this host's own "
                + "entries come from its system index.", valueName: "NAME"))
    var hosts: [String] = []

    @Flag(name: .customLong("all-hosts"), help: "Search every host of the shared index.")
    var allHosts = false

    @Flag(
        name: [.customShort("a"), .customLong("everywhere")],
        help: ArgumentHelp(
            "Search everything the index daemon indexes (mdq index list), as mdfind and locate do, "
                + "instead of the current folder; needs the daemon."))
    var everywhere = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A ubiquity container: a folder path, or an identifier under $MDQ_CONTAINERS "
                + "(default ~/.local/share/mdq/containers), as Apple writes it (iCloud.com.example.app) "
                + "or as its folder is named (iCloud~com~example~app).", valueName: "PATH|ID"),
        completion: .directory)
    var container: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Which part of the container (repeatable; without --container, the default container: "
                + "$MDQ_DEFAULT_CONTAINER, else the only one under $MDQ_CONTAINERS): documents (its Documents "
                + "folder), data (the rest), external (its registered external document folders) or all.",
            valueName: "documents|data|external|all"))
    var scope: [ContainerScope] = []

    @Option(
        name: .customLong("register-external"),
        help: ArgumentHelp(
            "Register a folder outside the container as external documents (with --container), then exit.",
            valueName: "DIR"),
        completion: .directory)
    var registerExternal: [String] = []

    @Option(
        name: .customLong("unregister-external"),
        help: ArgumentHelp(
            "Remove an external documents registration (with --container), then exit.", valueName: "DIR"),
        completion: .directory)
    var unregisterExternal: [String] = []

    @Flag(name: .customLong("list-external"), help: "Print the container's external document folders, then exit.")
    var listExternal = false

    @Flag(name: .long, help: "Include hidden entries (names starting with '.') and what is inside hidden folders.")
    var hidden = false

    @Flag(
        help: ArgumentHelp(
            "Whether to ask the index daemon (mdq daemon): --daemon requires it, --no-daemon always crawls; "
                + "by default the daemon answers when it runs and indexes the scopes."))
    var daemon: DaemonUse = .auto

    /// When a search goes to the index daemon.
    enum DaemonUse: String, EnumerableFlag {
        case auto
        case daemon
        case noDaemon

        static func name(for value: DaemonUse) -> NameSpecification {
            switch value {
            case .auto: .customLong("daemon-if-running")
            case .daemon: .customLong("daemon")
            case .noDaemon: .customLong("no-daemon")
            }
        }

        static func help(for value: DaemonUse) -> ArgumentHelp? {
            switch value {
            case .auto: .hidden
            case .daemon: "Answer from the index daemon; fail when it is not running or does not index the scopes."
            case .noDaemon: "Never ask the index daemon: crawl."
            }
        }
    }

    @Flag(name: .customLong("xdev"), help: "Do not descend into folders on other filesystems.")
    var stayOnFileSystem = false

    @Option(
        name: .customLong("exclude"),
        help: ArgumentHelp(
            "Leave out what is inside folders whose name matches, at any depth (repeatable): a name "
                + "(node_modules) or a glob ('*.app', 'build-?'; a warning names one that matched nothing).",
            valueName: "NAME|GLOB"))
    var excludedFolders: [String] = []

    @Flag(
        name: .customLong("pseudo-filesystems"),
        help: "Also crawl /proc and /sys when a scope contains them (skipped by default).")
    var includesPseudoFileSystems = false

    enum ContainerScope: String, ExpressibleByArgument, CaseIterable {
        case documents, data, external, all
    }

    /// `--onlyin NAME:/path` values: a folder of another host, its path
    /// normalized as a local one is (`//`, `.` and `..` taken out: the
    /// shared index keeps each folder by its path alone).
    var remoteFolders: [(host: String, path: [UInt8])] { remoteFolders(raw: nil) }

    /// The same, each path as its bytes were given (`raw`), which need not
    /// be UTF-8.
    func remoteFolders(raw: RawArguments?) -> [(host: String, path: [UInt8])] {
        onlyIn.compactMap { value in
            guard let colon = value.firstIndex(of: ":"), value[value.index(after: colon)...].hasPrefix("/"),
                value[..<colon].range(of: SharedSchema.hostNamePattern, options: .regularExpression) != nil
            else { return nil }
            // The host name is ASCII: the path's bytes follow its colon.
            let host = String(value[..<colon])
            let bytes = raw.map { Array($0.bytes(for: value).dropFirst(host.utf8.count + 1)) }
            let path = FilePath.fromBytes(bytes ?? Array(value[value.index(after: colon)...].utf8))
                .lexicallyNormalized()
            return (host, path.bytes)
        }
    }

    /// Whether the search goes to the shared index across hosts.
    var searchesHosts: Bool { !hosts.isEmpty || allHosts || !remoteFolders.isEmpty }

    /// The hosts named with `--host` (comma lists split), or nil for
    /// `--all-hosts`.
    var hostNames: [String]? {
        if allHosts { return nil }
        var names: [String] = []
        for value in hosts {
            for name in value.split(separator: ",") where !names.contains(String(name)) { names.append(String(name)) }
        }
        for folder in remoteFolders where !names.contains(folder.host) { names.append(folder.host) }
        return names
    }

    /// Whether a registration command was given instead of a query.
    var managesExternal: Bool { !registerExternal.isEmpty || !unregisterExternal.isEmpty || listExternal }

    /// Runs the registration commands against the container.
    func manageExternal(raw: RawArguments) throws {
        guard let container else { throw ValidationError("external document registration needs --container") }
        let cwd = ProcessEnvironment.currentDirectory
        let value = try UbiquityContainer(
            pathOrIdentifier: FilePath.fromBytes(raw.bytes(for: container)), relativeTo: cwd)
        for folder in registerExternal {
            try value.registerExternalDocuments(cwd.pushing(FilePath.fromBytes(raw.bytes(for: folder))))
        }
        for folder in unregisterExternal {
            try value.unregisterExternalDocuments(cwd.pushing(FilePath.fromBytes(raw.bytes(for: folder))))
        }
        if listExternal {
            var out: [UInt8] = []
            for folder in value.externalDocumentFolders { out += Array(folder.string.utf8) + [0x0A] }
            StandardOutput.flush(&out)
        }
    }

    /// The ubiquitous scopes `--scope` names (all of them by default).
    var ubiquitousScopes: Set<SearchScope> {
        var scopes: Set<SearchScope> = []
        for part in scope.isEmpty ? [.all] : scope {
            switch part {
            case .documents: scopes.insert(.ubiquitousDocuments)
            case .data: scopes.insert(.ubiquitousData)
            case .external: scopes.insert(.accessibleExternalDocuments)
            case .all: scopes.formUnion([.ubiquitousDocuments, .ubiquitousData, .accessibleExternalDocuments])
            }
        }
        return scopes
    }

    /// Reads the scope options once: `--onlyin` folders and `folders` (the
    /// positional DIRs), the container and its parts, or the default scopes.
    ///
    /// - Throws: `MetadataError` for a container that cannot be found (for
    ///   `--scope` without `--container`, when there is no default
    ///   container).
    func resolve(folders: [String], raw: RawArguments) throws -> ResolvedScope {
        let cwd = ProcessEnvironment.currentDirectory
        let directories = (onlyIn + folders).map {
            cwd.pushing(FilePath.fromBytes(raw.bytes(for: $0))).lexicallyNormalized()
        }
        var container: UbiquityContainer?
        if let value = self.container {
            container = try UbiquityContainer(
                pathOrIdentifier: FilePath.fromBytes(raw.bytes(for: value)), relativeTo: cwd)
        } else if !scope.isEmpty {
            container = try UbiquityContainer.defaultContainer()
        }
        var scopes = directories.map(SearchScope.directory)
        var roots = directories.map { CrawlRoot(path: $0) }
        if let container {
            let order: [SearchScope] = [.ubiquitousDocuments, .ubiquitousData, .accessibleExternalDocuments]
            scopes += order.filter(ubiquitousScopes.contains)
            roots += container.crawlRoots(for: ubiquitousScopes)
        }
        if everywhere {
            guard scopes.isEmpty else {
                throw MetadataError.invalidArgument(
                    "--everywhere searches everything indexed: give it no folder, --onlyin or --container")
            }
            guard daemon != .noDaemon else {
                throw MetadataError.invalidArgument(
                    "--everywhere is answered by the index daemon: it cannot go with --no-daemon")
            }
        }
        let isDefault = scopes.isEmpty
        if isDefault {
            scopes = ResolvedScope.defaultScopes(currentDirectory: cwd)
            roots = scopes.compactMap(\.directory).map { CrawlRoot(path: $0) }
        }
        let excluded = excludedFolders.map { raw.bytes(for: $0) }
        return ResolvedScope(
            scopes: scopes, container: container, roots: CrawlRoot.removingOverlaps(roots),
            crawlOptions: CrawlOptions(includeHidden: hidden, stayOnFileSystem: stayOnFileSystem),
            excludedFolders: excluded, skipsPseudoFileSystems: !includesPseudoFileSystems, isDefault: isDefault,
            everywhere: everywhere, daemon: everywhere ? .daemon : daemon)
    }
}
