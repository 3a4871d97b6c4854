package import MDQCore
import MDQSystem

/// A predicate as a SQL condition on the shared index's rows (`e`, the
/// entry, and `f`, its folder): exactly its matches, or a superset that
/// mdq's own matcher checks again on each row (`exact` false), so every
/// option (`[c]`, `[d]`, `[w]`, `?` over graphemes, dates to the
/// nanosecond) means what it means on the host.
///
/// Names are compared on `e.fold`, the name folded as `[cd]` folds it (the
/// host's folding, `SharedSchema.foldVersion`), so a pattern folded the
/// same way finds every name it could match whatever its options. A part
/// the database cannot narrow becomes `TRUE` (the whole predicate checked
/// again), and a negation keeps only exact parts (the negation of a
/// superset would lose matches).
package struct PredicateSQL {
    package var condition: String
    /// The condition holds for exactly the predicate's matches.
    package var exact: Bool
    /// Some part of it uses one of the shared index's indexes (a trigram
    /// run of a name, an extension, a type, a size or a date), so it does
    /// not read every row.
    package var narrows: Bool
    /// Text parameters, `$n` in `condition` from `firstParameter` on.
    package var parameters: [String?]

    /// An attribute the shared index does not hold: the predicate cannot be
    /// answered across hosts.
    package struct Unpublished: Error, Equatable {
        package var attribute: String
    }

    /// - Parameter firstParameter: the number of the first `$n` used.
    /// - Throws: `Unpublished` naming an attribute hosts do not publish.
    package init(_ predicate: MetadataPredicate, firstParameter: Int = 1) throws(Unpublished) {
        var translator = Translator(next: firstParameter)
        let part = try translator.translate(predicate.node)
        condition = part.sql
        exact = part.exact
        narrows = part.narrows
        parameters = translator.parameters
    }
}

private struct Part {
    var sql: String
    var exact: Bool
    var narrows: Bool

    static let anything = Part(sql: "TRUE", exact: false, narrows: false)
}

private struct Translator {
    var next: Int
    var parameters: [String?] = []
    let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])

    init(next: Int) {
        self.next = next
    }

    /// Forgets the parameters made since `count` were: for parts whose
    /// SQL is dropped.
    mutating func rollBack(to count: Int) {
        next -= parameters.count - count
        parameters.removeLast(parameters.count - count)
    }

    mutating func parameter(_ value: String) -> String {
        parameters.append(value)
        defer { next += 1 }
        return "$\(next)"
    }

    mutating func translate(_ node: PredicateNode) throws(PredicateSQL.Unpublished) -> Part {
        switch node {
        case .constant(let value):
            return Part(sql: value ? "TRUE" : "FALSE", exact: true, narrows: !value)
        case .and(let nodes):
            var parts: [Part] = []
            for node in nodes { parts.append(try translate(node)) }
            let kept = parts.filter { $0.sql != "TRUE" }
            return Part(
                sql: kept.isEmpty ? "TRUE" : "(" + kept.map(\.sql).joined(separator: " AND ") + ")",
                exact: parts.allSatisfy(\.exact), narrows: parts.contains(where: \.narrows))
        case .or(let nodes):
            let before = parameters.count
            var parts: [Part] = []
            for node in nodes { parts.append(try translate(node)) }
            if parts.contains(where: { $0.sql == "TRUE" }) {
                rollBack(to: before)
                return Part(sql: "TRUE", exact: parts.allSatisfy(\.exact), narrows: false)
            }
            return Part(
                sql: "(" + parts.map(\.sql).joined(separator: " OR ") + ")", exact: parts.allSatisfy(\.exact),
                narrows: !parts.isEmpty && parts.allSatisfy(\.narrows))
        case .not(let inner):
            let before = parameters.count
            let part = try translate(inner)
            guard part.exact else {
                rollBack(to: before)
                return .anything
            }
            // A comparison on a column a row lacks (a folder's size) is
            // NULL, which NOT leaves NULL: false here, true once negated,
            // as on the host. Only here: a wrapped test cannot use an index.
            return Part(sql: "NOT coalesce(\(part.sql), false)", exact: true, narrows: false)
        case .comparison(let comparison):
            return try translate(comparison)
        }
    }

    mutating func translate(_ c: Comparison) throws(PredicateSQL.Unpublished) -> Part {
        // A list (the type tree): "some element equals" and its negation
        // are translated; ALL, and inequality, are checked on each row.
        if c.attribute.isList && (c.op != .equal || c.quantifier == .everyElement) {
            // The lists are the type tree and imported ones (never published).
            if c.attribute.isImported { throw PredicateSQL.Unpublished(attribute: c.attribute.rawValue) }
            return .anything
        }
        if c.quantifier == .noElement {
            var positive = c
            positive.quantifier = .anyElement
            return try translate(.not(.comparison(positive)))
        }
        if c.op == .notEqual {
            var positive = c
            positive.op = .equal
            return try translate(.not(.comparison(positive)))
        }
        switch c.attribute.source {
        case .name:
            return name(c, column: "e.fold")
        case .nameExtension:
            // The column holds an extension for `.png` too, which the
            // host says has none: checked on each row.
            var part = name(c, column: "e.ext")
            part.exact = false
            return part
        case .size:
            return number(c, column: "e.size")
        case .creationDate:
            return date(c, column: "e.btime")
        case .contentChangeDate:
            return date(c, column: "e.mtime")
        case .contentType:
            return type(c, column: "e.content_type")
        case .contentTypeTree:
            return type(c, column: "e.content_type")
        case .displayName, .nameWithoutExtension, .path, .url, .kind:
            // Checked on each row (the display name is the name less its
            // extension; the path is its folder's and the name).
            return .anything
        case .accessTime, .isUbiquitous, .isExternalDocument, .containerDisplayName, .hasUnresolvedConflicts,
            .conflictOriginalPath, .synced, .imported:
            throw PredicateSQL.Unpublished(attribute: c.attribute.rawValue)
        }
    }

    /// Names (and extensions), compared folded: exact only for `[cd]`
    /// without `[w]` or `?` on ASCII text, where folding decides alone.
    mutating func name(_ c: Comparison, column: String) -> Part {
        if c.op == .in, case .list(let values) = c.value {
            var parts: [Part] = []
            for value in values {
                var one = c
                one.op = .equal
                one.value = value
                parts.append(name(one, column: column))
            }
            guard !parts.isEmpty else { return Part(sql: "FALSE", exact: true, narrows: true) }
            return Part(
                sql: "(" + parts.map(\.sql).joined(separator: " OR ") + ")", exact: parts.allSatisfy(\.exact),
                narrows: parts.allSatisfy(\.narrows))
        }
        guard case .string(let raw) = c.value else { return .anything }
        let folded = folder.folded(raw)
        // An extension test that an empty extension can pass: `.png` has
        // none on the host but `png` in the column.
        if column == "e.ext", folded.allSatisfy({ $0 == UInt8(ascii: "*") }) { return .anything }
        // Text that is not UTF-8 is matched byte-wise on the host; the
        // database holds such names with U+FFFD: checked on each row.
        guard String(validating: folded, as: UTF8.self) != nil else { return .anything }
        var exact =
            c.options.contains(.caseInsensitive) && c.options.contains(.diacriticInsensitive)
            && !c.options.contains(.wordBased) && raw.allSatisfy { $0 < 0x80 }
        var pattern: [UInt8] = []
        var run = 0
        var longest = 0
        // Whether the pattern ends with a `%` wildcard (not an escaped one).
        var endsWithAny = false
        func literal(_ byte: UInt8) {
            if byte == UInt8(ascii: "%") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "\\") {
                pattern.append(UInt8(ascii: "\\"))
            }
            pattern.append(byte)
            run += 1
            longest = max(longest, run)
            endsWithAny = false
        }
        func any() {
            if !endsWithAny { pattern.append(UInt8(ascii: "%")) }
            endsWithAny = true
            run = 0
        }
        if c.options.contains(.wordBased) {
            // A word anywhere in the name: its letters, somewhere.
            any()
            var i = 0
            while i < folded.count {
                let byte = folded[i]
                if c.op == .like && (byte == UInt8(ascii: "*") || byte == UInt8(ascii: "?")) {
                    any()
                } else if c.op == .like, byte == UInt8(ascii: "\\"), i + 1 < folded.count {
                    i += 1
                    literal(folded[i])
                } else {
                    literal(byte)
                }
                i += 1
            }
            any()
        } else {
            switch c.op {
            case .like:
                var i = 0
                while i < folded.count {
                    let byte = folded[i]
                    if byte == UInt8(ascii: "*") {
                        any()
                    } else if byte == UInt8(ascii: "?") {
                        // One character: one or more code points.
                        pattern.append(UInt8(ascii: "_"))
                        endsWithAny = false
                        any()
                        exact = false
                    } else if byte == UInt8(ascii: "\\"), i + 1 < folded.count {
                        i += 1
                        literal(folded[i])
                    } else {
                        literal(byte)
                    }
                    i += 1
                }
            case .equal:
                for byte in folded { literal(byte) }
            case .beginsWith:
                for byte in folded { literal(byte) }
                any()
            case .endsWith:
                any()
                for byte in folded { literal(byte) }
            case .contains:
                any()
                for byte in folded { literal(byte) }
                any()
            case .matches, .in, .less, .lessOrEqual, .greater, .greaterOrEqual, .between, .notEqual,
                .utiConformsTo, .utiEquals:
                return .anything
            }
        }
        // `*.png` under [cd]: the extension column, exact.
        if column == "e.fold", c.op == .like, exact, !c.options.contains(.wordBased), folded.count > 2,
            folded[0] == UInt8(ascii: "*"), folded[1] == UInt8(ascii: "."),
            folded[2...].allSatisfy({
                $0 != UInt8(ascii: "*") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "\\")
                    && $0 != UInt8(ascii: ".")
            })
        {
            return Part(
                sql: "e.ext = \(parameter(String(decoding: folded[2...], as: UTF8.self)))", exact: true, narrows: true)
        }
        let text = String(decoding: pattern, as: UTF8.self)
        // A trigram index needs three characters in a row; an extension is
        // an exact column.
        let narrows = column == "e.ext" ? !text.contains("%") && !text.contains("_") : longest >= 3
        let sql: String
        if column == "e.ext" && c.op == .equal && !c.options.contains(.wordBased) {
            sql = "\(column) = \(parameter(String(decoding: folded, as: UTF8.self)))"
        } else {
            sql = "\(column) LIKE \(parameter(text))"
        }
        return Part(sql: "(\(sql))", exact: exact, narrows: narrows)
    }

    mutating func number(_ c: Comparison, column: String) -> Part {
        func value(_ v: PredicateValue) -> Double? {
            if case .number(let n) = v { return n }
            return nil
        }
        let sql: String
        switch (c.op, c.value) {
        case (.between, .list(let bounds)) where bounds.count == 2:
            guard let low = value(bounds[0]), let high = value(bounds[1]) else { return .anything }
            sql = "\(column) BETWEEN \(parameter(String(low)))::float8 AND \(parameter(String(high)))::float8"
        case (.in, .list(let values)):
            let numbers = values.compactMap(value)
            guard numbers.count == values.count else { return .anything }
            sql =
                "\(column) = ANY(\(parameter(PostgresArray.numbers(numbers)))::float8[])"
        default:
            guard let number = value(c.value), let op = Self.sqlOperator(c.op) else { return .anything }
            sql = "\(column) \(op) \(parameter(String(number)))::float8"
        }
        return Part(sql: "(\(sql))", exact: true, narrows: true)
    }

    /// Dates, to the microsecond the database keeps: widened by one, and
    /// checked again on each row to the nanosecond.
    mutating func date(_ c: Comparison, column: String) -> Part {
        func micros(_ v: PredicateValue) -> Int64? {
            if case .date(let time) = v { return time.nanosecondsSinceEpoch / 1000 }
            return nil
        }
        func at(_ micros: Int64) -> String { "to_timestamp(\(parameter(String(micros)))::float8 / 1e6)" }
        let sql: String
        switch (c.op, c.value) {
        case (.between, .list(let bounds)) where bounds.count == 2:
            guard let low = micros(bounds[0]), let high = micros(bounds[1]) else { return .anything }
            sql = "\(column) BETWEEN \(at(low - 2)) AND \(at(high + 2))"
        default:
            guard let value = micros(c.value) else { return .anything }
            switch c.op {
            case .less, .lessOrEqual: sql = "\(column) <= \(at(value + 2))"
            case .greater, .greaterOrEqual: sql = "\(column) >= \(at(value - 2))"
            case .equal: sql = "\(column) BETWEEN \(at(value - 2)) AND \(at(value + 2))"
            default: return .anything
            }
        }
        return Part(sql: "(\(sql))", exact: false, narrows: true)
    }

    /// Content types: equal, or conforming (by mdq's type table, the one
    /// every host typed its entries with).
    mutating func type(_ c: Comparison, column: String) -> Part {
        guard case .string(let raw) = c.value, let identifier = String(validating: raw, as: UTF8.self),
            c.options.isEmpty
        else { return .anything }
        let types: [String]
        switch c.op {
        case .equal where c.attribute.source == .contentTypeTree:
            // Some element of the tree is exactly this type.
            types = ContentType.identifiers(conformingTo: identifier)
        case .equal:
            types = [identifier]
        case .utiEquals, .utiConformsTo:
            // Without regard to case on the host: the type mdq knows so.
            guard let known = ContentType.knownIdentifier(caseInsensitive: identifier) else { return .anything }
            types = c.op == .utiEquals ? [known] : ContentType.identifiers(conformingTo: known)
        default:
            return .anything
        }
        guard !types.isEmpty else { return Part(sql: "FALSE", exact: true, narrows: true) }
        return Part(
            sql: "\(column) = ANY(\(parameter(PostgresArray.strings(types)))::text[])", exact: true, narrows: true)
    }

    static func sqlOperator(_ op: ComparisonOperator) -> String? {
        switch op {
        case .equal: "="
        case .less: "<"
        case .lessOrEqual: "<="
        case .greater: ">"
        case .greaterOrEqual: ">="
        default: nil
        }
    }
}
