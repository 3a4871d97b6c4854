public import Foundation
public import MDQSystem

/// Parser for the `mdfind` query-string syntax (`mdq --spotlight`), as
/// Apple's "File Metadata Query Expression Syntax" describes it:
///
///     kMDItemFSName == "*.png"cd && kMDItemFSContentChangeDate >= $time.today(-7)
///     InRange(kMDItemFSSize, 1000, 2000) || !(kMDItemDisplayName == report*)
///
/// - `==` and `!=` take `*` and `?` wildcards (a whole-value match, like
///   `LIKE`); modifiers follow the closing quote (`"*.png"cd`) or the
///   operator in brackets (`==[cd]`): `c` case-, `d` diacritic-insensitive,
///   `w` word-based (see `StringCompareOptions.wordBased`), `n` accepted.
///   Values may be unquoted when they contain no space or operator.
/// - `*` as the attribute compares every name-like text attribute:
///   `* == "report*"cd` holds when `kMDItemFSName` or `kMDItemDisplayName`
///   matches, `* != ...` when neither does.
/// - `InRange(attribute, low, high)` (also spelled `inRange`) is inclusive.
/// - Dates are `$time.now`, `$time.today`, `$time.yesterday`,
///   `$time.this_week`, `$time.this_month`, `$time.this_year`, each with an
///   optional signed whole offset in its own unit (seconds for `now`:
///   `$time.now(-864000)` is ten days ago; empty parentheses mean 0), and
///   `$time.iso(2025-01-31T00:00:00Z)`; or a plain number, seconds since
///   2001-01-01 as the documentation defines date values. They are
///   computed once, from `now`, in the given time zone.
///
/// Booleans compare with `true`/`false`, `YES`/`NO` or `1`/`0`. The result
/// is an ordinary predicate, checked by the same rules as the format syntax.
struct SpotlightQueryParser {
    private var syntax: PredicateSyntax
    private var position = 0
    private let now: Date
    private let calendar: Calendar

    package init(_ source: [UInt8], now: Date, timeZone: TimeZone = .current) {
        syntax = PredicateSyntax(source)
        self.now = now
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    private var source: [UInt8] { syntax.source }

    mutating func parse() throws(MetadataError) -> PredicateNode {
        skipSpaces()
        if position == source.count {
            throw error("the query is empty: expected something like kMDItemFSName == \"*.png\"")
        }
        let node = try parseOr()
        skipSpaces()
        guard position == source.count else {
            throw error("unexpected \(describeHere()) after a complete query: expected && (AND) or || (OR)")
        }
        return node
    }

    // MARK: Rules

    private mutating func parseOr() throws(MetadataError) -> PredicateNode {
        var parts = [try parseAnd()]
        while consume("||") || consumeWord("OR") { parts.append(try parseAnd()) }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func parseAnd() throws(MetadataError) -> PredicateNode {
        var parts = [try parseNot()]
        while consume("&&") || consumeWord("AND") { parts.append(try parseNot()) }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func parseNot() throws(MetadataError) -> PredicateNode {
        skipSpaces()
        if peek() == UInt8(ascii: "!") && peek(1) != UInt8(ascii: "=") || consumeWord("NOT") {
            if peek() == UInt8(ascii: "!") { position += 1 }
            return .not(try deeper { (parser) throws(MetadataError) in try parser.parseNot() })
        }
        return try parsePrimary()
    }

    private mutating func deeper(_ body: (inout SpotlightQueryParser) throws(MetadataError) -> PredicateNode)
        throws(MetadataError) -> PredicateNode
    {
        try syntax.enter(at: position)
        defer { syntax.leave() }
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
        if word.lowercased() == "inrange" && peek() == UInt8(ascii: "(") { return try parseInRange(at: start) }
        if word.uppercased() == "TRUE" { return .constant(true) }
        if word == "*" {
            // `*` alone matches everything; `* == value` compares names.
            skipSpaces()
            if position == source.count || peek() == UInt8(ascii: ")") || peek() == UInt8(ascii: "&")
                || peek() == UInt8(ascii: "|")
            {
                return .constant(true)
            }
        }
        let attributes: [MetadataAttribute]
        if word == "*" {
            attributes = [.fsName, .displayName]
        } else {
            attributes = [try syntax.attribute(word, at: start, isCall: peek() == UInt8(ascii: "("))]
            if peek() == UInt8(ascii: "."), let next = peek(1), next | 0x20 >= 0x61 && next | 0x20 <= 0x7A {
                let dot = position
                position += 1
                let path = identifier()
                skipSpaces()
                _ = try? parseOperator()
                skipSpaces()
                throw syntax.keyPath(path, at: dot, value: try? parseValue(for: .fsName).value)
            }
        }
        skipSpaces()
        let opStart = position
        let op = try parseOperator()
        var options = try parseBracketOptions()
        skipSpaces()
        let valueStart = position
        guard position < source.count else {
            throw error(
                "expected a value after '\(syntax.text(opStart..<position).trimmingCharacters(in: .whitespaces))', found the end of the query"
            )
        }
        let value = try parseValue(for: attributes[0])
        let modifierStart = position
        options.formUnion(try parseModifiers())
        let comparisons = try attributes.map { (attribute) throws(MetadataError) in
            try comparison(
                attribute, op, options, value.value, opStart: opStart, valueStart: valueStart,
                patternStart: value.patternStart, modifierStart: modifierStart)
        }
        guard comparisons.count > 1 else { return comparisons[0] }
        // `* == v`: some name attribute is v; `* != v`: none is.
        return op == .notEqual ? .and(comparisons) : .or(comparisons)
    }

    private mutating func parseInRange(at start: Int) throws(MetadataError) -> PredicateNode {
        guard consume("(") else { throw error("expected '(' after InRange") }
        skipSpaces()
        let keyStart = position
        let attribute = try syntax.attribute(identifier(), at: keyStart)
        guard attribute.valueType == .number || attribute.valueType == .date else {
            throw syntax.error("InRange takes a number or date attribute, such as kMDItemFSSize", at: keyStart)
        }
        guard consume(",") else { throw error("expected ',' after the attribute in InRange") }
        skipSpaces()
        let low = try parseValue(for: attribute).value
        guard consume(",") else { throw error("expected ',' between the bounds of InRange") }
        skipSpaces()
        let high = try parseValue(for: attribute).value
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

    /// `==[cd]`: modifier letters in brackets right after the operator.
    private mutating func parseBracketOptions() throws(MetadataError) -> StringCompareOptions {
        guard peek() == UInt8(ascii: "[") else { return [] }
        position += 1
        let start = position
        while let b = peek(), b != UInt8(ascii: "]") { position += 1 }
        let options = try syntax.options(source[start..<position], at: start)
        guard consume("]", skippingSpaces: false) else { throw error("expected ']' to close the modifiers") }
        return options
    }

    /// Modifier letters right after a value: `"*.png"cd`.
    private mutating func parseModifiers() throws(MetadataError) -> StringCompareOptions {
        let start = position
        while let b = peek(), (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) { position += 1 }
        return try syntax.options(source[start..<position], at: start)
    }

    private enum RawValue {
        case quoted([UInt8])
        case bare([UInt8])
        case date(Timestamp)
    }

    /// A value for `attribute`, and where a string's first byte sits.
    private mutating func parseValue(for attribute: MetadataAttribute) throws(MetadataError)
        -> (value: PredicateValue, patternStart: Int)
    {
        let start = position
        var patternStart = start
        let raw: RawValue
        if let quote = peek(), quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
            position += 1
            patternStart = position
            var bytes: [UInt8] = []
            while true {
                guard let b = peek() else {
                    throw syntax.error("unterminated string: expected a closing quote", at: start)
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
        } else if peek() == UInt8(ascii: "$") {
            position += 1
            throw syntax.error(
                "metadata queries do not support variables such as $\(identifier()): $time... is the only one",
                at: start)
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
        func fail(_ message: String) -> MetadataError { syntax.error(message, at: start) }
        switch (attribute.valueType, raw) {
        case (.string, .quoted(let bytes)), (.string, .bare(let bytes)):
            return (.string(bytes), patternStart)
        case (.number, .quoted(let bytes)), (.number, .bare(let bytes)):
            guard let number = Self.number(bytes) else {
                throw fail(
                    "\(attribute.rawValue) is a number: expected a number such as 1000000, not '\(String(decoding: bytes, as: UTF8.self))'"
                )
            }
            return (.number(number), start)
        case (.date, .date(let time)):
            return (.date(time), start)
        case (.date, .quoted(let bytes)), (.date, .bare(let bytes)):
            // A date value is seconds since 2001-01-01, as the documentation defines it.
            guard let seconds = Self.number(bytes) else {
                throw fail(
                    "\(attribute.rawValue) is a date: use $time.now, $time.today(-7), $time.iso(2025-01-31T00:00:00Z) or seconds since 2001-01-01"
                )
            }
            return (.date(PredicateParser.date(referenceSeconds: seconds)), start)
        case (.boolean, .quoted(let bytes)), (.boolean, .bare(let bytes)):
            switch String(decoding: bytes, as: UTF8.self).lowercased() {
            case "true", "yes", "1": return (.bool(true), start)
            case "false", "no", "0": return (.bool(false), start)
            default: throw fail("\(attribute.rawValue) is a boolean: compare it with true or false (1 or 0)")
            }
        case (_, .date):
            throw fail("\(attribute.rawValue) is a \(attribute.valueType.rawValue), not a date")
        }
    }

    /// A decimal, exponent or `0x` number, finite.
    private static func number(_ bytes: [UInt8]) -> Double? {
        let text = String(decoding: bytes, as: UTF8.self)
        let value =
            Double(text) ?? (text.hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16).map(Double.init) : nil)
            ?? SizeUnit.bytes(bytes)
        return value.flatMap { $0.isFinite ? $0 : nil }
    }

    /// `$time.` has been read: the unit, then an optional `(offset)`.
    private mutating func parseTime(at start: Int) throws(MetadataError) -> Timestamp {
        let unit = identifier()
        if unit == "iso" {
            guard consume("(", skippingSpaces: false) else { throw error("expected '(' after $time.iso") }
            let textStart = position
            while let b = peek(), b != UInt8(ascii: ")") { position += 1 }
            let text = syntax.text(textStart..<position)
            guard consume(")", skippingSpaces: false) else { throw error("expected ')' to close $time.iso(...)") }
            let formatter = ISO8601DateFormatter()
            var parsed = formatter.date(from: text)
            if parsed == nil {
                formatter.formatOptions = [.withFullDate]
                parsed = formatter.date(from: text)
            }
            guard let date = parsed else {
                throw syntax.error(
                    "cannot read '\(text)' as an ISO-8601 date such as 2025-01-31T00:00:00Z", at: textStart)
            }
            return Timestamp(date)
        }
        let units: [String: Calendar.Component] = [
            "now": .second, "today": .day, "yesterday": .day, "this_week": .weekOfYear, "this_month": .month,
            "this_year": .year,
        ]
        guard let component = units[unit] else {
            throw syntax.error(
                "unknown $time.\(unit): expected now, today, yesterday, this_week, this_month, this_year or iso(...)",
                at: start)
        }
        var offset = 0
        if consume("(", skippingSpaces: false) {
            let numberStart = position
            while let b = peek(), b != UInt8(ascii: ")") { position += 1 }
            let text = syntax.text(numberStart..<position).trimmingCharacters(in: .whitespaces)
            if !text.isEmpty {
                guard let value = Int(text.hasPrefix("+") ? String(text.dropFirst()) : text) else {
                    throw syntax.error(
                        "expected a whole number offset such as -7 (or nothing) in $time.\(unit)(...), found '\(text)'",
                        at: numberStart)
                }
                offset = value
            }
            guard consume(")", skippingSpaces: false) else { throw error("expected ')' after the offset") }
        }
        let base: Date?
        switch unit {
        case "now": base = now
        case "today": base = calendar.startOfDay(for: now)
        case "yesterday": base = calendar.date(byAdding: .day, value: -1, to: calendar.startOfDay(for: now))
        default: base = calendar.dateInterval(of: component, for: now)?.start
        }
        // Any whole offset works; one past what a Timestamp holds (1677 to
        // 2262) is clamped, so the date is far in the past or future.
        let limits: [Calendar.Component: Int] = [
            .second: 9_300_000_000, .day: 110_000, .weekOfYear: 16_000, .month: 3_700, .year: 310,
        ]
        let limit = limits[component]!
        let bounded = Swift.max(-limit, Swift.min(limit, offset))
        guard let date = base.flatMap({ calendar.date(byAdding: component, value: bounded, to: $0) }) else {
            throw syntax.error("$time.\(unit)(\(offset)) is a date out of range", at: start)
        }
        return Timestamp(date)
    }

    /// Builds the comparison: `==`/`!=` with wildcards match like `LIKE`.
    private func comparison(
        _ attribute: MetadataAttribute, _ op: ComparisonOperator, _ options: StringCompareOptions,
        _ value: PredicateValue, opStart: Int, valueStart: Int, patternStart: Int, modifierStart: Int
    ) throws(MetadataError) -> PredicateNode {
        var comparison = Comparison(attribute: attribute, op: op, options: options, value: value)
        if attribute.valueType == .string {
            guard op == .equal || op == .notEqual else {
                throw syntax.error("\(attribute.rawValue) is a string: compare it with == or !=", at: opStart)
            }
            guard case .string(let bytes) = value else { return .constant(false) }
            let pattern = try syntax.likePattern(bytes, at: patternStart)
            if pattern.elements.contains(where: { $0 == .any || $0 == .one }) {
                comparison.op = .like
                try check(comparison, opStart, valueStart, patternStart, modifierStart)
                return op == .equal ? .comparison(comparison) : .not(.comparison(comparison))
            }
            // No wildcard: an exact match, with backslash escapes resolved.
            comparison.value = .string(
                pattern.elements.reduce(into: [UInt8]()) { if case .literal(let part) = $1 { $0 += part } })
        }
        try check(comparison, opStart, valueStart, patternStart, modifierStart)
        return .comparison(comparison)
    }

    private func check(
        _ comparison: Comparison, _ opStart: Int, _ valueStart: Int, _ patternStart: Int, _ modifierStart: Int
    ) throws(MetadataError) {
        // Modifiers are written after the value here: a misplaced one is pointed at there.
        let optionsAt = comparison.options.isEmpty ? opStart : min(opStart, modifierStart)
        try syntax.check(
            comparison, opOffset: optionsAt, valueOffset: valueStart, patternOffset: patternStart,
            valueText: "'\(syntax.text(valueStart..<modifierStart))'")
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

    /// NSPredicate's `AND`, `OR` and `NOT` (any case) as a whole word,
    /// accepted beside `&&`, `||` and `!`: a query mixing the two syntaxes
    /// is read rather than refused.
    private mutating func consumeWord(_ word: String) -> Bool {
        skipSpaces()
        let bytes = Array(word.utf8)
        guard source.count - position >= bytes.count else { return false }
        for (k, byte) in bytes.enumerated() where source[position + k] | 0x20 != byte | 0x20 { return false }
        if position + bytes.count < source.count {
            let next = source[position + bytes.count]
            let isWord =
                (next >= 0x41 && next <= 0x5A) || (next >= 0x61 && next <= 0x7A) || (next >= 0x30 && next <= 0x39)
                || next == 0x5F
            if isWord { return false }
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
        return syntax.text(start..<position)
    }

    private func error(_ message: String) -> MetadataError {
        syntax.error(message, at: position)
    }

    private func describeHere() -> String {
        guard position < source.count else { return "the end of the query" }
        return "'" + syntax.text(position..<min(source.count, position + 12)) + "'"
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
