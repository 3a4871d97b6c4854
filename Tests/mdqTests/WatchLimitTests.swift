import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// A user's daemon that ran out of inotify watches (the kernel's
/// `max_user_watches`, spent by another process of the same user) watches
/// the folders it could not once that process gives its watches back: the
/// problem goes from `status`, and a file made afterwards in a folder that
/// was refused is found. Run as a made-up user (`setpriv`), so spending
/// that user's watches spends nobody else's.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct WatchLimitTests {
    static let user: UInt32 = 48_101

    func asUser(_ arguments: [String], environment: [String: String]) throws -> Shell.Output {
        try Shell.run(
            "/usr/bin/setpriv",
            ["--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups"] + arguments, environment: environment)
    }

    @Test func aDaemonOutOfWatchesWatchesOnceTheyAreFree() throws {
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let home = temp.path.appending("home").string
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        for i in 0..<12 {
            try FileManager.default.createDirectory(atPath: home + "/tree/d\(i)/e", withIntermediateDirectories: true)
        }
        #expect(try Shell.run("/bin/chown", ["-R", "\(Self.user):\(Self.user)", home]).status == 0)
        let environment = [
            "HOME": home, "MDQ_RUNTIME_DIR": home + "/run", "MDQ_STATE_DIR": home + "/state",
            "MDQ_FOLLOW_SYSTEM_INDEX": "0", "MDQ_WATCH_RETRY_SECONDS": "0.2", "XDG_RUNTIME_DIR": home + "/xdg",
        ]
        // Another process of the user's holds all its watches but a few,
        // on files in a memory filesystem (a disk's takes a minute to hold
        // 190,000 new files).
        let spare = temp.path.appending("spare").string
        try FileManager.default.createDirectory(atPath: spare, withIntermediateDirectories: true)
        let mounted = try Shell.run(
            "/usr/bin/mount", ["-t", "tmpfs", "-o", "size=256m,nr_inodes=400000", "none", spare])
        try #require(mounted.status == 0, "\(mounted.stderrText)")
        defer { _ = try? Shell.run("/usr/bin/umount", ["-l", spare]) }
        _ = chown(spare, Self.user, Self.user)
        let hog = Process()
        hog.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        hog.arguments = [
            "--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups", "/usr/bin/python3", "-c",
            """
            import ctypes, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            limit = int(open("/proc/sys/fs/inotify/max_user_watches").read())
            folder = sys.argv[1]
            os.mkdir(folder)
            fd = libc.inotify_init1(0)
            held = 0
            for i in range(limit - 6):
                path = os.path.join(folder, str(i)).encode()
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
                if libc.inotify_add_watch(fd, path, 0x4) < 0: break
                held += 1
            print("holding", held, flush=True)
            sys.stdin.readline()
            """, spare + "/hog",
        ]
        let hogInput = Pipe()
        let hogOutput = Pipe()
        hog.standardInput = hogInput
        hog.standardOutput = hogOutput
        try hog.run()
        defer { if hog.isRunning { hog.terminate() } }
        var said = ""
        while !said.contains("\n"), let chunk = try hogOutput.fileHandleForReading.read(upToCount: 1), !chunk.isEmpty {
            said += String(decoding: chunk, as: UTF8.self)
        }
        #expect(said.hasPrefix("holding"), "\(said)")
        // The daemon, as that user, indexes the tree: most folders refused.
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        daemon.arguments = [
            "--reuid=\(Self.user)", "--regid=\(Self.user)", "--clear-groups", MDQCommandTests.binary, "daemon", "run",
            "--no-content",
        ]
        daemon.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        defer {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        #expect(
            waitUntil(timeout: 20, interval: 0.05) {
                (try? asUser([MDQCommandTests.binary, "daemon", "status"], environment: environment).status) == 0
            })
        let added = try asUser([MDQCommandTests.binary, "index", "add", home + "/tree"], environment: environment)
        #expect(added.status == 0, "\(added.stderrText)")
        let refused = try asUser([MDQCommandTests.binary, "daemon", "status"], environment: environment)
        #expect(refused.stdoutText.contains("watch limit"), "\(refused.stdoutText)")
        // The other process gives its watches back.
        try hogInput.fileHandleForWriting.close()
        hog.waitUntilExit()
        var status = ""
        let watched = waitUntil(timeout: 30, interval: 0.1) {
            status =
                (try? asUser([MDQCommandTests.binary, "daemon", "status"], environment: environment).stdoutText) ?? ""
            return status.contains(" 25 watches") && !status.contains("watch limit")
        }
        #expect(watched, "\(status)")
        FileManager.default.createFile(atPath: home + "/tree/d11/e/found-later.txt", contents: nil)
        _ = chown(home + "/tree/d11/e/found-later.txt", Self.user, Self.user)
        #expect(
            waitUntil(timeout: 10, interval: 0.05) {
                (try? asUser([MDQCommandTests.binary, "--daemon", "-a", "found-later"], environment: environment))?
                    .stdoutText == home + "/tree/d11/e/found-later.txt\n"
            })
    }
}
