import MDQSystem

/// The scaffolding both query parsers (`PredicateParser` for the
/// `NSPredicate` format syntax, `SpotlightQueryParser` for mdfind's) share:
/// the query text errors point into, the nesting guard, attribute lookup
/// with its "did you mean" and unsupported-construct errors, option
/// letters, LIKE patterns whose errors are moved to their place in the
/// query, and the type check of a finished comparison. Each parser keeps
/// only its grammar.
struct PredicateSyntax {
    /// The query text, as given.
    let source: [UInt8]
    /// Nesting depth, bounded so a hostile query cannot exhaust the stack.
    private var depth = 0
    package static let maximumDepth = 500

    package init(_ source: [UInt8]) {
        self.source = source
    }

    /// A syntax error with a caret under `offset`.
    func error(_ message: String, at offset: Int) -> MetadataError {
        .syntax(message, at: min(max(0, offset), source.count), in: source)
    }

    /// The text of `source[range]`, lossily decoded, for messages.
    func text(_ range: Range<Int>) -> String {
        String(decoding: source[range.clamped(to: 0..<source.count)], as: UTF8.self)
    }

    // MARK: Nesting

    /// Enters one nesting level (a parenthesis, a NOT, a list); pair with
    /// `leave()`.
    ///
    /// - Throws: `.querySyntax` at `offset` past `maximumDepth` levels.
    mutating func enter(at offset: Int) throws(MetadataError) {
        depth += 1
        guard depth <= Self.maximumDepth else {
            depth -= 1
            throw error("the query nests deeper than \(Self.maximumDepth) levels", at: offset)
        }
    }

    /// Leaves the level `enter(at:)` entered.
    mutating func leave() {
        depth -= 1
    }

    // MARK: Attributes

    /// The attribute `key` names.
    ///
    /// - Parameters:
    ///   - key: the key as written (a `#` escape already removed).
    ///   - offset: where the key starts.
    ///   - isCall: the key is followed by `(`.
    /// - Throws: `.querySyntax` naming what metadata queries do not support
    ///   (`SUBQUERY`, functions, `$variables`, key paths) or the unknown key
    ///   with the closest known one.
    func attribute(_ key: String, at offset: Int, isCall: Bool = false) throws(MetadataError) -> MetadataAttribute {
        if let (attribute, _, _) = keyPath(in: key, at: offset) { return attribute }
        if let attribute = MetadataAttribute(key: key) {
            if isCall { throw unsupportedFunction(key, at: offset) }
            return attribute
        }
        if key.uppercased() == "SUBQUERY" {
            throw error(
                "metadata queries do not support SUBQUERY: compare the item's own attributes", at: offset)
        }
        if isCall { throw unsupportedFunction(key, at: offset) }
        if key.hasPrefix("$") {
            throw error(
                "metadata queries do not support variables such as \(key): write the value, or pass it for %@",
                at: offset)
        }
        let hint = MetadataAttribute.suggestion(for: key).map { " (did you mean \($0)?)" } ?? ""
        throw error("unknown attribute '\(key)'\(hint)", at: offset)
    }

    func unsupportedFunction(_ name: String, at offset: Int) -> MetadataError {
        error(
            "metadata queries do not support functions such as \(name)(...): compare an attribute with a value",
            at: offset)
    }

    /// A key written with a key path (`kMDItemFSName.pathExtension`): the
    /// attribute, the path after the first dot, and the dot's offset.
    func keyPath(in key: String, at offset: Int) -> (MetadataAttribute, String, Int)? {
        guard let dot = key.firstIndex(of: "."), let attribute = MetadataAttribute(key: String(key[..<dot])) else {
            return nil
        }
        return (
            attribute, String(key[key.index(after: dot)...]), offset + key.utf8.distance(from: key.startIndex, to: dot)
        )
    }

    /// The error for a key path (`%K.pathExtension == 'list'`), at the dot;
    /// with the value compared, the advice names the query to write instead.
    func keyPath(_ path: String, at offset: Int, value: PredicateValue?) -> MetadataError {
        if path == "pathExtension", case .string(let bytes)? = value, !bytes.isEmpty {
            let ext = String(decoding: bytes, as: UTF8.self)
            return error("key paths are not supported; use kMDItemFSName LIKE '*.\(ext)'", at: offset)
        }
        let advice =
            path == "pathExtension"
            ? "for an extension use kMDItemFSName LIKE '*.ext'" : "compare an attribute itself, such as kMDItemFSName"
        return error("key paths are not supported in metadata queries (.\(path)); \(advice)", at: offset)
    }

    // MARK: Options and patterns

    /// Option letters (`c`, `d`, `w`, `n`) starting at `offset`.
    ///
    /// - Throws: `.querySyntax` at the first letter that is not an option.
    func options(_ letters: some Sequence<UInt8>, at offset: Int) throws(MetadataError) -> StringCompareOptions {
        var options: StringCompareOptions = []
        for (i, letter) in letters.enumerated() {
            guard let option = StringCompareOptions.letter(letter) else {
                throw error(
                    "unknown comparison option '\(Character(Unicode.Scalar(letter)))': expected c (case-insensitive), d (diacritic-insensitive), w (word-based) or n (normalised)",
                    at: offset + i)
            }
            options.formUnion(option)
        }
        return options
    }

    /// `bytes` as a LIKE pattern; `offset` is where its first byte sits in
    /// the query, so a mistake in the pattern gets its caret there.
    func likePattern(_ bytes: [UInt8], at offset: Int) throws(MetadataError) -> LikePattern {
        do throws(MetadataError) {
            return try LikePattern(bytes)
        } catch {
            throw self.error(error.message, at: offset + (error.offset ?? 0))
        }
    }

    // MARK: Type checking

    /// Checks a finished comparison's operator, options and value against
    /// the attribute's type.
    ///
    /// - Parameters:
    ///   - opOffset: where the operator starts, for operator errors.
    ///   - valueOffset: where the value starts, for value errors.
    ///   - patternOffset: where a string value's first byte sits (after
    ///     its quote), for errors inside a LIKE pattern.
    ///   - valueText: the value as written, for messages.
    func check(
        _ c: Comparison, opOffset: Int, valueOffset: Int, patternOffset: Int, valueText: String
    ) throws(MetadataError) {
        let key = c.attribute.rawValue
        let type = c.attribute.valueType
        if !c.options.isEmpty && type != .string {
            throw error("options such as [c] and [d] apply to strings; \(key) is a \(type.rawValue)", at: opOffset)
        }
        if c.options.contains(.wordBased) && ![.equal, .notEqual, .like].contains(c.op) {
            throw error("[w] (word-based) applies to ==, != and LIKE", at: opOffset)
        }
        if c.value == .null {
            guard c.op == .equal || c.op == .notEqual else {
                throw error("nil compares with == or != only", at: valueOffset)
            }
            return
        }
        switch c.op {
        case .between:
            guard case .list(let bounds) = c.value, bounds.count == 2 else {
                throw error("BETWEEN needs a list of two values, like {1, 10}", at: valueOffset)
            }
            guard type == .number || type == .date else {
                throw error("BETWEEN compares numbers or dates; \(key) is a \(type.rawValue)", at: opOffset)
            }
            for bound in bounds { try checkScalar(bound, c.attribute, at: valueOffset, valueText) }
        case .in:
            switch c.value {
            case .list(let items):
                for item in items { try checkScalar(item, c.attribute, at: valueOffset, valueText) }
            case .string where type == .string:
                break  // the value is a substring of the text given
            default:
                throw error(
                    "IN needs a list, like {'a.txt', 'b.txt'}, or a string to find the value in", at: valueOffset)
            }
        case .like, .beginsWith, .endsWith, .contains, .matches, .utiConformsTo, .utiEquals:
            guard type == .string else {
                throw error("\(c.op.rawValue) compares strings; \(key) is a \(type.rawValue)", at: opOffset)
            }
            guard case .string(let bytes) = c.value else {
                throw error("\(c.op.rawValue) needs a quoted string, found \(valueText)", at: valueOffset)
            }
            if c.op == .like { _ = try likePattern(bytes, at: patternOffset) }
            if c.op == .matches, let problem = RegexMatcher.validate(bytes) {
                // At the mistake when ICU says where it is.
                throw error(
                    "invalid regular expression for MATCHES: \(problem.reason)",
                    at: problem.offset.map { patternOffset + $0 } ?? valueOffset)
            }
            if (c.op == .utiConformsTo || c.op == .utiEquals) && c.attribute.source != .contentType {
                throw error("\(c.op.rawValue) applies to kMDItemContentType", at: opOffset)
            }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard type == .number || type == .date else {
                throw error(
                    "\(c.op.rawValue) compares numbers or dates; \(key) is a \(type.rawValue) (use ==, LIKE, BEGINSWITH...)",
                    at: opOffset)
            }
            try checkScalar(c.value, c.attribute, at: valueOffset, valueText)
        case .equal, .notEqual:
            try checkScalar(c.value, c.attribute, at: valueOffset, valueText)
        }
    }

    private func checkScalar(
        _ value: PredicateValue, _ attribute: MetadataAttribute, at offset: Int, _ valueText: String
    ) throws(MetadataError) {
        switch (attribute.valueType, value) {
        case (.string, .string), (.number, .number), (.date, .date), (.boolean, .bool): return
        default: break
        }
        let wanted: String
        switch attribute.valueType {
        case .string: wanted = "a quoted string"
        case .number: wanted = "a number such as 1000000"
        case .date:
            wanted =
                "a date (CAST(seconds since 2001, \"NSDate\"), a Date argument for %@, or $time... in --spotlight syntax)"
        case .boolean: wanted = "YES or NO"
        }
        throw error(
            "\(attribute.rawValue) is a \(attribute.valueType.rawValue): compare it with \(wanted), not \(valueText)",
            at: offset)
    }
}
