import Foundation
import TestSupport
import Testing

/// `--attr`, `--sort`, `--group` on one-shot queries.
struct AttributeOptionTests {
    func mdq(_ arguments: [String]) throws -> Shell.Output {
        try Shell.run(MDQCommandTests.binary, arguments)
    }

    func fixture() throws -> TemporaryDirectory {
        let temp = try TemporaryDirectory()
        try temp.file("file10.txt", contents: "1")
        try temp.file("file2.txt", contents: "333")
        try temp.file("File1.txt", contents: "22")
        try temp.file("b.png", contents: "4444")
        try temp.file("notes")
        return temp
    }

    func names(_ output: Shell.Output) -> [String] {
        output.stdoutText.split(separator: "\n").map { line in
            String(line.split(separator: "\t")[0].split(separator: "/").last!)
        }
    }

    @Test func sortComparesNamesLikeFinder() throws {
        let temp = try fixture()
        let base = ["--onlyin", temp.path.string]
        let byName = try mdq(base + ["--sort", "kMDItemFSName", "kMDItemFSName LIKE '*.txt'"])
        #expect(byName.status == 0)
        #expect(names(byName) == ["File1.txt", "file2.txt", "file10.txt"])
        let descending = try mdq(base + ["--sort", "NSMetadataItemFSNameKey:desc", "kMDItemFSName LIKE '*.txt'"])
        #expect(names(descending) == ["file10.txt", "file2.txt", "File1.txt"])
        // Several keys: type first, then size descending.
        let twoKeys = try mdq(base + ["--sort", "kMDItemContentType", "--sort", "kMDItemFSSize:desc", "TRUEPREDICATE"])
        #expect(names(twoKeys) == ["notes", "file2.txt", "File1.txt", "file10.txt", "b.png"])
    }

    @Test func attributesAreColumnsAndJSONFields() throws {
        let temp = try fixture()
        let output = try mdq([
            "--onlyin", temp.path.string, "--sort", "kMDItemFSName", "--attr", "kMDItemContentType", "--attr",
            "kMDItemFSSize", "kMDItemFSName LIKE '*.png' OR kMDItemFSName == 'notes'",
        ])
        #expect(output.status == 0)
        #expect(
            output.stdoutText
                == "\(temp.path.string)/b.png\tpublic.png\t4\n\(temp.path.string)/notes\tpublic.data\t0\n")
        let json = try mdq([
            "--onlyin", temp.path.string, "--json", "--attr", "kMDItemContentTypeTree", "kMDItemFSName == 'b.png'",
        ])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any])
        let attributes = try #require(object["attributes"] as? [String: Any])
        #expect((attributes["kMDItemContentTypeTree"] as? [String])?.prefix(2) == ["public.png", "public.image"])
    }

    @Test func groupCountsPerValue() throws {
        let temp = try fixture()
        let output = try mdq(["--onlyin", temp.path.string, "--group", "kMDItemContentType", "TRUEPREDICATE"])
        #expect(output.status == 0)
        #expect(output.stdoutText == "public.plain-text\t3\npublic.data\t1\npublic.png\t1\n")
        let bad = try mdq(["--onlyin", temp.path.string, "--group", "kMDItemNope", "TRUEPREDICATE"])
        #expect(bad.status == 2)
        #expect(bad.stderrText.hasPrefix("mdq: unknown attribute 'kMDItemNope'"))
    }

    @Test func externalDocumentsAreRegisteredFromTheCommandLine() throws {
        let temp = try TemporaryDirectory()
        try temp.file("C/Documents/in.txt")
        try temp.file("Elsewhere/out.txt")
        let container = temp.path.appending("C").string
        let elsewhere = temp.path.appending("Elsewhere").string
        // The registry lives in the state folder, never in the container.
        let environment = ["MDQ_STATE_DIR": temp.path.appending("state").string]
        func mdq(_ arguments: [String]) throws -> Shell.Output {
            try Shell.run(MDQCommandTests.binary, arguments, environment: environment)
        }
        #expect(try mdq(["--container", container, "--register-external", elsewhere]).status == 0)
        #expect(try mdq(["--container", container, "--list-external"]).stdoutText == elsewhere + "\n")
        let external = try mdq(["--container", container, "--scope", "external", "TRUEPREDICATE"])
        #expect(external.stdoutText == elsewhere + "/out.txt\n")
        let both = try mdq([
            "--container", container, "--scope", "documents", "--scope", "external", "--sort", "kMDItemFSName",
            "kMDItemFSName LIKE '*.txt'",
        ])
        #expect(both.stdoutText == container + "/Documents/in.txt\n" + elsewhere + "/out.txt\n")
        let inside = try mdq(["--container", container, "--register-external", container + "/Documents"])
        #expect(inside.status == 2)
        #expect(inside.stderrText.contains("outside the container"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: container) == ["Documents"])
        #expect(try mdq(["--container", container, "--unregister-external", elsewhere]).status == 0)
        #expect(try mdq(["--container", container, "--list-external"]).stdoutText == "")
    }

    @Test func excludedFoldersAreLeftOutAtAnyDepth() throws {
        let temp = try TemporaryDirectory()
        try temp.file("src/main.js")
        try temp.file("src/node_modules/lib/index.js")
        try temp.file("node_modules/x.js")
        let output = try mdq([
            "--onlyin", temp.path.string, "--exclude", "node_modules", "--sort", "kMDItemPath",
            "kMDItemFSName LIKE '*'",
        ])
        #expect(output.status == 0)
        let relative = output.stdoutText.split(separator: "\n").map { $0.dropFirst(temp.path.string.count + 1) }
        #expect(relative == ["node_modules", "src", "src/main.js", "src/node_modules"])
    }

    @Test func conflictAttributesInOneShotResults() throws {
        let temp = try TemporaryDirectory()
        try temp.file("report.txt")
        try temp.file("report (conflicted copy 2025-01-31).txt")
        try temp.file("other.txt")
        let base = temp.path.string
        let output = try mdq([
            "--onlyin", base, "--sort", "kMDItemFSName", "--attr", "NSMetadataUbiquitousItemHasUnresolvedConflictsKey",
            "--attr", "kMDQItemConflictOriginalPath", "TRUEPREDICATE",
        ])
        #expect(output.status == 0)
        #expect(
            output.stdoutText == """
                \(base)/other.txt\t0\t(null)
                \(base)/report (conflicted copy 2025-01-31).txt\t0\t\(base)/report.txt
                \(base)/report.txt\t1\t(null)

                """)
    }
}
