import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

/// Searching what is inside files from the command line: a one-shot search
/// imports the entries that pass its cheaper terms, `--attr` and `mdq ls`
/// print imported attributes, and what cannot be answered says why.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ContentSearchTests {
    /// The importer fixtures spread over a small tree, with text files.
    static let tree = TemporaryDirectory.Shared { temp in
        let fixtures = PDFImportTests.fixtures.path
        let placement = [
            "invoice.pdf": "docs", "report.docx": "docs", "minutes.odt": "docs/old", "keeper.epub": "books",
            "photo.jpg": "pictures", "diagram.png": "pictures", "leaf.webp": "pictures/2024", "song.mp3": "music",
            "clip.mp4": "videos",
        ]
        for (file, folder) in placement {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(fixtures)/\(file)"))
            try temp.file(Array("\(folder)/\(file)".utf8), contents: Array(data))
        }
        try temp.file("notes/lighthouse.txt", contents: "Notes about the old lighthouse keeper.")
        try temp.file("notes/shopping.md", contents: "milk, bread, café au lait")
        try temp.file("notes/binary.txt", contents: String(repeating: "\u{1}\u{2}\u{3}", count: 100))
    }

    func mdq(_ arguments: [String]) throws -> Shell.Output {
        try Shell.run(MDQCommandTests.binary, ["--no-daemon"] + arguments)
    }

    func names(_ output: Shell.Output) -> Set<String> {
        Set(output.stdoutText.split(separator: "\n").map { String($0.split(separator: "/").last ?? "") })
    }

    @Test(arguments: [
        ("kMDItemTextContent CONTAINS[cd] 'lighthouse'", ["lighthouse.txt", "minutes.odt", "keeper.epub"]),
        ("kMDItemTextContent CONTAINS[cd] 'cafe'", ["shopping.md"]),
        ("kMDItemTextContent CONTAINS 'Total due'", ["invoice.pdf"]),
        ("kMDItemAuthors == 'Ada Lovelace'", ["report.docx"]),
        ("kMDItemNumberOfPages >= 2", ["invoice.pdf"]),
        ("kMDItemContentTypeTree == 'public.image' && kMDItemPixelWidth > 100", ["diagram.png", "leaf.webp"]),
        ("kMDItemAcquisitionMake == 'Fictional Optics'", ["photo.jpg"]),
        ("kMDItemDurationSeconds > 0.5", ["song.mp3", "clip.mp4"]),
        ("kMDItemCodecs == 'mpeg4'", ["clip.mp4"]),
        ("kMDItemMusicalGenre ==[c] 'folk' && kMDItemFSName ENDSWITH '.mp3'", ["song.mp3"]),
    ])
    func oneShotSearchesReadInsideFiles(query: String, expected: [String]) throws {
        let root = try Self.tree.path()
        let output = try mdq(["--onlyin", root.string, query])
        #expect(output.status == 0, "\(output.stderrText)")
        #expect(names(output) == Set(expected), "\(query)")
    }

    @Test func importedAttributesPrintAsColumnsAndInLs() throws {
        let root = try Self.tree.path()
        let columns = try mdq([
            "--onlyin", root.string, "--attr", "kMDItemNumberOfPages", "--attr", "kMDItemTitle",
            "kMDItemFSName == 'invoice.pdf'",
        ])
        #expect(columns.stdoutText == "\(root.string)/docs/invoice.pdf\t2\tAcme Invoice\n")
        let listing = try Shell.run(MDQCommandTests.binary, ["ls", "\(root.string)/docs/invoice.pdf"])
        #expect(listing.stdoutText.contains("kMDItemNumberOfPages                              = 2"))
        #expect(listing.stdoutText.contains("kMDItemTitle                                      = \"Acme Invoice\""))
        let named = try Shell.run(
            MDQCommandTests.binary, ["ls", "--name", "kMDItemPixelWidth", "\(root.string)/pictures/photo.jpg"])
        #expect(named.stdoutText == "kMDItemPixelWidth = 64\n")
    }

    @Test func whatCannotBeAnsweredSaysWhy() throws {
        let root = try Self.tree.path()
        let live = try mdq(["--live", "--onlyin", root.string, "kMDItemTextContent CONTAINS 'x'"])
        #expect(live.status == 2)
        #expect(live.stderrText.contains("--live cannot test kMDItemTextContent without the index daemon"))
        // Columns read from inside files would print empty: said instead.
        let columns = try mdq(["--live", "--attr", "kMDItemTitle", "--onlyin", root.string, "kMDItemFSName == '*'"])
        #expect(columns.status == 2)
        #expect(columns.stderrText.contains("--live cannot show kMDItemTitle without the index daemon"))
        let missing = try Shell.run(
            MDQCommandTests.binary, ["--no-daemon", "--onlyin", root.string, "kMDItemPixelWidth > 1"],
            environment: ["MDQ_IMPORT_WORKER": "/nonexistent/worker"])
        #expect(missing.status == 1)
        #expect(missing.stderrText.contains("the importers cannot run"))
    }
}
