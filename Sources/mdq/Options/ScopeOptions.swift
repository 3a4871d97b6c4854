import ArgumentParser
import MetadataIndex
import SystemPackage

/// Where to search.
struct ScopeOptions: ParsableArguments {
    @Option(
        name: .customLong("onlyin"),
        help: ArgumentHelp(
            "Search only this folder's subtree (repeatable).", valueName: "DIR"))
    var onlyIn: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A ubiquity container: a folder path, or an identifier under $MDQ_CONTAINERS "
                + "(default ~/.local/share/mdq/containers).", valueName: "PATH|ID"))
    var container: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Which part of the container (repeatable): documents (its Documents folder), data (the rest), "
                + "external (its registered external document folders) or all.",
            valueName: "documents|data|external|all"))
    var scope: [ContainerScope] = []

    @Option(
        name: .customLong("register-external"),
        help: ArgumentHelp(
            "Register a folder outside the container as external documents (with --container), then exit.",
            valueName: "DIR"))
    var registerExternal: [String] = []

    @Option(
        name: .customLong("unregister-external"),
        help: ArgumentHelp("Remove an external documents registration (with --container), then exit.", valueName: "DIR")
    )
    var unregisterExternal: [String] = []

    @Flag(name: .customLong("list-external"), help: "Print the container's external document folders, then exit.")
    var listExternal = false

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

    @Flag(name: .long, help: "Include hidden entries (names starting with '.') and what is inside hidden folders.")
    var hidden = false

    @Flag(name: .customLong("xdev"), help: "Do not descend into folders on other filesystems.")
    var stayOnFileSystem = false

    @Option(
        name: .customLong("exclude"),
        help: ArgumentHelp(
            "Leave out what is inside folders with this name, at any depth (repeatable), e.g. node_modules.",
            valueName: "NAME"))
    var excludedFolders: [String] = []

    enum ContainerScope: String, ExpressibleByArgument, CaseIterable {
        case documents, data, external, all
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

    var crawlOptions: CrawlOptions {
        CrawlOptions(
            includeHidden: hidden, stayOnFileSystem: stayOnFileSystem,
            excludedFolderNames: Set(excludedFolders.map { RawArguments().bytes(for: $0) }))
    }

    /// The example container shipped in the source tree, searched when no
    /// scope is given (so a newcomer's first command shows something).
    static var exampleContainer: FilePath {
        // Sources/mdq/Options/ScopeOptions.swift -> repository root
        var path = FilePath(#filePath)
        for _ in 0..<4 { path.removeLastComponent() }
        return path.appending("Examples/ExampleContainer")
    }

    /// The scopes as a live query takes them: folders, and a container with
    /// its ubiquitous scopes.
    func searchScopes(raw: RawArguments) throws -> ([SearchScope], UbiquityContainer?) {
        let cwd = ProcessEnvironment.currentDirectory
        var scopes = onlyIn.map {
            SearchScope.directory(cwd.pushing(FilePath.fromBytes(raw.bytes(for: $0))).lexicallyNormalized())
        }
        var containerValue: UbiquityContainer?
        if let container {
            containerValue = try UbiquityContainer(
                pathOrIdentifier: FilePath.fromBytes(raw.bytes(for: container)), relativeTo: cwd)
        } else if onlyIn.isEmpty {
            if !scope.isEmpty { throw ValidationError("--scope needs --container") }
            containerValue = UbiquityContainer(path: Self.exampleContainer)
        } else if !scope.isEmpty {
            throw ValidationError("--scope needs --container")
        }
        if containerValue != nil {
            let order: [SearchScope] = [.ubiquitousDocuments, .ubiquitousData, .accessibleExternalDocuments]
            scopes += order.filter(ubiquitousScopes.contains)
        }
        return (scopes, containerValue)
    }

    func crawlRoots(raw: RawArguments) throws -> [CrawlRoot] {
        let cwd = ProcessEnvironment.currentDirectory
        var roots: [CrawlRoot] = []
        for folder in onlyIn {
            let path = FilePath.fromBytes(raw.bytes(for: folder))
            roots.append(CrawlRoot(path: cwd.pushing(path).lexicallyNormalized()))
        }
        var containerPath: FilePath?
        if let container {
            containerPath = try UbiquityContainer(
                pathOrIdentifier: FilePath.fromBytes(raw.bytes(for: container)), relativeTo: cwd
            ).path
        } else if onlyIn.isEmpty {
            if !scope.isEmpty {
                throw ValidationError("--scope needs --container")
            }
            containerPath = Self.exampleContainer
        } else if !scope.isEmpty {
            throw ValidationError("--scope needs --container")
        }
        if let containerPath {
            roots += UbiquityContainer(path: containerPath).crawlRoots(for: ubiquitousScopes)
        }
        return CrawlRoot.removingOverlaps(roots)
    }
}
