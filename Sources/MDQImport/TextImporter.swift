import MDQCore
import MDQSystem

/// `kMDItemTextContent` of text files: plain text, Markdown, source code,
/// CSV and the other `public.text` types, HTML and XML with their markup
/// stripped. The encoding is detected (`TextDecoding`): UTF-8, UTF-16 with
/// or without a byte order mark, Latin-1. A file of a text type whose bytes
/// are not text (a binary named `.txt`) fails with that reason.
struct TextImporter: Importer {
    package var name: String { "text" }
    package var contentTypes: [String] { ["public.text"] }
    package var attributes: [MetadataAttribute] { [.textContent, .title] }

    /// Types whose markup is stripped.
    private static let markup = ["public.html", "public.xml", "public.svg-image"]

    package func extract(from file: ContentFile, type: String, limits: ImportLimits) throws(ImportFailure)
        -> ImportedValues
    {
        let bytes: [UInt8]
        switch file.read(at: 0, count: limits.bytesRead) {
        case .success(let read): bytes = read
        case .failure(let error): throw ImportFailure("cannot read the file: \(error.description)")
        }
        guard let (decoded, _) = TextDecoding.decode(bytes) else {
            throw ImportFailure("binary content in a file of type \(type)")
        }
        var values = ImportedValues()
        var text = decoded
        if Self.markup.contains(where: { ContentType.conforms(type, to: $0) }) {
            if ContentType.conforms(type, to: "public.html"), let title = Self.htmlTitle(decoded) {
                values[.title] = .text(Array(title.utf8))
            }
            text = MarkupText.text(of: decoded)
        }
        values[.textContent] = .text(Array(TextDecoding.prefix(text, utf8Bytes: limits.textBytes).utf8))
        return values
    }

    /// The text of an HTML document's `<title>`, if it has a non-empty one.
    private static func htmlTitle(_ html: String) -> String? {
        let head = html.prefix(65536)
        guard let open = head.range(of: "<title", options: .caseInsensitive),
            let close = head[open.upperBound...].firstIndex(of: ">"),
            let end = head[close...].range(of: "</title", options: .caseInsensitive)
        else { return nil }
        let title = MarkupText.text(of: String(head[head.index(after: close)..<end.lowerBound]))
        return title.isEmpty ? nil : title
    }
}
