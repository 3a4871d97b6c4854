import Foundation
import Glibc
import MetadataIndex
import SystemPackage
import TestSupport
import Testing

/// A client talks only to its own user's daemon: a socket planted by
/// another user, in a folder of theirs or behind a process of theirs, gets
/// not a byte from any client (mdq's fast and full paths, `--live`,
/// `MetadataQuery(source: .daemon)`, the Python example), each of which
/// says why in one line and answers by crawling; and no fixed folder another
/// user could create first keeps the daemon from starting.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct DaemonTrustTests {
    static let impostorName = "mdqimpostor"

    /// The impostor's user id (the user is made once, by useradd).
    static let impostor: UInt32? = {
        if let user = getpwnam(impostorName) { return user.pointee.pw_uid }
        _ = try? Shell.run(
            "/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", impostorName])
        return getpwnam(impostorName).map { $0.pointee.pw_uid }
    }()

    /// A fake daemon, run as the impostor: it records every byte it
    /// receives and answers anything with a plausible line.
    static let server = """
        import os, socket, sys
        path, log = sys.argv[1], sys.argv[2]
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        os.chmod(path, 0o777)
        s.listen(16)
        open(log + '.ready', 'w').close()
        while True:
            c, _ = s.accept()
            c.settimeout(2)
            try:
                data = c.recv(65536)
                with open(log, 'ab') as f:
                    f.write(data)
                c.sendall(b'{"id":1,"protocol":1,"pid":1,"done":true,"count":999}\\n')
            except Exception:
                pass
            c.close()
        """

    /// Runs the fake daemon as the impostor at `socket`; returns the log
    /// it writes what it receives to, and the process.
    func plant(at socket: String, temp: TemporaryDirectory, uid: UInt32) throws -> (log: String, process: Process) {
        let folder = temp.path.appending("impostor-home").string
        mkdir(folder, 0o777)
        chown(folder, uid, uid)
        let script = "\(folder)/server.py"
        try Self.server.write(toFile: script, atomically: true, encoding: .utf8)
        let log = "\(folder)/received"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/python3", script, socket, log,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date(timeIntervalSinceNow: 10)
        while !FileManager.default.fileExists(atPath: log + ".ready") && Date() < deadline { usleep(10_000) }
        return (log, process)
    }

    /// Kills a planted server (SIGKILL: it may have inherited a mask that
    /// blocks SIGTERM) and reaps it.
    static func stop(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func received(_ log: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: log))?[.size] as? Int) ?? 0
    }

    static func tree(_ temp: TemporaryDirectory) throws -> String {
        for i in 0..<30 { try temp.file("tree/docs/\(i % 2 == 0 ? "report" : "note")-\(i).txt") }
        return temp.path.appending("tree").string
    }

    /// Every client path against a socket, checking the impostor got
    /// nothing and each client said why and answered by crawling.
    func expectEveryClientRefuses(environment: [String: String], tree: String, log: String, reason: String) throws {
        func mdq(_ arguments: [String]) throws -> Shell.Output {
            try Shell.run(MDQCommandTests.binary, arguments, environment: environment)
        }
        // The fast path (a count) and the full command line (--json).
        let count = try mdq(["--count", "--onlyin", tree, "report*"])
        #expect(count.stdoutText == "15\n", "\(count.stderrText)")
        #expect(count.stderrText.contains("not using the index daemon socket: \(reason)"), "\(count.stderrText)")
        #expect(count.stderrText.split(separator: "\n").count == 1, "\(count.stderrText)")
        let json = try mdq(["--json", "--onlyin", tree, "kMDItemFSName BEGINSWITH 'note'"])
        #expect(json.stdoutText.split(separator: "\n").count == 15)
        #expect(json.stderrText.contains("searching by crawling"))
        // --live: watches here instead, and says so.
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--count", "--interval", "0", "--onlyin", tree, "report*"],
            environment: environment)
        #expect(live.waitForLine { $0 == "15" }, "\(live.errorText)")
        #expect(live.errorText.contains("not using the index daemon socket"))
        #expect(live.interrupt() == 0)
        // The Python example.
        let script = InstallTests.repository.appendingPathComponent("Examples/follow.py").path
        let follow = try Shell.run("/usr/bin/python3", [script, "TRUEPREDICATE"], environment: environment)
        #expect(follow.status != 0)
        #expect(follow.stderrText.contains("not using"), "\(follow.stderrText)")
        // MetadataQuery served by the daemon: the problem, and no results.
        let paths = DaemonPaths(
            runtimeDirectory: FilePath(environment["MDQ_RUNTIME_DIR"]!),
            stateDirectory: FilePath(environment["MDQ_STATE_DIR"]!))
        let query = MetadataQuery(source: .daemon(paths))
        query.predicate = try MetadataPredicate("TRUEPREDICATE")
        query.searchScopes = [.directory(FilePath(tree))]
        #expect(query.start())
        let deadline = Date(timeIntervalSinceNow: 10)
        while !query.errors.contains(where: { $0.message.contains("not using the index daemon socket") })
            && Date() < deadline
        {
            usleep(10_000)
        }
        #expect(
            query.errors.contains { $0.message.contains("not using the index daemon socket: \(reason)") },
            "\(query.errors.map(\.message))")
        query.stop()
        #expect(received(log) == 0, "the impostor received \(received(log)) bytes")
    }

    /// Another user made the runtime folder (as with `/tmp/mdq-<uid>`) and
    /// listens in it.
    @Test func aFolderOfAnotherUser() throws {
        let uid = try #require(Self.impostor)
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let tree = try Self.tree(temp)
        let run = temp.path.appending("squatted").string
        #expect(mkdir(run, 0o755) == 0)
        #expect(chown(run, uid, uid) == 0)
        let (log, process) = try plant(at: "\(run)/daemon.sock", temp: temp, uid: uid)
        defer { Self.stop(process) }
        let environment = ["MDQ_RUNTIME_DIR": run, "MDQ_STATE_DIR": temp.path.appending("state").string]
        try expectEveryClientRefuses(
            environment: environment, tree: tree, log: log, reason: "its folder \(run) belongs to uid \(uid)")
    }

    /// The folder is ours, the socket file made to look ours, but the
    /// process behind it is another user's: only `SO_PEERCRED` can tell.
    @Test func aProcessOfAnotherUserBehindOurSocket() throws {
        let uid = try #require(Self.impostor)
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let tree = try Self.tree(temp)
        let elsewhere = temp.path.appending("impostor-home/elsewhere.sock").string
        let (log, process) = try plant(at: elsewhere, temp: temp, uid: uid)
        defer { Self.stop(process) }
        let run = temp.path.appending("run").string
        #expect(mkdir(run, 0o700) == 0)
        #expect(rename(elsewhere, "\(run)/daemon.sock") == 0)
        #expect(lchown("\(run)/daemon.sock", 0, 0) == 0)
        let environment = ["MDQ_RUNTIME_DIR": run, "MDQ_STATE_DIR": temp.path.appending("state").string]
        try expectEveryClientRefuses(
            environment: environment, tree: tree, log: log,
            reason: "the process behind \(run)/daemon.sock runs as uid \(uid)")
    }

    /// Without XDG_RUNTIME_DIR, the daemon lives under the user's own state
    /// folder: another user's `/tmp/mdq-<uid>` neither stops it starting nor
    /// receives a query; and a state folder too long for a socket address
    /// gets an unguessable folder in /tmp, recorded privately.
    @Test(arguments: [false, true])
    func noFolderAnotherUserCanTakeFirst(longStatePath: Bool) throws {
        let uid = try #require(Self.impostor)
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let tree = try Self.tree(temp)
        let legacy = "/tmp/mdq-\(getuid())"
        var planted: (log: String, process: Process)?
        if mkdir(legacy, 0o755) == 0 {
            chown(legacy, uid, uid)
            planted = try plant(at: "\(legacy)/daemon.sock", temp: temp, uid: uid)
        }
        defer {
            planted.map { Self.stop($0.process) }
            if planted != nil { _ = try? FileManager.default.removeItem(atPath: legacy) }
        }
        let home = temp.path.appending("home").string
        var environment = ["HOME": home, "XDG_RUNTIME_DIR": "", "MDQ_RUNTIME_DIR": "", "XDG_STATE_HOME": ""]
        environment["MDQ_STATE_DIR"] =
            longStatePath ? "\(home)/" + String(repeating: "a-very-long-folder-name/", count: 5) + "state" : ""
        func mdq(_ arguments: [String]) throws -> Shell.Output {
            try Shell.run(MDQCommandTests.binary, arguments, environment: environment)
        }
        let start = try mdq(["daemon", "start"])
        #expect(start.status == 0, "\(start.stderrText)")
        defer { _ = try? mdq(["daemon", "stop"]) }
        #expect(try mdq(["index", "add", tree]).status == 0)
        let count = try mdq(["-a", "--count", "report*"])
        #expect(count.stdoutText == "15\n", "\(count.stderrText)")
        let status = try mdq(["daemon", "status"])
        if longStatePath {
            let record = try String(contentsOfFile: environment["MDQ_STATE_DIR"]! + "/runtime-folder", encoding: .utf8)
            #expect(record.hasPrefix("/tmp/mdq-\(getuid())-"))
            #expect(status.stdoutText.contains(record.trimmingCharacters(in: .whitespacesAndNewlines)))
        } else {
            #expect(status.stdoutText.contains("\(home)/.local/state/mdq/run/daemon.sock"), "\(status.stdoutText)")
        }
        if let planted { #expect(received(planted.log) == 0) }
    }
}
