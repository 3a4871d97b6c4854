import Glibc
import MDQWire
import SystemPackage

/// `mdq [--daemon] [-a|--everywhere] [--hidden] [--count | -0] [--limit N]
/// (QUERY | --name TEXT | -- QUERY)`: the forms answered here, by the daemon, with
/// what `mdq-full` would print for them byte for byte.
///
/// The daemon reads the query (`"syntax":"command-line"` or `"name"`), so
/// this program carries no parser: free text becomes a ranked search of
/// names and text when the daemon indexes content, a name search
/// otherwise; a predicate or glob is read as `mdq` reads it. Any answer
/// but a clean one (a syntax error, a scope the daemon does not index, a
/// refusal) leaves the work to the full command, before a byte is printed.
struct QuickSearch {
    var count = false
    var nullTerminated = false
    var hidden = false
    var everywhere = false
    /// The query's bytes as given, and whether it came from `--name`.
    var text: [UInt8] = []
    var isName = false
    /// The folder named (`--onlyin DIR` or DIR after the query), as given;
    /// nil for the current folder.
    var folder: [UInt8]?
    /// `--host NAME` (repeatable, comma lists) and `--all-hosts`: a search
    /// across hosts, which the system index answers when it searches the
    /// shared index for its users (`SEARCH`).
    var hosts: [String] = []
    var allHosts = false
    /// `--limit N`: at most N results, or a count of at most N.
    var limit: Int?

    /// The search `arguments` ask for, or nil when they are not one of the
    /// forms answered here.
    init?(_ arguments: [String]) {
        guard let program = arguments.first, Self.runsAsMDQ(program) else { return nil }
        var name: [UInt8]?
        var positionals: [[UInt8]] = []
        var folders: [[UInt8]] = []
        var index = 1
        let argc = Int(CommandLine.argc)
        func raw(_ i: Int) -> [UInt8] {
            guard let pointer = CommandLine.unsafeArgv[i] else { return [] }
            return Array(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
        }
        while index < argc {
            let argument = arguments[index]
            switch argument {
            case "--count": count = true
            case "-0": nullTerminated = true
            case "--hidden": hidden = true
            case "-a", "--everywhere": everywhere = true
            case "--daemon": break  // the daemon answers here, or the full command does
            case "--all-hosts": allHosts = true
            case "--host":
                guard index + 1 < argc else { return nil }
                index += 1
                for name in arguments[index].split(separator: ",") {
                    // Names as the shared index gives them; anything else
                    // is the full command's to judge.
                    guard name.utf8.count <= 63, name.utf8.allSatisfy(Self.isHostNameByte) else { return nil }
                    if !hosts.contains(String(name)) { hosts.append(String(name)) }
                }
                guard !hosts.isEmpty else { return nil }
            case "--limit":
                guard index + 1 < argc, let value = Int(arguments[index + 1]), value >= 0,
                    arguments[index + 1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
                else { return nil }
                index += 1
                limit = value
            case "--":
                // Everything after the terminator is the query and folders.
                let rest = (index + 1..<argc).map(raw)
                if positionals.isEmpty, let first = rest.first, Self.isSubcommand(first) { return nil }
                positionals += rest
                index = argc
            case "--name":
                guard name == nil, index + 1 < argc else { return nil }
                index += 1
                name = raw(index)
            case "--onlyin":
                guard index + 1 < argc else { return nil }
                index += 1
                folders.append(raw(index))
            default:
                // The query or a folder: not an option, not a subcommand.
                guard !argument.hasPrefix("-"), positionals.isEmpty ? !Self.subcommands.contains(argument) : true
                else { return nil }
                positionals.append(raw(index))
            }
            index += 1
        }
        // As the full command reads them: with --name every positional
        // argument is a folder, else the first is the query.
        if name == nil {
            guard !positionals.isEmpty else { return nil }
            text = positionals.removeFirst()
        } else {
            text = name!
            isName = true
        }
        folders += positionals
        // One folder at most (several are merged by the full command), none
        // with --everywhere (an error the full command words), no query
        // from standard input.
        guard folders.count <= (everywhere ? 0 : 1), !(count && nullTerminated), isName || text != [0x2D] else {
            return nil
        }
        // The protocol's strings are UTF-8; other bytes go the full way.
        guard String(validating: text, as: UTF8.self) != nil else { return nil }
        // Across hosts: no folder (that is --onlyin NAME:/path), no rule of
        // local folders.
        if searchesHosts {
            guard folders.isEmpty, !hidden, !everywhere, hosts.isEmpty || !allHosts else { return nil }
            // A credential of the user's own: the full command searches
            // with it (and says when it does not let them in), as every
            // other form of the search does.
            guard !Self.hasOwnCredential() else { return nil }
            return
        }
        if let folder = folders.first {
            guard !folder.isEmpty, String(validating: folder, as: UTF8.self) != nil else { return nil }
            self.folder = folder
        }
    }

    /// Whether this run is `mdq`'s own, not a personality's (`mdfind` and
    /// `mdls` read Apple's command line: the full command's) and not
    /// sent to the full command by `MDQ_NO_FAST_PATH`.
    static func runsAsMDQ(_ program: String) -> Bool {
        let base = program.split(separator: "/").last.map(String.init) ?? program
        guard base != "mdfind", base != "mdls" else { return false }
        if let value = getenv("MDQ_NO_FAST_PATH"), value.pointee != 0 { return false }
        return true
    }

    /// Whether this is a search across hosts.
    var searchesHosts: Bool { allHosts || !hosts.isEmpty }

    /// `,"timeZone":NAME`: this user's zone, whose days mdfind's
    /// `$time.today` means (the system index runs in its own).
    static func timeZoneField(_ out: inout JSONWriter) {
        guard let zone = ClientTimeZone.identifier() else { return }
        out.field("timeZone")
        out.string(Array(zone.utf8))
    }

    /// Whether `$MDQ_SHARED` names a shared index (blank names none), as
    /// `SharedIndexLocation` reads it.
    static func hasOwnCredential() -> Bool {
        guard let value = getenv("MDQ_SHARED") else { return false }
        return String(cString: value).contains { !$0.isWhitespace }
    }

    static func isHostNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2E || byte == 0x5F
            || byte == 0x2D
    }

    private static let subcommands: Set<String> = ["find", "ls", "daemon", "index", "system", "import", "help"]

    private static func isSubcommand(_ argument: [UInt8]) -> Bool {
        subcommands.contains(String(decoding: argument, as: UTF8.self))
    }

    /// The request, as `mdq-full` would ask it of the daemon; with
    /// `passing`, its folder is named by the descriptor passed with it
    /// (how the system index takes scopes).
    func request(folder: [UInt8], passing: Bool = false) -> [UInt8] {
        var out = JSONWriter()
        out.raw(#"{"id":1,"command":"query","syntax":"#)
        if isName { out.raw(#""name""#) } else { out.raw(#""command-line""#) }
        out.field("predicate")
        out.string(text)
        Self.timeZoneField(&out)
        out.field("output")
        if count { out.raw(#""count""#) } else { out.raw(#""paths""#) }
        // As the full command asks it: the daemon cuts the answer (or the
        // count) to it.
        if let limit {
            out.raw(#","limit":"#)
            out.integer(limit)
        }
        func rules() {
            out.key("hidden")
            out.bool(hidden)
            out.raw(#","exclude":[],"excludeChildren":[]"#)
        }
        if everywhere {
            out.raw(#","rules":{"#)
            rules()
            out.raw("}")
        } else {
            // The current folder (the daemon answers not-covered when it
            // does not index it: the full command then crawls).
            out.raw(#","scopes":[{"path":"#)
            out.string(folder)
            out.raw(",")
            rules()
            if passing { out.raw(#","descriptor":0}],"descriptors":1"#) } else { out.raw("}]") }
        }
        out.raw("}\n")
        return out.bytes
    }

    /// Asks the daemons and prints the answer, then exits; returns when the
    /// full command must answer instead (nothing printed).
    ///
    /// Routed as every search is (`SearchRouter`): this user's daemon
    /// first, then the system index (whose answers are this user's to
    /// see), each asked once. When every daemon there is declines the
    /// search (`not-covered`), the full command is told so
    /// (`SearchRouter.declinedVariable`) and crawls without asking them
    /// again.
    func answer() {
        if searchesHosts {
            answerAcrossHosts()
            return
        }
        var folder: [UInt8] = []
        if !everywhere {
            guard let current = Self.currentFolder(), String(validating: current, as: UTF8.self) != nil else { return }
            folder = Self.absolute(self.folder ?? [], in: current)
        }
        let outcome = SearchRouter().route { destination -> SearchRouter.Reply<Void> in
            switch destination {
            case .ownDaemon:
                guard var own = DaemonConnection.open() else { return .unavailable(()) }
                defer { own.close() }
                return ask(&own, folder: folder, passing: -1)
            case .systemIndex:
                guard var system = DaemonConnection.openSystem() else { return .unavailable(()) }
                defer { system.close() }
                // Given the folder as this user opened it; one this user
                // cannot open is the full command's to search (and to fail
                // on, as a crawl fails).
                var opened: Int32 = -1
                if !everywhere {
                    opened = DaemonConnection.openFolder(folder)
                    guard opened >= 0 else { return .failed(()) }
                }
                defer { if opened >= 0 { Glibc.close(opened) } }
                return ask(&system, folder: folder, passing: opened)
            }
        }
        guard case .here(let trail) = outcome, trail.everyDaemonDeclined else { return }
        // What a daemon leaves out of a folder it indexes: worth a word if
        // the search is crawled (as the full command says it).
        if let gap = trail.gap { Self.write(2, Array("mdq: note: \(gap); searching by crawling\n".utf8)) }
        setenv(SearchRouter.declinedVariable, "1", 1)
    }

    /// Sends the search to one daemon and prints its answer, then exits;
    /// returns why not when it did not answer (nothing printed): declined,
    /// or failed (the full command asks again and says why).
    private func ask(
        _ connection: inout DaemonConnection, folder: [UInt8], passing opened: Int32
    ) -> SearchRouter.Reply<Void> {
        let sent = connection.send(
            request(folder: folder, passing: opened >= 0), passing: opened >= 0 ? [opened] : [])
        guard sent else { return .failed(()) }
        // Paths come in parts, one per slice the daemon scanned: each is
        // printed as it arrives, so printing overlaps the scan.
        var printed = false
        while true {
            guard let line = connection.line(), let reply = try? JSONValue.parse(line) else {
                guard !printed else { Self.fail("the daemon went away mid-answer") }
                return .failed(())
            }
            if let length = reply["bytes"]?.integer {
                guard length >= 0, var paths = connection.read(exactly: Int(length)) else {
                    guard !printed else { Self.fail("the daemon went away mid-answer") }
                    return .failed(())
                }
                if !printed { signal(SIGPIPE, SIG_IGN) }
                printed = true
                if !nullTerminated { Self.newlines(&paths) }
                Self.write(1, paths)
            } else if let error = reply["error"] {
                // Past its budget a crawl would be no cheaper: say so now.
                // A folder the daemon does not index is the next daemon's,
                // or a crawl's. Anything else (a syntax error, a refusal)
                // is the full command's to say, unless part of the answer
                // is out already (a scope removed mid-answer).
                let message = error["message"]?.string ?? "the daemon refused the query"
                let code = DaemonErrorCode(of: error)
                if printed || code == .tooExpensive { Self.fail(message) }
                guard code == .notCovered else { return .failed(()) }
                return .declined((), gap: error["gap"]?.bool == true ? message : nil)
            } else if reply["done"]?.bool == true {
                Self.warn(importing: Int(reply["importing"]?.integer ?? 0), stale: reply["stale"]?.bool ?? false)
                if count {
                    signal(SIGPIPE, SIG_IGN)
                    Self.write(1, Array("\(reply["count"]?.integer ?? 0)\n".utf8))
                }
                // Free text that matched nothing as one piece: the daemon
                // says how mdfind's reading (each word) would do.
                if let note = reply["note"]?.string { Self.write(2, Array("mdq: note: \(note)\n".utf8)) }
                exit(0)
            }
            // Progress lines, and any the protocol adds later: skipped.
        }
    }

    /// The request for a search across hosts (`search-hosts`).
    func hostsRequest() -> [UInt8] {
        var out = JSONWriter()
        out.raw(#"{"id":1,"command":"search-hosts","#)
        DaemonCommand.searchHostsFields(
            text, isName: isName, counting: count, hosts: allHosts ? nil : hosts, limit: limit, into: &out)
        Self.timeZoneField(&out)
        out.raw("}\n")
        return out.bytes
    }

    /// Asks the system index for a search across hosts and prints its
    /// answer, then exits; returns when the full command must answer (no
    /// system index, one that does not search the shared index, or an
    /// answer it would not give: the full command says why).
    private func answerAcrossHosts() {
        // Set below for the full command alone, never inherited.
        unsetenv(SearchRouter.pastCapVariable)
        guard var system = DaemonConnection.openSystem() else { return }
        defer { system.close() }
        // No budget is asked: the system index's own bounds the search.
        system.silence = Int32(DaemonCommand.searchHostsSilence(budget: nil) * 1000)
        guard system.send(hostsRequest(), passing: []) else { return }
        var warnings: [[UInt8]] = []
        var printed = false
        while true {
            guard let line = system.line(), let reply = try? JSONValue.parse(line) else {
                guard !printed else { Self.fail("the system index went away mid-answer") }
                return
            }
            if let warning = reply["warning"]?.string {
                warnings.append(Array("mdq: warning: \(warning)\n".utf8))
            } else if let length = reply["bytes"]?.integer {
                guard length >= 0, var paths = system.read(exactly: Int(length)) else {
                    guard !printed else { Self.fail("the system index went away mid-answer") }
                    return
                }
                for warning in warnings { Self.write(2, warning) }
                warnings = []
                signal(SIGPIPE, SIG_IGN)
                printed = true
                if !nullTerminated { Self.newlines(&paths) }
                Self.write(1, paths)
            } else if let error = reply["error"] {
                guard !printed else { Self.fail(error["message"]?.string ?? "the search failed") }
                // The full command says why, with a credential's way out;
                // past the system index's cap, it need not search again
                // to know it.
                if DaemonErrorCode(of: error) == .tooExpensive,
                    error["message"]?.string?.contains(SearchRouter.pastCapReason) == true
                {
                    setenv(SearchRouter.pastCapVariable, "1", 1)
                }
                return
            } else if reply["done"]?.bool == true {
                for warning in warnings { Self.write(2, warning) }
                if count {
                    signal(SIGPIPE, SIG_IGN)
                    Self.write(1, Array("\(reply["count"]?.integer ?? 0)\n".utf8))
                }
                exit(0)
            }
        }
    }

    /// Each NUL ending a path made a newline.
    private static func newlines(_ paths: inout [UInt8]) {
        guard !paths.isEmpty else { return }
        paths.withUnsafeMutableBytes { bytes in
            // memchr: the C library's vector search, not a byte loop.
            var at = bytes.baseAddress!
            let end = at + bytes.count
            while at < end, let found = memchr(at, 0, end - at) {
                found.storeBytes(of: 0x0A, as: UInt8.self)
                at = found + 1
            }
        }
    }

    /// Says why the answer stops (exit status 1, as the full command's
    /// runtime errors).
    private static func fail(_ message: String) -> Never {
        write(2, Array("mdq: \(message)\n".utf8))
        exit(1)
    }

    /// What `mdq-full` says on stderr before such an answer.
    private static func warn(importing: Int, stale: Bool) {
        if importing > 0 {
            write(
                2,
                Array(
                    ("mdq: warning: the index daemon is still importing \(importing) files; results may miss some of "
                        + "them (mdq daemon status)\n").utf8))
        }
        if stale {
            write(
                2,
                Array(
                    ("mdq: warning: the index daemon is still checking its index against the disk; results may be "
                        + "out of date\n").utf8))
        }
    }

    /// Writes everything; a closed pipe (`mdq … | head -1`) ends the process
    /// quietly with status 0, another failure with a message and status 1.
    private static func write(_ descriptor: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written >= 0 {
                offset += written
            } else if errno == EINTR {
                continue
            } else if descriptor == 2 {
                return  // nowhere left to say anything
            } else if errno == EPIPE {
                exit(0)
            } else {
                let reason = String(cString: strerror(errno))
                let message = Array("mdq: cannot write results: \(reason)\n".utf8)
                _ = message.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
                exit(1)
            }
        }
    }

    /// `path` made absolute against `current` and lexically normalized,
    /// with the same `FilePath` calls as the full command: the folder it
    /// asks the daemon for.
    static func absolute(_ path: [UInt8], in current: [UInt8]) -> [UInt8] {
        PathBytes.path(current).pushing(PathBytes.path(path)).lexicallyNormalized().bytes
    }

    /// getcwd(3), whatever its length.
    private static func currentFolder() -> [UInt8]? {
        var size = Int(PATH_MAX) + 1
        while size <= 1 << 20 {
            var buffer = [CChar](repeating: 0, count: size)
            if getcwd(&buffer, size) != nil {
                return buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            }
            guard errno == ERANGE else { return nil }
            size *= 2
        }
        return nil
    }
}
