import Foundation
import Glibc

/// A private PostgreSQL 15 cluster for the tests of the shared index: made
/// with `initdb` in a temporary folder once per test process, listening on
/// a Unix socket in that folder only (no port is taken), trusting local
/// connections, stopped when the process exits. As root, the server runs
/// as the `postgres` user (it refuses root).
package final class PostgresCluster: Sendable {
    /// The server programs of the newest PostgreSQL installed, 15 or later
    /// (Debian and Ubuntu install each major version side by side).
    package static let binaries: String? = {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).filter { $0 >= 15 }.sorted()
        return versions.last.map { "/usr/lib/postgresql/\($0)/bin" }
    }()

    /// The cluster of this test process, made on first use; nil when this
    /// machine has no PostgreSQL 15 (then the tests that need it say so).
    package static let shared: PostgresCluster? = try? PostgresCluster()

    /// Whether the tests of the shared index run: PostgreSQL 15 or later is
    /// installed, or CI says they must (`MDQ_REQUIRE_POSTGRES=1`: then a
    /// machine without it fails them instead of skipping them quietly).
    package static var isInstalled: Bool {
        ProcessInfo.processInfo.environment["MDQ_REQUIRE_POSTGRES"] == "1"
            || binaries.map { FileManager.default.isExecutableFile(atPath: "\($0)/initdb") } ?? false
    }

    /// The folder holding the data and the socket.
    package let folder: String
    private let runAs: [String]

    private init() throws {
        guard let binaries = Self.binaries else { throw CocoaError(.fileNoSuchFile) }
        var template = Array("/tmp/mdq-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.EIO) }
        folder = String(cString: made)
        // Any local user may reach the socket (tests search as `nobody`);
        // the data folder inside stays the server's alone.
        _ = chmod(folder, 0o755)
        if getuid() == 0 {
            guard let account = getpwnam("postgres") else { throw POSIXError(.EPERM) }
            _ = chown(folder, account.pointee.pw_uid, account.pointee.pw_gid)
            runAs = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
        } else {
            runAs = []
        }
        // Before anything can fail: the folder goes, and a server started
        // stops, when this process exits.
        Self.stopAtExit(folder: "\(folder)/data", runAs: runAs, binaries: binaries)
        try run(
            [
                "\(binaries)/initdb", "-D", "\(folder)/data", "-U", "postgres", "--auth=trust", "--encoding=UTF8",
                "--locale=C.UTF-8", "--no-sync",
            ])
        // No TCP at all; durability off (a test cluster).
        try run(
            [
                "\(binaries)/pg_ctl", "-D", "\(folder)/data", "-l", "\(folder)/log", "-w", "-t", "60", "-o",
                "-k \(folder) -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
                "start",
            ])
    }

    /// A libpq URL of `database` in this cluster.
    package func url(_ database: String) -> String {
        "postgresql:///\(database)?host=\(folder)&user=postgres"
    }

    /// The same database's URL, connecting as `role` instead.
    package func url(_ url: String, user role: String) -> String {
        url.replacingOccurrences(of: "&user=postgres", with: "&user=\(role)")
    }

    /// A login role of this name, made unless the cluster has it (roles
    /// belong to the cluster, not to a test's database).
    package func createRole(_ name: String) throws {
        try Self.spawn(
            [
                "\(Self.binaries!)/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", folder, "-U", "postgres", "-d",
                "postgres", "-c",
                "DO $$ BEGIN CREATE ROLE \"\(name)\" LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$",
            ], output: "\(folder)/role-\(name).out")
    }

    /// A database of a fresh name (`CREATE DATABASE name options`), made
    /// by the cluster's own `psql`.
    package func createDatabase(options: String = "ENCODING 'UTF8' LOCALE 'C.UTF-8' TEMPLATE template0") throws
        -> String
    {
        let name = "mdq_test_\(UInt32.random(in: 0...UInt32.max))"
        try Self.spawn(
            [
                "\(Self.binaries!)/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", folder, "-U", "postgres", "-d",
                "postgres", "-c", "CREATE DATABASE \(name) \(options)",
            ], output: "\(folder)/\(name).out")
        return name
    }

    /// Runs `command` (as `postgres` when root) and waits for it, its
    /// output in a file of the cluster's folder. Spawned directly, with
    /// every descriptor of this process closed in the child: a server that
    /// pg_ctl leaves running must hold none of the test run's pipes, and
    /// `Process` waits for its children on threads the tests may be using.
    private func run(_ command: [String]) throws {
        try Self.spawn(runAs + command, output: "\(folder)/\(URL(fileURLWithPath: command[0]).lastPathComponent).out")
    }

    private static func spawn(_ command: [String], output: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Every other descriptor closed before the command runs (glibc's
        // posix_spawn_file_actions_addclosefrom_np does not import).
        let closing = [
            "/usr/bin/python3", "-c", "import os, sys; os.closerange(3, 1 << 20); os.execv(sys.argv[1], sys.argv[1:])",
        ]
        var arguments = (closing + command).map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, closing[0], &actions, nil, &arguments, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        var waited: pid_t
        repeat { waited = waitpid(pid, &status, 0) } while waited < 0 && errno == EINTR
        guard waited == pid, status == 0 else {
            let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            throw NSError(
                domain: command.joined(separator: " "), code: Int(status),
                userInfo: [NSLocalizedDescriptionKey: log])
        }
    }

    nonisolated(unsafe) private static var stopCommand: [String] = []

    private static func stopAtExit(folder: String, runAs: [String], binaries: String) {
        stopCommand = runAs + ["\(binaries)/pg_ctl", "-D", folder, "-m", "immediate", "-w", "stop"]
        atexit {
            let command = PostgresCluster.stopCommand
            guard !command.isEmpty else { return }
            try? PostgresCluster.spawn(command, output: "/dev/null")
            // The data folder's parent, made by mkdtemp.
            let parent = URL(fileURLWithPath: command[command.firstIndex(of: "-D")! + 1]).deletingLastPathComponent()
            try? FileManager.default.removeItem(at: parent)
        }
    }
}
