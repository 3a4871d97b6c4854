import ArgumentParser
import MDQDaemon
import MDQLive
import MDQWire
import MetadataIndex
import SystemPackage

/// `mdq [options] QUERY [DIR...]`: the files matching a query, like
/// `mdfind`; the default subcommand, so `mdq find` need not be typed.
struct FindCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "find",
        abstract: "Find files by name or metadata query, like mdfind.",
        usage: MDQ.usage,
        // Every example line fits in 80 columns, so help never wraps one.
        discussion: """
            QUERY is a name, a glob or a predicate. A bare word or glob (report, \
            '*.png') finds names containing it or matching it, ignoring case and \
            accents, like --name (several words are one piece; when no name holds \
            it, a note says how many hold each word, as mdfind reads them); \
            with a / (Reports/2021) it is matched against \
            the whole path, as locate does. Anything with an attribute key, an operator or a \
            quoted value is an NSPredicate, parsed strictly: a typo is an error with \
            a caret under it. QUERY - reads the query from standard input.

            Predicates compare attributes (mdq --list-attributes prints every key: \
            kMDItemFSName, kMDItemDisplayName, kMDItemPath, kMDItemURL, \
            kMDItemFSSize, kMDItemFSCreationDate, kMDItemFSContentChangeDate, \
            kMDItemContentType, kMDItemContentTypeTree, the NSMetadataUbiquitous... \
            keys) with == != < <= > >= BETWEEN {lo, hi} IN {a, b}, and strings with \
            LIKE BEGINSWITH ENDSWITH CONTAINS MATCHES, each with [c] (ignore case), \
            [d] (ignore diacritics) or [cd]; AND/&&, OR/||, NOT/!, parentheses, \
            TRUEPREDICATE. LIKE matches the whole name: * any run, ? one character. \
            A query only mdfind's syntax reads (kMDItemFSName == '*.pdf', \
            "*.pdf"cd, $time.today(-7), InRange(...)) is read in it; --spotlight \
            reads mdfind's syntax always.

            Without a folder or container, mdq searches the current folder: \
            answered from the index daemon (mdq daemon) when it indexes that folder, \
            crawled otherwise, with the same results either way. -a/--everywhere \
            searches everything the daemon indexes, as mdfind and locate do.

            Examples:
              mdq report                      names containing "report"
              mdq -a report                   the same, in everything indexed
              mdq '*.png' ~/Pictures          names matching a glob, in a folder
              mdq "kMDItemFSName LIKE[c] '*.png'"
              mdq --onlyin ~/src "kMDItemFSName ENDSWITH '.swift'"
              mdq "kMDItemFSSize > 1000000 AND kMDItemFSName ENDSWITH[c] '.mov'"
              mdq --type d --limit 1 node_modules
              mdq --container ~/Sync --scope documents --count '*.pdf'
              mdq -0 '*.tmp' | xargs -0 rm --
              mdq --json --attr kMDItemContentType report | jq .path
              mdq --sort kMDItemFSSize:desc --limit 10 --attr kMDItemFSSize '*'
              mdq --group kMDItemContentType TRUEPREDICATE
              mdq --spotlight 'kMDItemFSName == "*.png"cd'
              mdq --live "kMDItemFSName LIKE '*.txt'"
              mdq ls photo.png                every attribute, like mdls

            Exit status: 0 success, 1 runtime error (missing container or scope), \
            2 usage or query syntax error.
            """
    )

    @OptionGroup var scope: ScopeOptions
    @OptionGroup var output: OutputOptions
    @OptionGroup var query: QueryOptions
    @OptionGroup var filters: FilterOptions

    // Checks that need the whole command line run in `run()`, not
    // `validate()`: ArgumentParser validates before it reports unknown
    // options, and `mdq --verison` must say what is wrong with it.
    func run() throws {
        Diagnostics.warningsSilenced.store(output.noWarnings, ordering: .relaxed)
        Diagnostics.showsEveryWarning.store(output.showErrors, ordering: .relaxed)
        let raw = RawArguments()
        let name = query.name
        let query = self.query.query
        let spotlight = self.query.spotlight
        if self.query.listAttributes {
            StandardOutput.print(AttributeKeys.all.joined(separator: "\n"))
            return
        }
        if scope.managesExternal {
            if name != nil || query != nil { throw ValidationError("registration commands take no QUERY") }
            try scope.manageExternal(raw: raw)
            return
        }
        try output.check()
        if let budget = self.query.budget, !(budget > 0 && budget.isFinite) {
            throw ValidationError("--budget takes a positive number of seconds")
        }
        var folders = self.query.folders
        var predicate: MetadataPredicate
        var words: [UInt8]?
        // The query as typed, for the daemon to read as this command does
        // (not this command's predicate printed back to text).
        var typed: DaemonAnswer.Typed?
        if let name {
            if let query { folders.insert(query, at: 0) }
            let text = raw.bytes(for: name)
            predicate = try MetadataPredicate.nameMatching(text)
            typed = DaemonAnswer.Typed(text: text, syntax: "name")
        } else if let query {
            let text = query == "-" ? try Self.standardInput() : raw.bytes(for: query)
            // `$time.today` is the day the C library's zone says (as the
            // front end and the daemon read it).
            predicate = try CommandLineQuery.predicate(text, spotlight: spotlight, timeZone: ClientTimeZone.current)
            if !spotlight && CommandLineQuery.isFreeText(text) {
                words = text
            } else {
                typed = DaemonAnswer.Typed(text: text, syntax: spotlight ? "spotlight" : "command-line")
            }
        } else if !filters.isEmpty {
            predicate = .alwaysTrue
        } else {
            throw ValidationError("give a QUERY (a name, a glob or a predicate) or --name TEXT")
        }
        if let filter = try filters.predicate() {
            predicate = predicate && filter
            words = nil
            typed = nil
        }
        if scope.searchesHosts {
            guard folders.isEmpty, scope.onlyIn.count == scope.remoteFolders.count, !scope.everywhere,
                scope.container == nil
            else {
                throw ValidationError(
                    "a search across hosts takes its folders as --onlyin NAME:/path, not DIR, --onlyin DIR, "
                        + "--everywhere or --container")
            }
            if scope.hosts.contains(where: { $0.split(separator: ",").isEmpty }) {
                throw ValidationError("--host takes a host name, or a comma list of them (mdq hosts lists them)")
            }
            try SharedIndexSettings.checkOptions(scope: scope, output: output)
            if output.live {
                try SharedLiveSession(
                    predicate: predicate, scope: scope, output: output, budget: self.query.budget,
                    source: typed?.text ?? words, remoteFolders: scope.remoteFolders(raw: raw)
                ).run()
            }
            try SharedSearchSession(
                predicate: predicate, scope: scope, output: output, budget: self.query.budget,
                source: typed?.text ?? words, remoteFolders: scope.remoteFolders(raw: raw)
            ).run()
            return
        }
        let resolved = try scope.resolve(folders: folders, raw: raw)
        if output.live {
            try runLive(predicate: predicate, scope: resolved)
        }
        let budget = self.query.budget
        // Asked of the daemons first (the router skips them when the front
        // asked every daemon there is and each declined this search).
        if try DaemonAnswer(
            predicate: predicate, scope: resolved, output: output, budget: budget, words: words, typed: typed
        ).run() {
            return
        }
        try OneShotSession(predicate: predicate, scope: resolved, output: output, budget: budget, words: words).run()
    }

    /// Whether the front (`mdq`) asked every daemon there is and each
    /// declined this very search (`MDQ_DAEMONS_DECLINED`, which it sets
    /// just before it runs this program with the same arguments).
    static var daemonsDeclined: Bool { ProcessEnvironment.variable(SearchRouter.declinedVariable) != nil }

    private func runLive(predicate: MetadataPredicate, scope: ResolvedScope) throws -> Never {
        guard scope.excludesOnlyExactNames else {
            throw ValidationError("--exclude globs apply to one-shot queries; --live takes exact folder names")
        }
        // Served by a daemon when one keeps the scopes, as every search is
        // routed (`SearchRouter`): no crawl, no watch here.
        var source = MetadataQuery.Source.inProcess
        var requests = scope.daemonRequests
        /// The daemon's own scopes under this query's rules, for
        /// `--everywhere`.
        func everything(_ indexed: [ScopeRequest]) {
            guard scope.everywhere, let rules = scope.daemonRules else { return }
            requests = indexed.map { ScopeRequest(path: $0.path, rules: $0.rules.narrowed(by: rules)) }
        }
        let router = SearchRouter(asksDaemons: scope.daemon != .noDaemon, requiresDaemon: scope.daemon == .daemon)
        let outcome = router.route { destination -> SearchRouter.Reply<MetadataError> in
            switch destination {
            case .ownDaemon:
                // It keeps every scope it is asked for live (it indexes one
                // it does not hold yet).
                do throws(MetadataError) {
                    let indexed = try DaemonClient.connect().indexedScopes().map(\.scope)
                    source = .daemon(.standard)
                    everything(indexed)
                    return .answered
                } catch {
                    return .unavailable(error)
                }
            case .systemIndex:
                // It never crawls for a user: it answers when it indexes
                // every folder asked for.
                let indexed: [ScopeRequest]
                do throws(MetadataError) {
                    indexed = try DaemonClient.connectSystem().indexedScopes().map(\.scope)
                } catch {
                    return .unavailable(error)
                }
                let covers =
                    scope.everywhere
                    || (requests?.allSatisfy { request in indexed.contains { request.path.starts(with: $0.path) } }
                        ?? false)
                guard covers else {
                    return .declined(.daemon("the system index does not cover this search"), gap: nil)
                }
                source = .daemon(.system)
                everything(indexed)
                return .answered
            }
        }
        switch outcome {
        case .answered:
            break
        case .refused(let trail):
            let own = trail.unavailable.first { $0.0 == .ownDaemon }?.1
            throw own ?? trail.reason?.1 ?? MetadataError.daemon("no index daemon is running")
        case .here(let trail):
            for (daemon, error) in trail.unavailable
            where daemon == SearchRouter.Destination.ownDaemon && error.refusal == .untrusted {
                Diagnostics.warn(error.message + "; watching here instead")
            }
        }
        let imported = predicate.importedAttributes.map(\.rawValue).sorted()
        if case .inProcess = source, !imported.isEmpty {
            throw ValidationError(
                "--live cannot test \(imported.joined(separator: ", ")) without the index daemon: attributes read "
                    + "from inside files are kept live by it (mdq daemon start; mdq index add DIR), or drop --live")
        }
        let columns = OneShotSession.importedColumns(output).map(\.rawValue).sorted()
        if case .inProcess = source, !columns.isEmpty {
            throw ValidationError(
                "--live cannot show \(columns.joined(separator: ", ")) without the index daemon: attributes read "
                    + "from inside files are kept live by it (mdq daemon start; mdq index add DIR)")
        }
        if case .inProcess = source {
            // Fail like a one-shot query on a missing scope, before going live.
            for root in scope.roots { try root.checkAccessible() }
        }
        ProcessEnvironment.ignoreBrokenPipe()
        let mode: LivePrinter.Mode =
            output.count ? .count : output.json ? .json : .lines(terminator: output.nullTerminated ? 0 : 0x0A)
        LiveSession(
            predicate: predicate, source: source, scopeRequests: requests, container: scope.container,
            sortDescriptors: output.sortDescriptors, fetchedAttributes: columns, interval: output.interval,
            printer: LivePrinter(mode: mode, attributes: output.attributes, showProgress: Diagnostics.showsProgress)
        ).run()
    }

    /// The query text given on standard input (`mdq -`), without the
    /// final newline a shell or editor adds.
    private static func standardInput() throws -> [UInt8] {
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = try chunk.withUnsafeMutableBytes { try FileDescriptor.standardInput.read(into: $0) }
            if count == 0 { break }
            text += chunk[..<count]
        }
        while let last = text.last, last == 0x0A || last == 0x0D { text.removeLast() }
        if text.isEmpty { throw ValidationError("the query read from standard input is empty") }
        return text
    }
}
