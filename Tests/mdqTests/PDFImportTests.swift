import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

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
}
