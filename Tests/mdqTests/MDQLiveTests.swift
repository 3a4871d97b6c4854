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
}
