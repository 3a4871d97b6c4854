import Foundation
import Glibc
import TestSupport
import Testing

/// SIGINT and SIGTERM end mdq cleanly: whole lines only, then the status a
/// script expects (0 for a live query, which runs until interrupted;
/// 128 + the signal for a one-shot search cut short).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MDQSignalTests {
    /// A tree whose listing is megabytes long: 20,000 files with long names (more output than a pipe holds), built
    /// once: these tests only read it.
    static let bigTree = TemporaryDirectory.Shared { temp in
        for folder in 0..<20 {
            try temp.files(1000, in: "folder-\(folder)") { "a-file-with-a-long-name-to-fill-the-pipe-\($0).txt" }
        }
    }

    /// The search is interrupted while its output is stuck in a full pipe
    /// (the reader has not read yet): once the reader drains it, the output
    /// ends on a whole line and mdq reports the signal.
    @Test(arguments: [SIGINT, SIGTERM])
    func oneShotSearchInterruptedMidOutputEndsOnALine(signal: Int32) throws {
        let tree = try Self.bigTree.path()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MDQCommandTests.binary)
        process.arguments = ["--onlyin", tree.string, "TRUEPREDICATE"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Wait until the pipe is full: mdq is blocked writing mid-listing.
        let reader = pipe.fileHandleForReading.fileDescriptor
        let deadline = Date(timeIntervalSinceNow: 30)
        var queued: Int32 = 0
        while Date() < deadline {
            _ = ioctl(reader, UInt(FIONREAD), &queued)
            if queued >= 65536 { break }
            usleep(5_000)
        }
        #expect(queued >= 65536, "mdq never filled the pipe")
        kill(process.processIdentifier, signal)
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 128 + signal)
        #expect(output.last == 0x0A, "no partial line")
        let lines = output.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
        #expect(lines.count < 20_020, "cut short")
        #expect(lines.allSatisfy { $0.hasPrefix(tree.string + "/folder-") }, "every line a whole path")
    }

    /// SIGTERM while a live query is still gathering a large tree, and once
    /// it is live: a clean exit (status 0), whole lines.
    @Test(arguments: [false, true])
    func liveQueryEndsCleanlyOnSIGTERM(afterGathering: Bool) throws {
        let tree = try Self.bigTree.path()
        let live = try LiveProcess(
            MDQCommandTests.binary,
            ["--live", "--json", "--interval", "0", "--onlyin", tree.string, "TRUEPREDICATE"])
        #expect(live.waitForLine { $0.contains(afterGathering ? "\"didFinishGathering\"" : "\"didStartGathering\"") })
        #expect(live.interrupt(signal: SIGTERM) == 0)
        let output = live.rawOutput
        #expect(output.last == 0x0A, "no partial line")
        for line in output.split(separator: 0x0A) {
            #expect((try? JSONSerialization.jsonObject(with: Data(line))) != nil, "a whole JSON object per line")
        }
    }
}
