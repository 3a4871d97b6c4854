import Foundation
import FoundationXML
import MDQCore
import MDQImport
import MDQSystem

/// Office documents and e-books, all ZIP containers of XML parts: OOXML
/// (Word, Excel, PowerPoint), OpenDocument (text, spreadsheet,
/// presentation) and EPUB. Text, title, authors, the creating application,
/// and the page or slide count where the format records it.
///
/// Every part is inflated through `ZipContainer`'s budget (the read limit,
/// over the whole container): a zip bomb yields its first megabytes, and a
/// part that is not XML yields no text, never a hang.
struct OfficeImporter: Importer {
    var name: String { "office" }
    var contentTypes: [String] {
        [
            "org.openxmlformats.wordprocessingml.document", "org.openxmlformats.spreadsheetml.sheet",
            "org.openxmlformats.presentationml.presentation", "org.oasis-open.opendocument.text",
            "org.oasis-open.opendocument.spreadsheet", "org.oasis-open.opendocument.presentation",
            "org.idpf.epub-container",
        ]
    }
    var attributes: [MetadataAttribute] { [.textContent, .title, .authors, .creator, .numberOfPages] }

    func extract(from file: ContentFile, type: String, limits: ImportLimits) throws(ImportFailure) -> ImportedValues {
        let zip = try ZipContainer.open(file, budget: limits.bytesRead)
        var values = ImportedValues()
        var text = ""
        func conforms(_ other: String) -> Bool { ContentType.conforms(type, to: other) }
        if type.hasPrefix("org.openxmlformats.") {
            try ooxml(zip, type: type, limits: limits, values: &values, text: &text)
        } else if type.hasPrefix("org.oasis-open.opendocument.") {
            try openDocument(zip, limits: limits, values: &values, text: &text)
        } else {
            try epub(zip, limits: limits, values: &values, text: &text)
        }
        // Trimmed scalar by scalar (Foundation's trimming goes through
        // UTF-16: seconds for a full megabyte in a debug build).
        var scalars = Substring(text).unicodeScalars
        while let first = scalars.first, first.properties.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.properties.isWhitespace { scalars.removeLast() }
        let trimmed = String(scalars)
        if !trimmed.isEmpty {
            values[.textContent] = .text(Array(TextDecoding.prefix(trimmed, utf8Bytes: limits.textBytes).utf8))
        }
        return values
    }

    private func set(_ values: inout ImportedValues, title: String?, authors: [String], creator: String?) {
        if let title { values[.title] = .text(Array(title.utf8)) }
        if !authors.isEmpty { values[.authors] = .list(authors) }
        if let creator { values[.creator] = .text(Array(creator.utf8)) }
    }

    // MARK: OOXML

    private func ooxml(
        _ zip: ZipContainer, type: String, limits: ImportLimits, values: inout ImportedValues, text: inout String
    ) throws(ImportFailure) {
        guard zip.read("[Content_Types].xml", limit: 1 << 20) != nil else {
            throw ImportFailure("not an Office Open XML document (no [Content_Types].xml)")
        }
        let core = zip.read("docProps/core.xml", limit: 1 << 20).map {
            XMLText.read($0, fields: ["title", "creator"], collectsText: false)
        }
        let app = zip.read("docProps/app.xml", limit: 1 << 20).map {
            XMLText.read($0, fields: ["Application", "Pages"], collectsText: false)
        }
        set(
            &values, title: core?.values["title"],
            authors: (core?.values["creator"]).map { splitAuthors($0) } ?? [], creator: app?.values["Application"])
        let names = zip.names()
        if type.contains("wordprocessingml") {
            if let pages = app?.values["Pages"].flatMap({ Int64($0) }) { values[.numberOfPages] = .integer(pages) }
            if let body = zip.read("word/document.xml", limit: limits.bytesRead) {
                text =
                    XMLText.read(body, breaks: ["p", "br", "tr"], spaces: ["tab", "tc"], textLimit: limits.textBytes)
                    .text
            } else {
                throw ImportFailure("not a Word document (no word/document.xml)")
            }
        } else if type.contains("presentationml") {
            let slides = names.filter { $0.hasPrefix("ppt/slides/slide") && $0.hasSuffix(".xml") }
                .sorted { slideNumber($0) < slideNumber($1) }
            // The slides themselves: app.xml's count is whatever the
            // writing application last put there (0 in some templates).
            values[.numberOfPages] = .integer(Int64(slides.count))
            for slide in slides where text.utf8.count < limits.textBytes {
                guard let body = zip.read(slide, limit: limits.bytesRead) else { continue }
                text += XMLText.read(body, breaks: ["p"], textLimit: limits.textBytes).text + "\n"
            }
        } else {
            // Shared strings, then the strings written inline in each sheet.
            if let strings = zip.read("xl/sharedStrings.xml", limit: limits.bytesRead) {
                text = XMLText.read(strings, breaks: ["si"], textLimit: limits.textBytes).text
            }
            for sheet in names where sheet.hasPrefix("xl/worksheets/") && sheet.hasSuffix(".xml") {
                guard text.utf8.count < limits.textBytes, let body = zip.read(sheet, limit: limits.bytesRead) else {
                    continue
                }
                let inline = XMLText.read(body, breaks: ["c"], textLimit: limits.textBytes, textElements: ["t"]).text
                if !inline.isEmpty { text += (text.isEmpty ? "" : "\n") + inline }
            }
        }
    }

    private func slideNumber(_ name: String) -> Int {
        Int(name.dropFirst("ppt/slides/slide".count).dropLast(".xml".count)) ?? .max
    }

    // MARK: OpenDocument

    private func openDocument(
        _ zip: ZipContainer, limits: ImportLimits, values: inout ImportedValues, text: inout String
    ) throws(ImportFailure) {
        guard let content = zip.read("content.xml", limit: limits.bytesRead) else {
            throw ImportFailure("not an OpenDocument file (no content.xml)")
        }
        let body = XMLText.read(
            content, breaks: ["p", "h", "table-row", "page"], spaces: ["tab", "s", "table-cell"],
            textLimit: limits.textBytes, readsToTheEnd: true)  // counts["page"]: the slides
        text = body.text
        let meta = zip.read("meta.xml", limit: 1 << 20).map {
            XMLText.read(
                $0, fields: ["title", "initial-creator", "creator", "generator"], attributes: ["page-count"],
                collectsText: false)
        }
        let authors = meta?.allValues["initial-creator"] ?? meta?.allValues["creator"] ?? []
        set(&values, title: meta?.values["title"], authors: authors, creator: meta?.values["generator"])
        if let pages = meta?.attributes["page-count"].flatMap({ Int64($0) }) {
            values[.numberOfPages] = .integer(pages)
        } else if let slides = body.counts["page"], slides > 0 {
            // A presentation's slides are draw:page elements.
            values[.numberOfPages] = .integer(Int64(slides))
        }
    }

    // MARK: EPUB

    private func epub(
        _ zip: ZipContainer, limits: ImportLimits, values: inout ImportedValues, text: inout String
    ) throws(ImportFailure) {
        guard let container = zip.read("META-INF/container.xml", limit: 1 << 20),
            let opfPath = XMLText.read(container, attributes: ["full-path"], collectsText: false).attributes[
                "full-path"],
            let opfBytes = zip.read(opfPath, limit: 4 << 20)
        else { throw ImportFailure("not an EPUB (no META-INF/container.xml or package document)") }
        let opf = OPF(opfBytes)
        set(&values, title: opf.title, authors: opf.creators, creator: nil)
        let base = opfPath.contains("/") ? String(opfPath[...opfPath.lastIndex(of: "/")!]) : ""
        for href in opf.spine where text.utf8.count < limits.textBytes {
            let path = Self.resolve(href, against: base)
            guard let chapter = zip.read(path, limit: limits.bytesRead) else { continue }
            text += MarkupText.text(of: String(decoding: chapter, as: UTF8.self)) + "\n"
        }
    }

    /// `href` (percent-encoded, relative, maybe with `..`) against `base`.
    static func resolve(_ href: String, against base: String) -> String {
        let decoded = (href.removingPercentEncoding ?? href).split(separator: "#").first.map(String.init) ?? href
        var parts = base.split(separator: "/").map(String.init)
        for part in decoded.split(separator: "/") {
            if part == ".." { _ = parts.popLast() } else if part != "." { parts.append(String(part)) }
        }
        return parts.joined(separator: "/")
    }

    /// "A; B", "A, B" or "A and B" as authors.
    private func splitAuthors(_ value: String) -> [String] {
        let separators: [Character] = value.contains(";") ? [";"] : [","]
        return value.split(whereSeparator: { separators.contains($0) })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// An EPUB package document: title, creators and the spine's files in
/// reading order.
private struct OPF {
    var title: String?
    var creators: [String] = []
    var spine: [String] = []

    init(_ bytes: [UInt8]) {
        let reader = OPFReader()
        let parser = XMLParser(data: Data(bytes))
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        _ = parser.parse()
        title = reader.title
        creators = reader.creators
        spine = reader.spineIDs.compactMap { reader.manifest[$0] }
    }
}

private final class OPFReader: NSObject, XMLParserDelegate {
    var title: String?
    var creators: [String] = []
    var manifest: [String: String] = [:]
    var spineIDs: [String] = []
    private var current: String?
    private var buffer = ""

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        switch elementName {
        case "item": if let id = attributes["id"], let href = attributes["href"] { manifest[id] = href }
        case "itemref": if let id = attributes["idref"] { spineIDs.append(id) }
        case "title", "creator":
            current = elementName
            buffer = ""
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if current != nil { buffer += string }
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?
    ) {
        guard elementName == current else { return }
        let value = buffer.trimmingCharacters(in: .whitespacesAndNewlines)
        if !value.isEmpty {
            if elementName == "title" && title == nil { title = value }
            if elementName == "creator" { creators.append(value) }
        }
        current = nil
    }
}
