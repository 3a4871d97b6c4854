import Foundation
import Glibc
import TestSupport
import Testing

/// Bad input anywhere on the command line: a one-line message naming the
/// mistake, the documented status (2 usage/query, 1 runtime), no output.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MDQBadInputTests {
    func mdq(_ arguments: [String]) throws -> Shell.Output {
        try Shell.run(MDQCommandTests.binary, arguments)
    }

    @Test(
        arguments: [
            (["--bogus", "TRUEPREDICATE"], "Unknown option '--bogus'"),
            (["--live", "--interval", "abc", "TRUEPREDICATE"], "'abc' is invalid for '--interval"),
            (["--live", "--interval=-1", "TRUEPREDICATE"], "--interval must be 0 or more seconds"),
            (["--live", "--interval=nan", "TRUEPREDICATE"], "--interval must be 0 or more seconds"),
            (["--scope", "bogus", "TRUEPREDICATE"], "'bogus' is invalid for '--scope"),
            (["--sort", "kBogus", "TRUEPREDICATE"], "unknown attribute 'kBogus'"),
            (["--attr", "nope", "TRUEPREDICATE"], "unknown attribute 'nope'"),
            ([], "give a QUERY (a name, a glob or a predicate) or --name TEXT"),
            (["--live", "--interval", "-1", "TRUEPREDICATE"], "--interval must be 0 or more seconds"),
            (["--interval", "1", "TRUEPREDICATE"], "--interval applies to --live"),
            (["--verison"], "Unknown option '--verison'. Did you mean '--version'?"),
            (["--live", "--exclude", "*.app", "TRUEPREDICATE"], "--exclude globs apply to one-shot queries"),
            (["kMDItemFSNme LIKE '*.png'"], "unknown attribute 'kMDItemFSNme'"),
            (["kMDItemFSName LIKE"], "kMDItemFSName LIKE"),
            (["kMDItemFSName == 'a' AND"], "^"),
            (["--spotlight", "kMDItemFSName == "], "^"),
            (["-hidden", "TRUEPREDICATE"], "unknown option '-hidden': long options take two dashes (--hidden)"),
            (["-0x", "TRUEPREDICATE"], "unknown option '-0x'"),
            (["--limit", "-1", "TRUEPREDICATE"], "--limit must be 0 or more"),
            (["--hidden", "-0", "--count", "TRUEPREDICATE"], "--count prints a number; it does not combine"),
            (["--budget", "-2.5", "TRUEPREDICATE"], "--budget takes a positive number"),
        ] as [([String], String)])
    func usageAndQueryErrorsExitTwo(arguments: [String], message: String) throws {
        let temp = try TemporaryDirectory()
        let output = try mdq(["--onlyin", temp.path.string] + arguments)
        #expect(output.status == 2, "\(arguments): \(output.stderrText)")
        #expect(output.stdout.isEmpty)
        #expect(output.stderrText.hasPrefix("mdq: "))
        #expect(output.stderrText.contains(message), "\(output.stderrText)")
    }

    /// A subcommand's name alone prints its help and the search that may
    /// have been meant; --everywhere without a daemon says how to start it.
    @Test func halfCommandsSayWhatWasMeant() throws {
        for name in ["index", "daemon"] {
            let output = try mdq([name])
            #expect(output.status == 2)
            #expect(output.stdout.isEmpty)
            #expect(output.stderrText.contains("To search for names containing \"\(name)\": mdq find \(name)"))
        }
        let temp = try TemporaryDirectory()
        let everywhere = try Shell.run(
            MDQCommandTests.binary, ["-a", "report"],
            environment: [
                "MDQ_RUNTIME_DIR": temp.path.appending("run").string,
                "MDQ_STATE_DIR": temp.path.appending("state").string,
            ])
        #expect(everywhere.status == 1)
        #expect(everywhere.stderrText.contains("no daemon is running (start one: mdq daemon start)"))
    }

    @Test func missingScopesAndContainersExitOneNamingThePath() throws {
        let temp = try TemporaryDirectory()
        let missing = temp.path.appending("nowhere").string
        let file = try temp.file("plain.txt").string
        for (arguments, expected) in [
            (["--onlyin", missing, "TRUEPREDICATE"], missing),
            (["--onlyin", file, "TRUEPREDICATE"], "scope is not a folder: \(file)"),
            (["--container", missing, "TRUEPREDICATE"], "no container folder: \(missing)"),
            (["--live", "--onlyin", missing, "TRUEPREDICATE"], missing),
        ] {
            let output = try mdq(arguments)
            #expect(output.status == 1, "\(arguments)")
            #expect(output.stdout.isEmpty)
            #expect(output.stderrText.contains(expected), "\(output.stderrText)")
            #expect(output.stderrText.split(separator: "\n").count == 1, "one line: \(output.stderrText)")
        }
    }

    /// An unreadable container is not "missing": the message says it cannot
    /// be opened, and why. Needs an unprivileged user (root reads anything).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func unreadableContainerSaysWhy() throws {
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let container = try temp.folder("locked")
        try temp.file("locked/Documents/a.txt")
        #expect(chmod(container.string, 0o000) == 0)
        let output = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--container",
                container.string,
                "TRUEPREDICATE",
            ])
        #expect(output.status == 1)
        #expect(output.stderrText == "mdq: cannot open the container folder: \(container.string) (Permission denied)\n")
    }

    /// Nothing mdq does to search writes into a scope: a one-shot search, a
    /// live query and `mdq ls` leave every entry's inode, size, mtime and
    /// ctime as they were, and add nothing.
    @Test func searchingNeverWritesIntoTheScope() throws {
        let temp = try TemporaryDirectory()
        try temp.file("Documents/report.pdf", contents: "pdf")
        try temp.file("Documents/a (conflicted copy 2024-01-01).txt")
        try temp.file("Library/cache.db")
        func snapshot() throws -> [String: [Int]] {
            var result: [String: [Int]] = [:]
            let enumerator = try #require(FileManager.default.enumerator(atPath: temp.path.string))
            for case let relative as String in enumerator {
                var info = stat()
                #expect(lstat(temp.path.appending(relative).string, &info) == 0)
                result[relative] = [
                    Int(info.st_ino), Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec, info.st_ctim.tv_sec,
                    info.st_ctim.tv_nsec,
                ]
            }
            var root = stat()
            lstat(temp.path.string, &root)
            result["."] = [
                Int(root.st_mtim.tv_sec), root.st_mtim.tv_nsec, Int(root.st_ctim.tv_sec), root.st_ctim.tv_nsec,
            ]
            return result
        }
        let before = try snapshot()
        for arguments in [
            [
                "--container", temp.path.string, "--scope", "all", "--json", "--attr", "kMDItemContentType",
                "--attr", "NSMetadataUbiquitousItemHasUnresolvedConflictsKey", "TRUEPREDICATE",
            ],
            ["--container", temp.path.string, "--count", "--name", "report"],
            ["ls", "--container", temp.path.string, temp.path.appending("Documents/report.pdf").string],
        ] {
            #expect(try mdq(arguments).status == 0, "\(arguments)")
        }
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--container", temp.path.string, "--scope", "all", "TRUEPREDICATE"])
        #expect(live.waitForLine { $0.hasSuffix("report.pdf") })
        #expect(live.interrupt() == 0)
        #expect(try snapshot() == before)
    }
}

/// Hostile names through the command line: `-0` prints the exact bytes,
/// `--json` one parseable object per result whose fields cannot be forged
/// by a name, with the exact bytes in base64 when they are not UTF-8.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct MDQHostileNameTests {
    @Test func hostileNamesAndDeepPathsPrintExactly() throws {
        let temp = try TemporaryDirectory()
        for name in HostileNames.all { try temp.file(name) }
        let deep = try temp.deepFile(under: "deep", leaf: "leaf.txt")
        let base = Array(temp.path.string.utf8) + [0x2F]
        let expected = Set(HostileNames.all.map { base + $0 } + [deep])

        let nul = try Shell.run(
            MDQCommandTests.binary, ["--onlyin", temp.path.string, "-0", "kMDItemFSName LIKE '*.txt'"])
        #expect(nul.status == 0, "\(nul.stderrText)")
        #expect(nul.stdout.last == 0)
        let printed = nul.stdout.split(separator: 0).map(Array.init)
        #expect(printed.count == expected.count)
        #expect(Set(printed) == expected)

        let json = try Shell.run(
            MDQCommandTests.binary, ["--onlyin", temp.path.string, "--json", "kMDItemFSName LIKE '*.txt'"])
        #expect(json.status == 0, "\(json.stderrText)")
        let objects = try json.stdout.split(separator: 0x0A).map {
            try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any])
        }
        #expect(objects.count == expected.count, "one line per result: newlines in names are escaped")
        var exact = Set<[UInt8]>()
        for object in objects {
            #expect(object["kind"] as? String == "file", "no field forged by a name")
            if let encoded = object["pathBase64"] as? String {
                exact.insert(Array(try #require(Data(base64Encoded: encoded))))
            } else {
                exact.insert(Array(try #require(object["path"] as? String).utf8))
            }
        }
        #expect(exact == expected)
    }
}
