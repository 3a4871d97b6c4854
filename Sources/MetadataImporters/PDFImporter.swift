import CPoppler
import Foundation
import Glibc
import MetadataIndex

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
