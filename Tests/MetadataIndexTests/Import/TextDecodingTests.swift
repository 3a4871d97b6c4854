import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Text from undeclared encodings, and markup stripped.
struct TextDecodingTests {
    static func utf16(_ text: String, bigEndian: Bool, bom: Bool) -> [UInt8] {
        var bytes: [UInt8] = bom ? (bigEndian ? [0xFE, 0xFF] : [0xFF, 0xFE]) : []
        for unit in text.utf16 {
            let (high, low) = (UInt8(unit >> 8), UInt8(unit & 0xFF))
            bytes += bigEndian ? [high, low] : [low, high]
        }
        return bytes
    }

    static let withBOM: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("bom".utf8)
    static let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9, 0x20, 0x63, 0x72, 0xE8, 0x6D, 0x65]
    static let encodings: [([UInt8], String, TextDecoding.Encoding)] = [
        (Array("café crème".utf8), "café crème", .utf8),
        (withBOM, "bom", .utf8),
        (utf16("naïve text", bigEndian: false, bom: true), "naïve text", .utf16LittleEndian),
        (utf16("naïve text", bigEndian: true, bom: true), "naïve text", .utf16BigEndian),
        (utf16("plain text in utf-16", bigEndian: false, bom: false), "plain text in utf-16", .utf16LittleEndian),
        (utf16("plain text in utf-16", bigEndian: true, bom: false), "plain text in utf-16", .utf16BigEndian),
        (latin1, "café crème", .latin1),
    ]

    @Test(arguments: encodings)
    func encodingsAreDetected(bytes: [UInt8], text: String, encoding: TextDecoding.Encoding) throws {
        let decoded = try #require(TextDecoding.decode(bytes))
        #expect(decoded.text == text)
        #expect(decoded.encoding == encoding)
    }

    /// A word hyphenated at a line end is one word again; hyphens that
    /// are not line-end hyphenation stay.
    @Test func lineEndHyphenationIsJoined() {
        func join(_ text: String) -> String {
            String(decoding: TextDecoding.joiningHyphenatedLines(Array(text.utf8)), as: UTF8.self)
        }
        #expect(join("the in-\nvoice is due") == "the invoice is due")
        #expect(join("Ré-\nglée") == "Réglée")
        #expect(join("well-known and x-ray") == "well-known and x-ray")
        #expect(join("Notes -\nnext") == "Notes -\nnext")
        #expect(join("page 1-\n2") == "page 1-\n2")
        #expect(join("end-\nNew sentence") == "end-\nNew sentence")
        #expect(join("-\n") == "-\n")
    }

    @Test func binaryIsRefused() {
        #expect(TextDecoding.decode(Array(0...255)) == nil)
        #expect(TextDecoding.decode([0x41, 0x00, 0x00, 0x00, 0x7F, 0x45, 0x4C, 0x46]) == nil)
        // Control characters throughout: not Latin-1 text either.
        #expect(TextDecoding.decode((0..<200).map { UInt8($0 % 31 + 1) }) == nil)
    }

    @Test func malformedInputNeverTraps() throws {
        // An unpaired surrogate in UTF-16, a UTF-8 sequence cut at the end.
        let lone = try #require(TextDecoding.decode([0xFF, 0xFE, 0x41, 0x00, 0x00, 0xD8, 0x42, 0x00]))
        #expect(lone.text == "A\u{FFFD}B")
        let cut = try #require(TextDecoding.decode(Array("ab".utf8) + [0xE2, 0x82]))
        #expect(cut.text.hasPrefix("ab"))
        #expect(TextDecoding.decode([0xFF, 0xFE, 0x41]) != nil)
        #expect(TextDecoding.decode([]) != nil)
    }

    @Test func prefixCutsAtAScalarBoundary() {
        #expect(TextDecoding.prefix("aé", utf8Bytes: 2) == "a")
        #expect(TextDecoding.prefix("aé", utf8Bytes: 3) == "aé")
        #expect(TextDecoding.prefix("日本語", utf8Bytes: 7) == "日本")
        #expect(TextDecoding.prefix("x", utf8Bytes: 0) == "")
    }

    static let markups: [(String, String)] = [
        ("<p>one</p><p>two</p>", "one two"),
        ("<html><head><style>p{color:red}</style><script>if (a<b) x='</p>'</script></head><body>Hi</body>", "Hi"),
        ("a &amp; b &lt;c&gt; &#233;&#xE9; &nbsp;x &bogus; &", "a & b <c> éé \u{A0}x &bogus; &"),
        ("<!-- hidden --><![CDATA[kept <raw>]]> after", "kept <raw> after"),
        ("1 < 2 and <b>bold</b>", "1 < 2 and bold"),
        ("<a title=\"x > y\">link</a>", "link"),
        ("unclosed <tag and the rest", "unclosed"),
    ]

    @Test(arguments: markups)
    func markupIsStripped(markup: String, text: String) {
        #expect(MarkupText.text(of: markup) == text)
    }

    /// Inputs that would make a careless scanner quadratic finish (the
    /// suite's time limit catches a regression).
    @Test(.timeLimit(.minutes(1))) func pathologicalMarkupStaysLinear() {
        for unit in ["<script", "<!--", "<![CDATA[", "<a ", "&amp"] {
            let markup = String(repeating: unit, count: 50_000)
            _ = MarkupText.text(of: markup)
        }
    }
}
