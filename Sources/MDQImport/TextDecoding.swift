import MDQCore
import MDQSystem

/// Text from the bytes of a file whose encoding nobody declared: UTF-8,
/// UTF-16 with or without a byte order mark, else Latin-1; binary data is
/// refused rather than indexed as noise.
///
/// The rules, in order: a byte order mark decides (UTF-8, UTF-16 LE/BE);
/// then UTF-16 without one, recognised by NUL bytes in every other
/// position (text that is mostly ASCII, as nearly all UTF-16 text files
/// are); then valid UTF-8; then, when the bytes hold no NUL and few control
/// characters, Latin-1 (ISO 8859-1, where every byte is a character: the
/// encoding of old Western European text files). Anything else, or text
/// thick with control characters, is binary.
/// Malformed sequences (an unpaired surrogate, a UTF-8 sequence cut at the
/// read limit) become U+FFFD; nothing here traps on any input.
package enum TextDecoding {
    /// Joins words a typesetter hyphenated at a line end (`in-` then
    /// `voice` on the next line is `invoice`), as pdftotext does: a hyphen
    /// after a letter, ending a line, before a lower-case letter. Text laid
    /// out in lines (a PDF page's) is searched by its words.
    package static func joiningHyphenatedLines(_ text: [UInt8]) -> [UInt8] {
        guard text.count >= 3 else { return text }
        @inline(__always) func isLetter(_ b: UInt8) -> Bool { (b | 0x20) &- 0x61 < 26 || b >= 0x80 }
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var i = 0
        while i < text.count {
            if text[i] == UInt8(ascii: "-"), i > 0, i + 2 < text.count, text[i + 1] == 0x0A, isLetter(text[i - 1]),
                text[i + 2] &- 0x61 < 26 || text[i + 2] >= 0x80
            {
                i += 2
                continue
            }
            out.append(text[i])
            i += 1
        }
        return out
    }

    /// The encoding found.
    package enum Encoding: String, Sendable, Equatable {
        case utf8 = "UTF-8"
        case utf16LittleEndian = "UTF-16LE"
        case utf16BigEndian = "UTF-16BE"
        case latin1 = "ISO-8859-1"
    }

    /// Decoded text, or nil for binary data.
    package static func decode(_ bytes: [UInt8]) -> (text: String, encoding: Encoding)? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            return (String(decoding: bytes.dropFirst(3), as: UTF8.self), .utf8)
        }
        if bytes.starts(with: [0xFF, 0xFE]) {
            return (utf16(bytes.dropFirst(2), bigEndian: false), .utf16LittleEndian)
        }
        if bytes.starts(with: [0xFE, 0xFF]) { return (utf16(bytes.dropFirst(2), bigEndian: true), .utf16BigEndian) }
        if let bigEndian = unmarkedUTF16(bytes) {
            return (utf16(bytes[...], bigEndian: bigEndian), bigEndian ? .utf16BigEndian : .utf16LittleEndian)
        }
        guard !bytes.contains(0) else { return nil }
        // Text has few C0 controls besides tab, newlines, form feed and
        // escape (terminal colours in logs): past 10 % it is binary data
        // that happens to be valid UTF-8; past 1 %, when not UTF-8, it is
        // not Latin-1 text either.
        var controls = 0
        for byte in bytes
        where byte < 0x20 && byte != 0x09 && byte != 0x0A && byte != 0x0D && byte != 0x0C
            && byte != 0x1B
        {
            controls += 1
        }
        if isUTF8(bytes, allowingTruncatedEnd: true) {
            guard controls * 10 <= bytes.count else { return nil }
            return (String(decoding: bytes, as: UTF8.self), .utf8)
        }
        guard controls * 100 <= bytes.count else { return nil }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return (String(scalars), .latin1)
    }

    /// Whether `bytes` are valid UTF-8; with `allowingTruncatedEnd`, a
    /// multi-byte sequence cut off by the end still counts (a head read).
    static func isUTF8(_ bytes: [UInt8], allowingTruncatedEnd: Bool) -> Bool {
        var i = 0
        let count = bytes.count
        while i < count {
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            let length: Int
            let minimum: UInt32
            switch lead {
            case 0xC2...0xDF: (length, minimum) = (2, 0x80)
            case 0xE0...0xEF: (length, minimum) = (3, 0x800)
            case 0xF0...0xF4: (length, minimum) = (4, 0x10000)
            default: return false
            }
            if i + length > count {
                guard allowingTruncatedEnd else { return false }
                return bytes[(i + 1)...].allSatisfy { $0 & 0xC0 == 0x80 }
            }
            var scalar = UInt32(lead) & (0xFF >> (length + 1))
            for k in 1..<length {
                let next = bytes[i + k]
                guard next & 0xC0 == 0x80 else { return false }
                scalar = scalar << 6 | UInt32(next & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return false }
            i += length
        }
        return true
    }

    /// UTF-16 without a byte order mark: true for big-endian, false for
    /// little-endian, nil when the NUL bytes do not say so.
    private static func unmarkedUTF16(_ bytes: [UInt8]) -> Bool? {
        let pairs = min(bytes.count, 4096) / 2
        guard pairs >= 2 else { return nil }
        var evenZeros = 0
        var oddZeros = 0
        for i in 0..<pairs {
            if bytes[2 * i] == 0 { evenZeros += 1 }
            if bytes[2 * i + 1] == 0 { oddZeros += 1 }
        }
        // Mostly-ASCII UTF-16: the high byte of nearly every unit is zero,
        // the low byte almost never.
        if oddZeros * 10 >= pairs * 4 && evenZeros * 20 <= pairs { return false }
        if evenZeros * 10 >= pairs * 4 && oddZeros * 20 <= pairs { return true }
        return nil
    }

    private static func utf16(_ bytes: ArraySlice<UInt8>, bigEndian: Bool) -> String {
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var i = bytes.startIndex
        while i + 1 < bytes.endIndex {
            let (a, b) = (UInt16(bytes[i]), UInt16(bytes[i + 1]))
            units.append(bigEndian ? a << 8 | b : b << 8 | a)
            i += 2
        }
        return String(decoding: units, as: UTF16.self)
    }

    /// The first `limit` UTF-8 bytes of `text` at most, cut before a
    /// scalar that would straddle the limit.
    package static func prefix(_ text: String, utf8Bytes limit: Int) -> String {
        let head = Array(text.utf8.prefix(limit + 1))
        guard head.count > limit else { return text }
        var end = limit
        while end > 0 && head[end] & 0xC0 == 0x80 { end -= 1 }
        return String(decoding: head[..<end], as: UTF8.self)
    }
}
