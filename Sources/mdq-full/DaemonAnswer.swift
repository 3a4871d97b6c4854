import MDQDaemon
import MDQEngine
import MDQLive
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

    /// Asks the daemon and prints its answer; false when the caller must
    /// crawl instead (no daemon, a scope it does not index, or it went
    /// away, which is said on stderr).
    ///
    /// - Throws: `MetadataError` `.daemon` when the daemon is required
    ///   (`--daemon`) but cannot answer; `.querySyntax` as a crawl would.
    func run() throws -> Bool {
        guard scope.daemon != .noDaemon else { return false }
        // A predicate on what is inside files is answered by a daemon that
        // indexes content (else it says not-covered, and this crawls).
        // SIGINT/SIGTERM are blocked for a sigwait thread (MDQ.main): while
        // this waits on the daemon they end the process at once (closing
        // the connection, which cancels the query in the daemon).
        Self.exitOnInterrupt()
        let required = scope.daemon == .daemon
        let client: DaemonClient
        do {
            client = try DaemonClient.connect()
        } catch {
            // No daemon of this user's: the system index, where it covers the scopes.
            if try answerFromSystemIndex() { return true }
            if required {
                if error.underlying == .noSuchFileOrDirectory, (try? DaemonClient.connectSystem()) != nil {
                    throw MetadataError.daemon(
                        "no daemon of yours is running, and the system index does not cover this search "
                            + "(mdq system status says what it covers)")
                }
                throw error
            }
            if error.refusal == .untrusted {
                // Someone else's socket where ours should be: not a byte to it.
                Diagnostics.warn(error.message + "; searching by crawling")
                return false
            }
            if error.underlying == .connectionRefused {
                // A socket but nobody behind it: the daemon died.
                Diagnostics.warn(
                    "the index daemon is not running (it left \(error.path?.string ?? "its socket")); searching by crawling"
                )
            }
            return false
        }
        // The current folder when none is named (the daemon says whether
        // it covers it); everything indexed only with --everywhere.
        let requests = scope.everywhere ? nil : scope.daemonRequests
        if let words, scope.daemonRules != nil, output.kinds == nil,
            try answerWords(words, client: client, requests: requests)
        {
            return true
        }
        if scope.daemonRules == nil {
            if required {
                throw MetadataError.daemon(
                    "--exclude globs cannot be answered by the daemon; give exact folder names")
            }
            Diagnostics.note(
                "the index daemon answers --exclude with exact folder names, not globs; searching by crawling")
            return false
        }
        let mode = self.mode
        let columns = mode == .entries ? OneShotSession.importedColumns(output) : []
        let asked = Result { () throws(MetadataError) -> DaemonClient.Answer in
            try client.query(
                question.text, syntax: question.syntax, scopes: requests, rules: scope.daemonRules, output: mode,
                limit: limit, budget: budget, attributes: columns,
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
            guard error.code == .daemon, !required else { throw error }
            guard case .notCovered(let gap) = error.refusal else {
                Diagnostics.warn("the index daemon did not answer (\(error.message)); searching by crawling")
                return false
            }
            if try answerFromSystemIndex() { return true }
            if let gap {
                // An option (or an index still being built) keeps the daemon
                // from answering a folder it indexes: said once, then crawled.
                Diagnostics.note("\(gap); searching by crawling")
            }
            return false
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
        return true
    }

    /// What the daemon is asked for: `--type` is a filter on the items, so
    /// it asks for them; everything else is said to the daemon.
    private var mode: OneShotOutput {
        output.kinds != nil ? .entries : output.count ? .count : output.needsItems || output.json ? .entries : .paths
    }

    /// The daemon cuts the answer to `--limit` unless the items are sorted
    /// or filtered here first.
    private var limit: Int? { output.sort.isEmpty && output.kinds == nil ? output.limit : nil }

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

    /// Answers from the system index (`mdq system`) when one runs and
    /// covers the scopes: names and stat data, filtered by what this user
    /// may see. False when there is none, it does not cover them, or it
    /// cannot answer (the caller crawls, as it would have).
    private func answerFromSystemIndex() throws -> Bool {
        guard scope.daemonRules != nil, let client = try? DaemonClient.connectSystem() else { return false }
        let requests = scope.everywhere ? nil : scope.daemonRequests
        // What is inside files is not in the system index.
        guard predicate.importedAttributes.isEmpty, OneShotSession.importedColumns(output).isEmpty else { return false }
        guard
            var answer = try? client.query(
                question.text, syntax: question.syntax, scopes: requests, rules: scope.daemonRules, output: mode,
                limit: limit, budget: budget, attributes: [], onProgress: nil)
        else { return false }
        noteOtherReading(of: &answer, client: client, requests: requests)
        present(answer, importer: nil)
        return true
    }

    /// Answers free text from a daemon that indexes content: the words in
    /// names or text, ranked (names holding every word first, then the
    /// most recently modified). False when the daemon does not index
    /// content (the caller then asks for a name search).
    private func answerWords(_ words: [UInt8], client: DaemonClient, requests: [ScopeRequest]?) throws -> Bool {
        let mode: OneShotOutput = output.count ? .count : .entries
        let answer: DaemonClient.Answer
        do {
            answer = try client.query(
                words, syntax: "words", scopes: requests, rules: scope.daemonRules, output: mode, budget: budget)
        } catch {
            if error.code == .tooExpensive || error.code == .querySyntax { throw error }
            return false
        }
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
