public import Foundation

/// Parser for the `mdfind` query-string syntax (`mdq --spotlight`):
///
///     kMDItemFSName == "*.png"cd && kMDItemFSContentChangeDate >= $time.today(-7)
///     InRange(kMDItemFSSize, 1000, 2000) || !(kMDItemDisplayName == report*)
///
/// `==` and `!=` take `*` and `?` wildcards (a whole-value match, like
/// `LIKE`); modifiers follow the closing quote (`c` case-, `d`
/// diacritic-insensitive; `w` is accepted and ignored) or come in brackets
/// (`==[c]`); values may be unquoted when they contain no space or
/// operator. Dates are `$time.now`, `$time.today`, `$time.yesterday`,
/// `$time.this_week`, `$time.this_month`, `$time.this_year`, each with an
/// optional signed offset in its own unit (`$time.today(-7)`), and
/// `$time.iso(2025-01-31T00:00:00Z)`; they are computed once, from `now`,
/// in the local time zone. The result is an ordinary predicate.
struct SpotlightQueryParser {
    private let source: [UInt8]
    private var position = 0
    private let now: Date
    private let calendar: Calendar
    private var depth = 0

    init(_ source: [UInt8], now: Date, timeZone: TimeZone = .current) {
        self.source = source
        self.now = now
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    mutating func parse() throws(MetadataError) -> PredicateNode {
        skipSpaces()
        if position == source.count {
            throw error("the query is empty: expected something like kMDItemFSName == \"*.png\"")
        }
        let node = try parseOr()
        skipSpaces()
        guard position == source.count else {
            throw error("unexpected \(describeHere()) after a complete query: expected && or ||")
        }
        return node
    }

    // MARK: Rules

    private mutating func parseOr() throws(MetadataError) -> PredicateNode {
        var parts = [try parseAnd()]
        while consume("||") { parts.append(try parseAnd()) }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func parseAnd() throws(MetadataError) -> PredicateNode {
        var parts = [try parseNot()]
        while consume("&&") { parts.append(try parseNot()) }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func parseNot() throws(MetadataError) -> PredicateNode {
        skipSpaces()
        if peek() == UInt8(ascii: "!") && peek(1) != UInt8(ascii: "=") {
            position += 1
            return .not(try deeper { (parser) throws(MetadataError) in try parser.parseNot() })
        }
        return try parsePrimary()
    }

    private mutating func deeper(_ body: (inout SpotlightQueryParser) throws(MetadataError) -> PredicateNode)
        throws(MetadataError) -> PredicateNode
    {
        depth += 1
        defer { depth -= 1 }
        guard depth <= PredicateParser.maximumDepth else { throw error("the query nests too deeply") }
        return try body(&self)
    }

    private mutating func parsePrimary() throws(MetadataError) -> PredicateNode {
        skipSpaces()
        let start = position
        if consume("(") {
            let inner = try deeper { (parser) throws(MetadataError) in try parser.parseOr() }
            guard consume(")") else { throw error("expected ')' to close the '(' at offset \(start)") }
            return inner
        }
        let word = identifier()
        guard !word.isEmpty else { throw error("expected an attribute such as kMDItemFSName, found \(describeHere())") }
        if word == "InRange" { return try parseInRange(at: start) }
        if word.uppercased() == "TRUE" || word == "*" { return .constant(true) }
        guard let attribute = MetadataAttribute(key: word) else {
            let hint = MetadataAttribute.suggestion(for: word).map { " (did you mean \($0)?)" } ?? ""
            throw MetadataError(
                code: .querySyntax, message: "unknown attribute '\(word)'\(hint)", offset: start, source: source)
        }
        skipSpaces()
        let opStart = position
        let op = try parseOperator()
        var options = try parseBracketOptions()
        skipSpaces()
        let valueStart = position
        guard position < source.count else {
            throw error(
                "expected a value after '\(String(decoding: source[opStart..<position], as: UTF8.self).trimmingCharacters(in: .whitespaces))', found the end of the query"
            )
        }
        let value = try parseValue(for: attribute)
        options.formUnion(try parseModifiers())
        return try comparison(attribute, op, options, value, opStart: opStart, valueStart: valueStart)
    }

    private mutating func parseInRange(at start: Int) throws(MetadataError) -> PredicateNode {
        guard consume("(") else { throw error("expected '(' after InRange") }
        skipSpaces()
        let keyStart = position
        let key = identifier()
        guard let attribute = MetadataAttribute(key: key),
            attribute.valueType == .number || attribute.valueType == .date
        else {
            throw MetadataError(
                code: .querySyntax, message: "InRange takes a number or date attribute, such as kMDItemFSSize",
                offset: keyStart, source: source)
        }
        guard consume(",") else { throw error("expected ',' after the attribute in InRange") }
        skipSpaces()
        let low = try parseValue(for: attribute)
        guard consume(",") else { throw error("expected ',' between the bounds of InRange") }
        skipSpaces()
        let high = try parseValue(for: attribute)
        guard consume(")") else { throw error("expected ')' to close InRange") }
        return .comparison(Comparison(attribute: attribute, op: .between, options: [], value: .list([low, high])))
    }

    private mutating func parseOperator() throws(MetadataError) -> ComparisonOperator {
        for (text, op) in [
            ("==", ComparisonOperator.equal), ("!=", .notEqual), ("<=", .lessOrEqual), (">=", .greaterOrEqual),
            ("<", .less), (">", .greater), ("=", .equal),
        ] {
            if consume(text, skippingSpaces: false) { return op }
        }
        throw error("expected an operator (==, !=, <, <=, >, >=), found \(describeHere())")
    }

    private mutating func parseBracketOptions() throws(MetadataError) -> StringCompareOptions {
        guard peek() == UInt8(ascii: "[") else { return [] }
        position += 1
        var options: StringCompareOptions = []
        while let b = peek(), b != UInt8(ascii: "]") {
            switch b {
            case UInt8(ascii: "c"): options.insert(.caseInsensitive)
            case UInt8(ascii: "d"): options.insert(.diacriticInsensitive)
            case UInt8(ascii: "w"): break
            default: throw error("unknown modifier '\(Character(Unicode.Scalar(b)))': expected c, d or w")
            }
            position += 1
        }
        guard consume("]", skippingSpaces: false) else { throw error("expected ']' to close the modifiers") }
        return options
    }

    /// Modifier letters right after a closing quote: `"*.png"cd`.
    private mutating func parseModifiers() throws(MetadataError) -> StringCompareOptions {
        var options: StringCompareOptions = []
        while let b = peek(), (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) {
            switch b {
            case UInt8(ascii: "c"): options.insert(.caseInsensitive)
            case UInt8(ascii: "d"): options.insert(.diacriticInsensitive)
            case UInt8(ascii: "w"): break
            default:
                throw error("unknown modifier '\(Character(Unicode.Scalar(b)))' after the value: expected c, d or w")
            }
            position += 1
        }
        return options
    }

    private enum RawValue {
        case quoted([UInt8])
        case bare([UInt8])
        case date(Timestamp)
    }

    private mutating func parseValue(for attribute: MetadataAttribute) throws(MetadataError) -> PredicateValue {
        let start = position
        let raw: RawValue
        if let quote = peek(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
            position += 1
            var bytes: [UInt8] = []
            while true {
                guard let b = peek() else {
                    throw MetadataError(
                        code: .querySyntax, message: "unterminated string: expected a closing quote", offset: start,
                        source: source)
                }
                position += 1
                if b == quote { break }
                if b == UInt8(ascii: "\\"), let next = peek() {
                    // Keep the escape for the wildcard matcher (\* is a literal star).
                    position += 1
                    if next == quote { bytes.append(next) } else { bytes += [b, next] }
                    continue
                }
                bytes.append(b)
            }
            raw = .quoted(bytes)
        } else if consume("$time.", skippingSpaces: false) {
            raw = .date(try parseTime(at: start))
        } else {
            var bytes: [UInt8] = []
            while let b = peek(), b != UInt8(ascii: " "), b != UInt8(ascii: ")"), b != UInt8(ascii: ","),
                b != UInt8(ascii: "&"), b != UInt8(ascii: "|"), b != 0x09, b != 0x0A
            {
                bytes.append(b)
                position += 1
            }
            guard !bytes.isEmpty else { throw error("expected a value, found \(describeHere())") }
            raw = .bare(bytes)
        }
        func fail(_ message: String) -> MetadataError {
            MetadataError(code: .querySyntax, message: message, offset: start, source: source)
        }
        switch (attribute.valueType, raw) {
        case (.string, .quoted(let bytes)), (.string, .bare(let bytes)):
            return .string(bytes)
        case (.number, .quoted(let bytes)), (.number, .bare(let bytes)):
            let text = String(decoding: bytes, as: UTF8.self)
            guard
                let number = Double(text)
                    ?? (text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16).map(Double.init) : nil),
                number.isFinite
            else {
                throw fail("\(attribute.rawValue) is a number: expected a number such as 1000000, not '\(text)'")
            }
            return .number(number)
        case (.date, .date(let time)):
            return .date(time)
        case (.date, _):
            throw fail(
                "\(attribute.rawValue) is a date: use $time.now, $time.today(-7), $time.iso(2025-01-31T00:00:00Z)...")
        case (_, .date):
            throw fail("\(attribute.rawValue) is a \(attribute.valueType.rawValue), not a date")
        case (.boolean, _):
            throw fail("\(attribute.rawValue) is a boolean")
        }
    }

    /// `$time.` has been read: the unit, then an optional `(offset)`.
    private mutating func parseTime(at start: Int) throws(MetadataError) -> Timestamp {
        let unit = identifier()
        if unit == "iso" {
            guard consume("(", skippingSpaces: false) else { throw error("expected '(' after $time.iso") }
            let textStart = position
            while let b = peek(), b != UInt8(ascii: ")") { position += 1 }
            let text = String(decoding: source[textStart..<position], as: UTF8.self)
            guard consume(")", skippingSpaces: false) else { throw error("expected ')' to close $time.iso(...)") }
            let formatter = ISO8601DateFormatter()
            var parsed = formatter.date(from: text)
            if parsed == nil {
                formatter.formatOptions = [.withFullDate]
                parsed = formatter.date(from: text)
            }
            guard let date = parsed else {
                throw MetadataError(
                    code: .querySyntax,
                    message: "cannot read '\(text)' as an ISO-8601 date such as 2025-01-31T00:00:00Z",
                    offset: textStart, source: source)
            }
            return Self.timestamp(date)
        }
        var offset = 0
        if consume("(", skippingSpaces: false) {
            let numberStart = position
            while let b = peek(), b != UInt8(ascii: ")") { position += 1 }
            let text = String(decoding: source[numberStart..<position], as: UTF8.self).trimmingCharacters(
                in: .whitespaces)
            guard let value = Int(text.hasPrefix("+") ? String(text.dropFirst()) : text), abs(value) < 100_000 else {
                throw MetadataError(
                    code: .querySyntax, message: "expected a whole number offset such as -7 in $time.\(unit)(...)",
                    offset: numberStart, source: source)
            }
            guard consume(")", skippingSpaces: false) else { throw error("expected ')' after the offset") }
            offset = value
        }
        let date: Date?
        switch unit {
        case "now": date = now.addingTimeInterval(Double(offset))
        case "today": date = calendar.date(byAdding: .day, value: offset, to: calendar.startOfDay(for: now))
        case "yesterday": date = calendar.date(byAdding: .day, value: offset - 1, to: calendar.startOfDay(for: now))
        case "this_week":
            date = calendar.dateInterval(of: .weekOfYear, for: now).flatMap {
                calendar.date(byAdding: .weekOfYear, value: offset, to: $0.start)
            }
        case "this_month":
            date = calendar.dateInterval(of: .month, for: now).flatMap {
                calendar.date(byAdding: .month, value: offset, to: $0.start)
            }
        case "this_year":
            date = calendar.dateInterval(of: .year, for: now).flatMap {
                calendar.date(byAdding: .year, value: offset, to: $0.start)
            }
        default:
            throw MetadataError(
                code: .querySyntax,
                message:
                    "unknown $time.\(unit): expected now, today, yesterday, this_week, this_month, this_year or iso(...)",
                offset: start, source: source)
        }
        guard let date else {
            throw MetadataError(code: .querySyntax, message: "date out of range", offset: start, source: source)
        }
        return Self.timestamp(date)
    }

    /// Clamped to what a `Timestamp` holds (1677...2262): `$time.iso(1012-...)`
    /// or a huge offset is a date far in the past or future, not a crash.
    private static func timestamp(_ date: Date) -> Timestamp {
        Timestamp(date)
    }

    /// Builds the comparison: `==`/`!=` with wildcards match like `LIKE`.
    private func comparison(
        _ attribute: MetadataAttribute, _ op: ComparisonOperator, _ options: StringCompareOptions,
        _ value: PredicateValue,
        opStart: Int, valueStart: Int
    ) throws(MetadataError) -> PredicateNode {
        if attribute.valueType == .string {
            guard op == .equal || op == .notEqual else {
                throw MetadataError(
                    code: .querySyntax, message: "\(attribute.rawValue) is a string: compare it with == or !=",
                    offset: opStart, source: source)
            }
            guard case .string(let bytes) = value else { return .constant(false) }
            let pattern: LikePattern
            do throws(MetadataError) {
                pattern = try LikePattern(bytes)
            } catch {
                throw MetadataError(code: .querySyntax, message: error.message, offset: valueStart, source: source)
            }
            let wild = pattern.elements.contains { $0 == .any || $0 == .one }
            if wild {
                let like = PredicateNode.comparison(
                    Comparison(attribute: attribute, op: .like, options: options, value: value))
                return op == .equal ? like : .not(like)
            }
            // No wildcard: an exact match, with backslash escapes resolved.
            let literal = pattern.elements.reduce(into: [UInt8]()) { if case .literal(let part) = $1 { $0 += part } }
            return .comparison(Comparison(attribute: attribute, op: op, options: options, value: .string(literal)))
        }
        if !options.isEmpty {
            throw MetadataError(
                code: .querySyntax,
                message:
                    "modifiers c and d apply to strings; \(attribute.rawValue) is a \(attribute.valueType.rawValue)",
                offset: opStart, source: source)
        }
        return .comparison(Comparison(attribute: attribute, op: op, options: [], value: value))
    }

    // MARK: Lexing helpers

    private func peek(_ ahead: Int = 0) -> UInt8? {
        position + ahead < source.count ? source[position + ahead] : nil
    }

    private mutating func skipSpaces() {
        while let b = peek(), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { position += 1 }
    }

    private mutating func consume(_ text: String, skippingSpaces: Bool = true) -> Bool {
        if skippingSpaces { skipSpaces() }
        let bytes = Array(text.utf8)
        guard source.count - position >= bytes.count, Array(source[position..<position + bytes.count]) == bytes else {
            return false
        }
        position += bytes.count
        return true
    }

    private mutating func identifier() -> String {
        let start = position
        while let b = peek(),
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x5F
        {
            position += 1
        }
        if position == start, peek() == UInt8(ascii: "*") {
            position += 1
            return "*"
        }
        return String(decoding: source[start..<position], as: UTF8.self)
    }

    private func error(_ message: String) -> MetadataError {
        MetadataError(code: .querySyntax, message: message, offset: min(position, source.count), source: source)
    }

    private func describeHere() -> String {
        guard position < source.count else { return "the end of the query" }
        let end = min(source.count, position + 12)
        return "'" + String(decoding: source[position..<end], as: UTF8.self) + "'"
    }
}

extension MetadataPredicate {
    /// Parses the `mdfind` query-string syntax (see `mdq --spotlight`);
    /// `$time` dates are computed from `now`, in the local time zone.
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) with the offset of the mistake.
    public init(spotlightQuery: String, now: Date = Date()) throws(MetadataError) {
        try self.init(spotlightQueryBytes: Array(spotlightQuery.utf8), now: now)
    }

    /// The raw-bytes form of `init(spotlightQuery:now:)`.
    public init(spotlightQueryBytes: [UInt8], now: Date = Date(), timeZone: TimeZone = .current) throws(MetadataError) {
        var parser = SpotlightQueryParser(spotlightQueryBytes, now: now, timeZone: timeZone)
        self.init(node: try parser.parse())
    }
}
