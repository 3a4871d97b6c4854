import Foundation
import FoundationXML

/// What the office importers need from an XML part, read with Foundation's
/// SAX parser (libxml2): the text of the whole part, with a line break
/// after each element named in `breaks` and a space after each named in
/// `spaces`; the text of the first element of each name in `fields`
/// (names are local names: `title` for `dc:title`); and the value of the
/// attributes named in `attributes` wherever they appear.
///
/// External entities are never resolved (the parser's default), so a part
/// cannot make the importer read another file or the network; the input is
/// already bounded by the container's inflate budget.
final class XMLText: NSObject, XMLParserDelegate {
    private let breaks: Set<String>
    private let spaces: Set<String>
    private let fields: Set<String>
    private let attributeNames: Set<String>
    private let textLimit: Int
    private let collectsText: Bool
    /// When set, text is collected only inside these elements.
    private let textElements: Set<String>?
    private var insideTextElement = 0
    /// Whether the parse goes on once the text is full (for `counts`).
    private let readsToTheEnd: Bool

    private(set) var text = ""
    private(set) var values: [String: String] = [:]
    /// Every value of each field (`creator` appears once per author).
    private(set) var allValues: [String: [String]] = [:]
    private(set) var attributes: [String: String] = [:]
    /// How many times each element appeared.
    private(set) var counts: [String: Int] = [:]
    private var open: [(name: String, text: String)] = []

    private init(
        breaks: Set<String>, spaces: Set<String>, fields: Set<String>, attributes: Set<String>, textLimit: Int,
        collectsText: Bool, textElements: Set<String>?, readsToTheEnd: Bool
    ) {
        self.textElements = textElements
        self.readsToTheEnd = readsToTheEnd
        self.breaks = breaks
        self.spaces = spaces
        self.fields = fields
        self.attributeNames = attributes
        self.textLimit = textLimit
        self.collectsText = collectsText
    }

    /// Parses `bytes`; malformed XML yields what was read before the error.
    /// A part that only gives text stops being parsed once the text is
    /// full (16 MB of one paragraph costs seconds of callbacks otherwise);
    /// `readsToTheEnd` keeps parsing, for `counts`.
    static func read(
        _ bytes: [UInt8], breaks: Set<String> = [], spaces: Set<String> = [], fields: Set<String> = [],
        attributes: Set<String> = [], textLimit: Int = 1 << 20, collectsText: Bool = true,
        textElements: Set<String>? = nil, readsToTheEnd: Bool = false
    ) -> XMLText {
        let reader = XMLText(
            breaks: breaks, spaces: spaces, fields: fields, attributes: attributes, textLimit: textLimit,
            collectsText: collectsText, textElements: textElements, readsToTheEnd: readsToTheEnd)
        let parser = XMLParser(data: Data(bytes))
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = reader
        _ = parser.parse()
        return reader
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes attributeDict: [String: String] = [:]
    ) {
        let name = Self.localName(elementName)
        counts[name, default: 0] += 1
        for (key, value) in attributeDict where attributeNames.contains(Self.localName(key)) {
            if attributes[Self.localName(key)] == nil { attributes[Self.localName(key)] = value }
        }
        if fields.contains(name) { open.append((name, "")) }
        if textElements?.contains(name) == true { insideTextElement += 1 }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if collectsText && text.utf8.count < textLimit && (textElements == nil || insideTextElement > 0) {
            text += string
        }
        if !open.isEmpty { open[open.count - 1].text += string }
        if collectsText && !readsToTheEnd && text.utf8.count >= textLimit && fields.isEmpty
            && attributeNames.isEmpty
        {
            parser.abortParsing()
        }
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        self.parser(parser, foundCharacters: String(decoding: CDATABlock, as: UTF8.self))
    }

    func parser(
        _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?
    ) {
        let name = Self.localName(elementName)
        if textElements?.contains(name) == true { insideTextElement -= 1 }
        if collectsText && text.utf8.count < textLimit {
            if breaks.contains(name) {
                if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
            } else if spaces.contains(name) {
                if !text.isEmpty && !text.hasSuffix(" ") && !text.hasSuffix("\n") { text += " " }
            }
        }
        if let last = open.last, last.name == name {
            open.removeLast()
            let value = last.text.trimmingCharacters(in: .whitespacesAndNewlines)
            if !value.isEmpty {
                if values[name] == nil { values[name] = value }
                allValues[name, default: []].append(value)
            }
        }
    }

    private static func localName(_ name: String) -> String {
        name.split(separator: ":").last.map(String.init) ?? name
    }
}
