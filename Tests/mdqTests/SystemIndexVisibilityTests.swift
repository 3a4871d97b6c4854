import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// What each user learns from the system index, against the kernel: on
/// random trees of modes, owners, groups and ACLs on a loop filesystem,
/// every user's answer, asked as that user through `mdq` and over the
/// socket, equals a walk done as that user (`pathsVisible`: `access(2)`
/// under `setpriv`) — paths, counts, scoped searches from every folder the
/// user can open, a live query and a `follow` stream through
/// `chmod`/`chown`/`setfacl`/rename storms; and a scope the user cannot
/// reach answers exactly as one that does not exist, whatever its path
/// goes through (a folder closed to the user, a symlink the user planted
/// into root's files, `..`).
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(
        if: LoopFilesystem.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/setfacl")))
struct SystemIndexVisibilityTests {
    typealias SystemIndex = SystemIndexTests.SystemIndex
    typealias User = (user: UInt32, groups: [UInt32])

    /// Users with several supplementary groups each, and one with none of
    /// the trees' groups.
    static let users: [User] = [
        (45001, [46001, 46003]), (45002, [46002, 46001]), (45003, [46003]), (45004, [46004, 46002, 46003]),
    ]
    static let modes: [mode_t] = [0o700, 0o711, 0o751, 0o750, 0o755, 0o2750, 0o1777, 0o701, 0o744, 0o770, 0o705]
    static let owners: [uid_t] = [0, 45001, 45002, 45003]
    static let groups: [gid_t] = [0, 46001, 46002, 46003]
    static let acls = [
        "u:45003:rx", "g:46001:---", "u:45001:r,m::rx", "g::---,g:46002:rwx", "u:45002:rwx,m::r",
        "u:45002:x,g:46003:rx", "g:46003:r-x,o::---", "u:45003:rx,m::---", "g:46002:rx,m::---,o::r-x",
        "g:46002:r--,g:46003:--x,m::rwx", "u:45004:rwx",
    ]

    /// A random tree under `root`: folders with random modes, owners,
    /// groups and ACLs, a file or two in each; returns the folders.
    static func plant(_ root: String, random: inout SeededGenerator, count: Int = 40) -> [String] {
        var folders = [root]
        var made: [String] = []
        for i in 0..<count {
            let parent = folders.randomElement(using: &random)!
            if parent.split(separator: "/").count > root.split(separator: "/").count + 4 { continue }
            let path = parent + "/d\(i)"
            guard mkdir(path, 0o755) == 0 else { continue }
            folders.append(path)
            made.append(path)
            for j in 0..<Int.random(in: 0..<3, using: &random) {
                FileManager.default.createFile(atPath: path + "/f\(j).txt", contents: Data(count: j * 7))
            }
        }
        for folder in made { scramble(folder, random: &random) }
        return made
    }

    static func scramble(_ folder: String, random: inout SeededGenerator) {
        _ = chown(folder, owners.randomElement(using: &random)!, groups.randomElement(using: &random)!)
        _ = chmod(folder, modes.randomElement(using: &random)!)
        switch Int.random(in: 0..<4, using: &random) {
        case 0: _ = try? Shell.run("/usr/bin/setfacl", ["-m", acls.randomElement(using: &random)!, folder])
        case 1: _ = try? Shell.run("/usr/bin/setfacl", ["-b", folder])
        default: break
        }
    }

    /// The kernel's answer for `user`: a walk from `start`.
    static func walk(_ root: String, _ user: User, from start: String = "/") throws -> Set<String> {
        try pathsVisible(pathsBelow(root), user: user.user, groups: user.groups, from: start)
    }

    static func lines(_ output: Shell.Output) -> Set<String> {
        Set(output.stdoutText.split(separator: "\n").map(String.init))
    }

    @Test(arguments: [UInt64(1), 2])
    func everyAnswerIsAWalkAsTheUser(seed: UInt64) throws {
        let index = try SystemIndex()
        var random = SeededGenerator(seed: seed)
        let folders = Self.plant(index.mount, random: &random)
        try index.start()
        defer { index.stop() }
        var hiddenSomewhere = 0
        for user in Self.users {
            // Everything, from `/`: paths and the count.
            let expected = try Self.walk(index.mount, user)
            if expected.count < (try pathsBelow(index.mount)).count { hiddenSomewhere += 1 }
            let all = try index.mdq(["--daemon", "-a", "TRUEPREDICATE"], user: user.user, groups: user.groups)
            #expect(all.status == 0, "uid \(user.user): \(all.stderrText)")
            let answered = Self.lines(all)
            #expect(
                answered == expected,
                "seed \(seed) uid \(user.user): extra \(answered.subtracting(expected).sorted().prefix(3)), missing \(expected.subtracting(answered).sorted().prefix(3))"
            )
            let counted = try index.mdq(
                ["--daemon", "-a", "--count", "TRUEPREDICATE"], user: user.user, groups: user.groups)
            #expect(counted.stdoutText == "\(expected.count)\n", "uid \(user.user): \(counted.stderrText)")
            // From each folder the user opens: a walk from it. `--daemon`
            // makes the system index answer (a crawl as the user would
            // print the same, and prove nothing).
            let reached = try foldersReached(folders, user: user.user, groups: user.groups)
            for folder in folders.shuffled(using: &random).prefix(10) where reached[folder] == "" {
                let output = try index.mdq(
                    ["--daemon", "--onlyin", folder, "TRUEPREDICATE"], user: user.user, groups: user.groups)
                let fromFolder = try Self.walk(index.mount, user, from: folder)
                #expect(
                    output.status == 0 && Self.lines(output) == fromFolder,
                    "seed \(seed) uid \(user.user) in \(folder): \(output.stderrText) extra \(Self.lines(output).subtracting(fromFolder).sorted().prefix(3)), missing \(fromFolder.subtracting(Self.lines(output)).sorted().prefix(3))"
                )
            }
        }
        #expect(hiddenSomewhere == Self.users.count, "the trees hide something from every user")
    }

    /// A folder the user cannot reach answers exactly as a folder that is
    /// not there, with and without `--daemon`, through the front and the
    /// full command, whatever path leads to it.
    @Test func anUnreachableScopeAnswersAsAMissingOne() throws {
        let index = try SystemIndex()
        let m = index.mount
        for folder in ["a700", "a700/sub", "a711", "a711/pubsub", "pub", "pub/sticky"] {
            try FileManager.default.createDirectory(atPath: m + "/" + folder, withIntermediateDirectories: true)
        }
        FileManager.default.createFile(atPath: m + "/a711/pubsub/visible_via_711.txt", contents: Data(count: 3))
        FileManager.default.createFile(atPath: m + "/a700/sub/secret.txt", contents: nil)
        for (folder, mode) in [("a700", 0o700), ("a711", 0o711), ("pub/sticky", 0o1777)] {
            #expect(chown(m + "/" + folder, folder == "pub/sticky" ? 0 : 45001, 46001) == 0)
            #expect(chmod(m + "/" + folder, mode_t(mode)) == 0)
        }
        // Root's own folder, and a symlink to it planted by the user.
        let secret = try TemporaryDirectory()
        #expect(chmod(secret.path.string, 0o700) == 0)
        try FileManager.default.createDirectory(
            atPath: secret.path.appending("key").string, withIntermediateDirectories: true)
        try index.start()
        defer { index.stop() }
        let bob: User = (45002, [46002])
        let planted = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=45002", "--regid=46002", "--groups=46002", "/bin/ln", "-s", secret.path.string,
                m + "/pub/sticky/l5",
            ])
        #expect(planted.status == 0, "\(planted.stderrText)")
        // The 0711 case: bob cannot list a711, so a walk from `/` never
        // finds pubsub; but bob may open a711/pubsub by its name.
        let everything = try index.mdq(["--daemon", "-a", "TRUEPREDICATE"], user: bob.user, groups: bob.groups)
        #expect(!everything.stdoutText.contains("pubsub"), "\(everything.stdoutText)")
        let named = try index.mdq(
            ["--daemon", "--onlyin", m + "/a711/pubsub", "TRUEPREDICATE"], user: bob.user, groups: bob.groups)
        #expect(named.stdoutText == m + "/a711/pubsub/visible_via_711.txt\n", "\(named.stderrText)")
        // Pairs that differ only in whether something exists where bob
        // cannot look.
        let pairs = [
            (m + "/a700/sub", m + "/a700/nosub"),
            (m + "/a700/sub/../sub", m + "/a700/nosub/../sub"),
            (m + "/pub/sticky/l5/key", m + "/pub/sticky/l5/nokey"),
            (m + "/a700/sub/../../pub", m + "/a700/nosub/../../pub"),
        ]
        for (exists, absent) in pairs {
            for options in [["--daemon"], [], ["--count"], ["--daemon", "--count"]] {
                let one = try index.mdq(options + ["--onlyin", exists, "*"], user: bob.user, groups: bob.groups)
                let other = try index.mdq(options + ["--onlyin", absent, "*"], user: bob.user, groups: bob.groups)
                #expect(
                    one.status == other.status && one.stdoutText == other.stdoutText
                        && one.stderrText.replacingOccurrences(of: exists, with: "X")
                            == other.stderrText.replacingOccurrences(of: absent, with: "X"),
                    "\(options) \(exists): \(one.status) \(one.stderrText) | \(absent): \(other.status) \(other.stderrText)"
                )
                #expect(!one.stdoutText.contains("secret"))
            }
        }
        // Over the socket, as bob: a path alone is never resolved; a folder
        // bob opened named by another path is not taken for it; both the
        // same whether that path exists or not, for query, subscribe and
        // follow.
        let script = """
            import json, os, socket, sys
            path, pub = sys.argv[1], sys.argv[2]
            def ask(command, scope, passing):
                s = socket.socket(socket.AF_UNIX); s.connect(path)
                request = {"id": 1, "command": command, "protocol": 2, "predicate": "TRUEPREDICATE"}
                if command == "follow": request["scope"] = dict(scope)
                else: request["scopes"] = [dict(scope)]
                fds = []
                if passing:
                    fds = [os.open(pub, os.O_PATH | os.O_DIRECTORY)]
                    request["descriptors"] = 1
                    (request["scope"] if command == "follow" else request["scopes"][0])["descriptor"] = 0
                socket.send_fds(s, [(json.dumps(request) + "\\n").encode()], fds)
                for fd in fds: os.close(fd)
                reply = json.loads(s.makefile("rb").readline())
                return json.dumps(reply.get("error") or reply, sort_keys=True)
            for target in sys.argv[3:]:
                for command in ["query", "subscribe", "follow"]:
                    for passing in [False, True]:
                        print(command, passing, ask(command, {"path": target}, passing).replace(target, "X"))
            """
        func asked(_ target: String) throws -> String {
            try Shell.run(
                "/usr/bin/setpriv",
                [
                    "--reuid=45002", "--regid=46002", "--groups=46002", "/usr/bin/python3", "-c", script,
                    index.paths.socket.string, m + "/pub", target,
                ]
            ).stdoutText
        }
        // A container whose registry lies in a folder closed to bob: the
        // system index does not read it for him (it would mark bob's own
        // results as its external documents).
        try FileManager.default.createDirectory(
            atPath: m + "/a700/Container/.mdq", withIntermediateDirectories: true)
        FileManager.default.createFile(
            atPath: m + "/a700/Container/.mdq/external-documents", contents: Data((m + "/pub\0").utf8))
        FileManager.default.createFile(atPath: m + "/pub/mine.txt", contents: nil)
        let containerScript = """
            import json, os, socket, sys
            path, pub, container = sys.argv[1:4]
            s = socket.socket(socket.AF_UNIX); s.connect(path)
            request = {"id": 1, "command": "subscribe", "protocol": 2, "predicate": "NSMetadataItemIsUbiquitousKey == YES",
                       "interval": 0, "container": container, "descriptors": 1,
                       "scopes": [{"path": pub, "descriptor": 0}]}
            fd = os.open(pub, os.O_PATH | os.O_DIRECTORY)
            socket.send_fds(s, [(json.dumps(request) + "\\n").encode()], [fd])
            for line in s.makefile("rb"):
                event = json.loads(line)
                if "error" in event or event.get("event") == "didFinishGathering":
                    print(json.dumps(event.get("error") or event.get("count")))
                    break
            """
        let ubiquitous = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=45002", "--regid=46002", "--groups=46002", "/usr/bin/python3", "-c", containerScript,
                index.paths.socket.string, m + "/pub", m + "/a700/Container",
            ])
        #expect(ubiquitous.stdoutText == "0\n", "\(ubiquitous.stdoutText) \(ubiquitous.stderrText)")
        for (exists, absent) in pairs + [(m + "/a700/sub", m + "/pub/nothing")] {
            let one = try asked(exists)
            let other = try asked(absent)
            #expect(!one.isEmpty && one == other, "\(exists): \(one)")
            // Only the path that leads to the folder passed is taken.
            if !exists.hasSuffix("/../../pub") {
                #expect(!one.contains("\"done\"") && !one.contains("following"), "\(one)")
            }
        }
    }

    /// A user's live query on a scope they opened, and their `follow`
    /// stream of it, through storms of permission changes and renames:
    /// once quiet, the query's results (replayed from its updates) are a
    /// walk from the scope as that user, and files then made in every
    /// folder reach the follower exactly in the folders that walk lists.
    @Test(arguments: [UInt64(7), 8])
    func liveAnswersAndFollowersTrackAWalkThroughStorms(seed: UInt64) throws {
        let index = try SystemIndex()
        var random = SeededGenerator(seed: seed)
        var folders = Self.plant(index.mount, random: &random, count: 30)
        try index.start()
        defer { index.stop() }
        let user = Self.users[3]
        let results = index.temp.path.appending("results-\(seed)").string
        let followed = index.temp.path.appending("followed-\(seed)").string
        for file in [results, followed] {
            FileManager.default.createFile(atPath: file, contents: nil)
            _ = chmod(file, 0o666)
        }
        // As the user: subscribes to the mount (its folder opened and
        // passed), writing the paths after every event; follows it,
        // writing each created name's folder and name.
        let script = """
            import base64, json, os, select, socket, sys
            path, scope, results, followed = sys.argv[1:5]
            def connect(request):
                s = socket.socket(socket.AF_UNIX); s.connect(path)
                fd = os.open(scope, os.O_PATH | os.O_DIRECTORY)
                socket.send_fds(s, [(json.dumps(request) + "\\n").encode()], [fd])
                os.close(fd)
                return s
            subscriber = connect({"id": 1, "command": "subscribe", "protocol": 2, "predicate": "TRUEPREDICATE", "interval": 0,
                                  "scopes": [{"path": scope, "hidden": True, "descriptor": 0}], "descriptors": 1})
            follower = connect({"id": 2, "command": "follow", "descriptors": 1,
                                "scope": {"path": scope, "descriptor": 0}})
            buffers = {subscriber: b"", follower: b""}
            items, names = {}, []
            def name(e):
                return e.get("name") or base64.b64decode(e.get("nameBase64", "")).decode(errors="replace")
            def folder(e):
                return e.get("folder") or base64.b64decode(e.get("folderBase64", "")).decode(errors="replace")
            while True:
                ready, _, _ = select.select(list(buffers), [], [], 60)
                if not ready: break
                for s in ready:
                    chunk = s.recv(1 << 16)
                    if not chunk: sys.exit(0)
                    buffers[s] += chunk
                    while b"\\n" in buffers[s]:
                        line, buffers[s] = buffers[s].split(b"\\n", 1)
                        event = json.loads(line)
                        if "error" in event: print(event, file=sys.stderr, flush=True); sys.exit(1)
                        kind = event.get("event")
                        if s is subscriber:
                            if kind == "result": items[event["item"]["id"]] = event["item"]["path"]
                            if kind == "resynchronize": items = {}
                            if kind == "didUpdate":
                                for item in event["added"] + event["changed"]: items[item["id"]] = item["path"]
                                for item in event["removed"]: items.pop(item["id"], None)
                            with open(results, "w") as f: f.write("\\n".join(sorted(items.values())))
                        elif kind == "events":
                            for e in event["events"]:
                                if name(e).startswith("probe-"): names.append(folder(e) + "/" + name(e))
                            with open(followed, "w") as f: f.write("\\n".join(names))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=\(user.user)", "--regid=\(user.groups[0])",
            "--groups=\(user.groups.map(String.init).joined(separator: ","))", "/usr/bin/python3", "-c", script,
            index.paths.socket.string, index.mount, results, followed,
        ]
        try process.run()
        defer { process.terminate() }
        func current(_ file: String) -> Set<String> {
            Set(((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init))
        }
        var expected = try Self.walk(index.mount, user, from: index.mount)
        #expect(
            waitUntil(timeout: 20, interval: 0.02) { current(results) == expected },
            "extra \(current(results).subtracting(expected).sorted().prefix(3)), missing \(expected.subtracting(current(results)).sorted().prefix(3))"
        )
        // The storm: permissions scrambled, folders moved across them.
        for _ in 0..<40 {
            let folder = folders.randomElement(using: &random)!
            if Int.random(in: 0..<4, using: &random) == 0 {
                let target = folders.randomElement(using: &random)!
                let moved = target + "/m\(Int.random(in: 0..<1000, using: &random))"
                if !target.hasPrefix(folder + "/"), target != folder, rename(folder, moved) == 0 {
                    folders = folders.map {
                        $0 == folder || $0.hasPrefix(folder + "/") ? moved + $0.dropFirst(folder.count) : $0
                    }
                }
            } else {
                Self.scramble(folder, random: &random)
            }
        }
        expected = try Self.walk(index.mount, user, from: index.mount)
        var last: Set<String> = []
        let converged = waitUntil(timeout: 20, interval: 0.02) {
            last = current(results)
            return last == expected
        }
        #expect(
            converged,
            "seed \(seed): extra \(last.subtracting(expected).sorted().prefix(3)), missing \(expected.subtracting(last).sorted().prefix(3))"
        )
        // A file made in every folder, then one in the scope itself: the
        // stream keeps the engine's order, so once the last arrives every
        // earlier one the follower may see has.
        let all = [index.mount] + folders
        for (i, folder) in all.dropFirst().enumerated() {
            FileManager.default.createFile(atPath: folder + "/probe-\(i).txt", contents: nil)
        }
        let last_ = index.mount + "/probe-last.txt"
        FileManager.default.createFile(atPath: last_, contents: nil)
        #expect(waitUntil(timeout: 20, interval: 0.02) { current(followed).contains(last_) }, "\(current(followed))")
        let probes = try pathsBelow(index.mount).filter { $0.split(separator: "/").last!.hasPrefix("probe-") }
        let told = current(followed)
        let visible = try pathsVisible(probes, user: user.user, groups: user.groups, from: index.mount)
        #expect(
            told == visible,
            "seed \(seed): told \(told.subtracting(visible).sorted().prefix(3)) it may not see, not told \(visible.subtracting(told).sorted().prefix(3))"
        )
        #expect(visible.count < probes.count, "the storm hides some folders from the user")
    }

    /// What a user's client cannot make the system index spend or believe:
    /// lines sent during a subscription without reading the answers end
    /// the subscription instead of filling the daemon's memory;
    /// descriptors no request claims are closed; a query names at most 16
    /// scopes; and a folder shown at a scope's path by a mount namespace of
    /// the user's own is not taken for the indexed one, even when it is
    /// that very folder (reached through a bind mount elsewhere).
    @Test func hostileClientsAreBounded() throws {
        let index = try SystemIndex()
        let m = index.mount
        for folder in ["a700/sub", "pub"] {
            try FileManager.default.createDirectory(atPath: m + "/" + folder, withIntermediateDirectories: true)
        }
        FileManager.default.createFile(atPath: m + "/a700/sub/secret.txt", contents: nil)
        #expect(chown(m + "/a700", 45001, 46001) == 0)
        #expect(chmod(m + "/a700", 0o700) == 0)
        try index.start()
        defer { index.stop() }
        let daemon = try #require(index.process?.processIdentifier)
        func descriptors() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon)/fd").count) ?? -1
        }
        let script = """
            import json, os, socket, sys, time
            path, pub, test = sys.argv[1:4]
            def connect():
                s = socket.socket(socket.AF_UNIX); s.connect(path); return s
            def folder(p): return os.open(p, os.O_PATH | os.O_DIRECTORY)
            if test == "junk":
                s = connect()
                request = {"id": 1, "command": "subscribe", "protocol": 2, "predicate": "TRUEPREDICATE", "capacity": 4096,
                           "descriptors": 1, "scopes": [{"path": pub, "descriptor": 0}]}
                fd = folder(pub)
                socket.send_fds(s, [(json.dumps(request) + "\\n").encode()], [fd])
                s.settimeout(20)
                try:
                    for _ in range(200000): s.sendall(b'{"id":"' + b"x" * 200 + b'"}\\n')
                    print("never closed")
                except socket.timeout:
                    print("never closed: the daemon stopped reading")
                except OSError:
                    print("closed")
            elif test == "extra":
                s = connect()
                fds = [folder(pub) for _ in range(3)]
                socket.send_fds(s, [b'{"id":1,"command":"hello"}\\n'], fds)
                print(s.makefile("rb").readline().decode().strip()[:20])
                for fd in fds: os.close(fd)
                time.sleep(0.5)
                print("done", flush=True)
                sys.stdin.readline()
            elif test == "scopes":
                s = connect()
                fds = [folder(pub) for _ in range(16)]
                request = {"id": 1, "command": "query", "predicate": "TRUEPREDICATE", "output": "count",
                           "descriptors": 16, "scopes": [{"path": pub, "descriptor": i} for i in range(16)]
                           + [{"path": pub, "descriptor": 0}]}
                socket.send_fds(s, [(json.dumps(request) + "\\n").encode()], fds)
                print(json.loads(s.makefile("rb").readline()).get("error", {}).get("code"))
            """
        func run(_ test: String) throws -> String {
            try Shell.run(
                "/usr/bin/setpriv",
                [
                    "--reuid=45002", "--regid=46002", "--groups=46002", "/usr/bin/python3", "-c", script,
                    index.paths.socket.string, m + "/pub", test,
                ]
            ).stdoutText
        }
        #expect(try run("junk") == "closed\n")
        #expect(try run("scopes") == "bad-request\n")
        // Three descriptors with a request that claims none: none kept.
        let before = descriptors()
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        holder.arguments = [
            "--reuid=45002", "--regid=46002", "--groups=46002", "/usr/bin/python3", "-c", script,
            index.paths.socket.string, m + "/pub", "extra",
        ]
        let input = Pipe()
        let output = Pipe()
        holder.standardInput = input
        holder.standardOutput = output
        try holder.run()
        var told = ""
        while !told.contains("done"), let chunk = try output.fileHandleForReading.read(upToCount: 1), !chunk.isEmpty {
            told += String(decoding: chunk, as: UTF8.self)
        }
        // The connection is open and answered; the daemon holds one
        // descriptor more for it, not four.
        #expect(told.hasPrefix("{\"id\":1"), "\(told)")
        #expect(descriptors() <= before + 1, "\(before) before, \(descriptors()) with the connection")
        try input.fileHandleForWriting.close()
        holder.waitUntilExit()
        // The very folder a700/sub, bound elsewhere by root and shown at
        // its own path in a mount namespace of the client's: refused.
        let elsewhere = index.temp.path.appending("elsewhere").string
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(try Shell.run("/usr/bin/mount", ["--bind", m + "/a700/sub", elsewhere]).status == 0)
        defer { _ = try? Shell.run("/usr/bin/umount", [elsewhere]) }
        let spoof = """
            import json, os, socket, sys
            path, target = sys.argv[1:3]
            s = socket.socket(socket.AF_UNIX); s.connect(path)
            request = {"id": 1, "command": "query", "predicate": "TRUEPREDICATE", "output": "paths",
                       "descriptors": 1, "scopes": [{"path": target, "descriptor": 0}]}
            fd = os.open(target, os.O_PATH | os.O_DIRECTORY)
            socket.send_fds(s, [(json.dumps(request) + "\\n").encode()], [fd])
            print(json.loads(s.makefile("rb").readline()).get("error", {}).get("code"))
            """
        let spoofed = try Shell.run(
            "/usr/bin/unshare",
            [
                "--mount", "--propagation", "private", "/bin/sh", "-c",
                "mount -t tmpfs none \"$4\" && mkdir \"$2\" && mount --bind \"$1\" \"$2\" && "
                    + "exec /usr/bin/setpriv --reuid=45002 --regid=46002 --groups=46002 "
                    + "/usr/bin/python3 -c \"$0\" \"$3\" \"$2\"",
                spoof, elsewhere, m + "/a700/sub", index.paths.socket.string, m + "/a700",
            ])
        #expect(spoofed.stdoutText == "not-covered\n", "\(spoofed.stdoutText) \(spoofed.stderrText) \(spoofed.status)")
    }
}
