import ArgumentParser
import Foundation
import MDQDaemon
import MDQLive
import MetadataIndex
import SystemPackage

/// `mdq daemon run|start|stop|status`: the index daemon, which keeps the
/// indexed scopes live and persisted for every `mdq` and every program.
struct DaemonCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run, start, stop or check the index daemon.",
        discussion: """
            The daemon keeps the scopes added with mdq index add live in one index, saves it \
            in the state folder ($MDQ_STATE_DIR, else $XDG_STATE_HOME/mdq, else ~/.local/state/mdq), \
            and answers mdq and other programs over a socket only you can reach, in the first of \
            $MDQ_RUNTIME_DIR, $XDG_RUNTIME_DIR/mdq, or run/ in the state folder (a folder in /tmp \
            with an unguessable name, recorded in the state folder's runtime-folder, when that path \
            is too long for a socket). Clients talk only to a socket in a private folder of yours \
            whose process runs as you (or root); otherwise mdq says why and crawls.
            """,
        subcommands: [Run.self, Start.self, Stop.self, Status.self]
    )

    /// `mdq daemon run`: in the foreground, until SIGTERM or SIGINT (what a
    /// service manager runs).
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the daemon in the foreground (what systemd runs); SIGTERM saves and stops it.")

        @Option(help: ArgumentHelp("Seconds between snapshots while changes accumulate.", valueName: "SECONDS"))
        var snapshotInterval: Double = 60

        @OptionGroup var content: ContentOptions

        func validate() throws {
            guard snapshotInterval > 0 && snapshotInterval.isFinite else {
                throw ValidationError("--snapshot-interval must be more than 0 seconds")
            }
        }

        func run() throws {
            // Crawl and import threads come and go, and snapshots are
            // written, for as long as the daemon runs: what they free is
            // reused or given back (see tuneForDaemon).
            ProcessMemory.tuneForDaemon(arenas: 2)
            // Folders a system index keeps live are followed through it (no
            // inotify watch), unless turned off.
            let follows = ProcessInfo.processInfo.environment["MDQ_FOLLOW_SYSTEM_INDEX"] != "0"
            let daemon = try IndexDaemon.start(
                snapshotInterval: snapshotInterval, content: content.indexing, systemIndex: follows ? .system : nil
            ) { line in
                Diagnostics.log(line)
            }
            ProcessEnvironment.onInterrupt { _ in
                daemon.stop()
                ProcessExit.exit(0)
            }
            daemon.waitUntilStopped()
        }
    }

    /// `mdq daemon start`: in the background, logging to the state folder.
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start the daemon in the background.")

        @OptionGroup var content: ContentOptions

        func run() throws {
            if let running = try? DaemonClient.connect().hello() {
                StandardOutput.print("mdq daemon is already running (pid \(running.pid))")
                return
            }
            var paths = DaemonPaths.standard
            try paths.prepare()
            let pid = try DaemonCommand.startInBackground(
                ["daemon", "run"] + content.arguments, paths: paths, named: "the daemon")
            StandardOutput.print("mdq daemon started (pid \(pid)); log: \(paths.log.string)")
        }
    }

    /// Runs this program with `arguments` in the background, logging to
    /// `paths.log`, and waits until the daemon it starts answers at
    /// `paths` (at once, restored or not; 10 s at most) or exits.
    ///
    /// - Returns: the pid the daemon answers with.
    /// - Throws: `MetadataError` `.daemon` naming it (`named`) and its log.
    static func startInBackground(_ arguments: [String], paths: DaemonPaths, named: String) throws -> Int {
        let pid: Int32
        do {
            pid = try DetachedProcess.start(DetachedProcess.currentExecutable, arguments: arguments, log: paths.log)
        } catch {
            throw MetadataError.daemon("cannot start \(named)", path: paths.log, underlying: error)
        }
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline {
            if let running = try? DaemonClient.connect(paths).hello() { return running.pid }
            guard DetachedProcess.isAlive(pid) else { break }
            usleep(20_000)
        }
        throw MetadataError.daemon("\(named) did not start; see its log", path: paths.log)
    }

    /// Asks the daemon `client` talks to to stop, and waits (2 min at most)
    /// until its process has saved its index and exited.
    static func stop(_ client: DaemonClient) throws {
        let pid = (try? client.hello().pid) ?? 0
        try client.stop()
        let deadline = Date(timeIntervalSinceNow: 120)
        while pid > 0 && DetachedProcess.isAlive(Int32(pid)) && Date() < deadline { usleep(20_000) }
    }

    /// `mdq daemon stop`: saves the snapshot, then exits.
    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the daemon (it saves its index first).")

        func run() throws {
            let paths = DaemonPaths.standard
            let client: DaemonClient
            do {
                client = try DaemonClient.connect(paths)
            } catch {
                StandardOutput.print("mdq daemon is not running")
                return
            }
            try DaemonCommand.stop(client)
            StandardOutput.print("mdq daemon stopped")
        }
    }

    /// `mdq daemon status`.
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the daemon's scopes, entries, watches, memory, uptime, snapshot age and problems.")

        func run() throws {
            let paths = DaemonPaths.standard
            let status = try DaemonClient.connect(paths).status()
            var lines: [String] = []
            lines.append("mdq daemon: running (pid \(status.pid)), up \(Self.duration(status.uptime))")
            lines.append("socket: \(paths.socket.string)")
            let perEntry = status.entries > 0 ? " (\(status.residentBytes / status.entries) B/entry)" : ""
            lines.append(
                "index: \(status.entries) entries, \(status.watches) watches, "
                    + "\(Self.megabytes(status.residentBytes)) resident\(perEntry)")
            if let grams = status.nameGrams {
                let perEntry = status.entries > 0 ? " (\(grams.bytes / status.entries) B/entry)" : ""
                lines.append(
                    "name trigrams: \(grams.postings) postings, \(Self.megabytes(grams.bytes))\(perEntry)"
                        + (grams.complete ? "" : ", still being built (searches scan meanwhile)"))
            }
            lines.append(
                "snapshot: " + (status.snapshotAge.map { "saved \(Self.duration($0)) ago" } ?? "none saved yet"))
            if status.verifying { lines.append("checking the index against the disk (answers may be stale)") }
            if status.filling {
                lines.append("reading the sizes and dates of new scopes' files (names answer already)")
            }
            if let content = status.content {
                lines.append(
                    "content: \(content.stored) files imported"
                        + (content.pending > 0 ? ", \(content.pending) pending" : ", none pending"))
                lines.append("import worker: " + (status.importWorker ?? "not started yet"))
            } else {
                lines.append("content: not indexed (mdq daemon start without --no-content)")
            }
            lines.append(status.scopes.isEmpty ? "scopes: none (mdq index add DIR)" : "scopes:")
            for (scope, live) in status.scopes {
                lines.append(
                    "  " + IndexCommand.describe(scope, namesOnly: status.namesOnlyScopes.contains(scope.path))
                        + (live ? "" : " (not live: see the log)"))
            }
            if !status.followed.isEmpty {
                lines.append(
                    "followed through the system index (\(status.followedFolders) folders, no inotify watch each): "
                        + status.followed.map(\.string).joined(separator: ", "))
            }
            lines.append(status.problems.isEmpty ? "problems: none" : "problems:")
            for problem in status.problems { lines.append("  " + problem) }
            // Which index serves what: searches of folders this daemon does
            // not index go to the system index when one runs.
            if let system = try? DaemonClient.connectSystem().status() {
                let covered = system.scopes.map(\.scope.path.string).joined(separator: ", ")
                lines.append(
                    "system index: running (pid \(system.pid)); it answers searches this daemon does not cover, in "
                        + (covered.isEmpty ? "nothing yet" : covered))
            }
            StandardOutput.print(lines.joined(separator: "\n"))
        }

        static func duration(_ seconds: Double) -> String {
            let total = Int(seconds)
            if total < 60 { return "\(total) s" }
            if total < 3600 { return "\(total / 60) min \(total % 60) s" }
            return "\(total / 3600) h \(total % 3600 / 60) min"
        }

        static func megabytes(_ bytes: Int) -> String {
            String(Double(bytes / 100_000) / 10) + " MB"
        }
    }
}

/// How the daemon imports what is inside files.
struct ContentOptions: ParsableArguments {
    @Flag(help: "Index names and stat data only: do not import what is inside files.")
    var noContent = false

    @Option(
        help: ArgumentHelp(
            "Import workers at once (each at nice 19, idle I/O class): the share of the processors importing takes.",
            valueName: "N"))
    var importWorkers: Int = 1

    func validate() throws {
        guard (1...64).contains(importWorkers) else { throw ValidationError("--import-workers must be 1 to 64") }
    }

    var indexing: IndexDaemon.ContentIndexing? {
        noContent ? nil : IndexDaemon.ContentIndexing(workers: importWorkers)
    }

    /// The same choice for `mdq daemon run`.
    var arguments: [String] {
        noContent ? ["--no-content"] : ["--import-workers", String(importWorkers)]
    }
}

/// `mdq index add|remove|list`: what the daemon keeps live.
struct IndexCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Choose what the index daemon keeps live.",
        subcommands: [Add.self, Remove.self, List.self]
    )

    /// `mdq index add DIR... | --container PATH|ID [--scope ...]`.
    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: """
                Index folders (or a container's scopes): this returns once their names answer; their files' \
                sizes and dates are read next.
                """,
            usage: "mdq index add [<options>] <dir> ...")

        @OptionGroup var scope: ScopeOptions

        @Argument(help: ArgumentHelp("Folders to index.", valueName: "dir"), completion: .directory)
        var folders: [String] = []

        @Flag(
            help: """
                Index names and stat data only: import nothing inside these folders' files (a folder \
                added again without it imports again; inside an indexed folder, this excludes a subfolder).
                """)
        var noContent = false

        @Flag(help: "Return once the files' sizes and dates are read too, not only their names.")
        var wait = false

        func run() throws {
            let raw = RawArguments()
            let resolved = try scope.resolve(folders: folders, raw: raw)
            guard !resolved.isDefault else { throw ValidationError("give folders to index, or --container") }
            guard let requests = resolved.daemonRequests else {
                throw ValidationError("the daemon takes exact folder names to --exclude, not globs")
            }
            for root in resolved.roots { try root.checkAccessible() }
            let client = try DaemonClient.connect()
            for request in requests {
                let (entries, filling) = try client.addScope(request, content: !noContent, namesFirst: !wait)
                StandardOutput.print(
                    "indexed \(IndexCommand.describe(request, namesOnly: noContent)) (\(entries) entries in the index)"
                        + (filling ? "; names answer now, sizes and dates follow" : ""))
            }
        }
    }

    /// `mdq index remove DIR...`.
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop indexing folders.")

        @Argument(help: ArgumentHelp("Indexed folders.", valueName: "dir"), completion: .directory)
        var folders: [String] = []

        func run() throws {
            guard !folders.isEmpty else { throw ValidationError("give the indexed folders to remove") }
            let raw = RawArguments()
            let client = try DaemonClient.connect()
            let cwd = ProcessEnvironment.currentDirectory
            for folder in folders {
                let path = cwd.pushing(FilePath.fromBytes(raw.bytes(for: folder))).lexicallyNormalized()
                if try client.removeScopes(at: path) == 0 {
                    throw MetadataError.daemon("not indexed", path: path)
                }
                StandardOutput.print("no longer indexed: \(path.string)")
            }
        }
    }

    /// `mdq index list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the indexed folders and their rules.")

        func run() throws {
            let scopes = try DaemonClient.connect().indexedScopeList()
            StandardOutput.print(
                scopes.map { describe($0.scope, namesOnly: $0.namesOnly) + ($0.live ? "" : " (not live)") }
                    .joined(separator: "\n"))
        }
    }

    /// A scope as one line: its folder and its rules.
    static func describe(_ scope: ScopeRequest, namesOnly: Bool = false) -> String {
        var parts: [String] = []
        if namesOnly { parts.append("names only, no content") }
        if scope.rules.includeHidden { parts.append("hidden items included") }
        let excluded = scope.rules.excludedFolderNames.map { String(decoding: $0, as: UTF8.self) }.sorted()
        if !excluded.isEmpty { parts.append("excluding " + excluded.joined(separator: ", ")) }
        let children = scope.rules.excludedRootChildNames.map { String(decoding: $0, as: UTF8.self) }.sorted()
        if !children.isEmpty { parts.append("without " + children.joined(separator: ", ")) }
        if scope.rules.stayOnFileSystem { parts.append("one filesystem") }
        return scope.path.string + (parts.isEmpty ? "" : " (" + parts.joined(separator: "; ") + ")")
    }
}
