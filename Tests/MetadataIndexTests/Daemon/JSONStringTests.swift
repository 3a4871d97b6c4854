import Foundation
import MDQWire
import Testing

/// The one JSON escaper (`JSONString`), which the protocol and `--json`
/// share: whatever the bytes, the output is JSON every parser reads, and a
/// name that is UTF-8 comes back exactly.
@Suite struct JSONStringTests {
    func escaped(_ bytes: [UInt8]) -> (text: [UInt8], exact: Bool) {
        var out: [UInt8] = []
        let exact = bytes.withUnsafeBytes { JSONString.append($0, to: &out) }
        return (out, exact)
    }

    /// What Foundation's parser reads from `text` (a JSON string), as UTF-8.
    func foundationReads(_ text: [UInt8]) throws -> [UInt8]? {
        let wrapped = Data("[".utf8 + text + "]".utf8)
        let array = try JSONSerialization.jsonObject(with: wrapped) as? [String]
        return array?.first.map { Array($0.utf8) }
    }

    @Test(arguments: [
        ("plain.txt", #""plain.txt""#),
        ("a\"b\\c", #""a\"b\\c""#),
        ("line\nfeed\r\ttab", #""line\nfeed\r\ttab""#),
        ("\u{01}\u{1F}\u{7F}", #""\u0001\u001f\u007f""#),
        ("résumé_2024 📄.png", "\"résumé_2024 📄.png\""),
        ("exactly8", #""exactly8""#),
        ("sixteen_bytes_ok\"", #""sixteen_bytes_ok\"""#),
    ])
    func escapesAsRFC8259Says(name: String, expected: String) throws {
        let (text, exact) = escaped(Array(name.utf8))
        #expect(exact)
        #expect(String(decoding: text, as: UTF8.self) == expected)
        #expect(try foundationReads(text) == Array(name.utf8))
        #expect(try JSONValue.parse(text).bytes == Array(name.utf8))
    }

    @Test func bytesThatAreNotUTF8BecomeReplacementCharacters() throws {
        // A lone continuation byte, an overlong slash, a surrogate, a
        // truncated sequence at the end, and a code point past U+10FFFF.
        let cases: [[UInt8]] = [
            [0x61, 0x80, 0x62], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x61, 0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80],
        ]
        for bytes in cases {
            let (text, exact) = escaped(bytes)
            #expect(!exact, "\(bytes)")
            let read = try #require(try foundationReads(text))
            #expect(String(decoding: read, as: UTF8.self).contains("\u{FFFD}"), "\(bytes)")
        }
    }

    /// Random names of every byte, the fast path's eight-byte words split
    /// anywhere: the output always parses, and exact output reads back as
    /// the input.
    @Test func randomBytesAlwaysMakeValidJSON() throws {
        var generator = SeededBytes(seed: 0x6D64_7173)
        let alphabet: [UInt8] = Array(0...255) + Array(repeating: UInt8(ascii: "a"), count: 200)
        for _ in 0..<3000 {
            let length = Int(generator.next() % 40)
            let bytes = (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            let (text, exact) = escaped(bytes)
            let read = try #require(try foundationReads(text), "\(bytes)")
            #expect(try JSONValue.parse(text).bytes == read)
            if exact { #expect(read == bytes, "\(bytes)") }
            #expect(exact == (String(validating: bytes, as: UTF8.self) != nil), "\(bytes)")
        }
    }
}

/// A small deterministic generator (SplitMix64).
private struct SeededBytes {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
