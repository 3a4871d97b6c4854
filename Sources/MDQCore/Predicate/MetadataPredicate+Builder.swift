public import Foundation
public import MDQSystem

/// Building predicates in Swift, checked by the compiler: each builder makes
/// the same tree the parser makes for the equivalent format text, so
/// `predicateFormat` prints it and parsing that gives back an equal value.
///
/// ```swift
/// let big = MetadataPredicate.name(like: "*.png", options: .caseInsensitive)
///     && .size(greaterThan: 1_000_000)
/// big.predicateFormat  // (kMDItemFSName LIKE[c] "*.png") AND (kMDItemFSSize > 1000000)
/// ```
extension MetadataPredicate {
    /// A string comparison, as in `attribute op[options] value`.
    public enum StringTest: Sendable, Hashable {
        /// `==`: the whole string.
        case equalTo(String)
        /// `!=`.
        case notEqualTo(String)
        /// `LIKE`: `*` any run, `?` one character, `\` makes the next one
        /// literal (a lone trailing `\` is taken as a literal backslash).
        case like(String)
        case beginsWith(String)
        case endsWith(String)
        case contains(String)
        /// `IN {...}`: equal to one of the strings.
        case oneOf([String])
    }

    /// `attribute` (a string attribute such as `.fsName`, `.displayName`,
    /// `.path`) passes `test`.
    public static func string(
        _ attribute: MetadataAttribute, _ test: StringTest, options: StringCompareOptions = []
    ) -> MetadataPredicate {
        let op: ComparisonOperator
        let value: PredicateValue
        switch test {
        case .equalTo(let text): (op, value) = (.equal, .string(Array(text.utf8)))
        case .notEqualTo(let text): (op, value) = (.notEqual, .string(Array(text.utf8)))
        case .like(let pattern): (op, value) = (.like, .string(likePattern(pattern)))
        case .beginsWith(let text): (op, value) = (.beginsWith, .string(Array(text.utf8)))
        case .endsWith(let text): (op, value) = (.endsWith, .string(Array(text.utf8)))
        case .contains(let text): (op, value) = (.contains, .string(Array(text.utf8)))
        case .oneOf(let texts): (op, value) = (.in, .list(texts.map { .string(Array($0.utf8)) }))
        }
        return comparison(attribute, op, value, options: options)
    }

    /// `kMDItemFSName LIKE pattern`.
    public static func name(like pattern: String, options: StringCompareOptions = []) -> MetadataPredicate {
        string(.fsName, .like(pattern), options: options)
    }

    /// `kMDItemFSName == name`.
    public static func name(equalTo name: String, options: StringCompareOptions = []) -> MetadataPredicate {
        string(.fsName, .equalTo(name), options: options)
    }

    /// `kMDItemFSName BEGINSWITH prefix`.
    public static func name(beginsWith prefix: String, options: StringCompareOptions = []) -> MetadataPredicate {
        string(.fsName, .beginsWith(prefix), options: options)
    }

    /// `kMDItemFSName ENDSWITH suffix`.
    public static func name(endsWith suffix: String, options: StringCompareOptions = []) -> MetadataPredicate {
        string(.fsName, .endsWith(suffix), options: options)
    }

    /// `kMDItemFSName CONTAINS text`.
    public static func name(contains text: String, options: StringCompareOptions = []) -> MetadataPredicate {
        string(.fsName, .contains(text), options: options)
    }

    /// `kMDItemFSName IN {names...}`.
    public static func name(in names: [String], options: StringCompareOptions = []) -> MetadataPredicate {
        string(.fsName, .oneOf(names), options: options)
    }

    /// `attribute MATCHES regex`: the whole string matches the ICU regular
    /// expression.
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) when the expression does
    ///   not compile.
    public static func string(
        _ attribute: MetadataAttribute, matching regex: String, options: StringCompareOptions = []
    ) throws(MetadataError) -> MetadataPredicate {
        let bytes = Array(regex.utf8)
        if let problem = RegexMatcher.validate(bytes) {
            throw .syntax("invalid regular expression '\(regex)': \(problem.reason)")
        }
        return comparison(attribute, .matches, .string(bytes), options: options)
    }

    /// `kMDItemFSName MATCHES regex`.
    public static func name(matching regex: String, options: StringCompareOptions = []) throws(MetadataError)
        -> MetadataPredicate
    {
        try string(.fsName, matching: regex, options: options)
    }

    // MARK: Sizes

    /// `kMDItemFSSize > bytes` (folders have no size and never match).
    public static func size(greaterThan bytes: Int64) -> MetadataPredicate {
        comparison(.fsSize, .greater, .number(Double(bytes)))
    }

    /// `kMDItemFSSize >= bytes`.
    public static func size(atLeast bytes: Int64) -> MetadataPredicate {
        comparison(.fsSize, .greaterOrEqual, .number(Double(bytes)))
    }

    /// `kMDItemFSSize < bytes`.
    public static func size(lessThan bytes: Int64) -> MetadataPredicate {
        comparison(.fsSize, .less, .number(Double(bytes)))
    }

    /// `kMDItemFSSize <= bytes`.
    public static func size(atMost bytes: Int64) -> MetadataPredicate {
        comparison(.fsSize, .lessOrEqual, .number(Double(bytes)))
    }

    /// `kMDItemFSSize == bytes`.
    public static func size(equalTo bytes: Int64) -> MetadataPredicate {
        comparison(.fsSize, .equal, .number(Double(bytes)))
    }

    /// `kMDItemFSSize BETWEEN {lower, upper}` (inclusive).
    public static func size(in range: ClosedRange<Int64>) -> MetadataPredicate {
        comparison(.fsSize, .between, .list([.number(Double(range.lowerBound)), .number(Double(range.upperBound))]))
    }

    // MARK: Dates

    /// A date attribute (`.contentChangeDate`, `.creationDate`) after `date`.
    public static func date(_ attribute: MetadataAttribute, after date: Date) -> MetadataPredicate {
        comparison(attribute, .greater, .date(Timestamp(date)))
    }

    /// A date attribute at or after `date`.
    public static func date(_ attribute: MetadataAttribute, onOrAfter date: Date) -> MetadataPredicate {
        comparison(attribute, .greaterOrEqual, .date(Timestamp(date)))
    }

    /// A date attribute before `date`.
    public static func date(_ attribute: MetadataAttribute, before date: Date) -> MetadataPredicate {
        comparison(attribute, .less, .date(Timestamp(date)))
    }

    /// A date attribute at or before `date`.
    public static func date(_ attribute: MetadataAttribute, onOrBefore date: Date) -> MetadataPredicate {
        comparison(attribute, .lessOrEqual, .date(Timestamp(date)))
    }

    /// A date attribute within `range` (inclusive).
    public static func date(_ attribute: MetadataAttribute, in range: ClosedRange<Date>) -> MetadataPredicate {
        comparison(
            attribute, .between, .list([.date(Timestamp(range.lowerBound)), .date(Timestamp(range.upperBound))]))
    }

    /// `kMDItemFSContentChangeDate` after `date`.
    public static func modified(after date: Date) -> MetadataPredicate {
        self.date(.contentChangeDate, after: date)
    }

    /// `kMDItemFSContentChangeDate` before `date`.
    public static func modified(before date: Date) -> MetadataPredicate {
        self.date(.contentChangeDate, before: date)
    }

    // MARK: Presence

    /// `attribute != nil`: the item has a value (a size: not a folder; a
    /// creation date: the filesystem keeps one).
    public static func has(_ attribute: MetadataAttribute) -> MetadataPredicate {
        comparison(attribute, .notEqual, .null)
    }

    /// `attribute == nil`.
    public static func lacks(_ attribute: MetadataAttribute) -> MetadataPredicate {
        comparison(attribute, .equal, .null)
    }

    // MARK: Combining

    /// Both hold (`AND`).
    public static func && (lhs: MetadataPredicate, rhs: MetadataPredicate) -> MetadataPredicate {
        all(of: [lhs, rhs])
    }

    /// Either holds (`OR`).
    public static func || (lhs: MetadataPredicate, rhs: MetadataPredicate) -> MetadataPredicate {
        any(of: [lhs, rhs])
    }

    /// The predicate does not hold (`NOT`).
    public static prefix func ! (operand: MetadataPredicate) -> MetadataPredicate {
        MetadataPredicate(node: .not(operand.node))
    }

    /// Every predicate holds; `TRUEPREDICATE` for none.
    public static func all(of predicates: [MetadataPredicate]) -> MetadataPredicate {
        var parts: [PredicateNode] = []
        for predicate in predicates {
            if case .and(let inner) = predicate.node { parts += inner } else { parts.append(predicate.node) }
        }
        if parts.isEmpty { return .alwaysTrue }
        return MetadataPredicate(node: parts.count == 1 ? parts[0] : .and(parts))
    }

    /// Some predicate holds; `FALSEPREDICATE` for none.
    public static func any(of predicates: [MetadataPredicate]) -> MetadataPredicate {
        var parts: [PredicateNode] = []
        for predicate in predicates {
            if case .or(let inner) = predicate.node { parts += inner } else { parts.append(predicate.node) }
        }
        if parts.isEmpty { return .alwaysFalse }
        return MetadataPredicate(node: parts.count == 1 ? parts[0] : .or(parts))
    }

    private static func comparison(
        _ attribute: MetadataAttribute, _ op: ComparisonOperator, _ value: PredicateValue,
        options: StringCompareOptions = []
    ) -> MetadataPredicate {
        MetadataPredicate(
            node: .comparison(
                Comparison(
                    attribute: attribute, op: op, options: attribute.valueType == .string ? options : [],
                    value: value)))
    }

    /// A LIKE pattern's bytes, a lone trailing backslash made literal.
    private static func likePattern(_ pattern: String) -> [UInt8] {
        var bytes = Array(pattern.utf8)
        let trailing = bytes.reversed().prefix { $0 == UInt8(ascii: "\\") }.count
        if trailing % 2 == 1 { bytes.append(UInt8(ascii: "\\")) }
        return bytes
    }
}

extension Timestamp {
    /// The instant of a `Date`, to the nearest nanosecond (clamped to
    /// 1677...2262).
    public init(_ date: Date) {
        let nanoseconds = (date.timeIntervalSince1970 * 1e9).rounded()
        self.init(
            nanosecondsSinceEpoch: nanoseconds.isNaN ? 0 : Int64(Swift.min(Swift.max(nanoseconds, -9.2e18), 9.2e18)))
    }
}
