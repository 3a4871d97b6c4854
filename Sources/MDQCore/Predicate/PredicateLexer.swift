import MDQSystem

/// Splits predicate text (raw bytes) into tokens.
///
/// String literals take `'...'` or `"..."` with the escapes `\\`, `\'`, `\"`,
/// `\n`, `\t`, `\r`, octal `\0`...`\377` (one to three digits), `\xHH` and
/// `\uXXXX`. As the documentation says, `\x`, octal and `\u` escapes name a
/// *character* by its code, which is written as UTF-8 (`'\xE9'` is `é`, as
/// `'\u00E9'`). A byte that is not UTF-8, to match a name that is not,
/// takes mdq's own `\yHH` escape (or is written raw in the query, or passed
/// as `PredicateArgument.bytes` for `%@`). Any other backslash pair is kept
/// as written, so `'a\*b'` reaches `LIKE` as `a\*b`, a literal star, and
/// `'\d'` reaches `MATCHES` as the regular expression's `\d`.
///
/// Identifiers may start with `#`, which makes a reserved word an
/// identifier (`#IN`); `UTI-CONFORMS-TO` and `UTI-EQUALS` are one token
/// each; numbers take `0x`, `0o` and `0b` prefixes and exponents.
struct PredicateLexer {
    private let source: [UInt8]
    private var position = 0

    package init(_ source: [UInt8]) {
        self.source = source
    }

    private func error(_ message: String, at offset: Int) -> MetadataError {
        .syntax(message, at: offset, in: source)
    }

    /// All tokens, ending with `.end`; text that cannot be read ends them
    /// with `.invalid` and `.end`, and its error is returned beside them.
    mutating func tokenize() -> (tokens: [PredicateToken], error: MetadataError?) {
        var tokens: [PredicateToken] = []
        while true {
            let token: PredicateToken
            do throws(MetadataError) {
                token = try next()
            } catch {
                let offset = error.offset ?? position
                tokens.append(PredicateToken(kind: .invalid, offset: offset, length: 1))
                tokens.append(PredicateToken(kind: .end, offset: source.count, length: 0))
                return (tokens, error)
            }
            tokens.append(token)
            if token.kind == .end { return (tokens, nil) }
        }
    }

    private func peek(_ ahead: Int = 0) -> UInt8? {
        position + ahead < source.count ? source[position + ahead] : nil
    }

    private static func isIdentifierStart(_ b: UInt8) -> Bool {
        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x24 || b == 0x23
    }

    private static func isIdentifierPart(_ b: UInt8) -> Bool {
        isIdentifierStart(b) || (b >= 0x30 && b <= 0x39) || b == 0x2E
    }

    private mutating func next() throws(MetadataError) -> PredicateToken {
        while let b = peek(), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D {
            position += 1
        }
        let start = position
        guard let b = peek() else { return PredicateToken(kind: .end, offset: start, length: 0) }
        func token(_ kind: PredicateToken.Kind, _ length: Int) -> PredicateToken {
            position = start + length
            return PredicateToken(kind: kind, offset: start, length: length)
        }
        switch b {
        case UInt8(ascii: "("): return token(.leftParen, 1)
        case UInt8(ascii: ")"): return token(.rightParen, 1)
        case UInt8(ascii: "{"): return token(.leftBrace, 1)
        case UInt8(ascii: "}"): return token(.rightBrace, 1)
        case UInt8(ascii: "["): return token(.leftBracket, 1)
        case UInt8(ascii: "]"): return token(.rightBracket, 1)
        case UInt8(ascii: ","): return token(.comma, 1)
        case UInt8(ascii: "="):
            if peek(1) == UInt8(ascii: "=") { return token(.equal, 2) }
            if peek(1) == UInt8(ascii: "<") { return token(.lessOrEqual, 2) }
            if peek(1) == UInt8(ascii: ">") { return token(.greaterOrEqual, 2) }
            return token(.equal, 1)
        case UInt8(ascii: "!"):
            if peek(1) == UInt8(ascii: "=") { return token(.notEqual, 2) }
            return token(.not, 1)
        case UInt8(ascii: "<"):
            if peek(1) == UInt8(ascii: "=") { return token(.lessOrEqual, 2) }
            if peek(1) == UInt8(ascii: ">") { return token(.notEqual, 2) }
            return token(.less, 1)
        case UInt8(ascii: ">"):
            if peek(1) == UInt8(ascii: "=") { return token(.greaterOrEqual, 2) }
            return token(.greater, 1)
        case UInt8(ascii: "&"):
            if peek(1) == UInt8(ascii: "&") { return token(.and, 2) }
            throw error("expected '&&'", at: start)
        case UInt8(ascii: "|"):
            if peek(1) == UInt8(ascii: "|") { return token(.or, 2) }
            throw error("expected '||'", at: start)
        case UInt8(ascii: "%"):
            var length = 1
            while let c = peek(length), (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || c == 0x40 {
                length += 1
                if c != UInt8(ascii: "l") { break }
            }
            guard length > 1 else { throw error("expected a format specifier such as %K or %@ after '%'", at: start) }
            let spec = String(decoding: source[start + 1..<start + length], as: UTF8.self)
            return token(.formatSpecifier(spec), length)
        case UInt8(ascii: "'"), UInt8(ascii: "\""):
            return try string(quote: b)
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "+"):
            return try number()
        default:
            if Self.isIdentifierStart(b) {
                var length = 1
                while let c = peek(length), Self.isIdentifierPart(c) { length += 1 }
                let word = String(decoding: source[start..<start + length], as: UTF8.self)
                if b == UInt8(ascii: "#") {
                    // `#word`: the identifier `word`, even when it is a reserved word.
                    guard length > 1 else { throw error("expected an identifier after '#'", at: start) }
                    return token(.escapedIdentifier(String(word.dropFirst())), length)
                }
                for op in ["UTI-CONFORMS-TO", "UTI-EQUALS"] where word.uppercased() == "UTI" {
                    let bytes = Array(op.utf8)
                    let end = start + bytes.count
                    if end <= source.count, source[start..<end].map({ $0 | 0x20 }) == bytes.map({ $0 | 0x20 }),
                        end == source.count || !Self.isIdentifierPart(source[end])
                    {
                        return token(.identifier(op), bytes.count)
                    }
                }
                switch word.uppercased() {
                case "AND": return token(.and, length)
                case "OR": return token(.or, length)
                case "NOT": return token(.not, length)
                default: return token(.identifier(word), length)
                }
            }
            throw error("unexpected character", at: start)
        }
    }

    private mutating func string(quote: UInt8) throws(MetadataError) -> PredicateToken {
        let start = position
        position += 1
        var bytes: [UInt8] = []
        while true {
            guard let b = peek() else {
                throw error("unterminated string: expected a closing \(quote == 0x27 ? "'" : "\"")", at: start)
            }
            position += 1
            if b == quote { break }
            guard b == 0x5C else {
                bytes.append(b)
                continue
            }
            guard let e = peek() else {
                throw error("unterminated string: expected a closing \(quote == 0x27 ? "'" : "\"")", at: start)
            }
            let escapeStart = position - 1
            position += 1
            switch e {
            case 0x5C, 0x27, 0x22: bytes.append(e)
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                // Up to three octal digits: the character with that code.
                var value = UInt32(e - 0x30)
                var digits = 1
                while digits < 3, let d = peek(), d >= 0x30 && d <= 0x37 {
                    value = value << 3 | UInt32(d - 0x30)
                    position += 1
                    digits += 1
                }
                bytes.append(contentsOf: Self.utf8(Unicode.Scalar(value)!))
            case UInt8(ascii: "x"):
                guard let value = hexValue(digits: 2) else {
                    throw error("expected two hex digits after \\x", at: escapeStart)
                }
                bytes.append(contentsOf: Self.utf8(Unicode.Scalar(value)!))
            case UInt8(ascii: "y"):
                guard let value = hexValue(digits: 2) else {
                    throw error("expected two hex digits (one raw byte) after \\y", at: escapeStart)
                }
                bytes.append(UInt8(value))
            case UInt8(ascii: "u"):
                guard let value = hexValue(digits: 4), let scalar = Unicode.Scalar(value) else {
                    throw error("expected four hex digits of a Unicode scalar after \\u", at: escapeStart)
                }
                bytes.append(contentsOf: Self.utf8(scalar))
            default:
                // Kept as written: LIKE gives `\*`, `\?` and `\\` their meaning.
                bytes.append(0x5C)
                bytes.append(e)
            }
        }
        return PredicateToken(kind: .string(bytes), offset: start, length: position - start)
    }

    /// A scalar's UTF-8 bytes.
    static func utf8(_ scalar: Unicode.Scalar) -> [UInt8] {
        Array(String(Character(scalar)).utf8)
    }

    private mutating func hexValue(digits: Int) -> UInt32? {
        var value: UInt32 = 0
        for i in 0..<digits {
            guard let c = peek(i) else { return nil }
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - 0x61 + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - 0x41 + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        position += digits
        return value
    }

    private mutating func number() throws(MetadataError) -> PredicateToken {
        let start = position
        var length = 0
        if let s = peek(), s == 0x2D || s == 0x2B { length += 1 }
        if length == 0 && peek() == UInt8(ascii: "."), let c = peek(1), Self.isIdentifierStart(c) {
            // `%K.pathExtension`: a key path, reported by the parser with its value.
            var end = 2
            while let c = peek(end), Self.isIdentifierPart(c) { end += 1 }
            position = start + end
            let path = String(decoding: source[start + 1..<start + end], as: UTF8.self)
            return PredicateToken(kind: .keyPath(path), offset: start, length: end)
        }
        let radixes: [(UInt8, Int, String)] = [(0x78, 16, "hex"), (0x6F, 8, "octal"), (0x62, 2, "binary")]
        if peek(length) == UInt8(ascii: "0"), let letter = peek(length + 1),
            let (_, radix, name) = radixes.first(where: { $0.0 == letter | 0x20 })
        {
            var end = length + 2
            while let c = peek(end), c.isHexDigit || c == UInt8(ascii: "_") { end += 1 }
            let digits = String(decoding: source[start + length + 2..<start + end], as: UTF8.self)
            guard let value = UInt64(digits, radix: radix) else {
                throw error("expected \(name) digits after 0\(Character(Unicode.Scalar(letter)))", at: start)
            }
            position = start + end
            let sign: Double = source[start] == 0x2D ? -1 : 1
            return PredicateToken(kind: .number(sign * Double(value)), offset: start, length: end)
        }
        while let c = peek(length), (c >= 0x30 && c <= 0x39) || c == 0x2E { length += 1 }
        if let e = peek(length), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            var end = length + 1
            if let s = peek(end), s == 0x2D || s == 0x2B { end += 1 }
            if let d = peek(end), d >= 0x30 && d <= 0x39 {
                while let d = peek(end), d >= 0x30 && d <= 0x39 { end += 1 }
                length = end
            }
        }
        let text = String(decoding: source[start..<start + length], as: UTF8.self)
        guard var value = Double(text) else { throw error("malformed number", at: start) }
        // A size suffix glued to the number: 10MB, 1.5GiB (SizeUnit).
        var unit = length
        while let c = peek(unit), Self.isIdentifierPart(c) { unit += 1 }
        if unit > length, let multiplier = SizeUnit.multiplier(source[start + length..<start + unit]) {
            value *= multiplier
            length = unit
        }
        guard value.isFinite else { throw error("number out of range", at: start) }
        position = start + length
        return PredicateToken(kind: .number(value), offset: start, length: length)
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x46) || (self >= 0x61 && self <= 0x66)
    }
}
