/// The little JSON the daemon's answers need: one line parsed into values,
/// and strings written with the escapes the daemon's parser reads.
enum JSONText {
    indirect enum Value {
        case string(String)
        case integer(Int)
        case number
        case bool(Bool)
        case null
        case array
        case object([String: Value])

        subscript(key: String) -> Value? {
            if case .object(let fields) = self { return fields[key] }
            return nil
        }

        var string: String? {
            if case .string(let text) = self { return text }
            return nil
        }

        var integer: Int? {
            if case .integer(let number) = self { return number }
            return nil
        }

        var bool: Bool? {
            if case .bool(let value) = self { return value }
            return nil
        }
    }

    /// Appends `text` (valid UTF-8) as a JSON string.
    static func appendString(_ text: [UInt8], to out: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        out.append(UInt8(ascii: "\""))
        for byte in text {
            switch byte {
            case 0x22: out += [0x5C, 0x22]
            case 0x5C: out += [0x5C, 0x5C]
            case 0x0A: out += [0x5C, UInt8(ascii: "n")]
            case 0x0D: out += [0x5C, UInt8(ascii: "r")]
            case 0x09: out += [0x5C, UInt8(ascii: "t")]
            case 0..<0x20, 0x7F:
                out += [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The value of one line, or nil when it is not JSON (or nests deeper
    /// than any answer does).
    static func parse(_ line: [UInt8]) -> Value? {
        var parser = Parser(bytes: line)
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        return parser.position == line.count ? value : nil
    }

    private struct Parser {
        let bytes: [UInt8]
        var position = 0

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func value(depth: Int) -> Value? {
            skipSpace()
            guard position < bytes.count, depth < 16 else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "{"):
                position += 1
                var fields: [String: Value] = [:]
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .object(fields)
                }
                while true {
                    skipSpace()
                    guard let key = string() else { return nil }
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { return nil }
                    position += 1
                    guard let item = value(depth: depth + 1) else { return nil }
                    fields[key] = item
                    skipSpace()
                    guard position < bytes.count else { return nil }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "}") { return .object(fields) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { return nil }
                }
            case UInt8(ascii: "["):
                position += 1
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                    position += 1
                    return .array
                }
                while true {
                    guard value(depth: depth + 1) != nil else { return nil }
                    skipSpace()
                    guard position < bytes.count else { return nil }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "]") { return .array }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { return nil }
                }
            case UInt8(ascii: "\""):
                return string().map(Value.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            default:
                return number()
            }
        }

        mutating func literal(_ word: String, _ result: Value) -> Value? {
            let expected = Array(word.utf8)
            guard bytes[position...].starts(with: expected) else { return nil }
            position += expected.count
            return result
        }

        mutating func number() -> Value? {
            let begin = position
            while position < bytes.count, "-+.eE0123456789".utf8.contains(bytes[position]) { position += 1 }
            guard position > begin else { return nil }
            let text = String(decoding: bytes[begin..<position], as: UTF8.self)
            if let integer = Int(text) { return .integer(integer) }
            return .number
        }

        mutating func string() -> String? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { return nil }
            position += 1
            var out: [UInt8] = []
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard position < bytes.count else { return nil }
                    let escape = bytes[position]
                    position += 1
                    switch escape {
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(scalar), bytes[position...].starts(with: [0x5C, 0x75]) {
                            position += 2
                            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let character = Unicode.Scalar(scalar) else { return nil }
                        out += Array(String(Character(character)).utf8)
                    default: out.append(escape)
                    }
                default:
                    out.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard position + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[position..<position + 4] {
                guard let digit = Int(String(UnicodeScalar(byte)), radix: 16) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            position += 4
            return value
        }
    }
}
