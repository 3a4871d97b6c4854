// The daemon protocol's JSON, without Foundation: the daemon, its clients
// in the library and the `mdq` front (which loads no Foundation) read and
// write it with this one parser and writer.

/// A JSON value as the daemon's protocol reads it: integers kept exact (64
/// bits, for nanosecond times), strings as their UTF-8 bytes.
package enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    /// A number with a fraction and no exponent, with its text: read
    /// exactly where that matters (`exactNanoseconds`, a date's seconds
    /// with nine decimals, which a `Double` cannot hold).
    case decimal(Double, text: [UInt8])
    case string([UInt8])
    case array([JSONValue])
    case object([String: JSONValue])

    package subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    package var string: String? {
        if case .string(let bytes) = self { return String(decoding: bytes, as: UTF8.self) }
        return nil
    }

    package var bytes: [UInt8]? {
        if case .string(let bytes) = self { return bytes }
        return nil
    }

    package var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .double(let value) where value.rounded() == value && abs(value) < 9e18: Int64(value)
        case .decimal(let value, _) where value.rounded() == value && abs(value) < 9e18: Int64(value)
        default: nil
        }
    }

    /// A number of seconds, as exact nanoseconds: an integer, or a decimal
    /// with up to nine places (`1738324800.308604997`); nil for anything
    /// else, or past what 64 bits of nanoseconds hold.
    package var exactNanoseconds: Int64? {
        switch self {
        case .integer(let seconds):
            return seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
                ? nil : seconds * 1_000_000_000
        case .decimal(_, let text):
            var digits = text[...]
            let negative = digits.first == UInt8(ascii: "-")
            if negative { digits = digits.dropFirst() }
            guard let dot = digits.firstIndex(of: UInt8(ascii: ".")) else { return nil }
            let fraction = digits[(dot + 1)...]
            guard !fraction.isEmpty, fraction.count <= 9,
                let seconds = Int64(String(decoding: digits[..<dot], as: UTF8.self)),
                let nanos = Int64(String(decoding: fraction, as: UTF8.self))
            else { return nil }
            var scale: Int64 = 1
            for _ in fraction.count..<9 { scale *= 10 }
            let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            guard !overflow else { return nil }
            let total = whole + nanos * scale
            return negative ? -total : total
        default:
            return nil
        }
    }

    package var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        case .decimal(let value, _): value
        default: nil
        }
    }

    package var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    package var array: [JSONValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    /// Parses one JSON text (RFC 8259), refusing anything else, nesting
    /// deeper than `maximumDepth`, and trailing bytes.
    package static func parse(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int = 64) throws(JSONError) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maximumDepth: maximumDepth)
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.position == bytes.count else { throw parser.error("trailing characters") }
        return value
    }

    package static func parse(_ bytes: [UInt8]) throws(JSONError) -> JSONValue {
        let parsed = bytes.withUnsafeBytes { raw in Result { () throws(JSONError) in try parse(raw) } }
        return try parsed.get()
    }
}

/// Why a JSON text was refused, and where.
package struct JSONError: Error, CustomStringConvertible {
    package var message: String
    package var offset: Int
    package var description: String { "\(message) at byte \(offset)" }
}

private struct JSONParser {
    let bytes: UnsafeRawBufferPointer
    let maximumDepth: Int
    package var position = 0

    package init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func error(_ message: String) -> JSONError { JSONError(message: message, offset: position) }

    mutating func skipSpace() {
        while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
    }

    mutating func expect(_ literal: String, _ value: JSONValue) throws(JSONError) -> JSONValue {
        for byte in literal.utf8 {
            guard position < bytes.count, bytes[position] == byte else { throw error("expected \(literal)") }
            position += 1
        }
        return value
    }

    mutating func value(depth: Int) throws(JSONError) -> JSONValue {
        guard depth < maximumDepth else { throw error("nested too deeply") }
        skipSpace()
        guard position < bytes.count else { throw error("unexpected end") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var fields: [String: JSONValue] = [:]
            skipSpace()
            if position < bytes.count && bytes[position] == UInt8(ascii: "}") {
                position += 1
                return .object(fields)
            }
            while true {
                skipSpace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                    throw error("expected a key")
                }
                let key = String(decoding: try string(), as: UTF8.self)
                skipSpace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw error("expected :") }
                position += 1
                fields[key] = try value(depth: depth + 1)
                skipSpace()
                guard position < bytes.count else { throw error("unexpected end") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard bytes[position] == UInt8(ascii: "}") else { throw error("expected , or }") }
                position += 1
                return .object(fields)
            }
        case UInt8(ascii: "["):
            position += 1
            var values: [JSONValue] = []
            skipSpace()
            if position < bytes.count && bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(values)
            }
            while true {
                values.append(try value(depth: depth + 1))
                skipSpace()
                guard position < bytes.count else { throw error("unexpected end") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                guard bytes[position] == UInt8(ascii: "]") else { throw error("expected , or ]") }
                position += 1
                return .array(values)
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        default:
            return try number()
        }
    }

    mutating func number() throws(JSONError) -> JSONValue {
        let start = position
        var integral = true
        if position < bytes.count && bytes[position] == UInt8(ascii: "-") { position += 1 }
        let digitsStart = position
        while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
        guard position > digitsStart else { throw error("expected a value") }
        if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
            integral = false
            position += 1
            let fraction = position
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
            guard position > fraction else { throw error("malformed number") }
        }
        if position < bytes.count && (bytes[position] | 0x20) == UInt8(ascii: "e") {
            integral = false
            position += 1
            if position < bytes.count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-"))
            {
                position += 1
            }
            let exponent = position
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
            guard position > exponent else { throw error("malformed number") }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if integral, let value = Int64(text) { return .integer(value) }
        guard let value = Double(text) else { throw error("malformed number") }
        if !text.contains(where: { $0 == "e" || $0 == "E" }) { return .decimal(value, text: Array(text.utf8)) }
        return .double(value)
    }

    mutating func string() throws(JSONError) -> [UInt8] {
        position += 1  // the opening quote
        var out: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return out
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw error("unterminated escape") }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                            bytes[position + 1] == UInt8(ascii: "u")
                        else { throw error("lone surrogate") }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw error("lone surrogate")
                    }
                    out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar)!)).utf8))
                default:
                    throw error("unknown escape")
                }
            case 0..<0x20:
                throw error("control character in a string")
            default:
                out.append(byte)
            }
        }
        throw error("unterminated string")
    }

    mutating func hex4() throws(JSONError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            position += 1
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw error("bad \\u escape")
            }
            value = value << 4 | digit
        }
        return value
    }
}

/// Writes JSON text into a byte buffer.
package struct JSONWriter {
    package var bytes: [UInt8] = []

    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    package mutating func integer<T: BinaryInteger>(_ value: T) {
        bytes.append(contentsOf: Array(String(value).utf8))
    }

    package mutating func double(_ value: Double) {
        bytes.append(contentsOf: Array((value.isFinite ? "\(value)" : "null").utf8))
    }

    package mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// A JSON string; returns false when some byte was not UTF-8 (written
    /// as U+FFFD: the caller adds a base64 twin).
    @discardableResult
    package mutating func string(_ text: [UInt8]) -> Bool {
        text.withUnsafeBytes { JSONString.append($0, to: &bytes) }
    }

    package mutating func string(_ text: String) {
        string(Array(text.utf8))
    }

    /// `"key":` (the key is ASCII from this file).
    package mutating func key(_ name: StaticString) {
        bytes.append(UInt8(ascii: "\""))
        raw(name)
        bytes += [UInt8(ascii: "\""), UInt8(ascii: ":")]
    }

    /// `,"key":`: a key after the object's first field.
    package mutating func field(_ name: StaticString) {
        bytes.append(UInt8(ascii: ","))
        key(name)
    }
}

/// The one JSON string escaper: the daemon's protocol, `--json` and every
/// other JSON mdq writes go through it, so a name is escaped the same way
/// everywhere (RFC 8259: `"`, `\\`, `\n`, `\r`, `\t`, other control
/// characters and DEL as `\u00XX`; a byte that is not UTF-8 as U+FFFD).
package enum JSONString {
    /// Appends `raw` as a JSON string; returns false when some byte was not
    /// UTF-8 (and was written as U+FFFD: the caller adds a base64 twin).
    @discardableResult
    package static func append(_ raw: UnsafeRawBufferPointer, to out: inout [UInt8]) -> Bool {
        let bytes = raw.bindMemory(to: UInt8.self)
        var exact = true
        out.append(0x22)
        var i = 0
        var run = 0  // start of the bytes copied as they are
        while i < bytes.count {
            // Eight plain bytes at a time: printable ASCII other than `"` and
            // `\` (nearly every byte of a real path).
            if i + 8 <= bytes.count && isPlain(UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self))
            {
                i += 8
                continue
            }
            let b = bytes[i]
            if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
                i += 1
                continue
            }
            if b < 0x80 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                switch b {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x0A: out += [0x5C, UInt8(ascii: "n")]
                case 0x0D: out += [0x5C, UInt8(ascii: "r")]
                case 0x09: out += [0x5C, UInt8(ascii: "t")]
                default: appendEscapedUnit(b, to: &out)
                }
                i += 1
                run = i
                continue
            }
            let length = validSequenceLength(raw, at: i)
            if length > 0 {
                i += length
            } else {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                out += [0xEF, 0xBF, 0xBD]  // U+FFFD
                exact = false
                i += 1
                run = i
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
        out.append(0x22)
        return exact
    }

    /// Whether none of the eight bytes needs escaping or UTF-8 checking:
    /// each is in 0x20...0x7E and is neither `"` nor `\`.
    @inline(__always)
    private static func isPlain(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // A byte of `v` is zero exactly when its bit 7 is set in `hasZero(v)`.
        func hasZero(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let belowSpace = (word &- 0x2020_2020_2020_2020) & ~word & highs
        let special =
            word & highs | belowSpace | hasZero(word ^ 0x2222_2222_2222_2222) | hasZero(word ^ 0x5C5C_5C5C_5C5C_5C5C)
            | hasZero(word ^ 0x7F7F_7F7F_7F7F_7F7F)
        return special == 0
    }

    /// `\u00XX` for a control character.
    private static func appendEscapedUnit(_ byte: UInt8, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789abcdef"
        out += [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")]
        out.append(hex.utf8Start[Int(byte >> 4)])
        out.append(hex.utf8Start[Int(byte & 0xF)])
    }

    /// The length of the valid UTF-8 sequence starting at `i`, or 0
    /// (overlong forms, surrogates and code points past U+10FFFF are not).
    private static func validSequenceLength(_ bytes: UnsafeRawBufferPointer, at i: Int) -> Int {
        let b0 = bytes[i]
        func continuation(_ k: Int) -> UInt8? {
            i + k < bytes.count && bytes[i + k] & 0xC0 == 0x80 ? bytes[i + k] : nil
        }
        switch b0 {
        case 0xC2...0xDF:
            return continuation(1) != nil ? 2 : 0
        case 0xE0...0xEF:
            guard let c1 = continuation(1), continuation(2) != nil else { return 0 }
            if b0 == 0xE0 && c1 < 0xA0 { return 0 }  // overlong
            if b0 == 0xED && c1 >= 0xA0 { return 0 }  // surrogates
            return 3
        case 0xF0...0xF4:
            guard let c1 = continuation(1), continuation(2) != nil, continuation(3) != nil else { return 0 }
            if b0 == 0xF0 && c1 < 0x90 { return 0 }
            if b0 == 0xF4 && c1 >= 0x90 { return 0 }
            return 4
        default:
            return 0
        }
    }
}
