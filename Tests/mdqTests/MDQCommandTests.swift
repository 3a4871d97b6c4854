import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// The built `mdq` binary, end to end.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct MDQCommandTests {
    /// `mdq` sits beside the test bundle in the build folder.
    static let binary: String = {
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("mdq").path
    }()

    func mdq(_ arguments: [String], environment: [String: String]? = nil) throws -> Shell.Output {
        try Shell.run(Self.binary, arguments, environment: environment)
    }

    func lines(_ output: Shell.Output) -> Set<String> {
        Set(output.stdoutText.split(separator: "\n").map(String.init))
    }

    func makeTree() throws -> TemporaryDirectory {
        let temp = try TemporaryDirectory()
        try temp.file("Documents/Photos/IMG_0001.png")
        try temp.file("Documents/Photos/beach.PNG")
        try temp.file("Documents/Notes/caf\u{E9} menu.txt", contents: "espresso")
        try temp.file("Documents/Notes/.hidden.png")
        try temp.file("Library/thumb.png")
        try temp.file("Library/report.pdf", contents: String(repeating: "x", count: 1234))
        return temp
    }

    @Test func printsMatchingPathsOnePerLine() throws {
        let temp = try makeTree()
        let root = temp.path.string
        let output = try mdq(["--onlyin", root, "kMDItemFSName LIKE[c] '*.png'"])
        #expect(output.status == 0)
        #expect(output.stderrText.isEmpty)
        #expect(
            lines(output) == [
                "\(root)/Documents/Photos/IMG_0001.png", "\(root)/Documents/Photos/beach.PNG",
                "\(root)/Library/thumb.png",
            ])
        let hidden = try mdq(["--onlyin", root, "--hidden", "kMDItemFSName LIKE[c] '*.png'"])
        #expect(lines(hidden).contains("\(root)/Documents/Notes/.hidden.png"))
    }

    @Test func relativeOnlyInIsResolvedAgainstTheWorkingDirectory() throws {
        let temp = try makeTree()
        let output = try Shell.run(
            "/bin/sh",
            ["-c", "cd '\(temp.path.string)' && '\(Self.binary)' --onlyin Library 'kMDItemFSName == \"thumb.png\"'"])
        #expect(lines(output) == ["\(temp.path.string)/Library/thumb.png"])
    }

    @Test func nulTerminatedOutput() throws {
        let temp = try makeTree()
        let output = try mdq(["--onlyin", temp.path.string, "-0", "kMDItemFSName ENDSWITH '.pdf'"])
        #expect(output.stdout == Data("\(temp.path.string)/Library/report.pdf\0".utf8))
    }

    @Test func countPrintsTheNumberOfMatches() throws {
        let temp = try makeTree()
        let output = try mdq(["--onlyin", temp.path.string, "--count", "kMDItemFSName LIKE[c] '*.png'"])
        #expect(output.stdoutText == "3\n")
        let name = try mdq(["--onlyin", temp.path.string, "--count", "--name", "CAFE"])
        #expect(name.stdoutText == "1\n")
    }

    @Test func containerScopes() throws {
        let temp = try makeTree()
        let documents = try mdq(["--container", temp.path.string, "--scope", "documents", "--count", "TRUEPREDICATE"])
        #expect(documents.stdoutText == "5\n")  // Photos, 2 images, Notes, café
        let data = try mdq(["--container", temp.path.string, "--scope", "data", "--count", "TRUEPREDICATE"])
        #expect(data.stdoutText == "3\n")  // Library, thumb, report
        let all = try mdq(["--container", temp.path.string, "--count", "TRUEPREDICATE"])
        #expect(all.stdoutText == "9\n")  // + Documents itself
    }

    @Test func containerByIdentifierUnderTheContainersRoot() throws {
        let temp = try TemporaryDirectory()
        try temp.file("iCloud~com~example~app/Documents/a.txt")
        let environment = ["MDQ_CONTAINERS": temp.path.string]
        let found = try mdq(
            ["--container", "iCloud~com~example~app", "kMDItemFSName == 'a.txt'"], environment: environment)
        #expect(found.status == 0)
        #expect(lines(found) == ["\(temp.path.string)/iCloud~com~example~app/Documents/a.txt"])
        let missing = try mdq(["--container", "iCloud~nope", "TRUEPREDICATE"], environment: environment)
        #expect(missing.status == 1)
        #expect(missing.stderrText.contains("\(temp.path.string)/iCloud~nope"))
        #expect(missing.stderrText.split(separator: "\n").count == 1)
    }

    /// Apple's dotted spelling names the same container; `--scope` without
    /// `--container` searches the default one; hidden files stay out unless
    /// `--hidden`, as everywhere on the command line.
    @Test func containerByDottedIdentifierAndTheDefaultContainer() throws {
        let temp = try TemporaryDirectory()
        try temp.file("iCloud~com~example~app/Documents/a.txt")
        try temp.file("iCloud~com~example~app/Documents/.marker")
        let environment = ["MDQ_CONTAINERS": temp.path.string, "MDQ_DEFAULT_CONTAINER": ""]
        let expected: Set = ["\(temp.path.string)/iCloud~com~example~app/Documents/a.txt"]
        let dotted = try mdq(
            ["--no-daemon", "--container", "iCloud.com.example.app", "--scope", "documents", "TRUEPREDICATE"],
            environment: environment)
        #expect(dotted.status == 0)
        #expect(lines(dotted) == expected)
        let byDefault = try mdq(["--no-daemon", "--scope", "documents", "TRUEPREDICATE"], environment: environment)
        #expect(lines(byDefault) == expected)
        let hidden = try mdq(
            ["--no-daemon", "--scope", "documents", "--hidden", "kMDItemFSName BEGINSWITH '.'"],
            environment: environment)
        #expect(lines(hidden) == ["\(temp.path.string)/iCloud~com~example~app/Documents/.marker"])
        try temp.folder("iCloud~com~example~other")
        let ambiguous = try mdq(["--no-daemon", "--scope", "documents", "TRUEPREDICATE"], environment: environment)
        #expect(ambiguous.status == 1)
        #expect(ambiguous.stderrText.contains("MDQ_DEFAULT_CONTAINER"))
        let named = try mdq(
            ["--no-daemon", "--scope", "documents", "TRUEPREDICATE"],
            environment: environment.merging(["MDQ_DEFAULT_CONTAINER": "iCloud.com.example.app"]) { $1 })
        #expect(lines(named) == expected)
    }

    @Test func jsonOutputCarriesAttributesAndEscapesEveryName() throws {
        let temp = try makeTree()
        let hostile = Array("evil\",\"kind\":\"folder".utf8) + [0x0A] + Array("x.txt".utf8)
        try temp.file(hostile)
        try temp.file(Array("latin".utf8) + [0xE9] + Array(".txt".utf8))
        let output = try mdq([
            "--onlyin", temp.path.string, "--json", "kMDItemFSName LIKE '*.txt' OR kMDItemFSName == 'report.pdf'",
        ])
        #expect(output.status == 0)
        let objects = try output.stdout.split(separator: 0x0A).map {
            try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
        #expect(objects.count == 4)
        let byName = Dictionary(uniqueKeysWithValues: objects.map { ($0["name"] as? String ?? "", $0) })
        let report = try #require(byName["report.pdf"])
        #expect(report["size"] as? Int == 1234)
        #expect(report["kind"] as? String == "file")
        #expect(report["displayName"] as? String == "report")
        #expect(report["path"] as? String == "\(temp.path.string)/Library/report.pdf")
        let modified = try #require(report["modified"] as? String)
        #expect(modified.hasSuffix("Z") && modified.contains("T"))
        // The hostile name stays one string value: it injects no field.
        let evil = try #require(byName["evil\",\"kind\":\"folder\nx.txt"])
        #expect(evil["kind"] as? String == "file")
        // A byte that is not UTF-8 shows as U+FFFD, and the exact bytes travel in base64.
        let latin = try #require(byName["latin\u{FFFD}.txt"])
        let exact = try #require(Data(base64Encoded: latin["nameBase64"] as? String ?? ""))
        #expect(Array(exact) == Array("latin".utf8) + [0xE9] + Array(".txt".utf8))
        let exactPath = try #require(Data(base64Encoded: latin["pathBase64"] as? String ?? ""))
        #expect(Array(exactPath) == Array(temp.path.string.utf8) + Array("/latin".utf8) + [0xE9] + Array(".txt".utf8))
        #expect(report["pathBase64"] == nil, "UTF-8 paths carry no base64 copy")
    }

    @Test func syntaxErrorsExitTwoWithACaret() throws {
        let output = try mdq(["--onlyin", "/tmp", "kMDItemFSName LIKE[q] '*.png'"])
        #expect(output.status == 2)
        #expect(output.stdout.isEmpty)
        let stderr = output.stderrText.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(stderr.first?.hasPrefix("mdq: unknown comparison option 'q'") == true)
        #expect(stderr.count >= 3 && stderr[2] == "                     ^")
    }

    @Test(arguments: [
        ["--bogus", "TRUEPREDICATE"], [], ["--count", "--json", "TRUEPREDICATE"],
        ["--scope", "everything", "--container", "/tmp", "TRUEPREDICATE"], ["--limit", "-1", "TRUEPREDICATE"],
        ["--live", "--limit", "1", "TRUEPREDICATE"], ["--type", "x", "TRUEPREDICATE"], ["-"],
    ])
    func usageErrorsExitTwo(arguments: [String]) throws {
        let output = try mdq(arguments)
        #expect(output.status == 2)
        #expect(output.stderrText.hasPrefix("mdq: "))
        #expect(output.stdout.isEmpty)
    }

    @Test func missingScopeExitsOneNamingThePath() throws {
        let output = try mdq(["--onlyin", "/nonexistent/mdq-scope", "TRUEPREDICATE"])
        #expect(output.status == 1)
        #expect(
            output.stderrText
                == "mdq: scope folder does not exist: /nonexistent/mdq-scope (No such file or directory)\n")
    }

    @Test func helpShowsExamplesAndExitsZero() throws {
        let output = try mdq(["--help"])
        #expect(output.status == 0)
        #expect(output.stdoutText.contains("mdq \"kMDItemFSName LIKE[c] '*.png'\""))
    }

    /// Without a scope option mdq searches the folder it runs in (as fd
    /// does), wherever its binary or its sources are.
    @Test func defaultScopeIsTheCurrentFolder() throws {
        let temp = try makeTree()
        let output = try Shell.run(
            "/bin/sh", ["-c", "cd '\(temp.path.string)/Documents' && '\(Self.binary)' '*.png'"])
        #expect(output.status == 0, "\(output.stderrText)")
        #expect(
            lines(output) == [
                "\(temp.path.string)/Documents/Photos/IMG_0001.png", "\(temp.path.string)/Documents/Photos/beach.PNG",
            ])
    }

    @Test func closedStdoutEndsQuietly() throws {
        let temp = try TemporaryDirectory()
        for i in 0..<3000 { try temp.file("f/file-with-a-longish-name-\(i).txt") }
        let script =
            "'\(Self.binary)' --onlyin '\(temp.path.string)' TRUEPREDICATE | head -1 >/dev/null; echo ${PIPESTATUS[0]}"
        let output = try Shell.run("/bin/bash", ["-c", script])
        #expect(output.stdoutText == "0\n")
        #expect(output.stderrText.isEmpty)
    }

    /// CI runs as root, which reads every folder; an unprivileged user (via
    /// setpriv) is needed to meet a folder it cannot open.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func unreadableFolderIsAWarningAndTheRestIsStillFound() throws {
        let temp = try TemporaryDirectory()
        try temp.file("open/visible.txt")
        try temp.file("locked/secret.txt")
        #expect(chmod(temp.path.string, 0o755) == 0)
        #expect(chmod(temp.path.appending("locked").string, 0o000) == 0)
        var arguments = ["--onlyin", temp.path.string, "kMDItemFSName LIKE '*.txt'"]
        var executable = Self.binary
        if getuid() == 0 {
            arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", Self.binary] + arguments
            executable = "/usr/bin/setpriv"
        }
        let output = try Shell.run(executable, arguments)
        #expect(output.status == 0, "\(output.stderrText)")
        #expect(lines(output) == ["\(temp.path.string)/open/visible.txt"])
        #expect(output.stderrText == "mdq: warning: cannot open folder \(temp.path.string)/locked: Permission denied\n")
    }
}
