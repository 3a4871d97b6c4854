import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// `mdq`'s front (Sources/mdq): the searches it answers through the daemon
/// print exactly what the full command line prints for them (stdout,
/// stderr and status, byte for byte), and everything else is handed over.
///
/// "The full command" is `mdq` with `MDQ_NO_FAST_PATH=1`, which makes the
/// front hand over at once. "The front alone" is a copy of `mdq` with no
/// `mdq-full` to hand over to: what it prints it answered itself.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct QuickSearchTests {
    /// Names a search for "report" finds, with the bytes that test the
    /// protocol's strings and the printing of paths.
    static func tree(_ temp: TemporaryDirectory) throws -> FilePath {
        let names: [[UInt8]] = [
            Array("report one.txt".utf8), Array("Report-2.PDF".utf8), Array("café report.md".utf8),
            Array(".hidden report".utf8), Array("new\nline report.txt".utf8), Array("🙂 report.txt".utf8),
            Array("sub/deeper/report.c".utf8), Array("quote\" and \\ report".utf8), Array("tab\treport.txt".utf8),
            Array("bad".utf8) + [0xFF] + Array(" report.txt".utf8), Array("other.txt".utf8),
            Array("sub/notes.md".utf8), Array("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1".utf8),
        ]
        for (i, name) in names.enumerated() {
            try temp.file(Array("home/".utf8) + name, contents: Array("report number \(i)".utf8))
        }
        return temp.path.appending("home")
    }

    /// A copy of `mdq` with nothing to hand over to.
    static func frontAlone(_ temp: TemporaryDirectory) throws -> String {
        let folder = try temp.folder("alone/bin")
        let copy = folder.appending("mdq").string
        try FileManager.default.copyItem(atPath: MDQCommandTests.binary, toPath: copy)
        return copy
    }

    struct Run: Equatable, CustomStringConvertible {
        var status: Int32
        var stdout: [UInt8]
        var stderr: String

        var description: String {
            "status \(status), stdout \(String(decoding: stdout, as: UTF8.self).debugDescription), stderr \(stderr)"
        }
    }

    static func run(
        _ binary: String, _ arguments: [String], daemon: MDQDaemonTests.Daemon, in folder: String, full: Bool = false
    ) throws -> Run {
        var environment = daemon.environment
        if full { environment["MDQ_NO_FAST_PATH"] = "1" }
        let output = try Shell.run(binary, arguments, environment: environment, currentDirectory: folder)
        return Run(status: output.status, stdout: Array(output.stdout), stderr: output.stderrText)
    }

    static let forms: [[String]] = [
        ["report"], ["REPORT"], ["cafe"], ["café"], ["*.txt"], ["report*"], ["--count", "report"], ["-0", "report"],
        ["--hidden", "report"], ["--hidden", "--count", "*report*"], ["-a", "report"],
        ["--everywhere", "--count", "*"],
        ["--daemon", "report"], ["--", "report"], ["--name", "report"], ["--name", "quote\" and \\"],
        ["--count", "--name", "REPORT"], ["kMDItemFSName LIKE[c] '*report*'"], ["kMDItemFSSize > 10"],
        ["deeper/report"], ["sub/"], ["-0", "--hidden", "kMDItemFSName ENDSWITH 'txt'"], ["report one"],
        ["zzqqxx"], ["--count", "zzqqxx"], ["one report"], ["--count", "number 2 report"],
        // Cut by the daemon, as the full command asks it to.
        ["--limit", "3", "report"], ["--limit", "0", "*.txt"], ["--count", "--limit", "2", "report"],
        ["-a", "--limit", "1", "--hidden", "report"], ["--limit", "2", "zzqqxx"], ["-0", "--limit", "50", "*"],
    ]

    /// Every form, from the indexed folder and a folder inside it, with a
    /// daemon that indexes names only and with one that indexes content
    /// (free text is then searched in names and text, ranked).
    @Test(arguments: [false, true])
    func theFrontPrintsWhatTheFullCommandPrints(content: Bool) throws {
        let temp = try TemporaryDirectory()
        let home = try Self.tree(temp)
        let alone = try Self.frontAlone(temp)
        let daemon = try MDQDaemonTests.Daemon(temp, options: content ? [] : ["--no-content"])
        defer { daemon.kill(SIGTERM) }
        #expect(try daemon.mdq(["index", "add", "--hidden", home.string]).status == 0)
        if content { #expect(try WordsSearchTests.waitForImports(daemon)) }
        // Folders named as the full command takes them, absolute or not
        // (made absolute and normalized by the front as by the full
        // command: `./deeper/..` is the folder it is run in, even where no
        // `deeper` exists), and the version.
        let folderForms: [[String]] = [
            ["report", home.string], ["--onlyin", home.string + "/sub", "--count", "report"],
            ["--name", "report", "."], ["report", "./deeper/.."], ["--", "report", home.string + "//sub/"],
            ["-0", "--onlyin", home.string + "/./sub/../sub", "*.c"], ["--version"], ["-V"],
        ]
        for folder in [home.string, home.appending("sub").string] {
            for arguments in Self.forms + folderForms {
                let full = try Self.run(MDQCommandTests.binary, arguments, daemon: daemon, in: folder, full: true)
                let front = try Self.run(MDQCommandTests.binary, arguments, daemon: daemon, in: folder)
                #expect(front == full, "\(arguments) in \(folder)")
                #expect(full.status == 0, "\(arguments): \(full)")
                // Answered by the front itself: the copy with nothing to
                // hand over to prints the same.
                let answered = try Self.run(alone, arguments, daemon: daemon, in: folder)
                #expect(answered == full, "\(arguments) in \(folder), front alone")
            }
        }
        // A few answers, checked for what they hold (not only agreement).
        let count = try Self.run(alone, ["--hidden", "--count", "*report*"], daemon: daemon, in: home.string)
        #expect(count.stdout == Array("10\n".utf8))
        // Cut to the limit, of the same matches.
        let limited = try Self.run(
            alone, ["-0", "--hidden", "--limit", "4", "*report*"], daemon: daemon, in: home.string)
        let every = try Self.run(alone, ["-0", "--hidden", "*report*"], daemon: daemon, in: home.string)
        let firstFour = limited.stdout.split(separator: 0, omittingEmptySubsequences: false).dropLast()
        #expect(firstFour.count == 4 && Set(firstFour).isSubset(of: Set(every.stdout.split(separator: 0))))
        let countedToLimit = try Self.run(
            alone, ["--hidden", "--count", "--limit", "4", "*report*"], daemon: daemon, in: home.string)
        #expect(countedToLimit.stdout == Array("4\n".utf8))
        // Free text too (ranked words when content is indexed), by both.
        for (binary, full) in [(alone, false), (MDQCommandTests.binary, true)] {
            let words = try Self.run(
                binary, ["--count", "--limit", "2", "report"], daemon: daemon, in: home.string, full: full)
            #expect(words.stdout == Array("2\n".utf8), "\(binary): \(words)")
        }
        // With content indexed, notes.md says "report" inside; ranked after
        // the name that holds the word.
        let zero = try Self.run(alone, ["-0", "report"], daemon: daemon, in: home.appending("sub").string)
        var expected = Array(home.appending("sub/deeper/report.c").string.utf8) + [0]
        if content { expected += Array(home.appending("sub/notes.md").string.utf8) + [0] }
        #expect(zero.stdout == expected)
        // Several words found in no name as one piece: the daemon says how
        // many names hold each word (with content indexed, free text is
        // searched word by word already).
        let pieces = try Self.run(alone, ["one report"], daemon: daemon, in: home.string)
        #expect(pieces.stdout.isEmpty == !content)
        #expect(pieces.stderr.contains("1 name contains each of its words") == !content, "\(pieces)")
    }

    /// What the front does not answer it hands over, before printing a byte:
    /// the full command's message and status, and the front alone says it
    /// cannot go on (it never answers wrongly instead).
    @Test func everythingElseIsHandedOver() throws {
        let temp = try TemporaryDirectory()
        let home = try Self.tree(temp)
        let elsewhere = try temp.folder("elsewhere")
        try temp.file("elsewhere/report.txt")
        let alone = try Self.frontAlone(temp)
        let daemon = try MDQDaemonTests.Daemon(temp, options: ["--no-content"])
        defer { daemon.kill(SIGTERM) }
        #expect(try daemon.mdq(["index", "add", home.string]).status == 0)
        let cases: [(arguments: [String], folder: String, status: Int32)] = [
            (["kMDItemFSName =="], home.string, 2),  // a syntax error: the full command points at it
            ([""], home.string, 2),  // an empty query
            (["report"], elsewhere.string, 0),  // a folder the daemon does not index: a crawl
            (["--json", "report"], home.string, 0),  // an option the front does not take
            (["--count", "-0", "report"], home.string, 2),
            (["--count", "report", home.string, elsewhere.string], home.string, 0),  // two folders: the full command's
            (["-a", "report", home.string], home.string, 2),  // --everywhere with a folder: an error
            (["--name", "report", "--onlyin"], home.string, 2),  // an option without its value
            (["--version", "report"], home.string, 0),  // the full command's reading: the version
            (["ls", home.appending("other.txt").string], home.string, 0),
        ]
        for (arguments, folder, status) in cases {
            let full = try Self.run(MDQCommandTests.binary, arguments, daemon: daemon, in: folder, full: true)
            let front = try Self.run(MDQCommandTests.binary, arguments, daemon: daemon, in: folder)
            #expect(front == full, "\(arguments)")
            #expect(full.status == status, "\(arguments): \(full)")
            let answered = try Self.run(alone, arguments, daemon: daemon, in: folder)
            #expect(answered.status == 2 && answered.stdout.isEmpty, "\(arguments): \(answered)")
            #expect(answered.stderr.contains("cannot run mdq-full"), "\(arguments): \(answered)")
        }
        // No daemon at all: handed over (a crawl).
        daemon.kill(SIGTERM)
        let crawled = try Self.run(MDQCommandTests.binary, ["--count", "report"], daemon: daemon, in: home.string)
        #expect(crawled.status == 0 && crawled.stdout == Array("9\n".utf8), "\(crawled)")
    }

    /// A query past its budget in the daemon: the front says what the full
    /// command says, with its status, and does not run the query twice.
    @Test func aTooExpensiveQueryIsRefusedTheSameWay() throws {
        let temp = try TemporaryDirectory()
        let home = try Self.tree(temp)
        let alone = try Self.frontAlone(temp)
        let daemon = try MDQDaemonTests.Daemon(temp, options: ["--no-content"])
        defer { daemon.kill(SIGTERM) }
        #expect(try daemon.mdq(["index", "add", home.string]).status == 0)
        let query = ["kMDItemFSName MATCHES '(a+)+b'"]
        let full = try Self.run(MDQCommandTests.binary, query, daemon: daemon, in: home.string, full: true)
        #expect(full.status == 1 && full.stderr.contains("too expensive"), "\(full)")
        #expect(try Self.run(alone, query, daemon: daemon, in: home.string) == full)
    }
}
