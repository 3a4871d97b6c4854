import ArgumentParser
import Foundation
import MDQDaemon
import MDQEngine
import MDQShared
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
            answered only what a walk as that user finds, every folder on the way listable and \
            searchable, from / or from a folder the user opened and passed (modes, groups, \
            ACLs, as the kernel judges them). \
            Without --mount it indexes every local disk filesystem mounted now and as they \
            come and go (not network or memory filesystems). What it leaves out is set in \
            /etc/mdq/system.conf (--config), in updatedb.conf's syntax: PRUNEFS, PRUNEPATHS \
            (default /tmp /var/tmp /var/spool /media /mnt /run /proc /sys /dev), PRUNENAMES \
            (default .snapshot), MOUNTS to name the filesystems, and what one user may spend: \
            MAX_QUERY_SECONDS, MAX_QUERIES_PER_USER, MAX_SUBSCRIPTIONS_PER_USER and \
            MAX_CONNECTIONS_PER_USER. CONTENT = "yes" (or --content) imports what is inside \
            files too, in workers run as nobody: each user is answered it for the files that user \
            may read (modes, owners, groups and files' ACLs), and a publisher sends each file's words. \
            A filesystem that refuses \
            the mark is watched folder by folder with inotify (mdq system status says which).
            """,
        subcommands: [Run.self, Start.self, Stop.self, Status.self]
    )

    /// The filesystems asked for, as absolute folders, and the
    /// configuration file.
    struct Mounts: ParsableArguments {
        @Option(
            name: .customLong("mount"),
            help: ArgumentHelp(
                "Index the filesystem mounted here (repeatable; default: MOUNTS in the configuration, else every "
                    + "local disk filesystem).",
                valueName: "DIR"))
        var mounts: [String] = []

        @Option(
            name: .customLong("config"),
            help: ArgumentHelp(
                "Read the configuration (prunes, mounts) from this file (default: /etc/mdq/system.conf, if any).",
                valueName: "FILE"))
        var configurationFile: String?

        @Option(
            name: .customLong("publish"),
            help: ArgumentHelp(
                "Publish this host's entries into the shared index at this PostgreSQL URL (default: PUBLISH in "
                    + "the configuration).",
                valueName: "URL"))
        var publish: String?

        @Option(
            name: .customLong("host-name"),
            help: ArgumentHelp(
                "This host's name in the shared index (default: HOST_NAME in the configuration, else the host name).",
                valueName: "NAME"))
        var hostName: String?

        @Flag(
            name: .customLong("content"),
            help: ArgumentHelp(
                "Import what is inside files too, in workers run as nobody, answered to each user for the files "
                    + "they may read (default: CONTENT in the configuration, else off)."))
        var content = false

        @Option(
            name: .customLong("search"),
            help: ArgumentHelp(
                "Answer this host's users' searches across hosts here, over connections to the shared index at this "
                    + "PostgreSQL URL, as a role granted --trusted (default: SEARCH in the configuration).",
                valueName: "URL"))
        var search: String?

        static let publishVariable = "MDQ_SYSTEM_PUBLISH"
        static let searchVariable = "MDQ_SYSTEM_SEARCH"

        /// The mount points named, absolute, symlinks resolved (the mount
        /// table names the real path), each once.
        var resolved: [FilePath]? {
            guard !mounts.isEmpty else { return nil }
            var seen: Set<String> = []
            var paths: [FilePath] = []
            for mount in mounts {
                let path: String = URL(fileURLWithPath: mount).standardizedFileURL.resolvingSymlinksInPath().path
                if seen.insert(path).inserted { paths.append(FilePath(path)) }
            }
            return paths
        }

        /// The configuration file read, and the folders named checked.
        ///
        /// - Throws: the configuration's error; a `--mount` that is not a
        ///   folder (one named in the file may be missing: it waits).
        func configuration() throws -> SystemConfiguration {
            if configurationFile?.isEmpty == true { throw ValidationError("--config needs a file") }
            let file = configurationFile.map { FilePath(URL(fileURLWithPath: $0).standardizedFileURL.path) }
            var configuration = try SystemConfiguration.read(from: file)
            // `mdq system start` hands --publish and --search over in the
            // environment (root's alone to read), not in the arguments
            // every user sees.
            configuration.publish =
                try Self.url(publish, "--publish", "PUBLISH", Self.publishVariable)
                ?? configuration.publish
            configuration.search =
                try Self.url(search, "--search", "SEARCH", Self.searchVariable)
                ?? configuration.search
            // Read once: no process the daemon starts inherits them.
            unsetenv(Self.publishVariable)
            unsetenv(Self.searchVariable)
            for (name, url) in [("PUBLISH", configuration.publish), ("SEARCH", configuration.search)] {
                guard let url, PostgresConnection.holdsPassword(url) == true else { continue }
                let path = configurationFile ?? "/etc/mdq/system.conf"
                var info = stat()
                if stat(path, &info) == 0, info.st_mode & 0o044 != 0 || info.st_uid != 0 {
                    throw ValidationError(
                        "\(name) in \(path) holds a password, and others may read that file (it also names SHARED "
                            + "for every user): put the password in root's ~/.pgpass, or make the file root's "
                            + "alone (chmod 600)")
                }
            }
            if content { configuration.content = true }
            if let hostName {
                guard hostName.range(of: SharedSchema.hostNamePattern, options: .regularExpression) != nil else {
                    throw ValidationError(
                        "--host-name must be letters, digits, '.', '_' and '-' (at most 63, starting with a letter or "
                            + "digit)")
                }
                configuration.hostName = hostName
            }
            for mount in resolved ?? [] {
                var info = stat()
                guard stat(mount.string, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                    throw ValidationError("\(mount.string) is not a folder: a filesystem is named by its mount point")
                }
            }
            return configuration
        }

        /// A URL given as `option` (or handed over in `variable`), refused
        /// with a password (every user may read the process list); nil
        /// when not given (the configuration's `setting` then stands).
        private static func url(_ given: String?, _ option: String, _ setting: String, _ variable: String) throws
            -> String?
        {
            if let given, PostgresConnection.holdsPassword(given) == true {
                throw ValidationError(
                    "\(option) holds a password, which every user could read in the process list: put it in "
                        + "root's ~/.pgpass, or \(setting) in a configuration only root may read")
            }
            guard let url = given ?? ProcessInfo.processInfo.environment[variable] else { return nil }
            guard !url.isEmpty else { throw ValidationError("\(option) needs the shared index's URL") }
            return url
        }

        /// These options as arguments of `mdq system run`.
        var arguments: [String] {
            (resolved ?? []).flatMap { ["--mount", $0.string] }
                + (configurationFile.map { ["--config", URL(fileURLWithPath: $0).standardizedFileURL.path] } ?? [])
                + (hostName.map { ["--host-name", $0] } ?? []) + (content ? ["--content"] : [])
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
            let configuration = try mounts.configuration()
            // From here on only marking filesystems (CAP_SYS_ADMIN) and
            // reading every folder (CAP_DAC_READ_SEARCH), and with CONTENT
            // starting import workers that become nobody (CAP_SETUID,
            // CAP_SETGID); everything else root may do is dropped. Before
            // any thread starts: a thread's capabilities are its own, and
            // one started before the drop would keep them all.
            let kept: Set<ProcessEnvironment.Capability> = [.systemAdministration, .readAndSearchAnything]
            try ProcessEnvironment.keepOnlyCapabilities(
                kept.union(configuration.content ? [.setUserID, .setGroupID] : []))
            // Checked before the index starts: a publisher that cannot
            // name its host or machine is a mistake to say now.
            let publishing = try configuration.publish.map {
                try SystemCommand.publisherConfiguration(url: $0, hostName: configuration.hostName)
            }
            // Without --mount or MOUNTS, the local disk filesystems,
            // following the mount table. What it answers with is set
            // before its first client is answered: one that came while it
            // started would be told it does not search across hosts.
            var made: SharedPublisher?
            let daemon = try IndexDaemon.startSystem(
                mounts: mounts.resolved, configuration: configuration, snapshotInterval: snapshotInterval,
                log: { line in Diagnostics.log(line) },
                beforeAnswering: { daemon in
                    // The publisher talks to the database on a thread of
                    // its own, and never holds the index while it waits.
                    if let publishing {
                        made = SystemCommand.publish(publishing, from: daemon)
                    }
                    // Searches across hosts for this host's users, over
                    // connections kept open.
                    if let url = configuration.search {
                        let service = SharedSearchService(
                            url: url,
                            ownName: publishing?.hostName ?? configuration.hostName
                                ?? ProcessEnvironment.shortHostName)
                        daemon.hostSearch.withLock { $0 = service }
                        Diagnostics.log("answering searches across hosts for this host's users")
                        // A role that cannot search for its users is said
                        // now, not at a user's first search.
                        WorkerThreads.detach(name: "mdq-search-role") {
                            if let trouble = service.trouble() { Diagnostics.log("warning: \(trouble)") }
                        }
                    }
                })
            let publisher = made
            publisher?.start()
            ProcessEnvironment.onInterrupt { _ in
                publisher?.stop()
                daemon.stop()
                ProcessExit.exit(0)
            }
            daemon.waitUntilStopped()
            publisher?.stop()
        }
    }

    /// A publisher of `daemon`'s index, not started, whose state the
    /// daemon's `status` reports.
    static func publish(_ configuration: SharedPublisher.Configuration, from daemon: IndexDaemon) -> SharedPublisher {
        let publisher = SharedPublisher(configuration: configuration, engine: daemon.engine) { Diagnostics.log($0) }
        // A longer history (8 times the default: about 17 MB when full)
        // lets the host be away from the database longer, or change
        // faster, before it must publish everything again.
        daemon.engine.limitJournal(to: 1 << 20)
        Diagnostics.log(
            "publishing to the shared index as \(configuration.hostName) (machine \(configuration.machineID))")
        daemon.publication.withLock {
            $0 = { [publisher] in
                let status = publisher.status.withLock { $0 }
                return PublicationStatus(
                    hostName: configuration.hostName, state: status.state, sequence: status.sequence,
                    rowsSent: status.rowsSent, reloads: status.reloads, lastError: status.lastError)
            }
        }
        return publisher
    }

    /// The publisher's settings: this host's name (given, else the host
    /// name) and its machine id (`/etc/machine-id`, which tells a clone).
    static func publisherConfiguration(url: String, hostName: String?) throws -> SharedPublisher.Configuration {
        let name = hostName ?? ProcessEnvironment.shortHostName
        guard let name, name.range(of: SharedSchema.hostNamePattern, options: .regularExpression) != nil else {
            throw MetadataError.daemon(
                "this host's name (\(name ?? "none")) cannot name it in the shared index: give one with --host-name "
                    + "or HOST_NAME (letters, digits, '.', '_' and '-')")
        }
        var machine: String?
        for file in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            if let text = try? String(contentsOfFile: file, encoding: .utf8) {
                let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
                if trimmed.count >= 16 && trimmed.count <= 64 && trimmed.allSatisfy(\.isHexDigit) {
                    machine = trimmed
                    break
                }
            }
        }
        guard let machine else {
            throw MetadataError.daemon(
                "publishing needs this machine's id in /etc/machine-id (systemd-machine-id-setup makes one): it tells "
                    + "a cloned machine from this one")
        }
        return SharedPublisher.Configuration(url: url, hostName: name, machineID: machine)
    }

    /// `mdq system start`: in the background, logging to the state folder.
    struct Start: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start the system index in the background.")

        @OptionGroup var mounts: Mounts

        func run() throws {
            try SystemCommand.requireRoot("mdq system start")
            if let running = try? DaemonClient.connectSystem().hello() {
                StandardOutput.print(
                    "the system index is already running (pid \(running.pid))"
                        + (mounts.arguments.isEmpty ? "" : "; stop it first for --mount or --config to apply"))
                return
            }
            // Refused here, not in the log of a daemon that did not start.
            _ = try mounts.configuration()
            let paths = DaemonPaths.system
            try paths.prepareSystem()
            let arguments = ["system", "run"] + mounts.arguments
            if let publish = mounts.publish { setenv(Mounts.publishVariable, publish, 1) }
            if let search = mounts.search { setenv(Mounts.searchVariable, search, 1) }
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
            if status.filling {
                lines.append("reading the sizes and dates of new scopes' files (names answer already)")
            }
            if let grams = status.nameGrams, !grams.complete {
                lines.append("name trigrams: still being built (searches scan meanwhile)")
            }
            lines.append(status.scopes.isEmpty && status.waitingMounts.isEmpty ? "filesystems: none" : "filesystems:")
            for (scope, live) in status.scopes {
                lines.append("  \(scope.path.string)" + (live ? "" : " (not live: see the log)"))
                let paths = scope.rules.prunedFolderPaths.map { String(decoding: $0, as: UTF8.self) }.sorted()
                if !paths.isEmpty { lines.append("    pruned (contents not indexed): " + paths.joined(separator: " ")) }
            }
            for path in status.waitingMounts {
                lines.append("  \(path.string) (nothing mounted there: indexed once something is)")
            }
            if let names = status.scopes.first?.scope.rules.prunedFolderNames, !names.isEmpty {
                let shown = names.map { String(decoding: $0, as: UTF8.self) }.sorted().joined(separator: " ")
                lines.append("pruned folder names (contents not indexed): \(shown)")
            }
            if let publishing = status.publishing {
                lines.append(
                    "publishing to the shared index as \(publishing.hostName): \(publishing.state) (batch "
                        + "\(publishing.sequence), \(publishing.rowsSent) rows sent since the start, "
                        + "\(publishing.reloads) full publish\(publishing.reloads == 1 ? "" : "es"))")
                if let error = publishing.lastError { lines.append("  last error: \(error)") }
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
