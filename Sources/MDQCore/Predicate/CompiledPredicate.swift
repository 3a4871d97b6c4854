import MDQSystem

/// A predicate compiled for evaluation: each comparison a specialised
/// test, cheap terms first.
///
/// Compile once per query; evaluate through a per-thread
/// `PredicateEvaluator` (it owns the scratch buffers), which allocates
/// nothing per entry except for `MATCHES` (a regular expression needs a
/// `String`).
package struct CompiledPredicate: Sendable {
    indirect enum Program: Sendable {
        case constant(Bool)
        case test(Test)
        case not(Program)
        case and([Program])
        case or([Program])
    }

    struct Test: Sendable {
        enum Kind: Sendable {
            /// Strings: `==`, `LIKE`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`.
            case pattern(NameMatcher)
            /// Strings: any of several suffix patterns (a merged OR chain).
            case suffixes([NameMatcher])
            /// Strings: `IN {...}`.
            case stringSet(StringSet)
            case regex(RegexMatcher)
            /// Strings, `[w]`: the pattern matches a run of whole words.
            case words(NameMatcher, WordSpans)
            /// Strings: `IN 'text'`, the value occurs in the text.
            case within(FoldedLiteral)
            /// Numbers: bounds (nil = open), inclusive flags.
            case numberRange(lower: Double?, lowerInclusive: Bool, upper: Double?, upperInclusive: Bool)
            case numberSet([Double])
            /// Dates in nanoseconds since the epoch.
            case dateRange(lower: Int64?, lowerInclusive: Bool, upper: Int64?, upperInclusive: Bool)
            case dateSet([Int64])
            /// Booleans: `== YES`, `== NO`.
            case boolean(Bool)
            /// The attribute has a value (`!= nil`).
            case exists
        }

        var attribute: MetadataAttribute {
            didSet { field = attribute.source }
        }
        /// Which value the test reads, resolved once so evaluation never
        /// compares attribute keys (they are strings).
        private(set) var field: MetadataAttribute.Source
        var kind: Kind
        /// `!=` and `== nil`.
        var negated: Bool
        /// For a list attribute: whether one element (`.anyElement`) or
        /// every element (`.everyElement`) must pass.
        var quantifier: Quantifier

        init(attribute: MetadataAttribute, kind: Kind, negated: Bool, quantifier: Quantifier = .anyElement) {
            self.attribute = attribute
            self.field = attribute.source
            self.kind = kind
            self.negated = negated
            self.quantifier = quantifier
        }
    }

    let program: Program
    /// What evaluating needs from a subject beyond name and kind: callers
    /// provide the path, metadata, ubiquity or siblings only when asked.
    package let requirements: SubjectRequirements

    /// The imported attributes the predicate reads (the importers asked
    /// for a file are only those filling them).
    package let importedAttributes: Set<MetadataAttribute>
    /// What the full-text index can rule out (a predicate on the text).
    package let textPrefilter: TextPrefilter?

    package init(_ predicate: MetadataPredicate) {
        var requirements: SubjectRequirements = []
        program = Self.compile(predicate.node, requirements: &requirements)
        self.requirements = requirements
        importedAttributes = Self.importedAttributes(in: predicate.node)
        textPrefilter = importedAttributes.contains(.textContent) ? TextPrefilter.of(predicate.node) : nil
    }

    private static func importedAttributes(in node: PredicateNode) -> Set<MetadataAttribute> {
        switch node {
        case .constant: return []
        case .comparison(let comparison): return comparison.attribute.isImported ? [comparison.attribute] : []
        case .not(let inner): return importedAttributes(in: inner)
        case .and(let parts), .or(let parts): return parts.reduce(into: []) { $0.formUnion(importedAttributes(in: $1)) }
        }
    }

    private static func compile(_ node: PredicateNode, requirements: inout SubjectRequirements) -> Program {
        switch node {
        case .constant(let value):
            return .constant(value)
        case .comparison(let comparison):
            requirements.formUnion(comparison.attribute.source.requirements)
            return compile(comparison)
        case .not(let inner):
            return .not(compile(inner, requirements: &requirements))
        case .and(let parts):
            return .and(cheapestFirst(parts.map { compile($0, requirements: &requirements) }))
        case .or(let parts):
            let compiled = parts.map { compile($0, requirements: &requirements) }
            return .or(cheapestFirst(mergingSuffixes(compiled)))
        }
    }

    /// `name LIKE '*.jpg' OR name LIKE '*.png' OR ...` (or ENDSWITH): the
    /// suffix tests of one field and options become one test that checks
    /// them all in a single pass.
    private static func mergingSuffixes(_ programs: [Program]) -> [Program] {
        var groups: [String: [Int]] = [:]
        for (i, program) in programs.enumerated() {
            guard case .test(let test) = program, !test.negated, test.field == .name || test.field == .displayName,
                case .pattern(let matcher) = test.kind, case .suffix = matcher.shape
            else { continue }
            groups["\(test.field)\(matcher.options.rawValue)", default: []].append(i)
        }
        var merged = programs
        var dropped = Set<Int>()
        for (_, members) in groups where members.count > 1 {
            guard case .test(var test) = programs[members[0]] else { continue }
            test.kind = .suffixes(
                members.compactMap { i in
                    guard case .test(let t) = programs[i], case .pattern(let matcher) = t.kind else { return nil }
                    return matcher
                })
            merged[members[0]] = .test(test)
            dropped.formUnion(members.dropFirst())
        }
        return merged.enumerated().filter { !dropped.contains($0.offset) }.map(\.element)
    }

    /// A comparison with its quantifier. On a list attribute the test runs
    /// per element; `!=` is the negation of `==`, so `ANY x != v` is "not
    /// every element equals v" and `ALL x != v` "no element equals v" (a
    /// plain `!=` on a list means the latter, as it always has). On a single
    /// value `ANY`/`ALL` change nothing and `NONE` negates.
    private static func compile(_ c: Comparison) -> Program {
        var plain = c
        plain.quantifier = nil
        guard let quantifier = c.quantifier else { return compileTest(c) }
        guard c.attribute.isList else {
            return quantifier == .noElement ? .not(compileTest(plain)) : compileTest(plain)
        }
        guard case .test(var test) = compileTest(plain) else { return compileTest(plain) }
        let positiveIsNegated = test.negated  // `!=`: the test is `==`, negated
        switch (quantifier, positiveIsNegated) {
        case (.anyElement, false): (test.quantifier, test.negated) = (.anyElement, false)
        case (.anyElement, true): (test.quantifier, test.negated) = (.everyElement, true)
        case (.everyElement, false): (test.quantifier, test.negated) = (.everyElement, false)
        case (.everyElement, true): (test.quantifier, test.negated) = (.anyElement, true)
        case (.noElement, false): (test.quantifier, test.negated) = (.anyElement, true)
        case (.noElement, true): (test.quantifier, test.negated) = (.everyElement, false)
        }
        return .test(test)
    }

    private static func compileTest(_ c: Comparison) -> Program {
        let attribute = c.attribute
        let options = c.options.folding
        func test(_ kind: Test.Kind, negated: Bool = false, on tested: MetadataAttribute = attribute) -> Program {
            .test(Test(attribute: tested, kind: kind, negated: negated))
        }
        if c.value == .null {
            return test(.exists, negated: c.op == .equal)
        }
        switch (attribute.valueType, c.op, c.value) {
        case (.string, .matches, .string(let pattern)):
            guard let regex = RegexMatcher(pattern, options: options) else { return .constant(false) }
            return test(.regex(regex))
        case (.string, .utiEquals, .string(let type)):
            return test(.pattern(NameMatcher(LikePattern(elements: [.literal(type)]), options: .caseInsensitive)))
        case (.string, .utiConformsTo, .string(let type)):
            let matcher = NameMatcher(LikePattern(elements: [.literal(type)]), options: .caseInsensitive)
            return test(.pattern(matcher), on: .contentTypeTree)
        case (.string, .in, .list(let items)):
            let strings = items.compactMap { item -> [UInt8]? in
                if case .string(let bytes) = item { return bytes }
                return nil
            }
            return test(.stringSet(StringSet(strings, options: options)))
        case (.string, .in, .string(let text)):
            return test(.within(FoldedLiteral(text, options: options)))
        case (.string, _, .string(let value)):
            guard let pattern = try? LikePattern.forOperator(c.op, value: value) else { return .constant(false) }
            let matcher = NameMatcher(pattern, options: options)
            if c.options.contains(.wordBased) {
                let spans = c.attribute == .textContent ? WordSpans.text(pattern: value) : WordSpans.name
                return test(.words(matcher, spans), negated: c.op == .notEqual)
            }
            return test(.pattern(matcher), negated: c.op == .notEqual)
        case (.number, _, _):
            func number(_ value: PredicateValue) -> Double? {
                if case .number(let n) = value { return n }
                return nil
            }
            switch (c.op, c.value) {
            case (.in, .list(let items)): return test(.numberSet(items.compactMap(number)))
            case (.between, .list(let bounds)) where bounds.count == 2:
                return test(
                    .numberRange(
                        lower: number(bounds[0]), lowerInclusive: true, upper: number(bounds[1]), upperInclusive: true))
            case (_, .number(let n)):
                return rangeTest(c.op, n, attribute: attribute) { lower, li, upper, ui in
                    .numberRange(lower: lower, lowerInclusive: li, upper: upper, upperInclusive: ui)
                }
            default: return .constant(false)
            }
        case (.date, _, _):
            func date(_ value: PredicateValue) -> Int64? {
                if case .date(let t) = value { return t.nanosecondsSinceEpoch }
                return nil
            }
            switch (c.op, c.value) {
            case (.in, .list(let items)): return test(.dateSet(items.compactMap(date)))
            case (.between, .list(let bounds)) where bounds.count == 2:
                return test(
                    .dateRange(
                        lower: date(bounds[0]), lowerInclusive: true, upper: date(bounds[1]), upperInclusive: true))
            case (_, .date(let t)):
                return rangeTest(c.op, t.nanosecondsSinceEpoch, attribute: attribute) { lower, li, upper, ui in
                    .dateRange(lower: lower, lowerInclusive: li, upper: upper, upperInclusive: ui)
                }
            default: return .constant(false)
            }
        case (.boolean, .equal, .bool(let value)), (.boolean, .notEqual, .bool(let value)):
            return test(.boolean(value), negated: c.op == .notEqual)
        case (.boolean, .in, .list(let items)):
            let values = Set(
                items.compactMap { item -> Bool? in
                    if case .bool(let value) = item { return value }
                    return nil
                })
            if values.count == 2 { return test(.exists) }
            return values.first.map { test(.boolean($0)) } ?? .constant(false)
        default:
            return .constant(false)
        }
    }

    private static func rangeTest<T>(
        _ op: ComparisonOperator, _ value: T, attribute: MetadataAttribute,
        _ make: (T?, Bool, T?, Bool) -> Test.Kind
    ) -> Program {
        let kind: Test.Kind
        var negated = false
        switch op {
        case .equal: kind = make(value, true, value, true)
        case .notEqual:
            kind = make(value, true, value, true)
            negated = true
        case .less: kind = make(nil, false, value, false)
        case .lessOrEqual: kind = make(nil, false, value, true)
        case .greater: kind = make(value, false, nil, false)
        case .greaterOrEqual: kind = make(value, true, nil, false)
        default: return .constant(false)
        }
        return .test(Test(attribute: attribute, kind: kind, negated: negated))
    }

    /// Orders terms by cost, keeping source order among equals. AND and OR
    /// have no side effects, so the order changes only the speed.
    private static func cheapestFirst(_ programs: [Program]) -> [Program] {
        programs.enumerated()
            .sorted { (cost($0.element), $0.offset) < (cost($1.element), $1.offset) }
            .map(\.element)
    }

    /// Relative cost: name tests are cheap; paths are rebuilt; sizes and
    /// dates may need a stat; siblings are listed; regular expressions and
    /// word matches allocate or try many spans.
    private static func cost(_ program: Program) -> Int {
        switch program {
        case .constant: return 0
        case .test(let test):
            var cost = 1
            let requirements = test.field.requirements
            if requirements.contains(.path) || requirements.contains(.ubiquity) { cost += 10 }
            if requirements.contains(.metadata) || requirements.contains(.conflicts) { cost += 20 }
            // Reading inside the file, in a worker: after every other test.
            if requirements.contains(.imported) { cost += 1000 }
            switch test.kind {
            case .regex, .words: cost += 30
            default: break
            }
            return cost
        case .not(let inner): return cost(inner)
        case .and(let parts), .or(let parts): return parts.map(cost).reduce(0, +)
        }
    }

    /// Whether testing an entry costs much: a `MATCHES` pattern, imported
    /// attributes, or so many terms (a thousand ORed `LIKE`s) that the
    /// tests outweigh the scan. A scan of such a predicate holds the engine
    /// in short slices (`SliceTurns.nextLength`).
    package var isExpensive: Bool {
        usesRegex || requirements.contains(.imported) || Self.cost(program) > 100
    }

    /// Whether some test is a `MATCHES`, whose cost per name is unbounded
    /// but for its `QueryLimit` (a sliced scan starts such a query small).
    package var usesRegex: Bool {
        func regex(_ program: Program) -> Bool {
            switch program {
            case .constant: false
            case .test(let test): if case .regex = test.kind { true } else { false }
            case .not(let inner): regex(inner)
            case .and(let parts), .or(let parts): parts.contains(where: regex)
            }
        }
        return regex(program)
    }

    /// Scratch state for evaluating on one thread.
    package func makeEvaluator() -> PredicateEvaluator {
        PredicateEvaluator(self)
    }
}

/// A literal folded once for `IN 'text'`: its comparison-form bytes and
/// character boundaries, so a value is found in it only on whole characters.
struct FoldedLiteral: Sendable {
    let options: StringCompareOptions
    let bytes: [UInt8]
    let boundaries: [Bool]

    package init(_ text: [UInt8], options: StringCompareOptions) {
        self.options = options
        let folder = UnicodeFolder(options: options)
        text.withUnsafeBytes { folder.fold($0) }
        bytes = Array(folder.folded.bytes)
        boundaries = Array(folder.folded.boundaries)
    }

    /// Whether `value` (already folded with these options) occurs in the
    /// literal, starting and ending on character boundaries.
    func contains(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = value.count
        guard n <= bytes.count else { return false }
        guard n > 0 else { return true }
        return bytes.withUnsafeBufferPointer { text in
            var position = 0
            while position + n <= text.count {
                if boundaries[position] && boundaries[position + n]
                    && NameBytes.equal(text.baseAddress! + position, value.baseAddress!, count: n)
                {
                    return true
                }
                position += 1
            }
            return false
        }
    }
}

/// A set of strings for `IN`, looked up without allocating: by hash, then
/// by bytes; with `[c]`/`[d]` the names are folded first.
struct StringSet: Sendable {
    let options: StringCompareOptions
    private let buckets: [UInt64: [[UInt8]]]
    /// Bit `n` set when a member is `n` bytes long (`n` < 256), so most
    /// names are rejected on their length alone.
    private let lengths: (UInt64, UInt64, UInt64, UInt64)
    private let hasLongMembers: Bool

    package init(_ strings: [[UInt8]], options: StringCompareOptions) {
        self.options = options
        let folder = UnicodeFolder(options: options)
        var buckets: [UInt64: [[UInt8]]] = [:]
        var lengths = [UInt64](repeating: 0, count: 4)
        var hasLongMembers = false
        for string in strings {
            // Always the canonical (decomposed) form, so NFC and NFD agree.
            let key = folder.folded(string)
            let hash = key.withUnsafeBytes { NameBytes.hash(parent: 0, name: $0) }
            buckets[hash, default: []].append(key)
            if key.count < 256 { lengths[key.count >> 6] |= 1 << UInt64(key.count & 63) } else { hasLongMembers = true }
        }
        self.buckets = buckets
        self.lengths = (lengths[0], lengths[1], lengths[2], lengths[3])
        self.hasLongMembers = hasLongMembers
    }

    /// Whether some member is `count` bytes long.
    @inline(__always)
    func hasMember(ofLength count: Int) -> Bool {
        guard count < 256 else { return hasLongMembers }
        let word: UInt64
        switch count >> 6 {
        case 0: word = lengths.0
        case 1: word = lengths.1
        case 2: word = lengths.2
        default: word = lengths.3
        }
        return word & (1 << UInt64(count & 63)) != 0
    }

    /// Whether `text` (already in comparison form) is in the set.
    func contains(folded text: UnsafeRawBufferPointer) -> Bool {
        guard hasMember(ofLength: text.count) else { return false }
        guard let candidates = buckets[NameBytes.hash(parent: 0, name: text)] else { return false }
        return candidates.contains { candidate in
            candidate.count == text.count
                && candidate.withUnsafeBytes { NameBytes.equal($0.baseAddress!, text.baseAddress!, count: text.count) }
        }
    }
}
