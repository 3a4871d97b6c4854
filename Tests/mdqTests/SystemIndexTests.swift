import Foundation
import Glibc
import MetadataIndex
import SystemPackage
import TestSupport
import Testing

/// `mdq system`: the system index on a loop-mounted filesystem of its own,
/// run as root, asked by users the test makes up (numeric ids under
/// `setpriv`). Each user's `mdq` is answered from it, and only what that
/// user may see (checked against the kernel's own `access(2)` as that
/// user), before and after permission changes; what users may not do
/// (stop it, add scopes, talk to a socket that is not root's) is refused.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: LoopFilesystem.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct SystemIndexTests {
    /// Users by number: an owner with a group, a member of that group and
    /// a stranger.
    static let users: [(user: UInt32, groups: [UInt32])] = [
        (43001, [44001]), (43002, [44002, 44001]), (43003, [44003]),
    ]

    /// A system index over one loop filesystem, its folders in a temporary
    /// folder (root's, as the system index wants them).
    final class SystemIndex {
        let filesystem: LoopFilesystem
        let temp: TemporaryDirectory
        let environment: [String: String]
        var process: Process?

        var mount: String { filesystem.mountPoint.string }

        init() throws {
            filesystem = try LoopFilesystem()
            temp = try TemporaryDirectory()
            _ = chmod(temp.path.string, 0o755)
            environment = [
                "MDQ_SYSTEM_RUNTIME_DIR": temp.path.appending("run").string,
                "MDQ_SYSTEM_STATE_DIR": temp.path.appending("state").string,
            ]
            _ = chmod(mount, 0o755)
        }

        var paths: DaemonPaths {
            DaemonPaths(
                runtimeDirectory: FilePath(environment["MDQ_SYSTEM_RUNTIME_DIR"]!),
                stateDirectory: FilePath(environment["MDQ_SYSTEM_STATE_DIR"]!))
        }

        func start(_ extra: [String] = []) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: MDQCommandTests.binary)
            process.arguments = ["system", "run", "--mount", mount] + extra
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let log = temp.path.appending("system.log").string
            FileManager.default.createFile(atPath: log, contents: nil)
            let handle = FileHandle(forWritingAtPath: log)!
            handle.seekToEndOfFile()
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            self.process = process
            let paths = paths
            #expect(waitUntil(timeout: 20) { (try? DaemonClient.connectSystem(paths).hello()) != nil }, "\(self.log)")
        }

        var log: String {
            (try? String(contentsOfFile: temp.path.appending("system.log").string, encoding: .utf8)) ?? ""
        }

        /// `mdq ARGUMENTS` run as `user` with `groups` from `folder`, with
        /// no daemon of that user's.
        func mdq(_ arguments: [String], user: UInt32, groups: [UInt32], in folder: String = "/") throws -> Shell.Output
        {
            var environment = self.environment
            environment["HOME"] = "/nonexistent"
            environment["XDG_RUNTIME_DIR"] = "/nonexistent"
            environment["MDQ_RUNTIME_DIR"] = temp.path.appending("no-user-daemon").string
            return try Shell.run(
                "/usr/bin/setpriv",
                [
                    "--reuid=\(user)", "--regid=\(groups[0])",
                    "--groups=\(groups.map(String.init).joined(separator: ","))",
                    MDQCommandTests.binary,
                ] + arguments, environment: environment, currentDirectory: folder)
        }

        func stop() {
            guard let process else { return }
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
            self.process = nil
        }

        deinit {
            if let process {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    /// A tree of folders with owners, groups and modes of every kind.
    static func plant(_ root: String) throws {
        let folders: [(String, uid_t, gid_t, mode_t)] = [
            ("pub", 0, 0, 0o755), ("pub/docs", 43001, 44001, 0o755), ("home", 0, 0, 0o755),
            ("home/owner", 43001, 44001, 0o700), ("home/owner/deep", 43001, 44001, 0o755),
            ("home/team", 43001, 44001, 0o750), ("home/team/shared", 43001, 44001, 0o770),
            ("home/passthrough", 43001, 44001, 0o711), ("home/passthrough/site", 43001, 44001, 0o755),
            ("drop", 0, 0, 0o1733), ("listonly", 43002, 44002, 0o744), ("listonly/inner", 43002, 44002, 0o755),
        ]
        for (folder, owner, group, _) in folders {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
            FileManager.default.createFile(
                atPath: root + "/" + folder + "/file-\(folder.split(separator: "/").last!).txt", contents: nil)
            _ = chown(root + "/" + folder, owner, group)
        }
        for (folder, _, _, mode) in folders { _ = chmod(root + "/" + folder, mode) }
    }

    func visible(_ index: SystemIndex, _ user: (user: UInt32, groups: [UInt32])) throws -> Set<String> {
        try pathsVisible(pathsBelow(index.mount), user: user.user, groups: user.groups)
    }

    func answered(_ index: SystemIndex, _ user: (user: UInt32, groups: [UInt32]), _ query: String = "TRUEPREDICATE")
        throws -> Set<String>
    {
        let output = try index.mdq(["--daemon", "-a", query], user: user.user, groups: user.groups)
        #expect(output.status == 0, "uid \(user.user): \(output.stderrText)")
        return Set(output.stdoutText.split(separator: "\n").map(String.init))
    }

    @Test func eachUserIsAnsweredOnlyWhatTheyMaySee() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        defer { index.stop() }
        // Each user sees some of it, and not all the same.
        let seen = try Self.users.map { try visible(index, $0) }
        #expect(seen.allSatisfy { !$0.isEmpty } && Set(seen).count == Self.users.count, "\(seen)")
        for user in Self.users {
            let expected = try visible(index, user)
            #expect(try answered(index, user) == expected, "uid \(user.user)")
            // Counts and names searches are filtered as the paths are.
            let counted = try index.mdq(["--daemon", "-a", "--count", "*.txt"], user: user.user, groups: user.groups)
            #expect(
                counted.stdoutText == "\(expected.filter { $0.hasSuffix(".txt") }.count)\n", "\(counted.stderrText)")
        }
        // Without -a, from a folder inside the filesystem: the same rule,
        // answered by the system index (the user has no daemon).
        let inside = try index.mdq(["--daemon", "*.txt"], user: 43003, groups: [44003], in: index.mount + "/pub")
        #expect(
            inside.stdoutText.split(separator: "\n").sorted() == [
                Substring(index.mount + "/pub/docs/file-docs.txt"), Substring(index.mount + "/pub/file-pub.txt"),
            ])
        // The front answers from the system index itself: a copy with no
        // full command beside it prints the same.
        let alone = try QuickSearchTests.frontAlone(index.temp)
        _ = chmod(index.temp.path.appending("alone").string, 0o755)
        _ = chmod(index.temp.path.appending("alone/bin").string, 0o755)
        for user in Self.users {
            let full = try index.mdq(["-a", "*.txt"], user: user.user, groups: user.groups)
            var environment = index.environment
            environment["HOME"] = "/nonexistent"
            environment["MDQ_RUNTIME_DIR"] = index.temp.path.appending("no-user-daemon").string
            let front = try Shell.run(
                "/usr/bin/setpriv",
                [
                    "--reuid=\(user.user)", "--regid=\(user.groups[0])",
                    "--groups=\(user.groups.map(String.init).joined(separator: ","))", alone, "-a", "*.txt",
                ], environment: environment, currentDirectory: "/")
            #expect(front.status == 0 && front.stdoutText == full.stdoutText, "uid \(user.user): \(front.stderrText)")
        }
        // A folder closed, one opened, a file added: every answer follows.
        #expect(chmod(index.mount + "/pub/docs", 0o700) == 0)
        #expect(chmod(index.mount + "/home/team", 0o755) == 0)
        FileManager.default.createFile(atPath: index.mount + "/pub/new.txt", contents: nil)
        for user in Self.users {
            let expected = try visible(index, user)
            var last: Set<String> = []
            let followed = waitUntil(timeout: 10, interval: 0.05) {
                last = (try? answered(index, user)) ?? []
                return last == expected
            }
            #expect(
                followed,
                "uid \(user.user): extra \(last.subtracting(expected).sorted()), missing \(expected.subtracting(last).sorted())"
            )
        }
    }

    /// A user's live query on the system index follows permission changes:
    /// a folder closed to the user takes its contents out of the results,
    /// one opened brings them in. Asked over the protocol, as the user.
    @Test func aUsersLiveQueryFollowsPermissionChanges() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        defer { index.stop() }
        let state = index.temp.path.appending("live-state").string
        FileManager.default.createFile(atPath: state, contents: nil)
        _ = chmod(state, 0o666)
        // Follows the subscription for 60 s, writing the current paths
        // after every event.
        let follower = """
            import json, socket, sys, time
            s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
            s.sendall(b'{"id":1,"command":"subscribe","protocol":2,"predicate":"TRUEPREDICATE","interval":0}\\n')
            items, buffer, end = {}, b"", time.time() + 60
            s.settimeout(0.2)
            while time.time() < end:
                try:
                    chunk = s.recv(65536)
                except socket.timeout:
                    continue
                if not chunk: break
                buffer += chunk
                while b"\\n" in buffer:
                    line, buffer = buffer.split(b"\\n", 1)
                    event = json.loads(line)
                    kind = event.get("event")
                    if kind == "result": items[event["item"]["id"]] = event["item"]["path"]
                    if kind == "didUpdate":
                        for item in event["added"] + event["changed"]: items[item["id"]] = item["path"]
                        for item in event["removed"]: items.pop(item["id"], None)
                    if "error" in event: print(event, file=sys.stderr); sys.exit(1)
                    with open(sys.argv[2], "w") as f: f.write("\\n".join(sorted(items.values())))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=43002", "--regid=44002", "--groups=44002,44001", "/usr/bin/python3", "-c", follower,
            index.paths.socket.string, state,
        ]
        try process.run()
        defer { process.terminate() }
        let user = Self.users[1]
        func followed() -> Set<String> {
            let text = (try? String(contentsOfFile: state, encoding: .utf8)) ?? ""
            return Set(text.split(separator: "\n").map(String.init))
        }
        var expected = try visible(index, user)
        #expect(waitUntil(timeout: 30, interval: 0.02) { followed() == expected }, "\(followed().sorted())")
        #expect(chmod(index.mount + "/home/team", 0o700) == 0)
        #expect(chmod(index.mount + "/pub/docs", 0o750) == 0)
        _ = chown(index.mount + "/listonly", 43002, 44002)
        #expect(chmod(index.mount + "/listonly", 0o755) == 0)
        let before = expected
        expected = try visible(index, user)
        #expect(before != expected, "the changes hide something from the user")
        var last: Set<String> = []
        let converged = waitUntil(timeout: 30, interval: 0.02) {
            last = followed()
            return last == expected
        }
        #expect(
            converged,
            "extra \(last.subtracting(expected).sorted()), missing \(expected.subtracting(last).sorted())")
    }

    /// Mounts are followed: the filesystem unmounted under the index leaves
    /// its answers, and the folder beneath (on another filesystem) is not
    /// indexed in its place; mounted again it comes back, its files
    /// findable.
    @Test func unmountedAndMountedAgainIsFollowed() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        defer { index.stop() }
        let user = Self.users[0]
        /// What the user's `mdq --daemon -a NAME` prints.
        func printed(_ name: String) -> String {
            (try? index.mdq(["--daemon", "-a", name], user: user.user, groups: user.groups))?.stdoutText ?? ""
        }
        func found() -> Set<String> { Set(printed("file-pub.txt").split(separator: "\n").map(String.init)) }
        #expect(found() == [index.mount + "/pub/file-pub.txt"])
        index.filesystem.unmount()
        #expect(waitUntil(timeout: 10, interval: 0.05) { found().isEmpty }, "\(index.log)")
        // Nothing indexed any more: a search that needs an index says why.
        let refused = try index.mdq(["--daemon", "-a", "file-pub.txt"], user: user.user, groups: user.groups)
        #expect(
            refused.status != 0 && refused.stderrText.contains("the system index does not cover this search"),
            "\(refused.stderrText)")
        #expect(index.log.contains("no longer mounted"), "\(index.log)")
        let status = try Shell.run(MDQCommandTests.binary, ["system", "status"], environment: index.environment)
        #expect(status.stdoutText.contains("\(index.mount) (nothing mounted there"), "\(status.stdoutText)")
        // The folder beneath is on the filesystem the test's temporary
        // folder is on: not what was asked for, so not indexed.
        FileManager.default.createFile(atPath: index.mount + "/beneath.txt", contents: nil)
        defer { unlink(index.mount + "/beneath.txt") }
        #expect(
            try Shell.run(MDQCommandTests.binary, ["--daemon", "-a", "beneath.txt"], environment: index.environment)
                .stdoutText.isEmpty)
        unlink(index.mount + "/beneath.txt")
        try index.filesystem.mountAgain()
        #expect(
            waitUntil(timeout: 10, interval: 0.05) { found() == [index.mount + "/pub/file-pub.txt"] }, "\(index.log)")
        #expect(index.log.contains("mounted: indexed"), "\(index.log)")
        // Live again: the filesystem is marked anew (its old mark went with
        // the unmount, and the fsid is the same).
        FileManager.default.createFile(atPath: index.mount + "/pub/after-remount.txt", contents: nil)
        #expect(
            waitUntil(timeout: 10, interval: 0.05) {
                printed("after-remount.txt") == index.mount + "/pub/after-remount.txt\n"
            },
            "\(index.log)")
        // Unmounted and mounted again at once (perhaps between two reads of
        // the mount table: the mount's new id tells).
        _ = try Shell.run(
            "/bin/sh", ["-c", "umount \(index.mount) && mount -o loop \(index.filesystem.image) \(index.mount)"])
        FileManager.default.createFile(atPath: index.mount + "/pub/after-quick.txt", contents: nil)
        #expect(
            waitUntil(timeout: 10, interval: 0.05) {
                printed("after-quick.txt") == index.mount + "/pub/after-quick.txt\n"
            },
            "\(index.log)")
    }

    /// A folder inside the filesystem that another filesystem is mounted on
    /// is searched as that filesystem (crawled), not answered with the
    /// folder beneath it from the index.
    @Test func aFolderMountedOverIsNotAnsweredFromBeneath() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        let inner = index.mount + "/pub/inner"
        try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: inner + "/beneath.txt", contents: nil)
        try index.start()
        defer { index.stop() }
        #expect(try Shell.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "mode=755", "none", inner]).status == 0)
        defer { _ = try? Shell.run("/usr/bin/umount", ["-l", inner]) }
        FileManager.default.createFile(atPath: inner + "/above.txt", contents: nil)
        let user = Self.users[0]
        let answer = try index.mdq(["*.txt"], user: user.user, groups: user.groups, in: inner)
        #expect(answer.stdoutText == inner + "/above.txt\n", "\(answer.stdoutText) \(answer.stderrText)")
    }

    /// A mount point named with nothing mounted on it yet waits: nothing
    /// is indexed there (not the folder beneath) until a filesystem is
    /// mounted, and then it is.
    @Test func aMountPointWithNothingMountedWaits() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        index.filesystem.unmount()
        FileManager.default.createFile(atPath: index.mount + "/beneath.txt", contents: nil)
        try index.start()
        defer { index.stop() }
        #expect(index.log.contains("nothing is mounted at \(index.mount)"), "\(index.log)")
        let status = try Shell.run(MDQCommandTests.binary, ["system", "status"], environment: index.environment)
        #expect(status.stdoutText.contains("\(index.mount) (nothing mounted there"), "\(status.stdoutText)")
        #expect(!status.stdoutText.contains("fsid"), "no filesystem is marked: \(status.stdoutText)")
        unlink(index.mount + "/beneath.txt")
        try index.filesystem.mountAgain()
        #expect(
            waitUntil(timeout: 10, interval: 0.05) {
                (try? answered(index, Self.users[0], "file-pub.txt")) == [index.mount + "/pub/file-pub.txt"]
            }, "\(index.log)")
    }

    /// The configuration file: pruned paths and names keep what is inside
    /// such folders out of every answer, live changes there included, while
    /// the folders themselves are found; status names them. A mistake in
    /// the file stops `mdq system run` with the file and line.
    @Test func theConfigurationPrunesPathsAndNames() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        let configuration = index.temp.path.appending("system.conf").string
        try "# test\nPRUNEPATHS = \"\(index.mount)/pub /elsewhere\"\nPRUNENAMES = \"deep\"\n".write(
            toFile: configuration, atomically: true, encoding: .utf8)
        try index.start(["--config", configuration])
        defer { index.stop() }
        let root = try Shell.run(
            MDQCommandTests.binary, ["--daemon", "-a", "TRUEPREDICATE"], environment: index.environment)
        let paths = Set(root.stdoutText.split(separator: "\n").map(String.init))
        #expect(paths.contains(index.mount + "/pub") && paths.contains(index.mount + "/home/owner/deep"), "\(paths)")
        #expect(!paths.contains(index.mount + "/pub/file-pub.txt") && !paths.contains(index.mount + "/pub/docs"))
        #expect(!paths.contains(index.mount + "/home/owner/deep/file-deep.txt"))
        #expect(paths.contains(index.mount + "/home/owner/file-owner.txt"))
        // Live: a file made inside a pruned folder stays out, one beside
        // it comes in.
        FileManager.default.createFile(atPath: index.mount + "/pub/later-inside.txt", contents: nil)
        FileManager.default.createFile(atPath: index.mount + "/home/later-beside.txt", contents: nil)
        func found(_ name: String) -> String {
            (try? Shell.run(MDQCommandTests.binary, ["--daemon", "-a", name], environment: index.environment))?
                .stdoutText ?? ""
        }
        #expect(waitUntil(timeout: 10, interval: 0.05) { !found("later-beside.txt").isEmpty })
        #expect(found("later-inside.txt").isEmpty)
        let status = try Shell.run(MDQCommandTests.binary, ["system", "status"], environment: index.environment)
        #expect(status.stdoutText.contains("pruned (contents not indexed): \(index.mount)/pub"), "\(status.stdoutText)")
        #expect(status.stdoutText.contains("pruned folder names (contents not indexed): deep"), "\(status.stdoutText)")
        index.stop()
        // Restarted without those prunes: the snapshot's filesystem is
        // crawled afresh, and what was pruned is found.
        try index.start()
        #expect(
            waitUntil(timeout: 10, interval: 0.05) {
                !found("file-pub.txt").isEmpty && !found("file-deep.txt").isEmpty
            },
            "\(index.log)")
        index.stop()
        // A mistake: named with its file and line, nothing started.
        try "PRUNEPATHS = \"/tmp\"\nPRUNEFS = nfs\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let refused = try Shell.run(
            MDQCommandTests.binary, ["system", "run", "--mount", index.mount, "--config", configuration],
            environment: index.environment)
        #expect(refused.status != 0, "\(refused.stdoutText)")
        #expect(
            refused.stderrText.contains("\(configuration):2: the value of PRUNEFS must be in double quotes"),
            "\(refused.stderrText)")
        let missing = try Shell.run(
            MDQCommandTests.binary, ["system", "run", "--mount", index.mount + "/none"], environment: index.environment)
        #expect(missing.status != 0 && missing.stderrText.contains("is not a folder"), "\(missing.stderrText)")
    }

    /// `mdq daemon status` says which index serves what: a user daemon's
    /// status names the system index and the filesystems it answers for,
    /// and a folder it indexes inside them is followed through the system
    /// index, with no inotify watch, its changes found.
    @Test func aUserDaemonFollowsTheSystemIndex() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        defer { index.stop() }
        let temp = try TemporaryDirectory()
        let daemon = try MDQDaemonTests.Daemon(temp, options: ["--no-content"], environment: index.environment)
        defer { daemon.kill(SIGTERM) }
        let added = try Shell.run(
            MDQCommandTests.binary, ["index", "add", index.mount + "/pub"], environment: daemon.environment)
        #expect(added.status == 0, "\(added.stderrText)")
        let status = try Shell.run(MDQCommandTests.binary, ["daemon", "status"], environment: daemon.environment)
        #expect(status.status == 0, "\(status.stderrText)")
        #expect(status.stdoutText.contains("system index: running"), "\(status.stdoutText)")
        #expect(status.stdoutText.contains(index.mount), "\(status.stdoutText)")
        #expect(status.stdoutText.contains("index: 4 entries, 0 watches"), "\(status.stdoutText)")
        #expect(
            status.stdoutText.contains(
                "followed through the system index (2 folders, no inotify watch each): "
                    + index.mount + "/pub"), "\(status.stdoutText)")
        FileManager.default.createFile(atPath: index.mount + "/pub/docs/later.txt", contents: nil)
        #expect(
            waitUntil(timeout: 10, interval: 0.05) {
                let found = try? Shell.run(
                    MDQCommandTests.binary, ["--daemon", "later.txt"], environment: daemon.environment,
                    currentDirectory: index.mount + "/pub")
                return found?.stdoutText == index.mount + "/pub/docs/later.txt\n"
            })
        // Turned off, the daemon watches the same folders with inotify.
        let other = try TemporaryDirectory()
        let watching = try MDQDaemonTests.Daemon(
            other, options: ["--no-content"],
            environment: index.environment.merging(["MDQ_FOLLOW_SYSTEM_INDEX": "0"]) { $1 })
        defer { watching.kill(SIGTERM) }
        let addedAgain = try Shell.run(
            MDQCommandTests.binary, ["index", "add", index.mount + "/pub"], environment: watching.environment)
        #expect(addedAgain.status == 0, "\(addedAgain.stderrText)")
        let watchingStatus = try Shell.run(
            MDQCommandTests.binary, ["daemon", "status"], environment: watching.environment)
        #expect(watchingStatus.stdoutText.contains(" entries, 2 watches,"), "\(watchingStatus.stdoutText)")
        #expect(!watchingStatus.stdoutText.contains("followed through"), "\(watchingStatus.stdoutText)")
    }

    /// What a user may not do is refused, and says so; root's status shows
    /// counts a user's does not.
    @Test func usersCannotManageIt() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        defer { index.stop() }
        let stop = try index.mdq(["system", "stop"], user: 43001, groups: [44001])
        #expect(stop.status != 0 && stop.stderrText.contains("root"), "\(stop.stderrText)")
        // The protocol itself refuses a user's stop and index.add.
        for command in [#"{"id":1,"command":"stop"}"#, #"{"id":1,"command":"index.add","scope":{"path":"/"}}"#] {
            let script =
                "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                + "s.sendall(sys.argv[2].encode()+b'\\n'); print(s.recv(4096).decode())"
            let reply = try Shell.run(
                "/usr/bin/setpriv",
                [
                    "--reuid=43001", "--regid=44001", "--clear-groups", "/usr/bin/python3", "-c", script,
                    index.paths.socket.string, command,
                ])
            #expect(reply.stdoutText.contains("forbidden"), "\(command): \(reply.stdoutText) \(reply.stderrText)")
        }
        #expect((try? DaemonClient.connectSystem(index.paths).hello()) != nil, "still running")
        // It keeps only CAP_SYS_ADMIN (marks) and CAP_DAC_READ_SEARCH
        // (reading every folder), bounding set included.
        // Every thread of it: Linux keeps capabilities per thread.
        let pid = try #require(index.process?.processIdentifier)
        let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")
        var checked = 0
        for thread in threads {
            // A thread that ended since the listing (a worker's) is gone;
            // one still there must be read.
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8)
            else {
                #expect(!FileManager.default.fileExists(atPath: "/proc/\(pid)/task/\(thread)"), "thread \(thread)")
                continue
            }
            checked += 1
            let name = status.split(separator: "\n").first ?? ""
            for line in ["CapEff:\t0000000000200004", "CapPrm:\t0000000000200004", "CapBnd:\t0000000000200004"] {
                #expect(status.contains(line), "thread \(thread) \(name)")
            }
        }
        #expect(checked > 1, "\(threads)")
        let shown = try index.mdq(["system", "status"], user: 43003, groups: [44003])
        #expect(shown.status == 0 && shown.stdoutText.contains("one fanotify mark"), "\(shown.stdoutText)")
        #expect(!shown.stdoutText.contains("entries"), "a user is not told how many entries there are")
        let rootStatus = try Shell.run(MDQCommandTests.binary, ["system", "status"], environment: index.environment)
        #expect(rootStatus.stdoutText.contains("entries"), "\(rootStatus.stdoutText)")
    }

    /// A user following a folder (`follow`, as a user's daemon does) is
    /// told events only in folders whose contents that user may see, and
    /// may follow at most 16 folders at once.
    @Test func followersAreToldOnlyWhatTheyMaySee() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        defer { index.stop() }
        let script = """
            import base64, json, socket, sys, os
            path, mount = sys.argv[1], sys.argv[2]
            def follow(passing=True):
                # The folder as this user opens it, passed with the request.
                s = socket.socket(socket.AF_UNIX); s.connect(path)
                scope = {"path": mount, "descriptor": 0} if passing else {"path": mount}
                request = (json.dumps({"id": 1, "command": "follow", "scope": scope, "descriptors": int(passing)})
                           + "\\n").encode()
                folder = os.open(mount, os.O_PATH | os.O_DIRECTORY)
                socket.send_fds(s, [request], [folder] if passing else [])
                os.close(folder)
                return s, s.makefile("rb")
            bare, f = follow(passing=False)
            print("BARE", json.loads(f.readline()).get("error", {}).get("code"), flush=True)
            s, lines = follow()
            assert json.loads(lines.readline()).get("event") == "following"
            print("READY", flush=True)
            seen = []
            while True:
                event = json.loads(lines.readline())
                for e in event.get("events", []):
                    name = e.get("name") or base64.b64decode(e.get("nameBase64", "")).decode(errors="replace")
                    seen.append(name)
                if "visible-last.txt" in seen: break
            print("SEEN", " ".join(seen), flush=True)
            more = [follow() for _ in range(15)]
            for _, f in more: assert json.loads(f.readline()).get("event") == "following"
            extra, f = follow()
            print("EXTRA", json.loads(f.readline()).get("error", {}).get("code"), flush=True)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=43003", "--regid=44003", "--clear-groups", "/usr/bin/python3", "-c", script,
            index.paths.socket.string, index.mount,
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let reader = output.fileHandleForReading
        var text = ""
        while !text.contains("READY\n"), let chunk = try reader.read(upToCount: 1), !chunk.isEmpty {
            text += String(decoding: chunk, as: UTF8.self)
        }
        // Hidden first, visible last: the stream keeps the engine's order.
        FileManager.default.createFile(atPath: index.mount + "/home/owner/hidden-one.txt", contents: nil)
        FileManager.default.createFile(atPath: index.mount + "/home/team/hidden-two.txt", contents: nil)
        FileManager.default.createFile(atPath: index.mount + "/pub/visible-last.txt", contents: nil)
        process.waitUntilExit()
        text += String(decoding: try reader.readToEnd() ?? Data(), as: UTF8.self)
        #expect(text.contains("SEEN") && text.contains("visible-last.txt"), "\(text)")
        #expect(!text.contains("hidden-"), "\(text)")
        #expect(text.contains("EXTRA busy"), "\(text)")
        // A path alone is never resolved for a user.
        #expect(text.contains("BARE bad-request"), "\(text)")
    }

    /// A socket at the system index's path that is not root's is never
    /// spoken to: the user's search crawls instead, with the same answer a
    /// crawl gives.
    @Test func aSocketThatIsNotRootsIsNotTrusted() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        // A user's folder where the system index's should be.
        let fake = index.temp.path.appending("run").string
        try FileManager.default.createDirectory(atPath: fake, withIntermediateDirectories: true)
        _ = chown(fake, 43002, 44002)
        let listener = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=43002", "--regid=44002", "--clear-groups", "/usr/bin/python3", "-c",
                "import socket,sys,os; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); os._exit(0)",
                fake + "/daemon.sock",
            ])
        #expect(listener.status == 0, "\(listener.stderrText)")
        let crawled = try index.mdq(["*.txt", index.mount + "/pub"], user: 43003, groups: [44003])
        #expect(crawled.stdoutText.split(separator: "\n").count == 2, "\(crawled.stdoutText) \(crawled.stderrText)")
        #expect(throws: MetadataError.self) { try DaemonClient.connectSystem(index.paths) }
    }

    /// Stopped and started again, it answers from its snapshot, changes made
    /// while it was down included once it has checked the disk.
    @Test func aRestartResumesFromItsSnapshot() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        let before = try answered(index, Self.users[1])
        index.stop()
        #expect(FileManager.default.fileExists(atPath: index.paths.snapshot.string))
        FileManager.default.createFile(atPath: index.mount + "/pub/while-down.txt", contents: nil)
        try index.start()
        defer { index.stop() }
        #expect(index.log.contains("restored the index"), "\(index.log)")
        let expected = try visible(index, Self.users[1])
        #expect(expected.subtracting(before) == [index.mount + "/pub/while-down.txt"])
        #expect(waitUntil(timeout: 10, interval: 0.05) { (try? answered(index, Self.users[1])) == expected })
    }

    /// A user with no daemon of their own: a search the system index
    /// covers is answered by it over one connection, whether the front or
    /// the full command asks; one it does not cover costs one connection
    /// (declined) and is crawled without asking again; `--live` is served
    /// by it. The router's third destination, counted.
    @Test func eachSearchAsksTheSystemIndexOnce() throws {
        let index = try SystemIndex()
        try Self.plant(index.mount)
        try index.start()
        defer { index.stop() }
        let user = Self.users[0]
        func served() throws -> Int { try DaemonClient.connectSystem(index.paths).status().connectionsServed }
        let outside = try TemporaryDirectory()
        _ = chmod(outside.path.string, 0o755)
        FileManager.default.createFile(atPath: outside.path.appending("elsewhere.txt").string, contents: nil)
        for (form, folder, answeredHere) in [
            (["*.txt"], index.mount + "/pub", true), (["--json", "*.txt"], index.mount + "/pub", true),
            (["--count", "file"], index.mount + "/pub", true), (["*.txt"], outside.path.string, false),
        ] {
            let before = try served()
            let output = try index.mdq(form, user: user.user, groups: user.groups, in: folder)
            let after = try served()
            #expect(output.status == 0, "\(form) in \(folder): \(output.stderrText)")
            // The status asked after is one of them.
            #expect(after - before == 2, "\(form) in \(folder): \(after - before - 1) connections")
            let crawled = try index.mdq(["--no-daemon"] + form, user: user.user, groups: user.groups, in: folder)
            #expect(Set(output.stdoutText.split(separator: "\n")) == Set(crawled.stdoutText.split(separator: "\n")))
            if !answeredHere { #expect(output.stdoutText.contains("elsewhere.txt")) }
        }
    }
}
