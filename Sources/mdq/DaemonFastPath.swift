import MetadataIndex

/// The searches a shell runs most, answered by the index daemon without
/// ArgumentParser: `mdq [--daemon] [-a|--everywhere] [--hidden] [--count]
/// [-0] (QUERY | --name TEXT)` with no folder and no other option: the
/// current folder (when the daemon indexes it), or everything indexed.
///
/// ArgumentParser builds its command tree by reflection; in a statically
/// linked mdq that is about half of a run's start-up (4 ms of first
/// protocol-conformance lookups), more than the daemon takes to answer. So
/// these forms are recognised by hand and sent straight to the daemon.
/// Anything else, any doubt (a word that names a subcommand, a query that
/// does not parse), a daemon that is not running or does not cover the
/// scope, and the full command line takes over: it gives the same answer,
/// and every error message, the usual way.
enum DaemonFastPath {
    /// Answers and exits, or returns to let the full command line run.
    static func run(_ arguments: [String]) {
        var count = false
        var nullTerminated = false
        var hidden = false
        var everywhere = false
        var name: String?
        var query: String?
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            switch argument {
            case "--count": count = true
            case "-0": nullTerminated = true
            case "--hidden": hidden = true
            case "-a", "--everywhere": everywhere = true
            case "--daemon": break  // the daemon answers here, or the full command line does
            case "--":
                // The query after the terminator (mdfind's way of passing it).
                guard query == nil, name == nil, rest.count == 1 else { return }
                query = rest.popFirst()
            case "--name":
                guard name == nil, let value = rest.popFirst() else { return }
                name = value
            default:
                // One query, not an option, not a subcommand's name.
                guard query == nil, !argument.hasPrefix("-"), !subcommands.contains(argument) else { return }
                query = argument
            }
        }
        guard (name == nil) != (query == nil), !(count && nullTerminated) else { return }
        let raw = RawArguments()
        let predicate: MetadataPredicate
        do {
            if let name {
                predicate = try MetadataPredicate.nameMatching(raw.bytes(for: name))
            } else {
                predicate = try CommandLineQuery.predicate(raw.bytes(for: query!), spotlight: false)
            }
        } catch {
            return
        }
        DaemonAnswer.exitOnInterrupt()
        let rules = ScopeRules(includeHidden: hidden)
        // The current folder, as the full command line searches it (the
        // daemon answers not-covered when it does not index it: a crawl).
        let scopes = everywhere ? nil : [ScopeRequest(path: ProcessEnvironment.currentDirectory, rules: rules)]
        if let query, CommandLineQuery.isFreeText(raw.bytes(for: query)) {
            // Free text: a daemon that indexes content searches names and
            // text, ranked (else the name search below).
            answerWords(
                raw.bytes(for: query), count: count, nullTerminated: nullTerminated, scopes: scopes, rules: rules)
        }
        guard let client = try? DaemonClient.connect() else { return }
        let mode: OneShotOutput = count ? .count : .paths
        let answer: DaemonClient.Answer
        do {
            answer = try client.query(
                Array(predicate.predicateFormat.utf8), scopes: scopes, rules: rules, output: mode)
        } catch {
            // Past its budget, a crawl would be no cheaper: say so now.
            if error.code == .tooExpensive {
                Diagnostics.error(error.description)
                ProcessExit.exit(1)
            }
            // Not indexed, or gone: the full command line crawls (or, with
            // --daemon, says why).
            return
        }
        DaemonAnswer.print(answer, mode: mode, nullTerminated: nullTerminated)
        ProcessExit.exit(0)
    }

    /// Answers free text from a content-indexing daemon and exits; returns
    /// when the daemon does not index content (or is not there).
    private static func answerWords(
        _ text: [UInt8], count: Bool, nullTerminated: Bool, scopes: [ScopeRequest]?, rules: ScopeRules
    ) {
        guard let client = try? DaemonClient.connect() else { return }
        let mode: OneShotOutput = count ? .count : .entries
        let answer: DaemonClient.Answer
        do {
            answer = try client.query(text, syntax: "words", scopes: scopes, rules: rules, output: mode)
        } catch {
            if error.code == .tooExpensive {
                Diagnostics.error(error.description)
                ProcessExit.exit(1)
            }
            return
        }
        DaemonAnswer.print(answer, mode: mode, nullTerminated: nullTerminated) {
            let items = answer.entries.map { MetadataItem(daemonEntry: $0, container: nil) }
            var out: [UInt8] = []
            for item in MetadataPredicate.rankWords(items, text: text) {
                out += item.pathBytes
                out.append(nullTerminated ? 0 : 0x0A)
            }
            StandardOutput.write(out)
        }
        ProcessExit.exit(0)
    }

    private static let subcommands: Set<String> = ["find", "ls", "daemon", "index", "help"]
}
