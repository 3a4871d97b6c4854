import CPoppler
import Foundation
import Glibc
import MDQCore
import MDQImport
import MDQSystem
import SystemPackage

/// PDF documents, read with Poppler: text (page by page, up to the text
/// limit), pages, title, authors, creator application, the first page's
/// size in points, and the creation date as `kMDItemContentCreationDate`.
/// An encrypted PDF that opens only with a password is reported as such
/// (`kMDItemSecurityMethod` = "Password Encrypted"), not as a failure; a
/// damaged one fails with Poppler's reason.
///
/// Poppler reads the file itself (from a duplicate of the worker's
/// descriptor): its reads are bounded by the worker's memory and time
/// limits rather than the byte budget, since a PDF's cross-reference table
/// sits at its end.
struct PDFImporter: Importer {
    /// Poppler's data (poppler-data: CMaps and Unicode tables for CJK and
    /// other encodings), read on demand when a document's fonts use one:
    /// 12 MB of tables of which a document needs one or two, so it is left
    /// readable in the sandbox rather than loaded beforehand. Public data,
    /// read-only. `/usr/share/poppler` is Poppler's built-in data folder on
    /// Debian as upstream.
    var dataFolders: [FilePath] { [FilePath("/usr/share/poppler")] }

    /// Poppler's global state set up before the sandbox: a small document
    /// is opened, read and never released. Poppler's GLib interface builds
    /// its global parameters (which list the data folder) when the first
    /// document opens and drops them when the last closes, so without one
    /// kept open every document would list the folder again.
    func prepareForConfinement() {
        _ = Self.keptDocument
    }

    private static let keptDocument: Bool = {
        let pdf = minimalDocument()
        let bytes = g_bytes_new(pdf, gsize(pdf.count))
        defer { g_bytes_unref(bytes) }
        guard let document = poppler_document_new_from_bytes(bytes, nil, nil) else { return false }
        // Dates read through GLib's local time zone, cached from here on.
        if let created = poppler_document_get_creation_date_time(document) { g_date_time_unref(created) }
        if let page = poppler_document_get_page(document, 0) {
            g_free(poppler_page_get_text(page))
            g_object_unref(UnsafeMutableRawPointer(page))
        }
        return true
    }()

    /// A one-page PDF with a title, a creation date and a line of text in
    /// a standard font, its cross-reference table computed.
    private static func minimalDocument() -> [UInt8] {
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R"
                + " /Resources << /Font << /F1 5 0 R >> >> >>",
            "<< /Length 35 >>\nstream\nBT /F1 12 Tf 20 100 Td (mdq) Tj ET\nendstream",
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            "<< /Title (mdq) /CreationDate (D:20240101000000Z) >>",
        ]
        var pdf = Array("%PDF-1.4\n".utf8)
        var offsets: [Int] = []
        for (i, object) in objects.enumerated() {
            offsets.append(pdf.count)
            pdf += Array("\(i + 1) 0 obj\n\(object)\nendobj\n".utf8)
        }
        let table = pdf.count
        pdf += Array("xref\n0 \(objects.count + 1)\n0000000000 65535 f \n".utf8)
        for offset in offsets {
            let digits = String(offset)
            pdf += Array((String(repeating: "0", count: 10 - digits.count) + digits + " 00000 n \n").utf8)
        }
        pdf += Array("trailer\n<< /Size \(objects.count + 1) /Root 1 0 R /Info 6 0 R >>\n".utf8)
        pdf += Array("startxref\n\(table)\n%%EOF\n".utf8)
        return pdf
    }

    var name: String { "pdf" }
    var contentTypes: [String] { ["com.adobe.pdf"] }
    var attributes: [MetadataAttribute] {
        [
            .textContent, .numberOfPages, .title, .authors, .creator, .pageWidth, .pageHeight, .securityMethod,
            .contentCreationDate,
        ]
    }

    func extract(from file: ContentFile, type: String, limits: ImportLimits) throws(ImportFailure) -> ImportedValues {
        guard let fd = file.duplicateDescriptor() else { throw ImportFailure("cannot read the file (no descriptor)") }
        var error: UnsafeMutablePointer<GError>?
        // Poppler takes the descriptor and closes it with the document.
        guard let document = poppler_document_new_from_fd(fd, nil, &error) else {
            defer { if let error { g_error_free(error) } }
            if let error, error.pointee.domain == poppler_error_quark(),
                error.pointee.code == Int32(POPPLER_ERROR_ENCRYPTED.rawValue)
            {
                var values = ImportedValues()
                values[.securityMethod] = .text(Array("Password Encrypted".utf8))
                return values
            }
            let reason = error.map { String(cString: $0.pointee.message) } ?? "unreadable"
            if error == nil { close(fd) }
            throw ImportFailure("not a readable PDF: \(reason)")
        }
        defer { g_object_unref(UnsafeMutableRawPointer(document)) }
        var values = ImportedValues()
        let pages = Int(poppler_document_get_n_pages(document))
        // Poppler reconstructs what it can; a document left with no page
        // at all is damaged (every PDF has at least one).
        guard pages > 0 else { throw ImportFailure("not a readable PDF: no pages") }
        values[.numberOfPages] = .integer(Int64(pages))
        func string(_ value: UnsafeMutablePointer<gchar>?) -> String? {
            guard let value else { return nil }
            defer { g_free(value) }
            let text = String(cString: value).trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? nil : text
        }
        if let title = string(poppler_document_get_title(document)) { values[.title] = .text(Array(title.utf8)) }
        if let author = string(poppler_document_get_author(document)) {
            let authors = author.split(whereSeparator: { $0 == ";" || $0 == "," && !author.contains(";") })
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            values[.authors] = .list(authors.isEmpty ? [author] : authors)
        }
        if let creator = string(poppler_document_get_creator(document)) {
            values[.creator] = .text(Array(creator.utf8))
        }
        if let created = poppler_document_get_creation_date_time(document) {
            defer { g_date_time_unref(created) }
            let seconds = g_date_time_to_unix(created)
            values[.contentCreationDate] = .date(Timestamp(nanosecondsSinceEpoch: Int64(seconds) * 1_000_000_000))
        }
        var text: [UInt8] = []
        for index in 0..<pages {
            guard let page = poppler_document_get_page(document, Int32(index)) else { continue }
            defer { g_object_unref(UnsafeMutableRawPointer(page)) }
            if index == 0 {
                var width = 0.0
                var height = 0.0
                poppler_page_get_size(page, &width, &height)
                values[.pageWidth] = .real(width)
                values[.pageHeight] = .real(height)
            }
            guard text.count < limits.textBytes, let pageText = poppler_page_get_text(page) else { continue }
            defer { g_free(pageText) }
            if !text.isEmpty { text.append(0x0A) }
            text += UnsafeRawBufferPointer(start: pageText, count: strlen(pageText))
        }
        if !text.isEmpty {
            let decoded = String(decoding: TextDecoding.joiningHyphenatedLines(text), as: UTF8.self)
            values[.textContent] = .text(Array(TextDecoding.prefix(decoded, utf8Bytes: limits.textBytes).utf8))
        }
        return values
    }
}
