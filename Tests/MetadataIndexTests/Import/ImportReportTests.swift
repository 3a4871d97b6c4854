import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Importing real files: text and extended attributes extracted, hostile
/// files refused with a reason, reads bounded.
@Suite(.timeLimit(.minutes(1)))
struct ImportReportTests {
    func text(_ report: ImportReport) -> String? {
        guard case .text(let bytes)? = report.values[.textContent] else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func textAndExtendedAttributes() throws {
        let temp = try TemporaryDirectory()
        let file = try temp.file("invoice.txt", contents: "Invoice 2024\nTotal: 12 EUR\n")
        let script = """
            import os, sys
            p = sys.argv[1]
            os.setxattr(p, 'user.xdg.origin.url', b'https://example.com/invoice.txt')
            os.setxattr(p, 'user.xdg.referrer.url', b'https://example.com/billing')
            os.setxattr(p, 'user.xdg.tags', b'tax, 2024 ,,')
            os.setxattr(p, 'user.xdg.comment', b'paid')
            """
        let set = try Shell.run("/usr/bin/env", ["python3", "-c", script, file.string])
        try #require(set.status == 0, "\(set.stderrText)")
        let report = ImportReport.importFile(at: file)
        #expect(report.failure == nil)
        #expect(report.steps.map(\.importer) == ["xattr", "text"])
        #expect(text(report) == "Invoice 2024\nTotal: 12 EUR\n")
        #expect(
            report.values[.whereFroms] == .list(["https://example.com/invoice.txt", "https://example.com/billing"]))
        #expect(report.values[.userTags] == .list(["tax", "2024"]))
        #expect(report.values[.comment] == .text(Array("paid".utf8)))
        #expect(report.values[.importError] == nil)
    }

    @Test func htmlTitleAndTextWithoutMarkup() throws {
        let temp = try TemporaryDirectory()
        let file = try temp.file(
            "page.html",
            contents: "<html><head><title>Q3 &amp; Q4</title></head><body><h1>Report</h1>text</body></html>")
        let report = ImportReport.importFile(at: file)
        #expect(report.values[.title] == .text(Array("Q3 & Q4".utf8)))
        #expect(text(report) == "Q3 & Q4 Report text")
    }

    @Test func aLyingExtensionIsRefinedAndABinaryTextFileFails() throws {
        let temp = try TemporaryDirectory()
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]
        try temp.file(Array("scan.dat".utf8), contents: png)
        let scan = temp.path.appending("scan.dat")
        let report = ImportReport.importFile(at: scan)
        #expect(report.typeByName == "public.data")
        #expect(report.sniffedType == "public.png")
        #expect(report.values[.sniffedContentType] == .text(Array("public.png".utf8)))

        try temp.file(Array("notes.txt".utf8), contents: Array(0...255) + Array(0...255))
        let binary = temp.path.appending("notes.txt")
        let failed = ImportReport.importFile(at: binary)
        let step = try #require(failed.steps.first { $0.importer == "text" })
        #expect(step.failure?.reason.contains("binary content") == true)
        #expect(failed.values[.textContent] == nil)
        #expect(failed.values[.importError] != nil)
    }

    /// A FIFO, a socket-like special file or a symlink named like a text
    /// file is never opened for reading (a FIFO would block forever).
    @Test func specialFilesAndSymlinksAreNotRead() throws {
        let temp = try TemporaryDirectory()
        let fifo = temp.path.appending("pipe.txt")
        #expect(mkfifo(fifo.string, 0o644) == 0)
        let fifoReport = ImportReport.importFile(at: fifo)
        #expect(fifoReport.failure?.reason == "not a regular file")
        let target = try temp.file("real.txt", contents: "secret")
        let link = temp.path.appending("link.txt")
        #expect(symlink(target.string, link.string) == 0)
        let linkReport = ImportReport.importFile(at: link)
        #expect(linkReport.failure?.reason == "a symlink (not followed)")
        #expect(text(linkReport) == nil)
        let missing = ImportReport.importFile(at: temp.path.appending("absent.txt"))
        #expect(missing.failure?.reason.hasPrefix("cannot open") == true)
    }

    /// A huge "text" file costs its read limit, not its size; the text kept
    /// is capped too.
    @Test func readsAndTextAreBounded() throws {
        let temp = try TemporaryDirectory()
        let line = Array("the quick brown fox jumps over the lazy dog\n".utf8)
        var bytes: [UInt8] = []
        while bytes.count < 3 << 20 { bytes += line }
        try temp.file(Array("big.txt".utf8), contents: bytes)
        let file = temp.path.appending("big.txt")
        let limits = ImportLimits(bytesRead: 1 << 20, textBytes: 4096, pixels: 1 << 20)
        let report = ImportReport.importFile(at: file, limits: limits)
        let imported = try #require(text(report))
        #expect(imported.utf8.count <= 4096)
        #expect(imported.hasPrefix("the quick brown fox"))
        let opened = try ContentFile.open(file, budget: 1000).get()
        #expect(try opened.read(at: 0, count: 5000).get().count == 1000)
        #expect(opened.exhaustedBudget)
        #expect(try opened.read(at: 0, count: 10).get().isEmpty)
    }
}
