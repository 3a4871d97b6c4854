import Foundation
import Glibc
import TestSupport
import Testing

/// `mdq --live`, end to end.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MDQLiveTests {
    @Test func liveJSONReportsEveryNotificationAndExitsCleanlyOnInterrupt() throws {
        let temp = try TemporaryDirectory()
        try temp.file("docs/a.txt")
        let live = try LiveProcess(
            MDQCommandTests.binary,
            ["--live", "--json", "--interval", "0", "--onlyin", temp.path.string, "kMDItemFSName LIKE '*.txt'"])
        #expect(live.waitForLine { $0.contains("\"didFinishGathering\"") })
        try temp.file("docs/b.txt")
        #expect(live.waitForLine { $0.contains("\"didUpdate\"") && $0.contains("b.txt") })
        #expect(rename(temp.path.appending("docs/b.txt").string, temp.path.appending("docs/b.bin").string) == 0)
        #expect(live.waitForLine { $0.contains("\"didUpdate\"") && $0.contains("\"removed\":[{") })
        #expect(live.interrupt() == 0)
        let objects = try live.rawOutput.split(separator: 0x0A).map {
            try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
        let events = objects.compactMap { $0["event"] as? String }
        #expect(events.first == "didStartGathering")
        #expect(events.filter { $0 == "didFinishGathering" }.count == 1)
        let finish = try #require(objects.first { $0["event"] as? String == "didFinishGathering" })
        #expect(finish["count"] as? Int == 1)
        let update = try #require(objects.first { ($0["added"] as? [[String: Any]])?.isEmpty == false })
        #expect((update["added"] as? [[String: Any]])?.first?["name"] as? String == "b.txt")
        #expect(live.rawOutput.last == 0x0A, "no partial line at the end")
    }

    /// The watcher's own bookkeeping lives in anonymous files: a live query
    /// holds open no path outside its scope, so nothing of it can be left
    /// behind in /tmp or anywhere else, however the process ends.
    @Test func aLiveQueryKeepsNothingOutsideItsScope() throws {
        let temp = try TemporaryDirectory()
        try temp.file("docs/a.txt")
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--interval", "0", "--onlyin", temp.path.string, "TRUEPREDICATE"])
        #expect(live.waitForLine { $0.hasSuffix("docs/a.txt") })
        let folder = "/proc/\(live.process.processIdentifier)/fd"
        let targets = try FileManager.default.contentsOfDirectory(atPath: folder).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\($0)")
        }
        let paths = targets.filter { $0.hasPrefix("/") && !$0.hasPrefix("/dev/") && !$0.hasPrefix("/memfd:") }
        #expect(!targets.isEmpty)
        #expect(paths.allSatisfy { $0.hasPrefix(temp.path.string) || $0.hasPrefix("/proc/") }, "\(paths)")
        #expect(live.interrupt() == 0)
    }

    @Test func liveAttributesAndSortFollowChanges() throws {
        let temp = try TemporaryDirectory()
        try temp.file("b10.txt", contents: "1")
        try temp.file("b2.txt", contents: "22")
        let base = temp.path.string
        let live = try LiveProcess(
            MDQCommandTests.binary,
            [
                "--live", "--interval", "0", "--onlyin", base, "--sort", "kMDItemFSName", "--attr",
                "kMDItemContentType", "--attr", "kMDItemFSSize", "kMDItemFSName LIKE 'b*'",
            ])
        #expect(live.waitForLine { $0 == "\(base)/b10.txt\tpublic.plain-text\t1" })
        // Written aside and renamed in, so it arrives whole (one addition, size 3).
        try temp.file("tmp-b3", contents: "333")
        #expect(rename("\(base)/tmp-b3", "\(base)/b3.png") == 0)
        #expect(live.waitForLine { $0 == "+ \(base)/b3.png\tpublic.png\t3" })
        #expect(live.interrupt() == 0)
        let lines = String(decoding: live.rawOutput, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(
            Array(lines.prefix(2)) == ["\(base)/b2.txt\tpublic.plain-text\t2", "\(base)/b10.txt\tpublic.plain-text\t1"])
    }

    @Test func liveTextPrintsResultsThenMarkedChanges() throws {
        let temp = try TemporaryDirectory()
        try temp.file("a.txt")
        let base = temp.path.string
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--interval", "0", "--onlyin", base, "kMDItemFSName LIKE '*.txt'"])
        #expect(live.waitForLine { $0 == "\(base)/a.txt" })
        try temp.file("b.txt")
        #expect(live.waitForLine { $0 == "+ \(base)/b.txt" })
        try temp.file("b.txt", contents: "changed")
        #expect(live.waitForLine { $0 == "~ \(base)/b.txt" })
        #expect(unlink("\(base)/a.txt") == 0)
        #expect(live.waitForLine { $0 == "- \(base)/a.txt" })
        #expect(live.interrupt() == 0)
    }

    @Test func liveCountPrintsEachNewCount() throws {
        let temp = try TemporaryDirectory()
        try temp.file("a.txt")
        let live = try LiveProcess(
            MDQCommandTests.binary,
            ["--live", "--count", "--interval", "0", "--onlyin", temp.path.string, "TRUEPREDICATE"])
        #expect(live.waitForLine { $0 == "1" })
        try temp.file("b.txt")
        #expect(live.waitForLine { $0 == "2" })
        #expect(live.interrupt() == 0)
    }

    @Test func liveOnAMissingScopeFailsLikeAOneShotQuery() throws {
        let output = try Shell.run(
            MDQCommandTests.binary, ["--live", "--onlyin", "/nonexistent/mdq-live", "TRUEPREDICATE"])
        #expect(output.status == 1)
        #expect(output.stderrText.contains("/nonexistent/mdq-live"))
    }

    @Test func intervalNeedsLive() throws {
        let output = try Shell.run(MDQCommandTests.binary, ["--interval", "1", "TRUEPREDICATE"])
        #expect(output.status == 2)
    }

    /// The objects of a JSON lines output.
    static func objects(_ data: Data) -> [[String: Any]] {
        data.split(separator: 0x0A).compactMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
    }

    /// What a fresh one-shot `mdq --json` finds: path to object.
    static func fresh(_ base: String, extra: [String] = []) throws -> [String: [String: Any]] {
        let output = try Shell.run(MDQCommandTests.binary, ["--json", "--onlyin", base] + extra + ["TRUEPREDICATE"])
        var items: [String: [String: Any]] = [:]
        for object in objects(output.stdout) { if let path = object["path"] as? String { items[path] = object } }
        return items
    }

    /// An item object without the fields only the live stream has.
    static func attributes(_ object: [String: Any]) -> NSDictionary {
        var object = object
        for key in ["event", "id", "previousPath", "previousPathBase64"] { object[key] = nil }
        return object as NSDictionary
    }

    /// Two programs follow `mdq --live --json` through a seeded storm: one
    /// keeps items by `id`, one keeps paths and follows renames by
    /// `previousPath`. Both end with exactly what a fresh search finds,
    /// every attribute included; each removal names what the first one had.
    @Test(arguments: [31, 32] as [UInt64])
    func jsonStreamReplaysAStormToTheDisk(seed: UInt64) throws {
        let temp = try TemporaryDirectory()
        let scope = try temp.folder("scope")
        let outside = try temp.folder("outside")
        for i in 0..<30 { try temp.file("scope/pre\(i % 3)/f\(i).txt", contents: "\(i)") }
        let live = try LiveProcess(
            MDQCommandTests.binary,
            ["--live", "--json", "--interval", "0.05", "--onlyin", scope.string, "TRUEPREDICATE"])
        #expect(live.waitForLine { $0.contains("\"didFinishGathering\"") })
        var storm = Storm(scope: scope.string, outside: outside.string, seed: seed)
        storm.run(operations: 1500)
        var byID: [Int: [String: Any]] = [:]
        var byPath: Set<String> = []
        var problems: [String] = []
        var consumed = 0
        func consume() {
            let lines = live.lines
            for line in lines.dropFirst(consumed) {
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    problems.append("not JSON: \(line)")
                    continue
                }
                switch object["event"] as? String {
                case "result":
                    byID[object["id"] as! Int] = object
                    byPath.insert(object["path"] as! String)
                case "didUpdate":
                    let removed = object["removed"] as! [[String: Any]]
                    let added = object["added"] as! [[String: Any]]
                    let removedPaths = Set(removed.map { $0["path"] as! String })
                    if added.contains(where: { removedPaths.contains($0["path"] as! String) }) {
                        problems.append("a path both removed and added")
                    }
                    for item in removed {
                        let id = item["id"] as! Int
                        if byID[id]?["path"] as? String != item["path"] as? String {
                            problems.append("removed \(item["path"]!) but had \(byID[id]?["path"] ?? "nothing")")
                        }
                        byID[id] = nil
                        byPath.remove(item["path"] as! String)
                    }
                    for item in object["changed"] as! [[String: Any]] {
                        let id = item["id"] as! Int
                        if let previous = item["previousPath"] as? String {
                            if byID[id]?["path"] as? String != previous {
                                problems.append("previousPath \(previous) unknown")
                            }
                            byPath.remove(previous)
                        }
                        byID[id] = item
                        byPath.insert(item["path"] as! String)
                    }
                    for item in added {
                        if byID[item["id"] as! Int] != nil { problems.append("added twice: \(item["path"]!)") }
                        byID[item["id"] as! Int] = item
                        byPath.insert(item["path"] as! String)
                    }
                default:
                    break
                }
            }
            consumed = lines.count
        }
        var expected: [String: [String: Any]] = [:]
        let converged = live.waitUntil(timeout: 30) {
            consume()
            guard let fresh = try? Self.fresh(scope.string) else { return false }
            expected = fresh
            let current = Dictionary(byID.values.map { ($0["path"] as! String, $0) }, uniquingKeysWith: { a, _ in a })
            return Set(current.keys) == Set(fresh.keys) && byPath == Set(fresh.keys)
                && fresh.allSatisfy { path, object in current[path].map(Self.attributes) == Self.attributes(object) }
        }
        #expect(converged, "by id \(byID.count), by path \(byPath.count), expected \(expected.count)")
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        #expect(live.interrupt() == 0)
    }

    @Test func liveTextFollowsRenames() throws {
        let temp = try TemporaryDirectory()
        try temp.file("a.txt")
        let base = temp.path.string
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--interval", "0", "--onlyin", base, "kMDItemFSName LIKE '*.txt'"])
        #expect(live.waitForLine { $0 == "\(base)/a.txt" })
        #expect(rename("\(base)/a.txt", "\(base)/b.txt") == 0)
        #expect(live.waitForLine { $0 == "> \(base)/b.txt" })
        let lines = live.lines
        let arrow = try #require(lines.firstIndex(of: "> \(base)/b.txt"))
        #expect(arrow > 0 && lines[arrow - 1] == "< \(base)/a.txt", "the old path comes right before the new one")
        #expect(!lines.contains("- \(base)/a.txt") && !lines.contains("+ \(base)/b.txt"))
        #expect(live.interrupt() == 0)
    }

    /// A change that leaves the count as it was prints nothing.
    @Test func liveCountPrintsOnlyNewCounts() throws {
        let temp = try TemporaryDirectory()
        try temp.file("a.txt")
        let base = temp.path.string
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--count", "--interval", "0", "--onlyin", base, "TRUEPREDICATE"])
        #expect(live.waitForLine { $0 == "1" })
        try temp.file("b.txt")
        #expect(live.waitForLine { $0 == "2" })
        try temp.file("b.txt", contents: "changed")
        try temp.file("a.txt", contents: "changed")
        try temp.file("c.txt")
        #expect(live.waitForLine { $0 == "3" })
        #expect(live.interrupt() == 0)
        #expect(live.lines == ["1", "2", "3"])
    }

    /// `--exclude` keeps the folder's contents out of the crawl and the
    /// watches: the process holds one watch per folder outside it (and one
    /// for the excluded folder itself, for its own dates).
    @Test func excludeAddsNoWatchesInside() throws {
        let temp = try TemporaryDirectory()
        let base = temp.path.string
        try temp.file("src/app/main.swift")
        for package in 0..<15 { try temp.file("node_modules/p\(package)/lib/index.js") }
        func watches(_ extra: [String]) throws -> Int {
            let live = try LiveProcess(
                MDQCommandTests.binary, ["--live", "--count", "--onlyin", base] + extra + ["TRUEPREDICATE"])
            #expect(live.waitForLine { !$0.isEmpty })
            let count = live.inotifyWatchCount
            #expect(live.interrupt() == 0)
            return count
        }
        // The scope, src, src/app, node_modules, and the watcher's own two
        // files (its wake file and its read barrier); without --exclude, 30
        // more inside node_modules.
        #expect(try watches(["--exclude", "node_modules"]) == 6)
        #expect(try watches([]) == 36)
    }

    /// A folder the user may not read is reported once (stderr, or a JSON
    /// warning event), not retried on a timer, and crawled as soon as its
    /// permissions change.
    @Test(
        .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")),
        arguments: [false, true])
    func unreadableFolderIsReportedOnceAndRetriedWhenItChanges(json: Bool) throws {
        let temp = try TemporaryDirectory()
        let base = temp.path.string
        try temp.file("open/a.txt")
        try temp.file("locked/secret.txt")
        #expect(chmod(base, 0o755) == 0)
        #expect(chmod("\(base)/locked", 0o000) == 0)
        let live = try LiveProcess(
            MDQCommandTests.binary,
            ["--live", "--interval", "0", "--onlyin", base] + (json ? ["--json"] : []) + ["kMDItemFSName LIKE '*.txt'"],
            unprivileged: true)
        func warnings() -> Int {
            json
                ? live.lines.filter { $0.contains("\"event\":\"warning\"") && $0.contains("/locked") }.count
                : live.errorText.split(separator: "\n").filter {
                    $0.contains("cannot read folder") && !$0.contains("resolved:")
                }.count
        }
        /// Whether it was said to hold no more.
        func resolved() -> Bool {
            json
                ? live.lines.contains { $0.contains("\"event\":\"resolved\"") && $0.contains("/locked") }
                : live.errorText.contains("mdq: note: resolved: cannot read folder")
        }
        #expect(live.waitForLine { $0.contains("\(base)/open/a.txt") })
        #expect(live.waitUntil(timeout: 10) { warnings() == 1 }, "\(live.errorText)")
        // Other changes come and go; the problem is not reported again.
        try temp.file("open/b.txt")
        #expect(live.waitForLine { $0.contains("\(base)/open/b.txt") })
        #expect(warnings() == 1)
        // Readable again (the chmod is an event on the parent's watch).
        #expect(chmod("\(base)/locked", 0o755) == 0)
        #expect(live.waitForLine { $0.contains("\(base)/locked/secret.txt") })
        #expect(live.waitUntil(timeout: 10) { resolved() }, "\(live.errorText)")
        #expect(live.interrupt() == 0)
        #expect(warnings() == 1)
    }

    /// A folder listed but not entered (mode 744, seen by another user):
    /// its entries are live results without sizes and dates, and the
    /// folder is reported as a problem rather than left silently bare;
    /// once it may be entered, the attributes arrive as changes.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func aFolderListedButNotEnteredIsAProblemUntilItOpens() throws {
        let temp = try TemporaryDirectory()
        let base = temp.path.string
        try temp.file("listable/inside.txt", contents: "12345")
        #expect(chmod(base, 0o755) == 0)
        #expect(chmod("\(base)/listable", 0o744) == 0)
        let live = try LiveProcess(
            MDQCommandTests.binary,
            ["--live", "--json", "--interval", "0", "--onlyin", base, "kMDItemFSName LIKE '*.txt'"],
            unprivileged: true)
        #expect(live.waitForLine { $0.contains("\(base)/listable/inside.txt") })
        #expect(
            live.waitForLine { $0.contains("\"event\":\"warning\"") && $0.contains("\(base)/listable") },
            "\(live.lines)")
        #expect(chmod("\(base)/listable", 0o755) == 0)
        #expect(live.waitForLine { $0.contains("inside.txt") && $0.contains("\"size\":5") }, "\(live.lines)")
        #expect(live.interrupt() == 0)
    }
}
