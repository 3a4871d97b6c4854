import Foundation
import SystemPackage
import TestSupport

@testable import MDQDaemon
@testable import MDQSystem

/// A system index of a test's own (root only): its socket and state in the
/// test's folders, over `folder` made a mount point in a mount namespace
/// of its own, `mdq system run` given `arguments` besides.
final class PrivateSystemIndex {
    let runtime: String
    let state: String
    let paths: DaemonPaths
    let log: String
    private let process = Process()

    init(_ folder: String, in temp: TemporaryDirectory, arguments: [String] = []) throws {
        runtime = try temp.folder("run").string
        state = try temp.folder("state").string
        // Others reach its socket (a search as another user).
        _ = chmod(runtime, 0o755)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments =
            [
                "--mount", "--propagation", "private", "sh", "-c",
                "mount --bind \"$0\" \"$0\" && program=\"$1\" && shift && exec \"$program\" system run --mount \"$0\" \"$@\"",
                folder,
                MDQCommandTests.binary + "-full",
            ] + arguments
        process.environment = childEnvironment([
            "MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SYSTEM_STATE_DIR": state,
        ])
        log = temp.path.appending("daemon.log").string
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        var paths = DaemonPaths(runtimeDirectory: FilePath(runtime), stateDirectory: FilePath(state))
        paths.isSystem = true
        self.paths = paths
    }

    /// The environment that makes `mdq` ask this system index.
    var environment: [String: String] { ["MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SYSTEM_STATE_DIR": state] }

    /// Waits until its folder is indexed and live.
    func waitUntilLive(timeout: Double = 30) -> Bool {
        waitUntil(timeout: timeout) {
            (try? DaemonClient.connectSystem(self.paths).indexedScopes().contains { $0.live }) == true
        }
    }

    /// `mdq ARGUMENTS` asking this system index, as `user` (nil: root),
    /// with `extra` in its environment; `inside` its mount namespace, where
    /// its folder is the mount it indexes (as this host's users see it);
    /// ended after `timeout` seconds (status 124) when given.
    func mdq(
        _ arguments: [String], as user: String? = "nobody", inside: Bool = false,
        environment extra: [String: String] = [:],
        timeout: Int? = nil
    ) throws -> Shell.Output {
        var command = [MDQCommandTests.binary] + arguments
        if let user { command = ["/usr/bin/setpriv", "--reuid=\(user)", "--regid=65534", "--clear-groups"] + command }
        if inside { command = ["/usr/bin/nsenter", "-t", "\(processIdentifier)", "-m", "--"] + command }
        if let timeout { command = ["/usr/bin/timeout", "\(timeout)"] + command }
        return try Shell.run(command[0], Array(command.dropFirst()), environment: environment.merging(extra) { $1 })
    }

    /// `mdq ARGUMENTS` left running (a live search), as `nobody`, in its
    /// mount namespace, with `extra` in its environment.
    func live(_ arguments: [String], environment extra: [String: String] = [:]) throws -> LiveProcess {
        try LiveProcess(
            "/usr/bin/nsenter",
            [
                "-t", "\(processIdentifier)", "-m", "--", "/usr/bin/setpriv", "--reuid=nobody", "--regid=65534",
                "--clear-groups", MDQCommandTests.binary,
            ] + arguments, environment: environment.merging(extra) { $1 })
    }

    var logText: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// Its process (`unshare` and `sh` exec it: one process), whose mount
    /// namespace `nsenter -t PID -m` enters.
    var processIdentifier: Int32 { process.processIdentifier }

    /// Sends `signal` to the system index (`unshare` and `sh` exec it: one
    /// process).
    func send(_ signal: Int32) {
        _ = kill(process.processIdentifier, signal)
    }

    func close() {
        process.terminate()
        process.waitUntilExit()
    }
}
