import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// What a search says about the folders it could not read, run as an
/// unprivileged user (root reads everything): the first few warnings, one
/// line for the rest, and entries listed without attributes named rather
/// than printed bare.
@Suite(
    .serialized, .timeLimit(.minutes(2)),
    .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
struct CrawlWarningTests {
    static let locked = 12

    /// A tree with `locked` private folders, an open one, and one that can
    /// be listed but not entered (mode 744).
    static let tree = TemporaryDirectory.Shared { temp in
        try temp.file("open/visible.txt")
        for i in 0..<locked { try temp.file("locked\(i)/secret.txt") }
        try temp.file("listable/inside.txt")
        try temp.file("listable/other.txt")
        #expect(chmod(temp.path.string, 0o755) == 0)
        for i in 0..<locked { #expect(chmod(temp.path.appending("locked\(i)").string, 0o700) == 0) }
        #expect(chmod(temp.path.appending("listable").string, 0o744) == 0)
    }

    func runAsNobody(_ arguments: [String]) throws -> Shell.Output {
        try Shell.run(
            "/usr/bin/setpriv",
            ["--reuid=65534", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--no-daemon"] + arguments)
    }

    func warnings(_ output: Shell.Output) -> [String] {
        output.stderrText.split(separator: "\n").map(String.init)
    }

    @Test func theFirstFewWarningsPrintAndOneLineCountsTheRest() throws {
        let root = try Self.tree.path()
        let output = try runAsNobody(["--onlyin", root.string, "kMDItemFSName LIKE '*.txt'"])
        #expect(output.status == 0, "\(output.stderrText)")
        let lines = warnings(output)
        // 12 private folders (the listed-only one needs no attributes
        // here): 5 warnings, then one line for 7.
        #expect(lines.count == 6, "\(lines)")
        #expect(lines.prefix(5).allSatisfy { $0.hasPrefix("mdq: warning: cannot ") })
        #expect(lines.last?.contains("7 more like these") == true, "\(lines)")
        #expect(lines.last?.contains("--show-errors") == true)
        #expect(output.stdoutText.contains("\(root.string)/open/visible.txt"))
    }

    @Test func showErrorsListsEveryFolder() throws {
        let root = try Self.tree.path()
        let output = try runAsNobody(["--show-errors", "--onlyin", root.string, "kMDItemFSName LIKE '*.txt'"])
        let lines = warnings(output)
        #expect(lines.filter { $0.contains("cannot open folder") }.count == Self.locked, "\(lines)")
        #expect(!lines.contains { $0.contains("more like these") })
        let silenced = try runAsNobody(["--no-warnings", "--onlyin", root.string, "kMDItemFSName LIKE '*.txt'"])
        #expect(silenced.stderrText.isEmpty)
    }

    /// A folder that can be listed but not entered: its entries are found
    /// by name, and missing sizes and dates are reported once for the
    /// folder whenever the output or the query needs them (a plain listing
    /// of names needs none, and says nothing).
    @Test(arguments: [
        (["--json"], "kMDItemFSName LIKE '*.txt'", true, true),
        (["--attr", "kMDItemFSSize"], "kMDItemFSName LIKE '*.txt'", true, true),
        ([], "kMDItemFSName LIKE '*.txt'", true, false),
        ([], "kMDItemFSSize >= 0 && kMDItemFSName LIKE '*.txt'", false, true),
    ])
    func entriesWithoutAttributesAreReported(options: [String], query: String, listed: Bool, warned: Bool) throws {
        let root = try Self.tree.path()
        let listable = root.appending("listable").string
        let output = try runAsNobody(["--show-errors"] + options + ["--onlyin", listable, query])
        #expect(output.status == 0, "\(output.stderrText)")
        #expect(output.stdoutText.contains("\(listable)/inside.txt") == listed)
        #expect(output.stdoutText.contains("\(listable)/other.txt") == listed)
        let expected = ["mdq: warning: cannot read the attributes of entries in \(listable): Permission denied"]
        #expect(warnings(output) == (warned ? expected : []))
        if options == ["--json"] {
            #expect(!output.stdoutText.contains("\"size\""))
        }
    }
}
