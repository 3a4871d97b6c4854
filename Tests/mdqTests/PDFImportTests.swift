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

/// The PDF importer (Poppler, in the import worker), on committed fixtures
/// (Tests/Fixtures/import/make-fixtures.sh) and hostile files.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct PDFImportTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/import")

    func fixture(_ name: String) -> FilePath { FilePath(Self.fixtures.appendingPathComponent(name).path) }

    @Test func propertiesAndTextOfADocument() throws {
        let report = ImportWorkerTests.importFile(fixture("invoice.pdf"))
        #expect(report.failure == nil)
        #expect(report.steps.map(\.importer) == ["xattr", "pdf"])
        let values = report.values
        #expect(values[.title] == .text(Array("Acme Invoice".utf8)))
        #expect(values[.authors] == .list(["Jane Doe", "John Roe"]))
        #expect(values[.creator] == .text(Array("mdq fixture maker".utf8)))
        #expect(values[.numberOfPages] == .integer(2))
        #expect(values[.pageWidth] == .real(595))
        #expect(values[.pageHeight] == .real(842))
        #expect(values[.contentCreationDate] == .date(Timestamp(nanosecondsSinceEpoch: 1_710_495_000_000_000_000)))
        #expect(values[.textContent] == .text(Array("Invoice 2024 for Acme\nTotal due: 1200 EUR".utf8)))
        #expect(values[.importError] == nil)
    }

    @Test func anEncryptedDocumentIsReportedAsSuch() {
        let report = ImportWorkerTests.importFile(fixture("encrypted.pdf"))
        #expect(report.values[.securityMethod] == .text(Array("Password Encrypted".utf8)))
        #expect(report.values[.textContent] == nil)
        #expect(report.values[.importError] == nil)
    }

    /// Damaged and hostile files fail with a reason; none stalls or kills
    /// the caller.
    @Test func damagedAndHostileFilesFailWithAReason() throws {
        let temp = try TemporaryDirectory()
        let truncated = ImportWorkerTests.importFile(fixture("truncated.pdf"))
        #expect(truncated.steps.last?.failure?.reason.hasPrefix("not a readable PDF") == true)
        let hostile: [(String, [UInt8])] = [
            ("empty.pdf", []),
            ("garbage.pdf", Array(repeating: 0x41, count: 4096)),
            ("header-only.pdf", Array("%PDF-1.7\n%%EOF\n".utf8)),
            (
                "loop.pdf",
                Array(
                    "%PDF-1.4\n1 0 obj << /Type /Pages /Kids [1 0 R] /Count 1 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"
                        .utf8)
            ),
        ]
        for (name, bytes) in hostile {
            try temp.file(Array(name.utf8), contents: bytes)
            let report = ImportWorkerTests.importFile(temp.path.appending(name))
            let reason = report.failure?.reason ?? report.steps.last?.failure?.reason
            #expect(reason != nil, "\(name) imported without a failure: \(report.values)")
            #expect(report.values[.textContent] == nil)
        }
    }

    /// Text in a font with a predefined CJK encoding is read through
    /// Poppler's data (poppler-data's CMaps and CID tables), which the
    /// sandbox leaves readable (read on demand: it cannot be loaded
    /// beforehand); without that rule the text would be lost.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/usr/share/poppler/cMap/Adobe-Japan1")))
    func textInAPredefinedCJKEncoding() throws {
        let temp = try TemporaryDirectory()
        let stream = "BT /F1 24 Tf 20 100 Td <65E5672C8A9E> Tj ET"
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 200] /Contents 4 0 R"
                + " /Resources << /Font << /F1 5 0 R >> >> >>",
            "<< /Length \(stream.utf8.count) >>\nstream\n\(stream)\nendstream",
            "<< /Type /Font /Subtype /Type0 /BaseFont /HeiseiMin-W3 /Encoding /UniJIS-UCS2-H"
                + " /DescendantFonts [6 0 R] >>",
            "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /HeiseiMin-W3 /CIDSystemInfo"
                + " << /Registry (Adobe) /Ordering (Japan1) /Supplement 2 >> /FontDescriptor 7 0 R >>",
            "<< /Type /FontDescriptor /FontName /HeiseiMin-W3 /Flags 6 /FontBBox [0 0 1000 1000]"
                + " /ItalicAngle 0 /Ascent 1000 /Descent 0 /CapHeight 1000 /StemV 80 >>",
        ]
        var pdf = "%PDF-1.4\n"
        var offsets: [Int] = []
        for (i, object) in objects.enumerated() {
            offsets.append(pdf.utf8.count)
            pdf += "\(i + 1) 0 obj\n\(object)\nendobj\n"
        }
        let table = pdf.utf8.count
        pdf += "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets { pdf += String(format: "%010d 00000 n \n", offset) }
        pdf += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(table)\n%%EOF\n"
        let file = try temp.file("japanese.pdf", contents: pdf)
        let report = ImportWorkerTests.importFile(file)
        #expect(report.values[.importError] == nil)
        #expect(report.values[.textContent] == .text(Array("日本語".utf8)))
    }
}
