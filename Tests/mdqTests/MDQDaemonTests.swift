import Foundation
import Glibc
import MetadataIndex
import SystemPackage
import TestSupport
import Testing

/// `mdq daemon` and `mdq index`, end to end, each test with a daemon of its
/// own on private folders (`MDQ_RUNTIME_DIR`, `MDQ_STATE_DIR`).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MDQDaemonTests {
    /// A daemon process for one test; killed when the value goes.
    final class Daemon {
        let temp: TemporaryDirectory
        let environment: [String: String]
        var process: Process?

        /// Options after `mdq daemon run` (`--no-content`).
        let options: [String]

        init(
            _ temp: TemporaryDirectory, snapshotInterval: Double = 60, options: [String] = [],
            environment extra: [String: String] = [:]
        ) throws {
            self.temp = temp
            self.options = options
            environment = [
                "MDQ_RUNTIME_DIR": temp.path.appending("run").string,
                "MDQ_STATE_DIR": temp.path.appending("state").string,
            ].merging(extra) { $1 }
            try start(snapshotInterval: snapshotInterval)
        }

        var paths: DaemonPaths {
            DaemonPaths(
                runtimeDirectory: FilePath(environment["MDQ_RUNTIME_DIR"]!),
                stateDirectory: FilePath(environment["MDQ_STATE_DIR"]!))
        }

        func start(snapshotInterval: Double = 60) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: MDQCommandTests.binary)
            process.arguments = ["daemon", "run", "--snapshot-interval", String(snapshotInterval)] + options
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let log = FileHandle(forWritingAtPath: try logFile()) ?? FileHandle.nullDevice
            log.seekToEndOfFile()
            process.standardOutput = log
            process.standardError = log
            process.standardInput = FileHandle.nullDevice
            try process.run()
            self.process = process
            let deadline = Date(timeIntervalSinceNow: 20)
            while (try? DaemonClient.connect(paths).hello()) == nil && Date() < deadline { usleep(10_000) }
        }

        func logFile() throws -> String {
            let path = temp.path.appending("daemon-test.log").string
            if !FileManager.default.fileExists(atPath: path) {
                _ = FileManager.default.createFile(atPath: path, contents: nil)
            }
            return path
        }

        var log: String { (try? String(contentsOfFile: logFile(), encoding: .utf8)) ?? "" }

        /// Runs mdq with the daemon's folders.
        func mdq(_ arguments: [String], in folder: String? = nil) throws -> Shell.Output {
            try Shell.run(MDQCommandTests.binary, arguments, environment: environment, currentDirectory: folder)
        }

        func kill(_ signal: Int32) {
            guard let process else { return }
            Glibc.kill(process.processIdentifier, signal)
            process.waitUntilExit()
            self.process = nil
        }

        deinit { kill(SIGKILL) }
    }

    static func tree(_ temp: TemporaryDirectory) throws -> String {
        for i in 0..<80 {
            let folder = ["docs", "photos", "src/app", "src/node_modules/pkg"][i % 4]
            try temp.file(
                "tree/\(folder)/\(i % 3 == 0 ? "Report" : "note")-\(i).\(["txt", "png", "md"][i % 3])",
                contents: String(repeating: "x", count: i))
        }
        try temp.file("tree/.hidden/secret.png")
        return temp.path.appending("tree").string
    }

    func lines(_ output: Shell.Output) -> [String] {
        output.stdoutText.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init).sorted()
    }

    /// Every output form answered by the daemon equals a crawl's, line for
    /// line (the daemon answers in index order, a crawl in thread order).
    @Test func daemonAnswersEqualACrawl() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let daemon = try Daemon(temp)
        let added = try daemon.mdq(["index", "add", tree, "--exclude", "node_modules"])
        #expect(added.status == 0, "\(added.stderrText)")
        let forms: [[String]] = [
            ["kMDItemFSName LIKE '*.png'"], ["report"], ["--count", "TRUEPREDICATE"], ["-0", "*.md"],
            ["--json", "kMDItemFSSize > 40"], ["--attr", "kMDItemFSSize", "--attr", "kMDItemContentType", "*.txt"],
            ["--sort", "kMDItemFSName:desc", "--limit", "5", "*"], ["--group", "kMDItemContentType", "*"],
            ["--type", "d", "*"], ["--spotlight", "kMDItemFSName == \"note*\"c"], ["--count", "--limit", "3", "*"],
            ["--count", "--sort", "kMDItemFSSize", "--limit", "3", "*"],
            // Sorted with a limit: the daemon answers the first in the
            // first key and their ties (by a size or a date, without
            // reading the others' paths), the sort here cuts them.
            ["--sort", "kMDItemFSSize:desc", "--limit", "3", "*"],
            ["--sort", "kMDItemFSContentChangeDate", "--limit", "2", "--attr", "kMDItemFSSize", "*"],
            ["--sort", "kMDItemFSSize", "--sort", "kMDItemFSName:desc", "--limit", "4", "*"],
            ["--sort", "kMDItemContentType", "--limit", "3", "*"],
            ["--sort", "kMDItemPath:desc", "--limit", "1", "--json", "*"],
        ]
        for form in forms {
            let scoped = form + [tree, "--exclude", "node_modules"]
            let crawled = try daemon.mdq(["--no-daemon"] + scoped)
            let answered = try daemon.mdq(["--daemon"] + scoped)
            let everything = try daemon.mdq(["--daemon", "-a"] + form)  // all the daemon indexes
            #expect(
                crawled.status == 0 && answered.status == 0 && everything.status == 0, "\(form): \(answered.stderrText)"
            )
            if form.contains("-0") {
                #expect(Set(answered.stdout.split(separator: 0)) == Set(crawled.stdout.split(separator: 0)))
            } else if form.contains("--sort") || form.contains("--group") {
                #expect(answered.stdout == crawled.stdout, "\(form)")
            } else {
                #expect(lines(answered) == lines(crawled), "\(form)")
                #expect(lines(everything) == lines(crawled), "\(form) without a scope")
            }
        }
        // Stricter rules than the index's: crawled, not answered from it.
        let hidden = try daemon.mdq(["--daemon", "--hidden", "*.png", tree])
        #expect(hidden.status == 1 && hidden.stderrText.contains("without hidden items"), "\(hidden.stderrText)")
        let fallback = try daemon.mdq(["--hidden", "*.png", tree])
        #expect(fallback.status == 0 && fallback.stdoutText.contains("secret.png"))
        #expect(fallback.stderrText.contains("note: the daemon indexes \(tree) without hidden items"))
        // A file created is found by the next query.
        try temp.file("tree/docs/fresh-report.txt")
        let deadline = Date(timeIntervalSinceNow: 10)
        var found = false
        while !found && Date() < deadline {
            found = try daemon.mdq(["-a", "fresh-report"]).stdoutText.contains("fresh-report.txt")
        }
        #expect(found)
        let status = try daemon.mdq(["daemon", "status"])
        #expect(status.status == 0 && status.stdoutText.contains(tree), "\(status.stdoutText)")
    }

    /// `--everywhere` searches everything the daemon indexes, but under
    /// the query's own rules: hidden entries only with `--hidden`, its
    /// `--exclude` names left out, whatever rules the index was made with.
    /// Through the quick path (`--count`, plain paths) and the full command
    /// line alike.
    @Test func anEverywhereSearchKeepsItsOwnRules() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let daemon = try Daemon(temp)
        let added = try daemon.mdq(["index", "add", "--hidden", tree])
        #expect(added.status == 0, "\(added.stderrText)")
        for rules in [[], ["--hidden"], ["--exclude", "node_modules"], ["--hidden", "--exclude", "pkg"]] {
            for form in [["*.png"], ["--count", "*.png"], ["--name", "report"], ["--json", "*.png"]] {
                let crawled = try daemon.mdq(["--no-daemon"] + rules + form + [tree])
                let answered = try daemon.mdq(["--everywhere"] + rules + form)
                #expect(crawled.status == 0 && answered.status == 0, "\(rules) \(form): \(answered.stderrText)")
                #expect(lines(answered) == lines(crawled), "\(rules) \(form)")
            }
        }
        let hidden = try daemon.mdq(["-a", "*.png"])
        #expect(!hidden.stdoutText.contains("secret.png"), "a hidden file without --hidden")
        // A live query on everything indexed keeps its rules too.
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--count", "-a", "*.png"], environment: daemon.environment)
        let expected = try daemon.mdq(["--no-daemon", "--count", "*.png", tree]).stdoutText
        #expect(live.waitForLine { $0 + "\n" == expected }, "\(live.lines) \(live.errorText)")
        _ = live.interrupt()
    }

    /// The daemon is an accelerator, never a change of meaning: without a
    /// folder, mdq searches the current folder, and the same command line
    /// prints the same whether a daemon runs or not: in an indexed folder
    /// (answered by it), under rules stricter than its index's, and in a
    /// folder it does not index (crawled).
    @Test func theSameCommandLinePrintsTheSameWithOrWithoutTheDaemon() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let elsewhere = try temp.folder("elsewhere")
        for i in 0..<6 { try temp.file("elsewhere/report-\(i).png", contents: String(repeating: "y", count: i * 9)) }
        let daemon = try Daemon(temp)
        let added = try daemon.mdq(["index", "add", tree])
        #expect(added.status == 0, "\(added.stderrText)")
        let forms: [[String]] = [
            ["report"], ["*.png"], ["--count", "*"], ["--name", "note"], ["-0", "note*"],
            ["kMDItemFSName LIKE '*.md'"], ["kMDItemFSSize > 40"], ["--hidden", "*.png"], ["--exclude", "pkg", "*"],
            ["--type", "d", "*"], ["--type", "f", "--count", "*"], ["--json", "*.txt"],
            ["--attr", "kMDItemFSSize", "*.md"], ["--sort", "kMDItemFSSize:desc", "--limit", "3", "*"],
            ["--group", "kMDItemContentType", "*"], ["--spotlight", "kMDItemFSName == \"report*\"c"],
            ["--name", "REPORT", "--count"], ["kMDItemContentType == 'public.png'"],
            ["--limit", "2", "--sort", "kMDItemFSName", "*"],
            ["kMDItemFSName BEGINSWITH[c] 'rep' AND kMDItemFSSize < 30"],
        ]
        for folder in [tree, tree + "/src", elsewhere.string] {
            for form in forms {
                let crawled = try daemon.mdq(["--no-daemon"] + form, in: folder)
                let answered = try daemon.mdq(form, in: folder)
                #expect(crawled.status == 0 && answered.status == 0, "\(form) in \(folder): \(answered.stderrText)")
                if form.contains("--sort") || form.contains("--group") {
                    #expect(answered.stdout == crawled.stdout, "\(form) in \(folder)")
                } else if form.contains("-0") {
                    #expect(Set(answered.stdout.split(separator: 0)) == Set(crawled.stdout.split(separator: 0)))
                } else {
                    #expect(lines(answered) == lines(crawled), "\(form) in \(folder)")
                }
                // Crawled in a folder the daemon indexes: said once, why.
                let notes = answered.stderrText.split(separator: "\n").filter { $0.hasPrefix("mdq: note: ") }
                if folder != elsewhere.string && form.first == "--hidden" {
                    #expect(
                        notes == [
                            "mdq: note: the daemon indexes \(tree) without hidden items (mdq index add --hidden \(tree) adds them); searching by crawling"
                        ], "\(notes)")
                } else {
                    #expect(notes.isEmpty, "\(form) in \(folder): \(notes)")
                }
            }
        }
        // An --exclude glob is not the daemon's to answer: said, then crawled.
        let glob = try daemon.mdq(["--exclude", "p*", "--count", "*"], in: tree)
        #expect(glob.stderrText.contains("mdq: note: the index daemon answers --exclude with exact folder names"))
        #expect(glob.stdout == (try daemon.mdq(["--no-daemon", "--exclude", "p*", "--count", "*"], in: tree)).stdout)
        // The daemon did answer inside what it indexes, and only there.
        #expect(try daemon.mdq(["--daemon", "--count", "*"], in: tree + "/src").status == 0)
        let outside = try daemon.mdq(["--daemon", "--count", "*"], in: elsewhere.string)
        #expect(
            outside.status == 1 && outside.stderrText.contains("does not index \(elsewhere.string)"),
            "\(outside.stderrText)")
        let hiddenRequired = try daemon.mdq(["--daemon", "--hidden", "--count", "*"], in: tree)
        #expect(hiddenRequired.status == 1 && hiddenRequired.stderrText.contains("without hidden items"))
        // Everything indexed is asked for by name, and needs the daemon.
        let everywhere = try daemon.mdq(["-a", "--count", "report*"], in: elsewhere.string)
        #expect(everywhere.stdoutText == "27\n", "\(everywhere.stdoutText) \(everywhere.stderrText)")
        let conflicting = try daemon.mdq(["-a", "--no-daemon", "report"])
        #expect(conflicting.status != 0 && conflicting.stderrText.contains("--everywhere"))
        let withFolder = try daemon.mdq(["-a", "report", tree])
        #expect(withFolder.status != 0 && withFolder.stderrText.contains("no folder"))
    }

    @Test func withoutADaemonMdqCrawlsOrSaysWhy() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let daemon = try Daemon(temp)
        daemon.kill(SIGTERM)
        let required = try daemon.mdq(["--daemon", "*.png", tree])
        #expect(required.status == 1 && required.stderrText.contains("no daemon is running"), "\(required.stderrText)")
        let crawled = try daemon.mdq(["--count", "*.png", tree])
        #expect(crawled.status == 0 && crawled.stderrText.isEmpty)
        // Killed outright, its socket left behind: a note, then a crawl.
        try daemon.start()
        _ = try daemon.mdq(["index", "add", tree])
        daemon.kill(SIGKILL)
        let afterKill = try daemon.mdq(["--count", "*.png", tree])
        #expect(afterKill.status == 0 && afterKill.stdoutText == crawled.stdoutText)
        #expect(afterKill.stderrText.contains("not running"), "\(afterKill.stderrText)")
        // `mdq index` needs the daemon, and says so.
        let index = try daemon.mdq(["index", "list"])
        #expect(index.status == 1 && index.stderrText.contains("no daemon is running"))
    }

    /// `mdq --live` served by the daemon: no watch in the process, the
    /// same output, a warning when the daemon goes and updates again when
    /// it is back.
    @Test func liveQueriesAreServedByTheDaemon() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let daemon = try Daemon(temp)
        #expect(try daemon.mdq(["index", "add", tree]).status == 0)
        let watchesBefore = try DaemonClient.connect(daemon.paths).status().watches
        var clients: [LiveProcess] = []
        for _ in 0..<3 {
            let live = try LiveProcess(
                MDQCommandTests.binary, ["--live", "--json", "--interval", "0", "*.txt", tree],
                environment: daemon.environment)
            #expect(live.waitForLine { $0.contains("\"didFinishGathering\"") })
            #expect(live.inotifyWatchCount == 0, "a client holds no watch of its own")
            clients.append(live)
        }
        #expect(try DaemonClient.connect(daemon.paths).status().watches == watchesBefore, "clients add no watches")
        try temp.file("tree/docs/live-1.txt")
        for live in clients { #expect(live.waitForLine { $0.contains("live-1.txt") && $0.contains("didUpdate") }) }
        daemon.kill(SIGKILL)
        for live in clients {
            #expect(live.waitForLine { $0.contains("\"event\":\"warning\"") && $0.contains("daemon") })
        }
        try daemon.start()
        try temp.file("tree/docs/live-2.txt")
        for live in clients {
            #expect(live.waitForLine(timeout: 30) { $0.contains("live-2.txt") && $0.contains("didUpdate") })
            #expect(live.interrupt() == 0)
        }
    }

    /// The daemon serves only its own user: another user who reaches the
    /// socket is refused.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func otherUsersAreRefused() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let daemon = try Daemon(temp)
        _ = try daemon.mdq(["index", "add", tree])
        // Open the way to the socket, as a careless setup might.
        for path in [temp.path.string, daemon.environment["MDQ_RUNTIME_DIR"]!] { #expect(chmod(path, 0o755) == 0) }
        #expect(chmod(daemon.paths.socket.string, 0o666) == 0)
        // mdq as that user will not talk to a socket in a folder of root's
        // (its client checks first) ...
        let output = try Shell.run(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--daemon", "--count", "*"],
            environment: daemon.environment)
        #expect(output.status == 1)
        #expect(output.stderrText.contains("not using the index daemon socket"), "\(output.stderrText)")
        // ... and a client that does not check is refused by the daemon.
        let raw = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sys.argv[1])
            try:
                s.sendall(b'{"id":1,"command":"hello"}\\n')
            except BrokenPipeError:
                pass  # refused at once: the refusal is already waiting
            print(s.makefile().readline())
            """
        let refused = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", raw,
                daemon.paths.socket.string,
            ])
        #expect(refused.stdoutText.contains("own user"), "\(refused.stdoutText) \(refused.stderrText)")
    }

    /// Killed at any moment, even while saving, the daemon leaves the old
    /// snapshot or the new one: each restart loads one and answers.
    @Test func sigkillMidSaveLeavesAUsableSnapshot() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let daemon = try Daemon(temp, snapshotInterval: 0.02)
        _ = try daemon.mdq(["index", "add", tree])
        var random = SeededGenerator(seed: 4)
        for round in 0..<6 {
            // Changes keep the daemon saving; then it is killed.
            for i in 0..<30 { try temp.file("tree/churn/\(round)-\(i).txt") }
            usleep(UInt32.random(in: 1_000...60_000, using: &random))
            daemon.kill(SIGKILL)
            try daemon.start(snapshotInterval: 0.02)
            let count = try daemon.mdq(["-a", "--count", "TRUEPREDICATE"])
            #expect(count.status == 0, "round \(round): \(count.stderrText)")
        }
        #expect(!daemon.log.contains("discarded"), "\(daemon.log)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: daemon.environment["MDQ_STATE_DIR"]!)
            .filter { $0.contains(".tmp-") }
        #expect(leftovers.count <= 1, "temporaries of killed saves are cleaned up: \(leftovers)")
    }

    /// Where a search goes, counted in the daemon's connections: a search
    /// of a folder it indexes costs one; one of a folder it does not index
    /// costs one too (the front asks, then the full command crawls without
    /// asking again), and so does one it indexes under narrower rules (with
    /// the note saying so, once); `--daemon` still gets the daemon's refusal.
    @Test func eachSearchAsksTheDaemonOnce() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let other = try temp.folder("other")
        try temp.file("other/elsewhere.png")
        // No system index: only this user's daemon is asked.
        let daemon = try Daemon(temp, environment: ["MDQ_SYSTEM_RUNTIME_DIR": temp.path.appending("none").string])
        _ = try daemon.mdq(["index", "add", tree])
        func served() throws -> Int { try DaemonClient.connect(daemon.paths).status().connectionsServed }
        for (form, folder) in [
            (["*.png"], tree), (["*.png"], other.string), (["--hidden", "*.png"], tree),
            (["--count", "note"], other.string),
        ] {
            let before = try served()
            let answered = try daemon.mdq(form, in: folder)
            let after = try served()
            // The status asked after is one of them.
            #expect(after - before == 2, "\(form) in \(folder): \(after - before - 1) connections")
            let crawled = try daemon.mdq(["--no-daemon"] + form, in: folder)
            #expect(answered.status == 0 && lines(answered) == lines(crawled), "\(form) in \(folder)")
            let notes = answered.stderrText.split(separator: "\n").filter { $0.contains("searching by crawling") }
            #expect(notes.count == (form.contains("--hidden") ? 1 : 0), "\(answered.stderrText)")
        }
        let required = try daemon.mdq(["--daemon", "*.png"], in: other.string)
        #expect(required.status != 0 && required.stderrText.contains("not indexed"), "\(required.stderrText)")
    }

    /// A program in another language follows a live query with the
    /// documented protocol (Examples/follow.py).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
    func aPythonConsumerFollowsTheProtocol() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.tree(temp)
        let daemon = try Daemon(temp)
        _ = try daemon.mdq(["index", "add", tree])
        let script = URL(fileURLWithPath: MDQCommandTests.binary)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Examples/follow.py").path
        let follow = try LiveProcess(
            "/usr/bin/python3", [script, "kMDItemFSName LIKE '*.pdf'"], environment: daemon.environment)
        #expect(follow.waitForLine { $0.hasSuffix("results") })
        try temp.file("tree/docs/new.pdf")
        #expect(follow.waitForLine { $0 == "+ \(tree)/docs/new.pdf" })
        #expect(rename("\(tree)/docs/new.pdf", "\(tree)/docs/renamed.pdf") == 0)
        #expect(follow.waitForLine { $0 == "> \(tree)/docs/renamed.pdf" })
        _ = follow.interrupt(signal: SIGKILL)
    }
}
