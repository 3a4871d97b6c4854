import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MetadataIndex

/// The office and e-book importer (libzip and Foundation's XML parser, in
/// the import worker), on fixtures made by the libraries that write those
/// formats (Tests/Fixtures/import/make-office-fixtures.py) and on hostile
/// containers.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct OfficeImportTests {
    static func fixture(_ name: String) -> FilePath {
        FilePath(PDFImportTests.fixtures.appendingPathComponent(name).path)
    }

    struct Expected: Sendable, CustomTestStringConvertible {
        var file: String
        var title: String
        var authors: [String]?
        var pages: Int64?
        var words: [String]
        var testDescription: String { file }
    }

    static let documents: [Expected] = [
        Expected(
            file: "report.docx", title: "Q3 Report", authors: ["Ada Lovelace", "Charles Babbage"], pages: 1,
            words: ["Quarterly Report", "northern region", "Zebra crossings"]),
        Expected(
            file: "budget.xlsx", title: "Budget 2025", authors: ["Grace Hopper"], pages: nil,
            words: ["Budget line", "Telescope lenses"]),
        Expected(
            file: "kickoff.pptx", title: "Project Kickoff", authors: ["Alan Turing"], pages: 3,
            words: ["Kickoff agenda", "Milestones and risks", "Notes about questions"]),
        Expected(
            file: "minutes.odt", title: "Minutes March", authors: ["Emmy Noether"], pages: nil,
            words: ["Meeting minutes", "lighthouse budget"]),
        Expected(
            file: "inventory.ods", title: "Ship inventory", authors: nil, pages: nil, words: ["Anchors", "Sextants"]),
        Expected(
            file: "harbour.odp", title: "Harbour slides", authors: nil, pages: 2,
            words: ["Harbour tour", "Lighthouse history"]),
        Expected(
            file: "keeper.epub", title: "The Lighthouse Keeper", authors: ["Mary Shelley"], pages: nil,
            words: ["storm rolled in over the cliffs", "lamp still burned"]),
    ]

    @Test(arguments: documents)
    func textAndPropertiesOfEachFormat(expected: Expected) throws {
        let report = ImportWorkerTests.importFile(Self.fixture(expected.file))
        #expect(report.failure == nil)
        #expect(report.values[.importError] == nil, "\(String(describing: report.values[.importError]))")
        #expect(report.values[.title] == .text(Array(expected.title.utf8)))
        if let authors = expected.authors { #expect(report.values[.authors] == .list(authors)) }
        if let pages = expected.pages { #expect(report.values[.numberOfPages] == .integer(pages)) }
        guard case .text(let bytes)? = report.values[.textContent] else {
            Issue.record("no text")
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        for words in expected.words { #expect(text.contains(words), "\(words) missing from \(text)") }
    }

    /// A zip bomb, a container that is not ZIP, one without its document,
    /// an XML entity bomb: each fails or yields bounded text, with a reason,
    /// and the worker survives to import the next file.
    @Test func hostileContainersAreBounded() throws {
        let temp = try TemporaryDirectory()
        let script = """
            import sys, zipfile
            folder = sys.argv[1]
            with zipfile.ZipFile(folder + '/bomb.docx', 'w', zipfile.ZIP_DEFLATED) as z:
                z.writestr('[Content_Types].xml', '<Types/>')
                with z.open('word/document.xml', 'w', force_zip64=True) as f:
                    f.write(b'<w:document xmlns:w="urn:w"><w:body><w:p><w:t>')
                    chunk = b'boom ' * 200000
                    for _ in range(200):
                        f.write(chunk)
                    f.write(b'</w:t></w:p></w:body></w:document>')
            with zipfile.ZipFile(folder + '/empty.docx', 'w') as z:
                z.writestr('[Content_Types].xml', '<Types/>')
            laughs = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">' + ''.join(
                '<!ENTITY lol%d "%s">' % (i, ('&lol%d;' % (i - 1) if i > 1 else '&lol;') * 10) for i in range(1, 10)
            ) + ']><office:document-content xmlns:office="urn:o" xmlns:text="urn:t"><text:p>&lol9;</text:p></office:document-content>'
            with zipfile.ZipFile(folder + '/laughs.odt', 'w') as z:
                z.writestr('mimetype', 'application/vnd.oasis.opendocument.text')
                z.writestr('content.xml', laughs)
            open(folder + '/notzip.xlsx', 'wb').write(b'PK\\x03\\x04' + b'\\x00' * 100)
            """
        let made = try Shell.run("/usr/bin/env", ["python3", "-c", script, temp.path.string])
        try #require(made.status == 0, "\(made.stderrText)")
        let bomb = ImportWorkerTests.importFile(temp.path.appending("bomb.docx"))
        if case .text(let bytes)? = bomb.values[.textContent] {
            #expect(bytes.count <= ImportLimits.standard.textBytes)
        }
        #expect(bomb.failure == nil, "\(String(describing: bomb.failure))")
        let empty = ImportWorkerTests.importFile(temp.path.appending("empty.docx"))
        #expect(empty.steps.last?.failure?.reason == "not a Word document (no word/document.xml)")
        let laughs = ImportWorkerTests.importFile(temp.path.appending("laughs.odt"))
        #expect(laughs.failure == nil, "the worker survives an entity bomb: \(String(describing: laughs.failure))")
        if case .text(let bytes)? = laughs.values[.textContent] {
            #expect(bytes.count <= ImportLimits.standard.textBytes)
        }
        let notZip = ImportWorkerTests.importFile(temp.path.appending("notzip.xlsx"))
        #expect(notZip.steps.last?.failure?.reason.hasPrefix("not a readable ZIP container") == true)
    }
}
