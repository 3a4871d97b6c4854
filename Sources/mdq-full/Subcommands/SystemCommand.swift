import ArgumentParser
import Foundation
import MetadataIndex
import SystemPackage

/// `mdq system run|start|stop|status`: the system index, run by root, which
/// keeps whole local filesystems live with one fanotify mark each and
/// answers every local user what that user may see.
struct SystemCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "system",
        abstract: "Run, start, stop or check the system index (root): whole filesystems, live, for every user.",
        discussion: """
            The system index keeps the local filesystems live with one fanotify mark each \
            (Linux 5.9+, CAP_SYS_ADMIN) instead of a watch per folder, saves its index in \
            $MDQ_SYSTEM_STATE_DIR (else /var/lib/mdq), and answers every local user over \
            $MDQ_SYSTEM_RUNTIME_DIR/daemon.sock (else /run/mdq/daemon.sock): each user is \
            answered only entries whose parent folder they may read and whose every folder \
            from / down they may search, as the kernel would let them (modes, groups, ACLs). \
            Without --mount it indexes every local disk filesystem mounted now (not /tmp, \
            /media, /mnt, /run, network or memory filesystems). A filesystem that refuses \
            the mark is watched folder by folder with inotify (mdq system status says which).
            """,
        subcommands: [Run.self, Start.self, Stop.self, Status.self]
    )

    /// The filesystems asked for, as absolute folders.
    struct Mounts: ParsableArguments {
        @Option(
            name: .customLong("mount"),
            help: ArgumentHelp(
                "Index this filesystem, from its mount point (repeatable; default: every local disk filesystem).",
                valueName: "DIR"))
        var mounts: [String] = []

        var resolved: [FilePath]? {
            guard !mounts.isEmpty else { return nil }
            return mounts.map { FilePath(URL(fileURLWithPath: $0).standardizedFileURL.path) }
        }
    }

    static func requireRoot(_ what: String) throws {
        guard getuid() == 0 else {
            throw MetadataError.daemon("\(what) needs root (fanotify filesystem marks need CAP_SYS_ADMIN)")
        }
    }

    /// `mdq system run`: in the foreground, until SIGTERM or SIGINT.
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the system index in the foreground (what systemd runs); SIGTERM saves and stops it.")

        @OptionGroup var mounts: Mounts

        @Option(help: ArgumentHelp("Seconds between snapshots while changes accumulate.", valueName: "SECONDS"))
        var snapshotInterval: Double = 60

        func validate() throws {
            guard snapshotInterval > 0 && snapshotInterval.isFinite else {
                throw ValidationError("--snapshot-interval must be more than 0 seconds")
            }
        }

        func run() throws {
            try SystemCommand.requireRoot("mdq system run")
            ProcessMemory.tuneForDaemon(arenas: 2)
            // Without --mount, the local disk filesystems, following the mount table.
            let daemon = try IndexDaemon.startSystem(mounts: mounts.resolved, snapshotInterval: snapshotInterval) {
                line in
                Diagnostics.log(line)
            }
            // Listening, fanotify started: from now on only marking
            // filesystems (CAP_SYS_ADMIN) and reading every folder
            // (CAP_DAC_READ_SEARCH); everything else root may do is dropped.
            try ProcessEnvironment.keepOnlyCapabilities([.systemAdministration, .readAndSearchAnything])
            ProcessEnvironment.onInterrupt { _ in
                daemon.stop()
                ProcessExit.exit(0)
            }
            daemon.waitUntilStopped()
        }
    }

    /// `mdq system start`: in the background, logging to the state folder.
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start the system index in the background.")

        @OptionGroup var mounts: Mounts

        func run() throws {
            try SystemCommand.requireRoot("mdq system start")
            if let running = try? DaemonClient.connectSystem().hello() {
                StandardOutput.print("the system index is already running (pid \(running.pid))")
                return
            }
            let paths = DaemonPaths.system
            try paths.prepareSystem()
            let arguments = ["system", "run"] + (mounts.resolved ?? []).flatMap { ["--mount", $0.string] }
            let pid = try DaemonCommand.startInBackground(arguments, paths: paths, named: "the system index")
            StandardOutput.print("the system index started (pid \(pid)); log: \(paths.log.string)")
        }
    }

    /// `mdq system stop`.
    struct Stop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the system index (it saves its index first).")

        func run() throws {
            try SystemCommand.requireRoot("mdq system stop")
            let client: DaemonClient
            do {
                client = try DaemonClient.connectSystem()
            } catch {
                StandardOutput.print("the system index is not running")
                return
            }
            try DaemonCommand.stop(client)
            StandardOutput.print("the system index stopped")
        }
    }

    /// `mdq system status`: any user may ask; root sees counts and problems.
    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what the system index covers, how each filesystem is watched, and (for root) its size.")

        func run() throws {
            let paths = DaemonPaths.system
            let status = try DaemonClient.connectSystem(paths).status()
            var lines: [String] = []
            lines.append(
                "mdq system index: running (pid \(status.pid)), up \(DaemonCommand.Status.duration(status.uptime))")
            lines.append("socket: \(paths.socket.string)")
            if getuid() == 0 {
                let perEntry = status.entries > 0 ? " (\(status.residentBytes / status.entries) B/entry)" : ""
                lines.append(
                    "index: \(status.entries) entries, "
                        + "\(DaemonCommand.Status.megabytes(status.residentBytes)) resident\(perEntry)")
            }
            if status.verifying { lines.append("checking the index against the disk (answers may be stale)") }
            lines.append(status.scopes.isEmpty ? "filesystems: none" : "filesystems:")
            for (scope, live) in status.scopes {
                lines.append("  \(scope.path.string)" + (live ? "" : " (not live: see the log)"))
            }
            for filesystem in status.filesystems {
                lines.append(
                    "  fsid \(filesystem.fsid): "
                        + (filesystem.watch == "mark"
                            ? "one fanotify mark"
                            : "inotify, folder by folder (the mark was refused: \(filesystem.reason ?? "?"))"))
            }
            if getuid() == 0 {
                let marks = status.filesystems.filter { $0.watch == "mark" }.count
                lines.append(
                    "fanotify: \(marks) mark(s)" + (status.maxUserMarks.map { " of \($0) allowed per user" } ?? "")
                        + "; kernel queue unbounded (the default bound is \(status.maxQueuedEvents.map(String.init) ?? "?") "
                        + "events); rescans: \(status.rescans) full, \(status.foldedRescans) of folders after a backlog"
                )
                lines.append(status.problems.isEmpty ? "problems: none" : "problems:")
                for problem in status.problems { lines.append("  " + problem) }
            }
            StandardOutput.print(lines.joined(separator: "\n"))
        }
    }
}
