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
///     options    := "[" ("c" | "d" | "cd" | "dc") "]"
///
/// Each rule is one method, so the predicate issue's additions (numbers,
/// dates, `IN`, `BETWEEN`, `MATCHES`, substitution) extend it in place.
struct PredicateParser {
    private let source: [UInt8]
    private let tokens: [PredicateToken]
    private var index = 0

    init(_ source: [UInt8]) throws(MetadataError) {
        self.source = source
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
            return .not(try parseNot())
        }
        return try parsePrimary()
    }

    private mutating func parsePrimary() throws(MetadataError) -> PredicateNode {
        let token = current
        switch token.kind {
        case .leftParen:
            advance()
            let inner = try parseOr()
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
        case .identifier:
            return try parseComparison()
        case .end:
            throw error("expected a comparison such as kMDItemFSName LIKE '*.txt' at the end of the query")
        default:
            throw error("expected an attribute key such as kMDItemFSName, found \(describe(token))")
        }
    }

    private mutating func parseComparison() throws(MetadataError) -> PredicateNode {
        let keyToken = current
        guard case .identifier(let key) = keyToken.kind else {
            throw error("expected an attribute key such as kMDItemFSName")
        }
        guard let attribute = MetadataAttribute(key: key) else {
            let known = MetadataAttribute.all.map(\.rawValue).joined(separator: ", ")
            throw error("unknown attribute '\(key)': expected one of \(known)")
        }
        advance()
        let op = try parseOperator()
        let options = try parseOptions()
        let valueToken = current
        guard case .string(let bytes) = valueToken.kind else {
            throw error("expected a quoted string after \(op.rawValue), found \(describe(valueToken))")
        }
        advance()
        if op == .like {
            do throws(MetadataError) {
                _ = try LikePattern(bytes)
            } catch {
                throw MetadataError(
                    code: .querySyntax, message: error.message, offset: valueToken.offset + 1 + (error.offset ?? 0),
                    source: source)
            }
        }
        return .comparison(Comparison(attribute: attribute, op: op, options: options, value: .string(bytes)))
    }

    private mutating func parseOperator() throws(MetadataError) -> ComparisonOperator {
        let token = current
        let op: ComparisonOperator
        switch token.kind {
        case .equal: op = .equal
        case .notEqual: op = .notEqual
        case .identifier(let word):
            switch word.uppercased() {
            case "LIKE": op = .like
            case "BEGINSWITH": op = .beginsWith
            case "ENDSWITH": op = .endsWith
            case "CONTAINS": op = .contains
            default:
                throw error("expected an operator (==, !=, LIKE, BEGINSWITH, ENDSWITH, CONTAINS), found '\(word)'")
            }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            throw error(
                "names and paths compare with ==, !=, LIKE, BEGINSWITH, ENDSWITH or CONTAINS, not \(describe(token))")
        default:
            throw error("expected an operator (==, !=, LIKE, BEGINSWITH, ENDSWITH, CONTAINS), found \(describe(token))")
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

    // MARK: Helpers

    private var current: PredicateToken { tokens[index] }

    private mutating func advance() {
        if index < tokens.count - 1 { index += 1 }
    }

    private func error(_ message: String) -> MetadataError {
        MetadataError(code: .querySyntax, message: message, offset: current.offset, source: source)
    }

    private func describe(_ token: PredicateToken) -> String {
        if token.kind == .end { return "the end of the query" }
        let text = String(decoding: source[token.offset..<token.offset + token.length], as: UTF8.self)
        return "'\(text)'"
    }
}
