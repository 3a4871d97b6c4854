import Foundation
import Glibc
import TestSupport
import Testing

/// mdq run as `mdfind` and `mdls` (links to the same binary) takes Apple's
/// command lines: each option does what Apple's does, and what mdq cannot
/// do is refused in one line with status 2.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PersonalityTests {
    /// A folder holding `mdfind` and `mdls` links to the built mdq, and a tree.
    static let setup = TemporaryDirectory.Shared { temp in
        for name in ["mdfind", "mdls", "mdq"] {
            _ = symlink(MDQCommandTests.binary, temp.path.appending(name).string)
        }
        try temp.file("tree/Report 2024.PDF", contents: String(repeating: "p", count: 120))
        try temp.file("tree/notes.txt", contents: "n")
        try temp.file("tree/photos/report-1.png", contents: String(repeating: "i", count: 30))
    }

    func run(_ program: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Shell.Output {
        let folder = try Self.setup.path()
        var environment = environment
        if environment["MDQ_RUNTIME_DIR"] == nil {
            // No daemon anywhere: everything indexed has nothing to ask.
            environment["MDQ_RUNTIME_DIR"] = folder.appending("no-run").string
            environment["MDQ_STATE_DIR"] = folder.appending("no-state").string
        }
        return try Shell.run(folder.appending(program).string, arguments, environment: environment)
    }

    var tree: String { get throws { try Self.setup.path().appending("tree").string } }

    @Test func mdfindOptions() throws {
        let tree = try self.tree
        let pdf = "\(tree)/Report 2024.PDF"
        let png = "\(tree)/photos/report-1.png"
        #expect(try run("mdfind", ["-onlyin", tree, "kMDItemFSName == \"*.pdf\"c"]).stdoutText == pdf + "\n")
        #expect(
            try run("mdfind", ["-onlyin", tree, "-name", "REPORT"]).stdoutText == [pdf, png].sorted().joined(
                separator: "\n") + "\n")
        #expect(try run("mdfind", ["-count", "-onlyin", tree, "-name", "report"]).stdoutText == "2\n")
        #expect(try run("mdfind", ["-0", "-onlyin", tree, "-name", "notes"]).stdoutText == "\(tree)/notes.txt\0")
        // -0 is about paths: with -count it changes nothing.
        #expect(try run("mdfind", ["-0", "-count", "-onlyin", tree, "-name", "report"]).stdoutText == "2\n")
        #expect(
            try run("mdfind", ["-onlyin", tree, "-attr", "kMDItemFSSize", "-attr", "kMDItemKind", "-name", "2024"])
                .stdoutText == "\(pdf)   kMDItemFSSize = 120   kMDItemKind = \"PDF document\"\n")
        #expect(try run("mdfind", ["-onlyin", tree, "-literal", "kMDItemFSSize > 100"]).stdoutText == pdf + "\n")
        #expect(try run("mdfind", ["-onlyin", tree, "kMDItemFSSize", ">", "100"]).stdoutText == pdf + "\n")
        #expect(try run("mdfind", ["-onlyin", "\(tree)/photos", "report"]).stdoutText == png + "\n")
        let help = try run("mdfind", ["-help"])
        #expect(help.status == 0 && help.stdoutText.hasPrefix("usage: mdfind"))
    }

    @Test(
        arguments: [
            (["-interpret", "pdf"], "-interpret"), (["-reprint", "-live", "x"], "-reprint"), (["-s", "Recent"], "-s"),
            (["-bogus", "x"], "-bogus"), (["-onlyin"], "-onlyin needs a value"), ([] as [String], "no query"),
            (["-name", "a", "b"], "-name takes no query"),
            // -literal is a query as written: words are not one.
            (["-literal", "-onlyin", "/", "report"], "-literal takes an attribute query"),
        ] as [([String], String)])
    func mdfindRefusesWhatItCannotDo(arguments: [String], message: String) throws {
        let output = try run("mdfind", arguments)
        #expect(output.status == 2, "\(arguments): \(output.stderrText)")
        #expect(output.stdout.isEmpty)
        #expect(output.stderrText.hasPrefix("mdfind: ") && output.stderrText.contains(message), "\(output.stderrText)")
        #expect(output.stderrText.split(separator: "\n").count == 1)
    }

    /// Without -onlyin mdfind searches everything indexed: the daemon's.
    @Test func mdfindSearchesEverythingIndexed() throws {
        let tree = try self.tree
        let none = try run("mdfind", ["-name", "report"])
        #expect(none.status == 1 && none.stderrText.contains("no daemon is running"), "\(none.stderrText)")
        let temp = try TemporaryDirectory()
        let daemon = try MDQDaemonTests.Daemon(temp, options: ["--no-content"])
        defer { daemon.kill(SIGTERM) }
        #expect(try daemon.mdq(["index", "add", "\(tree)/photos"]).status == 0)
        let found = try run("mdfind", ["-name", "report"], environment: daemon.environment)
        #expect(found.stdoutText == "\(tree)/photos/report-1.png\n", "\(found.stderrText)")
    }

    @Test func mdlsOptions() throws {
        let tree = try self.tree
        let file = "\(tree)/notes.txt"
        #expect(
            try run("mdls", ["-name", "kMDItemFSSize", "-name", "kMDItemKind", "-name", "kMDItemNope", file]).stdoutText
                == "kMDItemFSSize = 1\nkMDItemKind   = \"Plain Text Document\"\nkMDItemNope   = (null)\n")
        // Values separated by NUL, none after the last: `$(mdls -raw …)`
        // reads one value without a warning from the shell.
        #expect(
            try run("mdls", ["-raw", "-name", "kMDItemFSName", "-name", "kMDItemTitle", file]).stdoutText
                == "notes.txt\0(null)")
        #expect(try run("mdls", ["-raw", "-nullMarker", "-", "-name", "kMDItemTitle", file]).stdoutText == "-")
        #expect(
            try run("mdls", ["-raw", "-name", "kMDItemFSName", file, "\(tree)/Report 2024.PDF"]).stdoutText
                == "notes.txt\0Report 2024.PDF")
        // The marker is for -raw: without it, accepted and unused.
        #expect(
            try run("mdls", ["-nullMarker", "x", "-name", "kMDItemTitle", file]).stdoutText == "kMDItemTitle = (null)\n"
        )
        let all = try run("mdls", [file]).stdoutText
        #expect(all.contains("kMDItemFSName") && all.contains("= \"notes.txt\""))
        // Spotlight's keys only: not MetadataQuery's NSMetadata keys.
        #expect(!all.contains("NSMetadata") && !all.contains("kMDQ"), "\(all)")
        #expect(try run("mdq", ["ls", file]).stdoutText.contains("NSMetadataItemIsUbiquitousKey"))
        for (arguments, message) in [
            (["-plist", "x", file], "-plist"), (["-name"], "-name needs"), (["-zzz", file], "-zzz"),
        ] {
            let output = try run("mdls", arguments)
            #expect(output.status == 2 && output.stderrText.contains(message), "\(arguments): \(output.stderrText)")
        }
    }
}
