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
            "Which part of the container: documents (its Documents folder), data (the rest) or all.",
            valueName: "documents|data|all"))
    var scope: ContainerScope?

    @Flag(name: .long, help: "Include hidden entries (names starting with '.') and what is inside hidden folders.")
    var hidden = false

    @Flag(name: .customLong("xdev"), help: "Do not descend into folders on other filesystems.")
    var stayOnFileSystem = false

    enum ContainerScope: String, ExpressibleByArgument, CaseIterable {
        case documents, data, all
    }

    var crawlOptions: CrawlOptions {
        CrawlOptions(includeHidden: hidden, stayOnFileSystem: stayOnFileSystem)
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
            if scope != nil { throw ValidationError("--scope needs --container") }
            containerValue = UbiquityContainer(path: Self.exampleContainer)
        } else if scope != nil {
            throw ValidationError("--scope needs --container")
        }
        if containerValue != nil {
            switch scope ?? .all {
            case .documents: scopes.append(.ubiquitousDocuments)
            case .data: scopes.append(.ubiquitousData)
            case .all: scopes += [.ubiquitousDocuments, .ubiquitousData]
            }
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
            if scope != nil {
                throw ValidationError("--scope needs --container")
            }
            containerPath = Self.exampleContainer
        } else if scope != nil {
            throw ValidationError("--scope needs --container")
        }
        if let containerPath {
            let scopes: Set<SearchScope>
            switch scope ?? .all {
            case .documents: scopes = [.ubiquitousDocuments]
            case .data: scopes = [.ubiquitousData]
            case .all: scopes = [.ubiquitousDocuments, .ubiquitousData]
            }
            roots += UbiquityContainer(path: containerPath).crawlRoots(for: scopes)
        }
        return CrawlRoot.removingOverlaps(roots)
    }
}
