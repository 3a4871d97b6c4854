package import MDQCore
import MDQSystem
import MDQWire

/// A predicate as a condition on the shared index's rows (`e`, the entry):
/// exactly its matches, or a superset that mdq's own matcher checks again
/// on each row (`exact` false), so every option (`[c]`, `[d]`, `[w]`, `?`
/// over graphemes, dates to the nanosecond) means what it means on the
/// host.
///
/// Names are compared on `e.fold`, the name folded as `[cd]` folds it (the
/// host's folding, `SharedSchema.foldVersion`), so a pattern folded the
/// same way finds every name it could match whatever its options. A part
/// the database cannot narrow becomes `TRUE` (the whole predicate checked
/// again), and a negation keeps only exact parts (the negation of a
/// superset would lose matches).
///
/// The condition is a tree (`SQLCondition`) sent as JSON to the schema's
/// search functions (`mdq.search`, `mdq.count`), which make it SQL with
/// the columns and operators they know and every value quoted: no SQL a
/// client writes runs in the database.
package struct PredicateSQL {
    package var condition: SQLCondition
    /// The condition holds for exactly the predicate's matches.
    package var exact: Bool
    /// Some part of it uses one of the shared index's indexes (a trigram
    /// run of a name, an extension, a type, a size or a date), so it does
    /// not read every row.
    package var narrows: Bool
    /// What mdq checks on each row the condition gives, when it is not
    /// exact: the predicate less the tests of its top `AND` the condition
    /// decides exactly (each row holds them). It never tests a file's
    /// words, which only the database has.
    package var recheck: MetadataPredicate
    /// When it does not narrow: the test that leaves the most rows (the
    /// first such, in the order written), for a caret under it.
    package var unnarrowed: Culprit?

    /// A comparison as written: its attribute and its text value.
    package struct Culprit: Equatable, Sendable {
        package var attribute: String
        package var literal: [UInt8]?
    }

    /// Whether hosts publish `attribute` (or it follows from what they
    /// publish: a display name, a path): what a search across hosts may
    /// test, show (`--attr`), sort or group by.
    package static func publishes(_ attribute: MetadataAttribute) -> Bool {
        switch attribute.source {
        case .accessTime, .isUbiquitous, .isExternalDocument, .containerDisplayName, .hasUnresolvedConflicts,
            .conflictOriginalPath, .synced:
            false
        case .imported:
            // Hosts publish a file's words, not its text (version 10), and
            // the other attributes importers read (version 12).
            attribute != .textContent
        case .name, .nameExtension, .size, .creationDate, .contentChangeDate, .contentType, .contentTypeTree,
            .displayName, .nameWithoutExtension, .path, .url, .kind, .ownerUserID, .ownerGroupID, .permissions:
            true
        }
    }

    /// The column the database orders by as mdq sorts `attribute` (numbers
    /// and dates, a missing value first), or nil when only mdq can sort it
    /// (names sort as Finder does).
    package static func sortColumn(_ attribute: MetadataAttribute) -> SQLCondition.Column? {
        switch attribute.source {
        case .size: .size
        case .contentChangeDate: .mtime
        case .creationDate: .btime
        default: nil
        }
    }

    /// An attribute the shared index does not hold, or a test of it the
    /// shared index cannot answer exactly (`reason`): the predicate cannot
    /// be answered across hosts.
    package struct Unpublished: Error, Equatable {
        package var attribute: String
        /// Why the test cannot be answered, when the attribute is
        /// published (a file's words) but not for this test.
        package var reason: String? = nil
    }

    /// Why a test of a file's text is not answered across hosts.
    static let textTests =
        "across hosts, kMDItemTextContent is tested only for a word or a word's start, case and diacritics "
        + "ignored (== 'invoice'cdw, == 'invoi*'cdw): hosts publish each file's words, not its text"

    /// - Throws: `Unpublished` naming an attribute hosts do not publish.
    package init(_ predicate: MetadataPredicate) throws(Unpublished) {
        let translator = Translator()
        let part = try translator.translate(predicate.node)
        condition = part.condition
        exact = part.exact
        narrows = part.narrows
        unnarrowed = part.narrows ? nil : part.culprit
        let conjuncts: [PredicateNode]
        if case .and(let nodes) = predicate.node { conjuncts = nodes } else { conjuncts = [predicate.node] }
        var kept: [PredicateNode] = []
        for node in conjuncts where !(try translator.translate(node).exact) { kept.append(node) }
        recheck = MetadataPredicate(node: kept.count == 1 ? kept[0] : .and(kept))
        if kept.contains(where: Self.testsText) {
            throw Unpublished(
                attribute: MetadataAttribute.textContent.rawValue,
                reason: "across hosts, a test of kMDItemTextContent is ORed only with tests the shared index "
                    + "answers exactly (a name with [cd], a size, a date, a type), not with one mdq checks on "
                    + "each row: that check cannot read the text")
        }
    }

    /// Whether `node` tests a file's text anywhere.
    private static func testsText(_ node: PredicateNode) -> Bool {
        switch node {
        case .constant: false
        case .comparison(let c): c.attribute == .textContent
        case .and(let nodes), .or(let nodes): nodes.contains(where: testsText)
        case .not(let inner): testsText(inner)
        }
    }
}

/// A condition on an entry's columns, as `mdq.condition_sql` reads it
/// (`Documentation/shared-index.md`): JSON arrays whose first element
/// names the test, values as JSON strings.
package indirect enum SQLCondition: Equatable, Sendable {
    package enum Column: String, Sendable {
        case fold, ext, size, mtime, btime
        case contentType = "content_type"
        /// An entry's access class's owner, group and permission bits
        /// (schema version 10): numbers, tested on the class.
        case owner, group, mode
    }

    case constant(Bool)
    case and([SQLCondition])
    case or([SQLCondition])
    /// True where the inner condition is false, or NULL (a comparison on
    /// a column a row lacks, such as a folder's size: false on the host,
    /// true once negated).
    case not(SQLCondition)
    /// `LIKE`, with `\` escaping `%`, `_` and itself.
    case like(Column, String)
    case equals(Column, String)
    case oneOf(Column, [String])
    /// `=`, `<`, `<=`, `>`, `>=` on a number.
    case compare(Column, String, Double)
    case between(Column, Double, Double)
    case numberIn(Column, [Double])
    /// A file the viewer may read whose text holds the word (folded as
    /// `TextWords` folds it), or, with `prefix`, a word starting with it
    /// (`mdq.content`, schema version 10).
    case words([UInt8], prefix: Bool)
    /// The entries with these ids (`entry_id`), at most 10,000 (version
    /// 10): a live search asks which of a host's changed entries match.
    case entries([UInt64])
    /// A file the viewer may read whose imported attributes hold this one
    /// (`mdq.content.attrs`, version 12).
    case attribute(String)
    /// Microseconds since the epoch, both bounds included.
    case timeAtMost(Column, Int64)
    case timeAtLeast(Column, Int64)
    case timeBetween(Column, Int64, Int64)

    /// The JSON `mdq.condition_sql` reads, its strings escaped as all
    /// JSON mdq writes (`JSONWriter`).
    package var json: String {
        var out = JSONWriter()
        write(into: &out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    private func write(into out: inout JSONWriter) {
        /// `[op, column, value…]`, each value a string or, with `list`, an
        /// array of strings.
        func test(_ op: String, _ column: Column, _ values: [String], list: Bool = false) {
            out.raw("[")
            out.string(op)
            out.raw(",")
            out.string(column.rawValue)
            out.raw(list ? ",[" : ",")
            for (i, value) in values.enumerated() {
                if i > 0 { out.raw(",") }
                out.string(value)
            }
            out.raw(list ? "]]" : "]")
        }
        switch self {
        case .constant(let value):
            out.bool(value)
        case .and(let parts), .or(let parts):
            out.raw("[")
            out.string(isAnd ? "and" : "or")
            for part in parts {
                out.raw(",")
                part.write(into: &out)
            }
            out.raw("]")
        case .not(let inner):
            out.raw("[\"not\",")
            inner.write(into: &out)
            out.raw("]")
        case .like(let column, let pattern): test("like", column, [pattern])
        case .equals(let column, let value): test("=", column, [value])
        case .oneOf(let column, let values): test("in", column, values, list: true)
        case .compare(let column, let op, let value): test("number" + op, column, [String(value)])
        case .between(let column, let low, let high): test("number-between", column, [String(low), String(high)])
        case .numberIn(let column, let values): test("number-in", column, values.map { String($0) }, list: true)
        case .words(let word, let prefix):
            out.raw("[")
            out.string(prefix ? "word-prefix" : "words")
            out.raw(",")
            out.string(word)
            out.raw("]")
        case .attribute(let name):
            out.raw("[\"attribute\",")
            out.string(name)
            out.raw("]")
        case .entries(let ids):
            out.raw("[\"entries\",[")
            for (i, id) in ids.enumerated() {
                if i > 0 { out.raw(",") }
                out.string(String(Int64(bitPattern: id)))
            }
            out.raw("]]")
        case .timeAtMost(let column, let micros): test("time<=", column, [String(micros)])
        case .timeAtLeast(let column, let micros): test("time>=", column, [String(micros)])
        case .timeBetween(let column, let low, let high): test("time-between", column, [String(low), String(high)])
        }
    }

    private var isAnd: Bool {
        if case .and = self { return true }
        return false
    }

    /// Whether it tests a file's words anywhere.
    package var testsWords: Bool {
        switch self {
        case .words: true
        case .and(let parts), .or(let parts): parts.contains(where: \.testsWords)
        case .not(let inner): inner.testsWords
        default: false
        }
    }
}

private struct Part {
    var condition: SQLCondition
    var exact: Bool
    var narrows: Bool
    /// The comparison to blame when it does not narrow.
    var culprit: PredicateSQL.Culprit? = nil

    static let anything = Part(condition: .constant(true), exact: false, narrows: false)

    var isTrue: Bool { condition == .constant(true) }
}

private struct Translator {
    let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])

    func translate(_ node: PredicateNode) throws(PredicateSQL.Unpublished) -> Part {
        switch node {
        case .constant(let value):
            return Part(condition: .constant(value), exact: true, narrows: !value)
        case .and(let nodes):
            var parts: [Part] = []
            for node in nodes { parts.append(try translate(node)) }
            let kept = parts.filter { !$0.isTrue }
            return Part(
                condition: kept.isEmpty ? .constant(true) : .and(kept.map(\.condition)),
                exact: parts.allSatisfy(\.exact), narrows: parts.contains(where: \.narrows),
                culprit: parts.lazy.compactMap(\.culprit).first)
        case .or(let nodes):
            var parts: [Part] = []
            for node in nodes { parts.append(try translate(node)) }
            let culprit = parts.first { !$0.narrows && $0.culprit != nil }?.culprit
            if parts.contains(where: \.isTrue) {
                return Part(
                    condition: .constant(true), exact: parts.allSatisfy(\.exact), narrows: false, culprit: culprit)
            }
            return Part(
                condition: .or(parts.map(\.condition)), exact: parts.allSatisfy(\.exact),
                narrows: !parts.isEmpty && parts.allSatisfy(\.narrows), culprit: culprit)
        case .not(let inner):
            let part = try translate(inner)
            // A file without words published (a folder, one not imported
            // yet, one the viewer may not read) passes a negated test in
            // SQL, not on its host.
            if part.condition.testsWords {
                throw PredicateSQL.Unpublished(
                    attribute: MetadataAttribute.textContent.rawValue,
                    reason: "across hosts, kMDItemTextContent is not tested under NOT or with !=")
            }
            guard part.exact else {
                var anything = Part.anything
                anything.culprit = part.culprit
                return anything
            }
            return Part(condition: .not(part.condition), exact: true, narrows: false, culprit: part.culprit)
        case .comparison(let comparison):
            var part = try translate(comparison)
            var literal: [UInt8]?
            if case .string(let text) = comparison.value { literal = text }
            part.culprit = PredicateSQL.Culprit(attribute: comparison.attribute.rawValue, literal: literal)
            return part
        }
    }

    func translate(_ c: Comparison) throws(PredicateSQL.Unpublished) -> Part {
        // An imported attribute (not the text): the files whose attributes
        // hold it, each checked by mdq on the values. A test a file without
        // it passes (`== nil`, a negation, ALL or NONE of a list, a list of
        // values with nil among them) narrows nothing.
        if c.attribute.isImported && c.attribute != .textContent {
            let narrowed = Part(condition: .attribute(c.attribute.rawValue), exact: false, narrows: true)
            if c.value == .null { return c.op == .equal ? .anything : narrowed }
            if case .list(let values) = c.value, values.contains(.null) { return .anything }
            if c.op == .notEqual || c.quantifier == .noElement || c.quantifier == .everyElement { return .anything }
            return narrowed
        }
        // A list (the type tree): "some element equals" and its negation
        // are translated; ALL, and inequality, are checked on each row.
        if c.attribute.isList && (c.op != .equal || c.quantifier == .everyElement) {
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
            return name(c, column: .fold)
        case .nameExtension:
            // The column holds an extension for `.png` too, which the
            // host says has none: checked on each row.
            var part = name(c, column: .ext)
            part.exact = false
            return part
        case .size:
            return number(c, column: .size)
        case .creationDate:
            return date(c, column: .btime)
        case .contentChangeDate:
            return date(c, column: .mtime)
        case .contentType:
            return type(c, column: .contentType)
        case .contentTypeTree:
            return type(c, column: .contentType)
        case .displayName, .nameWithoutExtension:
            // The name less its extension (a folder's whole name): what
            // matches it, followed by anything, matches the name. Narrowed
            // by the name's trigrams, checked on each row.
            return name(c, column: .fold, prefix: true)
        case .path, .url, .kind:
            // Checked on each row (the path is its folder's and the name).
            return .anything
        case .ownerUserID, .ownerGroupID, .permissions:
            // Its access class's, tested exactly (version 10), which no
            // index narrows: few owners hold most files.
            var part = number(
                c,
                column: c.attribute.source == .ownerUserID
                    ? .owner : c.attribute.source == .ownerGroupID ? .group : .mode)
            part.narrows = false
            return part
        case .imported where c.attribute == .textContent:
            guard let test = TextWords.wordTest(c) else {
                throw PredicateSQL.Unpublished(attribute: c.attribute.rawValue, reason: PredicateSQL.textTests)
            }
            // A start of one or two letters is in most files' words: as
            // unnarrowed as a name fragment that short.
            return Part(
                condition: .words(test.word, prefix: test.prefix), exact: true,
                narrows: !test.prefix || test.word.count >= 3)
        case .imported:
            // Taken above.
            return .anything
        case .accessTime, .isUbiquitous, .isExternalDocument, .containerDisplayName, .hasUnresolvedConflicts,
            .conflictOriginalPath, .synced:
            throw PredicateSQL.Unpublished(attribute: c.attribute.rawValue)
        }
    }

    /// Names (and extensions), compared folded: exact only for `[cd]`
    /// without `[w]` or `?` on ASCII text, where folding decides alone.
    ///
    /// - Parameter prefix: the test is of a prefix of the name (the display
    ///   name, the name less its extension): the pattern is the name's
    ///   start, never exact.
    func name(_ c: Comparison, column: SQLCondition.Column, prefix: Bool = false) -> Part {
        if c.op == .in, case .list(let values) = c.value {
            var parts: [Part] = []
            for value in values {
                var one = c
                one.op = .equal
                one.value = value
                parts.append(name(one, column: column, prefix: prefix))
            }
            guard !parts.isEmpty else { return Part(condition: .constant(false), exact: true, narrows: true) }
            return Part(
                condition: .or(parts.map(\.condition)), exact: parts.allSatisfy(\.exact),
                narrows: parts.allSatisfy(\.narrows))
        }
        guard case .string(let raw) = c.value else { return .anything }
        let folded = folder.folded(raw)
        // An extension test that an empty extension can pass: `.png` has
        // none on the host but `png` in the column.
        if column == .ext, folded.allSatisfy({ $0 == UInt8(ascii: "*") }) { return .anything }
        // Bytes that are not UTF-8 are matched byte-wise on the host; the
        // database holds such names with U+FFFD: each is any text there,
        // the rest narrows, and each row is checked.
        let invalid = Self.invalidUTF8(folded)
        let valid = !invalid.contains(true)
        var exact =
            c.options.contains(.caseInsensitive) && c.options.contains(.diacriticInsensitive)
            && !c.options.contains(.wordBased) && raw.allSatisfy { $0 < 0x80 }
        var pattern: [UInt8] = []
        var run = 0
        var longest = 0
        // Whether the pattern ends with a `%` wildcard (not an escaped one).
        var endsWithAny = false
        func literal(_ i: Int) {
            guard !invalid[i] else { return any() }
            let byte = folded[i]
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
                    literal(i)
                } else {
                    literal(i)
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
                        literal(i)
                    } else {
                        literal(i)
                    }
                    i += 1
                }
            case .equal:
                for i in folded.indices { literal(i) }
            case .beginsWith:
                for i in folded.indices { literal(i) }
                any()
            case .endsWith:
                any()
                for i in folded.indices { literal(i) }
            case .contains:
                any()
                for i in folded.indices { literal(i) }
                any()
            case .matches, .in, .less, .lessOrEqual, .greater, .greaterOrEqual, .between, .notEqual,
                .utiConformsTo, .utiEquals:
                return .anything
            }
        }
        if prefix {
            // Whatever follows it in the name.
            any()
            exact = false
        }
        // `*.png` under [cd]: the extension column, exact.
        if column == .fold, !prefix, c.op == .like, exact, !c.options.contains(.wordBased), folded.count > 2,
            folded[0] == UInt8(ascii: "*"), folded[1] == UInt8(ascii: "."),
            folded[2...].allSatisfy({
                $0 != UInt8(ascii: "*") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "\\")
                    && $0 != UInt8(ascii: ".")
            })
        {
            return Part(
                condition: .equals(.ext, String(decoding: folded[2...], as: UTF8.self)), exact: true, narrows: true)
        }
        let text = String(decoding: pattern, as: UTF8.self)
        // A trigram index needs three characters in a row; an extension is
        // an exact column.
        let narrows = column == .ext ? !text.contains("%") && !text.contains("_") : longest >= 3
        let condition: SQLCondition =
            column == .ext && c.op == .equal && !c.options.contains(.wordBased) && valid
            ? .equals(column, String(decoding: folded, as: UTF8.self)) : .like(column, text)
        return Part(condition: condition, exact: exact, narrows: narrows)
    }

    /// For each byte of `bytes`, whether it is no part of a UTF-8
    /// character (as `UTF8ByteDecoder` reads them: a stray continuation, a
    /// lead without its bytes, an overlong or surrogate form).
    static func invalidUTF8(_ bytes: [UInt8]) -> [Bool] {
        var invalid = [Bool](repeating: false, count: bytes.count)
        bytes.withUnsafeBytes { raw in
            var i = 0
            while i < raw.count {
                let (unit, length) = UTF8ByteDecoder.decode(raw, at: i)
                if case .invalid = unit { invalid[i] = true }
                i += length
            }
        }
        return invalid
    }

    func number(_ c: Comparison, column: SQLCondition.Column) -> Part {
        func value(_ v: PredicateValue) -> Double? {
            if case .number(let n) = v { return n }
            return nil
        }
        let condition: SQLCondition
        switch (c.op, c.value) {
        case (.between, .list(let bounds)) where bounds.count == 2:
            guard let low = value(bounds[0]), let high = value(bounds[1]) else { return .anything }
            condition = .between(column, low, high)
        case (.in, .list(let values)):
            let numbers = values.compactMap(value)
            guard numbers.count == values.count else { return .anything }
            condition = .numberIn(column, numbers)
        default:
            guard let number = value(c.value), let op = Self.sqlOperator(c.op) else { return .anything }
            condition = .compare(column, op, number)
        }
        return Part(condition: condition, exact: true, narrows: true)
    }

    /// Dates, to the microsecond the database keeps: widened by one, and
    /// checked again on each row to the nanosecond.
    func date(_ c: Comparison, column: SQLCondition.Column) -> Part {
        func micros(_ v: PredicateValue) -> Int64? {
            if case .date(let time) = v { return time.nanosecondsSinceEpoch / 1000 }
            return nil
        }
        let condition: SQLCondition
        switch (c.op, c.value) {
        case (.between, .list(let bounds)) where bounds.count == 2:
            guard let low = micros(bounds[0]), let high = micros(bounds[1]) else { return .anything }
            condition = .timeBetween(column, low - 2, high + 2)
        default:
            guard let value = micros(c.value) else { return .anything }
            switch c.op {
            case .less, .lessOrEqual: condition = .timeAtMost(column, value + 2)
            case .greater, .greaterOrEqual: condition = .timeAtLeast(column, value - 2)
            case .equal: condition = .timeBetween(column, value - 2, value + 2)
            default: return .anything
            }
        }
        return Part(condition: condition, exact: false, narrows: true)
    }

    /// Content types: equal, or conforming (by mdq's type table, the one
    /// every host typed its entries with).
    func type(_ c: Comparison, column: SQLCondition.Column) -> Part {
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
        guard !types.isEmpty else { return Part(condition: .constant(false), exact: true, narrows: true) }
        return Part(condition: .oneOf(column, types), exact: true, narrows: true)
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
