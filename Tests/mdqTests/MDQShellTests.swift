import Foundation
import Glibc
import MetadataIndex
import SystemPackage
import TestSupport
import Testing

/// What a shell user of fd, plocate and mdfind expects: an installed binary
/// that searches where it runs, folders after the query, bare words and
/// globs, `-` for stdin, `--version`, `--limit`, `--type`, glob excludes,
/// help that fits a terminal, completions and the manual's source.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct MDQShellTests {
    func mdq(_ arguments: [String], environment: [String: String]? = nil) throws -> Shell.Output {
        try Shell.run(MDQCommandTests.binary, arguments, environment: environment)
    }

    func lines(_ output: Shell.Output) -> [String] {
        output.stdoutText.split(separator: "\n").map(String.init).sorted()
    }

    func fixture() throws -> TemporaryDirectory {
        let temp = try TemporaryDirectory()
        try temp.file("a/Report 2024.pdf")
        try temp.file("a/photo.PNG")
        try temp.file("a/tom and jerry.mp4")
        try temp.file("b/report.txt")
        try temp.file("b/Bob's notes.txt")
        try temp.file("b/node_modules/lib.js")
        try temp.file("c/build-1/out.o")
        try temp.file("c/build-2/out.o")
        try temp.file("c/keep/out.o")
        #expect(symlink("a/photo.PNG", temp.path.appending("link").string) == 0)
        return temp
    }

    /// The binary copied out of the build tree and run from elsewhere, with
    /// a bare environment: it needs nothing from its sources.
    @Test func installedBinaryRunsWithoutItsSourceTree() throws {
        let temp = try fixture()
        let bin = try TemporaryDirectory("mdq-bin")
        let installed = bin.path.appending("mdq").string
        try FileManager.default.copyItem(atPath: MDQCommandTests.binary, toPath: installed)
        // The full command line it hands most of these over to, beside it.
        try FileManager.default.copyItem(
            atPath: MDQCommandTests.binary + "-full", toPath: bin.path.appending("mdq-full").string)
        let sourceRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let script = "cd '\(temp.path.string)/a' && exec env -i PATH=/usr/bin:/bin '\(installed)' \"$@\""
        for arguments in [["*.png"], ["--count", "TRUEPREDICATE"], ["--json", "report"]] {
            let output = try Shell.run("/bin/sh", ["-c", script, "mdq"] + arguments)
            #expect(output.status == 0, "\(arguments): \(output.stderrText)")
            #expect(output.stderrText.isEmpty)
            #expect(!output.stdoutText.isEmpty)
            #expect(!output.stdoutText.contains(sourceRoot), "nothing comes from the build tree")
        }
        let found = try Shell.run("/bin/sh", ["-c", script, "mdq", "*.png"])
        #expect(lines(found) == ["\(temp.path.string)/a/photo.PNG"])
        let help = try Shell.run("/bin/sh", ["-c", script, "mdq", "--help"])
        #expect(!help.stdoutText.contains(sourceRoot))
    }

    @Test func foldersAfterTheQueryAreScopes() throws {
        let temp = try fixture()
        let base = temp.path.string
        let output = try mdq(["*.txt", "\(base)/a", "\(base)/b"])
        #expect(output.status == 0)
        #expect(lines(output) == ["\(base)/b/Bob's notes.txt", "\(base)/b/report.txt"])
        let withOnlyIn = try mdq(["--onlyin", "\(base)/a", "report", "\(base)/b"])
        #expect(lines(withOnlyIn) == ["\(base)/a/Report 2024.pdf", "\(base)/b/report.txt"])
        // With --name, every positional argument is a folder.
        let named = try mdq(["--name", "report", "\(base)/b"])
        #expect(lines(named) == ["\(base)/b/report.txt"])
        let relative = try Shell.run("/bin/sh", ["-c", "cd '\(base)' && '\(MDQCommandTests.binary)' report b"])
        #expect(lines(relative) == ["\(base)/b/report.txt"])
        let missing = try mdq(["report", "\(base)/nowhere"])
        #expect(missing.status == 1)
        #expect(missing.stderrText.contains("\(base)/nowhere"))
    }

    @Test(
        arguments: [
            ("report", ["a/Report 2024.pdf", "b/report.txt"]),
            ("*.png", ["a/photo.PNG"]),
            ("REPORT.TXT", ["b/report.txt"]),
            ("tom and jerry", ["a/tom and jerry.mp4"]),
            ("Bob's", ["b/Bob's notes.txt"]),
            ("build-?", ["c/build-1", "c/build-2"]),
        ] as [(String, [String])])
    func bareWordsAndGlobsSearchNames(query: String, expected: [String]) throws {
        let temp = try fixture()
        let output = try mdq([query, temp.path.string])
        #expect(output.status == 0, "\(query): \(output.stderrText)")
        #expect(lines(output) == expected.map { "\(temp.path.string)/\($0)" }.sorted(), "\(query)")
    }

    /// Anything shaped like a predicate is parsed strictly: a typo stays an
    /// error (status 2, a caret), never a name search that finds nothing.
    @Test(
        arguments: [
            "kMDItemFSNme LIKE '*.png'", "kMDItemFSName LIK '*.png'", "kMDItemFSName LIKE '*.png",
            "FSName LIKE '*.png'", "FSName LIK '*.png'", "kmditemfsname like[q] 'x'", "TRUEPREDICAT",
            "kMDItemFSSize > ", "kMDItemFSName == 'a' AND", "name IN {'a'", "kMDItemFSSize >= 1kq",
            "size == 3", "(kMDItemFSName == 'x'",
        ])
    func typosInPredicatesStayErrors(query: String) throws {
        let temp = try fixture()
        let output = try mdq([query, temp.path.string])
        #expect(output.status == 2, "\(query): \(output.stderrText)")
        #expect(output.stdout.isEmpty)
        #expect(output.stderrText.hasPrefix("mdq: "))
    }

    @Test func queryFromStandardInput() throws {
        let temp = try fixture()
        let script = "printf \"%s\\n\" \"$1\" | '\(MDQCommandTests.binary)' - '\(temp.path.string)'"
        let predicate = try Shell.run("/bin/sh", ["-c", script, "sh", "kMDItemFSName ENDSWITH '.txt'"])
        #expect(predicate.status == 0, "\(predicate.stderrText)")
        #expect(lines(predicate).count == 2)
        let word = try Shell.run("/bin/sh", ["-c", script, "sh", "photo"])
        #expect(lines(word) == ["\(temp.path.string)/a/photo.PNG"])
        let typo = try Shell.run("/bin/sh", ["-c", script, "sh", "kMDItemFSName ENDSWIT '.txt'"])
        #expect(typo.status == 2)
    }

    @Test func versionFlags() throws {
        for flag in ["--version", "-V"] {
            let output = try mdq([flag])
            #expect(output.status == 0)
            #expect(output.stdoutText.range(of: #"^\d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil)
        }
        #expect(try mdq(["ls", "--version"]).status == 0)
    }

    /// `--limit` ends the crawl as soon as it has its results: the library
    /// reports how many folders it listed, far fewer than the tree has.
    @Test func limitStopsTheCrawlEarly() throws {
        let temp = try TemporaryDirectory()
        for folder in 0..<100 {
            for file in 0..<5 { try temp.file("f\(folder)/file\(file).txt") }
        }
        let output = try mdq(["--limit", "3", "*.txt", temp.path.string])
        #expect(output.status == 0)
        #expect(lines(output).count == 3)
        #expect(try mdq(["--count", "--limit", "7", "*.txt", temp.path.string]).stdoutText == "7\n")
        #expect(try mdq(["--limit", "0", "*.txt", temp.path.string]).stdout.isEmpty)
        let sorted = try mdq(["--sort", "kMDItemPath", "--limit", "2", "*.txt", temp.path.string])
        #expect(
            sorted.stdoutText == "\(temp.path.string)/f0/file0.txt\n\(temp.path.string)/f0/file1.txt\n",
            "with --sort, the first N in order")

        func search(limit: Int?) throws -> SearchSummary {
            try OneShotSearch(
                roots: [CrawlRoot(path: temp.path)], predicate: MetadataPredicate("kMDItemFSName LIKE '*.txt'"),
                crawlOptions: CrawlOptions(threadCount: 2), limit: limit
            ).run()
        }
        let limited = try search(limit: 3)
        #expect(limited.matchCount == 3)
        #expect(limited.reachedLimit)
        #expect(limited.foldersListed < 20, "stopped after \(limited.foldersListed) of 101 folders")
        let full = try search(limit: nil)
        #expect(full.matchCount == 500)
        #expect(full.foldersListed == 101)
        #expect(!full.reachedLimit)
    }

    @Test func typeSelectsKinds() throws {
        let temp = try fixture()
        let base = temp.path.string
        #expect(lines(try mdq(["--type", "d", "build*", base])) == ["\(base)/c/build-1", "\(base)/c/build-2"])
        #expect(lines(try mdq(["--type", "l", "*", base])) == ["\(base)/link"])
        #expect(try mdq(["--type", "f", "--type", "l", "--count", "*", base]).stdoutText == "10\n")
        #expect(try mdq(["--type", "f", "--count", "TRUEPREDICATE", base]).stdoutText == "9\n")
    }

    @Test func excludeTakesGlobsAndNamesOneThatMatchedNothing() throws {
        let temp = try fixture()
        let base = temp.path.string
        let output = try mdq(["--exclude", "build-*", "--exclude", "node_modules", "--exclude", "nope", "*.o", base])
        #expect(output.status == 0)
        #expect(lines(output) == ["\(base)/c/keep/out.o"])
        #expect(output.stderrText == "mdq: warning: --exclude 'nope' matched no folder\n")
        let quiet = try mdq(["--no-warnings", "--exclude", "nope", "*.o", base])
        #expect(quiet.stderrText.isEmpty)
        #expect(lines(quiet).count == 3)
    }

    @Test(
        arguments: [
            ("node_modules", "node_modules", true), ("node_modules", "node_module", false), ("*.app", "Mail.app", true),
            ("*.app", "app", false), ("build-?", "build-1", true), ("build-?", "build-10", false),
            ("[a-c]*", "beta", true), ("[!a-c]*", "beta", false), ("\\*", "*", true), ("\\*", "x", false),
            ("*x*y", "axbxcy", true), ("*x*y", "axbxc", false), ("[", "[", true), ("a[]b]c", "a]c", true),
        ] as [(String, String, Bool)])
    func folderExclusionGlobs(pattern: String, name: String, excluded: Bool) {
        let exclusion = FolderExclusion(patterns: [Array(pattern.utf8)], skipsPseudoFileSystems: false)
        let result = Array(name.utf8).withUnsafeBytes { exclusion.excludes(name: $0, parentPath: Array("/x".utf8)) }
        #expect(result == excluded, "\(pattern) vs \(name)")
        #expect(exclusion.unmatchedPatterns.isEmpty == excluded)
    }

    @Test func pseudoFileSystemsAreSkippedUnderTheRootOnly() {
        let exclusion = FolderExclusion(patterns: [], skipsPseudoFileSystems: true)
        func excludes(_ name: String, in parent: String) -> Bool {
            Array(name.utf8).withUnsafeBytes { exclusion.excludes(name: $0, parentPath: Array(parent.utf8)) }
        }
        #expect(excludes("proc", in: "/"))
        #expect(excludes("sys", in: "/"))
        #expect(!excludes("proc", in: "/home/me"))
        #expect(!excludes("home", in: "/"))
        let crawled = FolderExclusion(patterns: [], skipsPseudoFileSystems: false)
        #expect(!Array("proc".utf8).withUnsafeBytes { crawled.excludes(name: $0, parentPath: [0x2F]) })
    }

    /// Dates in JSON: a form jq's `fromdateiso8601` reads, and the exact
    /// epoch seconds.
    @Test func jsonDatesAreWholeSecondsPlusExactEpoch() throws {
        let temp = try fixture()
        let file = temp.path.appending("b/report.txt").string
        var times = [
            timespec(tv_sec: 1_738_324_800, tv_nsec: 308_604_997),
            timespec(tv_sec: 1_738_324_800, tv_nsec: 308_604_997),
        ]
        #expect(utimensat(AT_FDCWD, file, &times, 0) == 0)
        let output = try mdq(["--json", "report.txt", temp.path.string])
        let object = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any])
        #expect(object["modified"] as? String == "2025-01-31T12:00:00Z")
        #expect(output.stdoutText.contains("\"modifiedEpoch\":1738324800.308604997"))
        #expect(object["created"] is String)
    }

    @Test func helpFitsEightyColumnsAndNamesEveryKeyOrTheList() throws {
        let help = try mdq(["--help"], environment: ["COLUMNS": "80"])
        #expect(help.status == 0)
        let text = help.stdoutText
        for line in text.split(separator: "\n") {
            #expect(line.count <= 80, "wrapped: \(line)")
        }
        // Every example is whole: a line after "Examples:" starting "  mdq".
        let examples = text.components(separatedBy: "Examples:\n")[1].components(separatedBy: "\n\n")[0]
        for line in examples.split(separator: "\n") { #expect(line.hasPrefix("  mdq "), "\(line)") }
        #expect(text.contains("--list-attributes"))
        #expect(text.contains("kMDItemContentTypeTree"))
        #expect(text.contains("mdq ls [<options>] <path> ..."), "the usage shows the ls subcommand")
        let keys = try mdq(["--list-attributes"]).stdoutText.split(separator: "\n")
        #expect(keys.contains("kMDItemContentType") && keys.contains("kMDItemFSSize"))
        let ls = try mdq(["ls", "--help"])
        #expect(ls.status == 0)
        #expect(!ls.stdoutText.contains("(default"), "no '(default (null))'")
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsCompleteFoldersAndAttributes(shell: String) throws {
        let output = try mdq(["--generate-completion-script", shell])
        #expect(output.status == 0, "\(output.stderrText)")
        let script = output.stdoutText
        #expect(script.contains("onlyin"))
        #expect(script.contains("kMDItemFSContentChangeDate"), "attribute names for --attr, --sort, --group")
        #expect(script.contains("ls"))
    }

    /// What `generate-manual` reads to write `mdq.1`: both commands, every option.
    @Test func manualSourceDescribesBothCommands() throws {
        let output = try mdq(["--experimental-dump-help"])
        #expect(output.status == 0)
        let dump = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any])
        let command = try #require(dump["command"] as? [String: Any])
        let subcommands = try #require(command["subcommands"] as? [[String: Any]])
        #expect(Set(subcommands.compactMap { $0["commandName"] as? String }).isSuperset(of: ["find", "ls"]))
    }

    /// On a pipe, a `--count` shows no progress (no carriage returns or
    /// escape codes on stderr); `TERM=dumb` on a terminal neither.
    @Test func noProgressOffATerminal() throws {
        let temp = try fixture()
        let output = try mdq(["--count", "TRUEPREDICATE", temp.path.string], environment: ["TERM": "xterm"])
        #expect(output.stdoutText == "17\n")
        #expect(output.stderrText.isEmpty)
    }
}
