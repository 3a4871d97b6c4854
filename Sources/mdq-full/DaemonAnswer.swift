import MDQDaemon
import MDQEngine
import MDQLive
import MDQWire
import MetadataIndex
import Synchronization
import SystemPackage

/// A one-shot search answered by the index daemon, printed as a crawl of
/// the same scopes would print it (the same lines, the same JSON).
///
/// The daemon answers when it runs and its indexed scopes cover the
/// search's; otherwise the caller crawls. `--daemon` makes the daemon
/// required, `--no-daemon` never asks it.
struct DaemonAnswer {
    let predicate: MetadataPredicate
    let scope: ResolvedScope
    let output: OutputOptions
    /// `--budget`: seconds the daemon may spend (nil: its default).
    var budget: Double?
    /// The query as typed when it is free text (not a predicate, not
    /// `--name`): a daemon that indexes content searches its words in
    /// names and text, ranked; otherwise `predicate` (a name search) is
    /// asked.
    var words: [UInt8]?
    /// The query as the user typed it and the syntax it is read in, sent
    /// to the daemon as is; nil when the predicate is more than one typed
    /// query (filters added to it), which is then sent as `predicate`.
    var typed: Typed?

    struct Typed {
        var text: [UInt8]
        /// `name`, `spotlight` or `command-line` (`Documentation/protocol.md`).
        var syntax: String
    }

    /// What the daemon is asked: the query as typed, or the predicate.
    private var question: (text: [UInt8], syntax: String) {
        typed.map { ($0.text, $0.syntax) } ?? (Array(predicate.predicateFormat.utf8), "predicate")
    }

    /// Why a daemon did not answer: an error, or a note to say before
    /// searching here.
    enum Trouble: Sendable {
        case error(MetadataError)
        case note(String)

        var message: String {
            switch self {
            case .error(let error): error.message
            case .note(let note): note
            }
        }
    }

    /// Asks the daemons, as every search is routed (`SearchRouter`), and
    /// prints the answer; false when the caller must crawl instead (no
    /// daemon, none that keeps the scopes, or one that could not answer,
    /// which is said on stderr).
    ///
    /// - Throws: `MetadataError` `.daemon` when a daemon's answer is
    ///   required (`--daemon`) but none can give it; `.querySyntax` and
    ///   `.tooExpensive` as a crawl would.
    func run() throws -> Bool {
        let router = SearchRouter(
            asksDaemons: scope.daemon != .noDaemon, requiresDaemon: scope.daemon == .daemon,
            daemonsDeclined: FindCommand.daemonsDeclined)
        guard !router.daemons.isEmpty else { return false }
        // SIGINT/SIGTERM are blocked for a sigwait thread (MDQ.main): while
        // this waits on a daemon they end the process at once (closing the
        // connection, which cancels the query in the daemon).
        Self.exitOnInterrupt()
        // An error a crawl would give too ends the search here.
        var thrown: MetadataError?
        func ask(_ destination: SearchRouter.Destination) -> SearchRouter.Reply<Trouble> {
            do throws(MetadataError) {
                switch destination {
                case .ownDaemon: return try askOwnDaemon()
                case .systemIndex: return try askSystemIndex()
                }
            } catch {
                thrown = error
                return .failed(.error(error))
            }
        }
        let outcome = router.route(ask)
        if let thrown { throw thrown }
        switch outcome {
        case .answered:
            return true
        case .here(let trail):
            if let (daemon, trouble) = trail.failure.map({ ($0.0, $0.1) }) {
                switch trouble {
                case .note(let note): Diagnostics.note(note)
                case .error(let error):
                    Diagnostics.warn("\(daemon.rawValue) did not answer (\(error.message)); searching by crawling")
                }
            }
            for case (SearchRouter.Destination.ownDaemon, Trouble.error(let error)) in trail.unavailable {
                if error.refusal == .untrusted {
                    // Someone else's socket where ours should be: not a byte to it.
                    Diagnostics.warn(error.message + "; searching by crawling")
                } else if error.underlying == .connectionRefused {
                    // A socket but nobody behind it: the daemon died.
                    Diagnostics.warn(
                        "the index daemon is not running (it left \(error.path?.string ?? "its socket")); "
                            + "searching by crawling")
                }
            }
            if let gap = trail.gap {
                // An option (or an index still being built) keeps the daemon
                // from answering a folder it indexes: said once, then crawled.
                Diagnostics.note("\(gap); searching by crawling")
            }
            return false
        case .refused(let trail):
            if let trouble = trail.failure?.1 {
                if case .error(let error) = trouble { throw error }
                throw MetadataError.daemon(trouble.message)
            }
            let own = trail.unavailable.first { $0.0 == .ownDaemon }?.1
            if case .error(let error)? = own, error.underlying == .noSuchFileOrDirectory,
                trail.declined.contains(where: { $0.0 == .systemIndex })
            {
                throw MetadataError.daemon(
                    "no daemon of yours is running, and the system index does not cover this search "
                        + "(mdq system status says what it covers)")
            }
            if case .error(let error)? = trail.declined.first?.1 ?? own { throw error }
            throw MetadataError.daemon(trail.reason?.1.message ?? "no index daemon is running")
        }
    }

    /// Asks this user's daemon.
    private func askOwnDaemon() throws(MetadataError) -> SearchRouter.Reply<Trouble> {
        let client: DaemonClient
        do {
            client = try DaemonClient.connect()
        } catch {
            return .unavailable(.error(error))
        }
        // The current folder when none is named (the daemon says whether
        // it covers it); everything indexed only with --everywhere.
        let requests = scope.everywhere ? nil : scope.daemonRequests
        if let words, scope.daemonRules != nil, output.kinds == nil,
            try answerWords(words, client: client, requests: requests)
        {
            return .answered
        }
        if scope.daemonRules == nil {
            if scope.daemon == .daemon {
                return .failed(
                    .error(.daemon("--exclude globs cannot be answered by the daemon; give exact folder names")))
            }
            return .failed(
                .note("the index daemon answers --exclude with exact folder names, not globs; searching by crawling"))
        }
        let mode = self.mode
        let columns = mode == .entries ? OneShotSession.importedColumns(output) : []
        let ordered = columns.isEmpty ? order(client) : nil
        let asked = Result { () throws(MetadataError) -> DaemonClient.Answer in
            try client.query(
                question.text, syntax: question.syntax, scopes: requests, rules: scope.daemonRules, output: mode,
                limit: ordered?.limit ?? limit, budget: budget, attributes: columns, order: ordered?.0,
                thenByPath: ordered?.thenByPath ?? false,
                onProgress: Diagnostics.showsProgress
                    ? { fraction in Diagnostics.status("waiting for the index daemon… \(Int(fraction * 100))% scanned")
                    }
                    : nil)
        }
        if Diagnostics.showsProgress { Diagnostics.clearStatus() }
        var answer: DaemonClient.Answer
        switch asked {
        case .success(let value):
            answer = value
        case .failure(let error):
            guard error.code == .daemon else { throw error }
            guard case .notCovered(let gap) = error.refusal else { return .failed(.error(error)) }
            return .declined(.error(error), gap: gap)
        }
        noteOtherReading(of: &answer, client: client, requests: requests)
        // Columns, sort keys or groups read from inside files come from the
        // daemon's import store; files it has not imported (pending, in a
        // names-only scope, or a daemon that imports nothing) are imported
        // here, as a crawl imports them.
        let unimported = answer.entries.contains { $0.kind == .file && $0.imported == nil }
        let importer = !columns.isEmpty && unimported ? try OneShotSession.columnImporter(output) : nil
        defer { importer?.pool.shutdown() }
        present(answer, importer: importer)
        return .answered
    }

    /// What the daemon is asked for: `--type` is a filter on the items, so
    /// it asks for them; everything else is said to the daemon.
    private var mode: OneShotOutput {
        output.kinds != nil ? .entries : output.count ? .count : output.needsItems || output.json ? .entries : .paths
    }

    /// The daemon cuts the answer to `--limit` unless the items are sorted
    /// or filtered here first (a count is not sorted: it is cut).
    private var limit: Int? {
        output.kinds == nil && (output.sort.isEmpty || mode == .count) ? output.limit : nil
    }

    /// The order a sorted answer with a limit is asked in (its first key),
    /// of a daemon that takes one (`query-order`): it answers the first
    /// `--limit` in it and their ties, which the sort here cuts, not every
    /// match. Nil for a key the daemon does not read as this command does
    /// (what is inside files, a container's keys, conflicts).
    private func order(_ client: DaemonClient) -> (MetadataSortDescriptor, limit: Int, thenByPath: Bool)? {
        guard mode == .entries, output.kinds == nil, let limit = output.limit, limit > 0,
            let first = output.sortDescriptors.first,
            first.readsTheIndexAlone, (try? client.hello())?.features.contains("query-order") == true
        else { return nil }
        // Sorted by one key, ties print in path order: the first `limit`
        // alone are wanted, not every tie (a daemon that does not know
        // `thenByPath` answers them all, which the sort here cuts).
        return (first, limit, output.sortDescriptors.count == 1)
    }

    /// Free text that matched nothing as one piece: how many names hold
    /// each of its words (mdfind's reading), asked of the same index.
    private func noteOtherReading(
        of answer: inout DaemonClient.Answer, client: DaemonClient, requests: [ScopeRequest]?
    ) {
        guard answer.count == 0, let words, let other = CommandLineQuery.otherReading(of: words),
            let counted = try? client.query(
                Array(other.predicate.predicateFormat.utf8), scopes: requests, rules: scope.daemonRules,
                output: .count, limit: nil, budget: budget, attributes: [], onProgress: nil),
            counted.count > 0
        else { return }
        answer.note = other.note(counted.count)
    }

    /// Prints an answer as a crawl of the same scopes prints it, importing
    /// with `importer` the columns of files the daemon has not imported.
    private func present(_ answer: DaemonClient.Answer, importer: OneShotSession.ColumnImporter?) {
        Self.print(answer, mode: mode, nullTerminated: output.nullTerminated) {
            var items = answer.entries.map { MetadataItem(daemonEntry: $0, container: scope.container) }
            if let kinds = output.kinds { items = items.filter { kinds.contains($0.kind) } }
            if let importer {
                for i in items.indices where items[i].kind == .file && items[i].importedValues == nil {
                    items[i].importedValues = importer.values(FilePath.fromBytes(items[i].pathBytes))
                }
            }
            if output.count {
                StandardOutput.print(String(min(items.count, output.limit ?? .max)))
            } else {
                OneShotSession.print(items, output: output)
            }
        }
    }

    /// Asks the system index (`mdq system`): names and stat data, filtered
    /// by what this user may see, and what is inside the files this user
    /// may read when it imports content. It declines what it does not
    /// cover, and what is inside files when it imports nothing.
    private func askSystemIndex() throws(MetadataError) -> SearchRouter.Reply<Trouble> {
        let client: DaemonClient
        do {
            client = try DaemonClient.connectSystem()
        } catch {
            return .unavailable(.error(error))
        }
        guard scope.daemonRules != nil else {
            return .declined(.note("the system index answers --exclude with exact folder names, not globs"), gap: nil)
        }
        let requests = scope.everywhere ? nil : scope.daemonRequests
        // Free text, from a system index that imports what is inside files
        // (`CONTENT`): its words in names and text, ranked, as this user's
        // daemon answers it (and the front asks both).
        if let words, output.kinds == nil, try answerWords(words, client: client, requests: requests) {
            return .answered
        }
        // What is inside files comes from what the system index imported
        // (`CONTENT`), each file as this user may read it; one that
        // imports nothing declines.
        let columns = mode == .entries ? OneShotSession.importedColumns(output) : []
        var answer: DaemonClient.Answer
        let ordered = columns.isEmpty ? order(client) : nil
        do {
            answer = try client.query(
                question.text, syntax: question.syntax, scopes: requests, rules: scope.daemonRules, output: mode,
                limit: ordered?.limit ?? limit, budget: budget, attributes: columns, order: ordered?.0,
                thenByPath: ordered?.thenByPath ?? false, onProgress: nil)
        } catch {
            guard error.code == .daemon else { throw error }
            guard case .notCovered = error.refusal else { return .failed(.error(error)) }
            return .declined(.error(error), gap: nil)
        }
        noteOtherReading(of: &answer, client: client, requests: requests)
        let unimported = answer.entries.contains { $0.kind == .file && $0.imported == nil }
        let importer = !columns.isEmpty && unimported ? try OneShotSession.columnImporter(output) : nil
        defer { importer?.pool.shutdown() }
        present(answer, importer: importer)
        return .answered
    }

    /// Answers free text from a daemon that indexes content: the words in
    /// names or text, ranked (names holding every word first, then the
    /// most recently modified). False when the daemon does not index
    /// content (the caller then asks for a name search).
    private func answerWords(
        _ words: [UInt8], client: DaemonClient, requests: [ScopeRequest]?
    ) throws(MetadataError) -> Bool {
        let mode: OneShotOutput = output.count ? .count : .entries
        var answer: DaemonClient.Answer
        do {
            answer = try client.query(
                words, syntax: "words", scopes: requests, rules: scope.daemonRules, output: mode, budget: budget)
        } catch {
            if error.code == .tooExpensive || error.code == .querySyntax { throw error }
            return false
        }
        // Counted to the limit, as the ranked paths are cut to it.
        if mode == .count, let limit = output.limit { answer.count = min(answer.count, limit) }
        Self.print(answer, mode: mode, nullTerminated: output.nullTerminated) {
            let items = answer.entries.map { MetadataItem(daemonEntry: $0, container: scope.container) }
            OneShotSession.print(MetadataPredicate.rankWords(items, text: words), output: output, ranked: true)
        }
        return true
    }

    /// Prints an answer as a crawl would: the count, or the paths (NUL
    /// becomes the line terminator), or, for entries, what `printEntries`
    /// does.
    static func print(
        _ answer: DaemonClient.Answer, mode: OneShotOutput, nullTerminated: Bool, printEntries: () -> Void = {}
    ) {
        if answer.importing > 0 {
            Diagnostics.warn(
                "the index daemon is still importing \(answer.importing) files; results may miss some of them "
                    + "(mdq daemon status)")
        }
        if answer.stale {
            Diagnostics.warn(
                "the index daemon is still checking its index against the disk; results may be out of date")
        }
        ProcessEnvironment.ignoreBrokenPipe()
        switch mode {
        case .count:
            StandardOutput.print(String(answer.count))
        case .paths:
            var out = answer.paths
            if !nullTerminated {
                for i in out.indices where out[i] == 0 { out[i] = 0x0A }
            }
            StandardOutput.write(out)
        case .entries:
            printEntries()
        }
        if let note = answer.note { Diagnostics.note(note) }
    }
}

extension DaemonAnswer {
    /// Ends the process on SIGINT or SIGTERM with the status a killed
    /// process has, once per process (the crawl that may follow keeps it).
    static func exitOnInterrupt() {
        guard !interruptHandled.exchange(true, ordering: .relaxed) else { return }
        ProcessEnvironment.onInterrupt { signal in StandardOutput.exitOnInterrupt(signal: signal) }
    }

    private static let interruptHandled = Atomic<Bool>(false)
}
