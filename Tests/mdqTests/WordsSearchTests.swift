import Foundation
import Glibc
import MetadataIndex
import SystemPackage
import TestSupport
import Testing

/// mdfind's free text (`mdq "invoice 2024"`): with a daemon that indexes
/// content, every word in the name or the text, names first, then the most
/// recent; without one, today's name search.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct WordsSearchTests {
    static func files(_ temp: TemporaryDirectory) throws -> FilePath {
        try temp.file("docs/invoice-2024.txt", contents: "a draft")
        try temp.file("docs/recent.txt", contents: "The INVOICE for the year 2024.")
        try temp.file("docs/old.md", contents: "invoice 2024, paid")
        try temp.file("docs/invoices.txt", contents: "from 2023")
        try temp.file("docs/unrelated.txt", contents: "receipts 2024")
        try temp.file("docs/words.txt", contents: "reinvoice 20245")
        let old = temp.path.appending("docs/old.md").string
        var times = [timespec(tv_sec: 1_577_836_800, tv_nsec: 0), timespec(tv_sec: 1_577_836_800, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, old, &times, 0) == 0)
        return temp.path.appending("docs")
    }

    static func waitForImports(_ daemon: MDQDaemonTests.Daemon) throws -> Bool {
        try waitUntil(interval: 0.02) { try daemon.mdq(["daemon", "status"]).stdoutText.contains("none pending") }
    }

    @Test func wordsMatchNamesAndTextRanked() throws {
        let temp = try TemporaryDirectory()
        let docs = try Self.files(temp)
        let daemon = try MDQDaemonTests.Daemon(temp)
        defer { daemon.kill(SIGTERM) }
        #expect(try daemon.mdq(["index", "add", docs.string]).status == 0)
        #expect(try Self.waitForImports(daemon))
        let expected = ["invoice-2024.txt", "recent.txt", "old.md"].map { docs.appending($0).string }
        // Searched from the indexed folder: the fast path (no option) and
        // the full command line (a scope) answer the same, in the same order.
        for arguments in [["invoice 2024"], ["--onlyin", docs.string, "invoice 2024"], ["--daemon", "INVOICE  2024"]] {
            let found = try daemon.mdq(arguments, in: docs.string)
            #expect(found.status == 0)
            #expect(found.stdoutText.split(separator: "\n").map(String.init) == expected, "\(arguments)")
        }
        #expect(try daemon.mdq(["--count", "invoice 2024"], in: docs.string).stdoutText == "3\n")
        // A word is a word prefix in the text, a substring in the name.
        let prefix = try daemon.mdq(["invoic"], in: docs.string).stdoutText.split(separator: "\n").map(String.init)
        #expect(
            Set(prefix)
                == Set(
                    ["invoice-2024.txt", "recent.txt", "old.md", "invoices.txt"].map {
                        docs.appending($0).string
                    }))
        // A glob stays a name glob.
        #expect(try daemon.mdq(["*.md"], in: docs.string).stdoutText == docs.appending("old.md").string + "\n")
        // --name keeps the name-only search; a predicate is a predicate.
        #expect(try daemon.mdq(["--name", "invoice"], in: docs.string).stdoutText.split(separator: "\n").count == 2)
        let predicate = try daemon.mdq(["kMDItemTextContent LIKE[cdw] 'invoice*'"], in: docs.string)
        #expect(predicate.stdoutText.split(separator: "\n").count == 2)
        // --attr and --json keep the ranking.
        let json = try daemon.mdq(["--json", "invoice 2024"], in: docs.string).stdoutText.split(separator: "\n")
        #expect(json.count == 3)
        #expect(json.first?.contains("invoice-2024.txt") == true)
    }

    @Test func withoutContentIndexingItIsANameSearch() throws {
        let temp = try TemporaryDirectory()
        let docs = try Self.files(temp)
        let daemon = try MDQDaemonTests.Daemon(temp, options: ["--no-content"])
        defer { daemon.kill(SIGTERM) }
        #expect(try daemon.mdq(["index", "add", docs.string]).status == 0)
        let found = try daemon.mdq(["invoice"], in: docs.string)
        #expect(
            found.stdoutText.split(separator: "\n").map(String.init).sorted()
                == ["invoice-2024.txt", "invoices.txt"].map { docs.appending($0).string })
        #expect(try daemon.mdq(["daemon", "status"]).stdoutText.contains("content: not indexed"))
    }
}
