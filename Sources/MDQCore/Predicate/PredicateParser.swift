import MDQSystem

/// Recursive-descent parser for the `NSPredicate` format syntax.
///
/// Grammar (keywords case-insensitive; NOT binds tighter than AND, AND
/// tighter than OR):
///
///     predicate  := or END
///     or         := and (("OR" | "||") and)*
///     and        := not (("AND" | "&&") not)*
///     not        := ("NOT" | "!") not | primary
///     primary    := "(" or ")" | TRUEPREDICATE | FALSEPREDICATE | comparison
///     comparison := quantifier? key operator options? value
///     quantifier := ANY | SOME | ALL | NONE
///     key        := identifier | "#" identifier | %K
///     operator   := == | = | != | <> | < | <= | =< | > | >= | => | LIKE | BEGINSWITH
///                 | ENDSWITH | CONTAINS | MATCHES | BETWEEN | IN | UTI-CONFORMS-TO | UTI-EQUALS
///     options    := "[" letters "]"     (c, d, w, n in any order)
///     value      := string | number | TRUE | YES | FALSE | NO | NIL | NULL
///                 | "{" value ("," value)* "}" | CAST(number, "NSDate") | %@ | %d | %f ...
///
/// Values are checked against the attribute's type (a size compares with
/// numbers, a date with dates), and every error carries the byte offset of
/// the offending text. What metadata queries cannot express (`SUBQUERY`,
/// functions, `$variables`, key paths) is an error that says so.
struct PredicateParser {
    private var syntax: PredicateSyntax
    private let tokens: [PredicateToken]
    /// Why the lexer stopped early, reported when the grammar reaches that point.
    private let lexerError: MetadataError?
    private var index = 0
    private let arguments: [PredicateArgument]
    private var nextArgument = 0
    package static let maximumDepth = PredicateSyntax.maximumDepth

    package init(_ source: [UInt8], arguments: [PredicateArgument] = []) throws(MetadataError) {
        syntax = PredicateSyntax(source)
        self.arguments = arguments
        var lexer = PredicateLexer(source)
        (tokens, lexerError) = lexer.tokenize()
    }

    private var source: [UInt8] { syntax.source }

    /// The predicate the whole text spells.
    ///
    /// - Throws: `.querySyntax` at the first mistake, from the left: a
    ///   grammar error before text the lexer could not read wins over the
    ///   lexer's error (`SUBQUERY(...).@count` says SUBQUERY is not supported).
    mutating func parse() throws(MetadataError) -> PredicateNode {
        do throws(MetadataError) {
            return try parseWhole()
        } catch {
            if let lexerError, (error.offset ?? 0) >= (lexerError.offset ?? 0) { throw lexerError }
            throw error
        }
    }

    private mutating func parseWhole() throws(MetadataError) -> PredicateNode {
        if current.kind == .end {
            throw error("the query is empty: expected a predicate such as kMDItemFSName LIKE '*.txt'")
        }
        let node = try parseOr()
        guard current.kind == .end else {
            throw error("unexpected \(describe(current)) after a complete predicate: expected AND, OR or the end")
        }
        if nextArgument < arguments.count {
            throw syntax.error(
                "\(arguments.count) arguments given but the format uses \(nextArgument)", at: source.count)
        }
        return node
    }

    // MARK: Rules

    private mutating func parseOr() throws(MetadataError) -> PredicateNode {
        var parts = [try parseAnd()]
        while current.kind == .or {
            advance()
            parts.append(try parseAnd())
        }
        return parts.count == 1 ? parts[0] : .or(parts)
    }

    private mutating func parseAnd() throws(MetadataError) -> PredicateNode {
        var parts = [try parseNot()]
        while current.kind == .and {
            advance()
            parts.append(try parseNot())
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private mutating func parseNot() throws(MetadataError) -> PredicateNode {
        if current.kind == .not {
            advance()
            return .not(try nested { (parser) throws(MetadataError) in try parser.parseNot() })
        }
        return try parsePrimary()
    }

    private mutating func nested<T>(_ body: (inout PredicateParser) throws(MetadataError) -> T) throws(MetadataError)
        -> T
    {
        try syntax.enter(at: current.offset)
        defer { syntax.leave() }
        return try body(&self)
    }

    private mutating func parsePrimary() throws(MetadataError) -> PredicateNode {
        let token = current
        switch token.kind {
        case .leftParen:
            advance()
            let inner = try nested { (parser) throws(MetadataError) in try parser.parseOr() }
            guard current.kind == .rightParen else {
                throw error("expected ')' to close the '(' at offset \(token.offset), found \(describe(current))")
            }
            advance()
            return inner
        case .identifier(let word) where word.uppercased() == "TRUEPREDICATE":
            advance()
            return .constant(true)
        case .identifier(let word) where word.uppercased() == "FALSEPREDICATE":
            advance()
            return .constant(false)
        case .identifier, .escapedIdentifier, .formatSpecifier("K"):
            return try parseComparison()
        case .end:
            throw error("expected a comparison such as kMDItemFSName LIKE '*.txt' at the end of the query")
        default:
            throw error("expected an attribute key such as kMDItemFSName, found \(describe(token))")
        }
    }

    private mutating func parseComparison() throws(MetadataError) -> PredicateNode {
        var quantifier: Quantifier?
        if case .identifier(let word) = current.kind, tokens[index + 1].kind != .leftParen {
            switch word.uppercased() {
            case "ANY", "SOME": quantifier = .anyElement
            case "ALL": quantifier = .everyElement
            case "NONE": quantifier = .noElement
            default: break
            }
            if quantifier != nil { advance() }
        }
        let keyToken = current
        let key: String
        switch keyToken.kind {
        case .identifier(let word), .escapedIdentifier(let word):
            key = word
        case .formatSpecifier("K"):
            switch takeArgument(for: keyToken) {
            case .string(let name)?: key = name
            case nil: throw error("missing argument for %K")
            default: throw error("%K needs a key string argument (such as MetadataAttribute.fsName)")
            }
        default:
            throw error(
                "expected an attribute key such as kMDItemFSName after \(quantifier?.rawValue ?? "the quantifier")")
        }
        let isCall = tokens[index + 1].kind == .leftParen
        var attribute = try syntax.attribute(key, at: keyToken.offset, isCall: isCall)
        advance()
        // The key paths Apple code uses on names (`%K.pathExtension`) read
        // a part of the name; any other is reported once its value is
        // known, to suggest the query to write.
        var keyPath = syntax.keyPath(in: key, at: keyToken.offset).map { ($0.1, $0.2) }
        if case .keyPath(let path) = current.kind {
            if let (earlier, offset) = keyPath {
                keyPath = (earlier + "." + path, offset)
            } else {
                keyPath = (path, current.offset)
            }
            advance()
        }
        if let (path, offset) = keyPath {
            if let derived = MetadataAttribute.keyPath(path, on: attribute) {
                attribute = derived
            } else {
                _ = try? parseOperator()
                _ = try? parseOptions()
                throw syntax.keyPath(path, at: offset, value: try? parseValue())
            }
        }
        let opToken = current
        let op = try parseOperator()
        let options = try parseOptions()
        let valueToken = current
        if valueToken.kind == .end {
            throw error("expected a value after '\(text(of: opToken))', found the end of the query")
        }
        let value = try parseValue()
        let comparison = Comparison(
            attribute: attribute, op: op, options: options, value: value, quantifier: quantifier)
        let quoted: Bool
        if case .string = valueToken.kind { quoted = true } else { quoted = false }
        try syntax.check(
            comparison, opOffset: opToken.offset, valueOffset: valueToken.offset,
            patternOffset: valueToken.offset + (quoted ? 1 : 0), valueText: describe(valueToken))
        return .comparison(comparison)
    }

    private mutating func parseOperator() throws(MetadataError) -> ComparisonOperator {
        let token = current
        let op: ComparisonOperator
        let expected =
            "expected an operator (==, !=, <, <=, >, >=, LIKE, BEGINSWITH, ENDSWITH, CONTAINS, MATCHES, BETWEEN, IN, UTI-CONFORMS-TO, UTI-EQUALS)"
        switch token.kind {
        case .equal: op = .equal
        case .notEqual: op = .notEqual
        case .less: op = .less
        case .lessOrEqual: op = .lessOrEqual
        case .greater: op = .greater
        case .greaterOrEqual: op = .greaterOrEqual
        case .identifier(let word):
            guard
                let named = ComparisonOperator.allCases.first(where: {
                    $0.rawValue == word.uppercased() && $0.rawValue.first!.isLetter
                })
            else {
                throw error("\(expected), found '\(word)'")
            }
            op = named
        default:
            throw error("\(expected), found \(describe(token))")
        }
        advance()
        return op
    }

    private mutating func parseOptions() throws(MetadataError) -> StringCompareOptions {
        guard current.kind == .leftBracket else { return [] }
        let open = current
        advance()
        guard case .identifier(let letters) = current.kind else {
            throw error("expected comparison options (c, d, w or n) inside '[ ]'")
        }
        let options = try syntax.options(Array(letters.utf8), at: current.offset)
        advance()
        guard current.kind == .rightBracket else {
            throw error("expected ']' to close the options opened at offset \(open.offset)")
        }
        advance()
        return options
    }

    private mutating func parseValue() throws(MetadataError) -> PredicateValue {
        let token = current
        switch token.kind {
        case .string(let bytes):
            advance()
            return .string(bytes)
        case .number(let value):
            advance()
            return .number(value)
        case .leftBrace:
            advance()
            var values: [PredicateValue] = []
            if current.kind != .rightBrace {
                while true {
                    values.append(try nested { (parser) throws(MetadataError) in try parser.parseValue() })
                    if current.kind == .comma {
                        advance()
                        continue
                    }
                    break
                }
            }
            guard current.kind == .rightBrace else {
                throw error(
                    "expected ',' or '}' in the list opened at offset \(token.offset), found \(describe(current))")
            }
            advance()
            return .list(values)
        case .formatSpecifier(let spec):
            guard let argument = takeArgument(for: token) else { throw error("missing argument for %\(spec)") }
            advance()
            return try value(of: argument, spec: spec, at: token)
        case .identifier(let word):
            switch word.uppercased() {
            case "TRUE", "YES":
                advance()
                return .bool(true)
            case "FALSE", "NO":
                advance()
                return .bool(false)
            case "NIL", "NULL":
                advance()
                return .null
            case "CAST":
                return try parseCast()
            default:
                if tokens[index + 1].kind == .leftParen { throw syntax.unsupportedFunction(word, at: token.offset) }
                if word.hasPrefix("$") { _ = try syntax.attribute(word, at: token.offset) }
                throw error(
                    "expected a value (a quoted string, a number, a {list}, YES/NO, nil or CAST(..., \"NSDate\")), found '\(word)'; quote strings"
                )
            }
        default:
            throw error("expected a value, found \(describe(token))")
        }
    }

    /// `CAST(seconds, "NSDate")`: seconds since 2001-01-01, as NSPredicate does.
    private mutating func parseCast() throws(MetadataError) -> PredicateValue {
        advance()
        guard current.kind == .leftParen else { throw error("expected '(' after CAST") }
        advance()
        let numberToken = current
        let inner = try parseValue()
        guard current.kind == .comma else { throw error("expected ',' and a type name in CAST") }
        advance()
        guard case .string(let type) = current.kind, String(decoding: type, as: UTF8.self) == "NSDate" else {
            throw error("CAST supports the type \"NSDate\" only")
        }
        advance()
        guard current.kind == .rightParen else { throw error("expected ')' to close CAST") }
        advance()
        guard case .number(let seconds) = inner else {
            throw syntax.error(
                "CAST(..., \"NSDate\") takes seconds since 2001-01-01 as a number", at: numberToken.offset)
        }
        return .date(Self.date(referenceSeconds: seconds))
    }

    static func date(referenceSeconds: Double) -> Timestamp {
        let unix = referenceSeconds + PredicateValue.referenceDateOffset
        return Timestamp(nanosecondsSinceEpoch: Int64((unix * 1e9).rounded().clamped))
    }

    private mutating func takeArgument(for token: PredicateToken) -> PredicateArgument? {
        defer { nextArgument += 1 }
        return nextArgument < arguments.count ? arguments[nextArgument] : nil
    }

    private func value(of argument: PredicateArgument, spec: String, at token: PredicateToken) throws(MetadataError)
        -> PredicateValue
    {
        func fail(_ message: String) -> MetadataError { syntax.error(message, at: token.offset) }
        switch spec {
        case "d", "i", "ld", "lld", "u", "lu":
            switch argument {
            case .integer(let value): return .number(Double(value))
            default: throw fail("%\(spec) needs an integer argument")
            }
        case "f", "lf", "g":
            switch argument {
            case .integer(let value): return .number(Double(value))
            case .double(let value): return .number(value)
            default: throw fail("%\(spec) needs a number argument")
            }
        case "@":
            guard let value = try Self.convert(argument) else { throw fail("%@ got an argument of no predicate type") }
            return value
        default:
            throw fail("unknown format specifier %\(spec): use %K, %@, %d, %i, %ld or %f")
        }
    }

    static func convert(_ argument: PredicateArgument) throws(MetadataError) -> PredicateValue? {
        switch argument {
        case .string(let text): return .string(Array(text.utf8))
        case .bytes(let bytes): return .string(bytes)
        case .integer(let value): return .number(Double(value))
        case .double(let value): return .number(value)
        case .date(let date):
            return .date(Timestamp(date))
        case .bool(let value): return .bool(value)
        case .null: return .null
        case .list(let items):
            var values: [PredicateValue] = []
            for item in items {
                guard let value = try convert(item) else { return nil }
                values.append(value)
            }
            return .list(values)
        }
    }

    // MARK: Helpers

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func error(_ message: String) -> MetadataError {
        syntax.error(message, at: current.offset)
    }

    private func text(of token: PredicateToken) -> String {
        String(decoding: source[token.offset..<min(source.count, token.offset + token.length)], as: UTF8.self)
    }

    private func describe(_ token: PredicateToken) -> String {
        if token.kind == .end { return "the end of the query" }
        if case .string = token.kind { return text(of: token) }
        return "'\(text(of: token))'"
    }
}

extension Double {
    /// Clamped into Int64's range (as a Double), NaN to 0.
    fileprivate var clamped: Double {
        if isNaN { return 0 }
        return Swift.min(Swift.max(self, -9.2e18), 9.2e18)
    }
}
