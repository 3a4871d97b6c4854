import Foundation
import Glibc
import MetadataIndex
import SystemPackage
import TestSupport
import Testing

/// `--budget` and a waiting mdq's signals (issue 21): a query past its
/// budget ends with one line and status 1, through the daemon and by
/// crawling; SIGINT or SIGTERM ends a mdq waiting on the daemon at once,
/// and the daemon cancels the query it was answering.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MDQBudgetTests {
    static let catastrophic = "kMDItemFSName MATCHES '(a+)+b'"

    static func names(_ temp: TemporaryDirectory, count: Int, length: Int) throws -> String {
        try temp.files(count, in: "names") { String(repeating: "a", count: length) + "\($0)" }
        return temp.path.appending("names").string
    }

    static func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
        if try !TestSupport.waitUntil(condition) { Issue.record("never: \(what)") }
    }

    @Test func tooExpensiveIsOneLineAndStatusOne() throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.names(temp, count: 3, length: 30)
        let crawled = try Shell.run(MDQCommandTests.binary, ["--no-daemon", Self.catastrophic, tree])
        #expect(crawled.status == 1)
        #expect(crawled.stdout.isEmpty)
        #expect(crawled.stderrText.split(separator: "\n").count == 1, "\(crawled.stderrText)")
        #expect(crawled.stderrText.contains("too expensive") && crawled.stderrText.contains("--budget"))
        let daemon = try MDQDaemonTests.Daemon(temp)
        #expect(try daemon.mdq(["index", "add", tree]).status == 0)
        for form in [
            ["--daemon", Self.catastrophic, tree], ["-a", Self.catastrophic], ["-a", "--count", Self.catastrophic],
        ] {
            let answered = try daemon.mdq(["--budget", "5"] + form)
            #expect(answered.status == 1, "\(form)")
            #expect(answered.stderrText.split(separator: "\n").count == 1, "\(form): \(answered.stderrText)")
            #expect(answered.stderrText.contains("too expensive"), "\(form): \(answered.stderrText)")
        }
        let bad = try daemon.mdq(["--budget", "0", "x"])
        #expect(bad.status == 2 && bad.stderrText.contains("--budget"))
        // A cheap pattern is answered as before.
        let cheap = try daemon.mdq(["--count", "kMDItemFSName MATCHES 'a+[0-9]'", tree])
        #expect(cheap.status == 0 && cheap.stdoutText == "3\n", "\(cheap.stderrText)")
    }

    /// mdq waiting on a slow daemon answer exits at once on the signal
    /// (status 128 + signal) and the daemon stops the query.
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalEndsAWaitingMdq(signal: Int32) throws {
        let temp = try TemporaryDirectory()
        let tree = try Self.names(temp, count: 4000, length: 19)
        let daemon = try MDQDaemonTests.Daemon(temp)
        #expect(try daemon.mdq(["index", "add", tree]).status == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MDQCommandTests.binary)
        process.arguments = ["--daemon", "--budget", "600", "--count", Self.catastrophic, tree]
        process.environment = ProcessInfo.processInfo.environment.merging(daemon.environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let status = { try DaemonClient.connect(daemon.paths).status() }
        try Self.waitUntil("the query runs") { try status().queries == 1 }
        kill(process.processIdentifier, signal)
        try Self.waitUntil("mdq exits") { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 128 + signal)
        try Self.waitUntil("the daemon cancels the query") { try status().cancelledQueries == 1 }
        #expect(try status().queries == 0)
    }
}
