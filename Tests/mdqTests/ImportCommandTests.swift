import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// `mdq import FILE...`: what the importers read, end to end.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ImportCommandTests {
    func run(_ arguments: [String]) throws -> Shell.Output {
        try Shell.run(MDQCommandTests.binary, ["import"] + arguments)
    }

    @Test func printsTheExtractedAttributesLikeMdimport() throws {
        let temp = try TemporaryDirectory()
        let note = try temp.file("note.md", contents: "# Groceries\n\nmilk, café au lait\n")
        let output = try run([note.string])
        #expect(output.status == 0, "\(output.stderrText)")
        #expect(output.stdoutText.hasPrefix("\(note.string):\n  type by extension: net.daringfireball.markdown\n"))
        #expect(output.stdoutText.contains("importer text: 1 attributes"))
        #expect(output.stdoutText.contains("kMDItemTextContent = \"# Groceries\n\nmilk, café au lait\n\""))
    }

    @Test func aFileThatCannotBeImportedSaysWhyAndExitsOne() throws {
        let temp = try TemporaryDirectory()
        try temp.file(Array("data.txt".utf8), contents: Array(0...255))
        let good = try temp.file("good.txt", contents: "fine")
        let output = try run([temp.path.appending("data.txt").string, good.string])
        #expect(output.status == 1)
        #expect(output.stdoutText.contains("importer text: failed: binary content in a file of type public.plain-text"))
        #expect(output.stdoutText.contains("kMDItemTextContent = \"fine\""))
        let missing = try run([temp.path.appending("absent.txt").string])
        #expect(missing.status == 1)
        #expect(missing.stdoutText.contains("not imported: cannot open: No such file or directory"))
    }

    @Test func jsonAndTextExcerpt() throws {
        let temp = try TemporaryDirectory()
        let long = try temp.file("long.txt", contents: String(repeating: "word ", count: 200))
        let json = try run(["--json", long.string])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdoutText.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "public.plain-text")
        let attributes = try #require(object["attributes"] as? [String: Any])
        let text = try #require(attributes["kMDItemTextContent"] as? String)
        #expect(text.hasSuffix("… (1000 bytes in all)"))
        let full = try run(["--json", "--full-text", long.string])
        #expect(full.stdoutText.contains(String(repeating: "word ", count: 200)))
        let usage = try run([])
        #expect(usage.status == 2)
    }
}
