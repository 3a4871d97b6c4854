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
///     comparison := key operator options? value
///     key        := identifier | %K
///     operator   := == | = | != | <> | < | <= | =< | > | >= | => | LIKE | BEGINSWITH
///                 | ENDSWITH | CONTAINS | MATCHES | BETWEEN | IN
///     options    := "[" ("c" | "d" | "cd" | "dc") "]"
///     value      := string | number | TRUE | YES | FALSE | NO | NIL | NULL
///                 | "{" value ("," value)* "}" | CAST(number, "NSDate") | %@ | %d | %f ...
///
/// Values are checked against the attribute's type (a size compares with
/// numbers, a date with dates), and every error carries the byte offset of
/// the offending text.
struct PredicateParser {
    private let source: [UInt8]
    private let tokens: [PredicateToken]
    private var index = 0
    private let arguments: [PredicateArgument]
    private var nextArgument = 0
    /// Nesting depth, bounded so a hostile query cannot exhaust the stack.
    private var depth = 0
    static let maximumDepth = 500

    init(_ source: [UInt8], arguments: [PredicateArgument] = []) throws(MetadataError) {
        self.source = source
        self.arguments = arguments
        var lexer = PredicateLexer(source)
        tokens = try lexer.tokenize()
    }

    mutating func parse() throws(MetadataError) -> PredicateNode {
        if current.kind == .end {
            throw error("the query is empty: expected a predicate such as kMDItemFSName LIKE '*.txt'")
        }
        let node = try parseOr()
        guard current.kind == .end else {
            throw error("unexpected \(describe(current)) after a complete predicate: expected AND, OR or the end")
        }
        if nextArgument < arguments.count {
            throw MetadataError(
                code: .querySyntax,
                message: "\(arguments.count) arguments given but the format uses \(nextArgument)",
                offset: source.count, source: source)
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

    private mutating func nested(
        _ body: (inout PredicateParser) throws(MetadataError) -> PredicateNode
    ) throws(MetadataError) -> PredicateNode {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw error("the query nests deeper than \(Self.maximumDepth) levels") }
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
        case .identifier, .formatSpecifier("K"):
            return try parseComparison()
        case .end:
            throw error("expected a comparison such as kMDItemFSName LIKE '*.txt' at the end of the query")
        default:
            throw error("expected an attribute key such as kMDItemFSName, found \(describe(token))")
        }
    }

    private mutating func parseComparison() throws(MetadataError) -> PredicateNode {
        let keyToken = current
        let key: String
        switch keyToken.kind {
        case .identifier(let word):
            key = word
        case .formatSpecifier("K"):
            switch takeArgument(for: keyToken) {
            case .string(let name)?: key = name
            case nil: throw error("missing argument for %K")
            default: throw error("%K needs a key string argument (such as MetadataAttribute.fsName)")
            }
        default:
            throw error("expected an attribute key such as kMDItemFSName")
        }
        guard let attribute = MetadataAttribute(key: key) else {
            let hint = MetadataAttribute.suggestion(for: key).map { " (did you mean \($0)?)" } ?? ""
            throw error("unknown attribute '\(key)'\(hint)")
        }
        advance()
        let opToken = current
        let op = try parseOperator()
        let options = try parseOptions()
        let valueToken = current
        if valueToken.kind == .end {
            throw error("expected a value after '\(text(of: opToken))', found the end of the query")
        }
        let value = try parseValue()
        return .comparison(
            try check(
                Comparison(attribute: attribute, op: op, options: options, value: value),
                opToken: opToken, valueToken: valueToken))
    }

    private mutating func parseOperator() throws(MetadataError) -> ComparisonOperator {
        let token = current
        let op: ComparisonOperator
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
                throw error(
                    "expected an operator (==, !=, <, <=, >, >=, LIKE, BEGINSWITH, ENDSWITH, CONTAINS, MATCHES, BETWEEN, IN), found '\(word)'"
                )
            }
            op = named
        default:
            throw error(
                "expected an operator (==, !=, <, <=, >, >=, LIKE, BEGINSWITH, ENDSWITH, CONTAINS, MATCHES, BETWEEN, IN), found \(describe(token))"
            )
        }
        advance()
        return op
    }

    private mutating func parseOptions() throws(MetadataError) -> StringCompareOptions {
        guard current.kind == .leftBracket else { return [] }
        let open = current
        advance()
        guard case .identifier(let letters) = current.kind else {
            throw error("expected comparison options c, d or cd inside '[ ]'")
        }
        var options: StringCompareOptions = []
        for (i, letter) in letters.enumerated() {
            switch letter {
            case "c", "C": options.insert(.caseInsensitive)
            case "d", "D": options.insert(.diacriticInsensitive)
            default:
                throw MetadataError(
                    code: .querySyntax,
                    message:
                        "unknown comparison option '\(letter)': expected c (case-insensitive) or d (diacritic-insensitive)",
                    offset: current.offset + i, source: source)
            }
        }
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
                    depth += 1
                    defer { depth -= 1 }
                    guard depth <= Self.maximumDepth else { throw error("the query nests too deeply") }
                    values.append(try parseValue())
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
            throw MetadataError(
                code: .querySyntax, message: "CAST(..., \"NSDate\") takes seconds since 2001-01-01 as a number",
                offset: numberToken.offset, source: source)
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
        func fail(_ message: String) -> MetadataError {
            MetadataError(code: .querySyntax, message: message, offset: token.offset, source: source)
        }
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

    // MARK: Type checking

    /// Checks operator, options and value against the attribute's type.
    private func check(_ c: Comparison, opToken: PredicateToken, valueToken: PredicateToken) throws(MetadataError)
        -> Comparison
    {
        func fail(_ message: String, at token: PredicateToken) -> MetadataError {
            MetadataError(code: .querySyntax, message: message, offset: token.offset, source: source)
        }
        let key = c.attribute.rawValue
        let type = c.attribute.valueType
        if !c.options.isEmpty && type != .string {
            throw fail("[c] and [d] apply to strings; \(key) is a \(type.rawValue)", at: opToken)
        }
        if c.value == .null {
            guard c.op == .equal || c.op == .notEqual else {
                throw fail("nil compares with == or != only", at: valueToken)
            }
            return c
        }
        switch c.op {
        case .between:
            guard case .list(let bounds) = c.value, bounds.count == 2 else {
                throw fail("BETWEEN needs a list of two values, like {1, 10}", at: valueToken)
            }
            guard type == .number || type == .date else {
                throw fail("BETWEEN compares numbers or dates; \(key) is a \(type.rawValue)", at: opToken)
            }
            for bound in bounds { try checkScalar(bound, c.attribute, at: valueToken) }
        case .in:
            guard case .list(let items) = c.value else {
                throw fail("IN needs a list, like {'a.txt', 'b.txt'}", at: valueToken)
            }
            for item in items { try checkScalar(item, c.attribute, at: valueToken) }
        case .like, .beginsWith, .endsWith, .contains, .matches:
            guard type == .string else {
                throw fail("\(c.op.rawValue) compares strings; \(key) is a \(type.rawValue)", at: opToken)
            }
            guard case .string(let bytes) = c.value else {
                throw fail("\(c.op.rawValue) needs a quoted string, found \(describe(valueToken))", at: valueToken)
            }
            if c.op == .like {
                do throws(MetadataError) {
                    _ = try LikePattern(bytes)
                } catch {
                    throw MetadataError(
                        code: .querySyntax, message: error.message,
                        offset: valueToken.offset + (valueToken.kind == .string(bytes) ? 1 : 0) + (error.offset ?? 0),
                        source: source)
                }
            }
            if c.op == .matches, let problem = RegexMatcher.validate(bytes) {
                throw fail("invalid regular expression for MATCHES: \(problem)", at: valueToken)
            }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard type == .number || type == .date else {
                throw fail(
                    "\(c.op.rawValue) compares numbers or dates; \(key) is a \(type.rawValue) (use ==, LIKE, BEGINSWITH...)",
                    at: opToken)
            }
            try checkScalar(c.value, c.attribute, at: valueToken)
        case .equal, .notEqual:
            try checkScalar(c.value, c.attribute, at: valueToken)
        }
        return c
    }

    private func checkScalar(_ value: PredicateValue, _ attribute: MetadataAttribute, at token: PredicateToken)
        throws(MetadataError)
    {
        let key = attribute.rawValue
        let ok: Bool
        switch (attribute.valueType, value) {
        case (.string, .string), (.number, .number), (.date, .date), (.boolean, .bool): ok = true
        default: ok = false
        }
        guard !ok else { return }
        let wanted: String
        switch attribute.valueType {
        case .string: wanted = "a quoted string"
        case .number: wanted = "a number such as 1000000"
        case .date:
            wanted =
                "a date (CAST(seconds since 2001, \"NSDate\"), a Date argument for %@, or $time... in --spotlight syntax)"
        case .boolean: wanted = "YES or NO"
        }
        throw MetadataError(
            code: .querySyntax,
            message: "\(key) is a \(attribute.valueType.rawValue): compare it with \(wanted), not \(describe(token))",
            offset: token.offset, source: source)
    }

    // MARK: Helpers

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func error(_ message: String) -> MetadataError {
        MetadataError(code: .querySyntax, message: message, offset: current.offset, source: source)
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
