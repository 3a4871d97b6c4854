/// A parsed query predicate in Apple's `NSPredicate` format syntax.
///
/// ```swift
/// let pngs = try MetadataPredicate("kMDItemFSName LIKE[c] '*.png'")
/// ```
///
/// Supported today: the keys `kMDItemFSName`, `kMDItemDisplayName` and
/// `kMDItemPath` (and their `NSMetadataItem...Key` spellings); `==`/`=`,
/// `!=`/`<>`, `LIKE`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, each with `[c]`,
/// `[d]` or `[cd]`; `AND`/`&&`, `OR`/`||`, `NOT`/`!`, parentheses,
/// `TRUEPREDICATE`, `FALSEPREDICATE`.
///
/// Strings compare after canonical decomposition, so a name written
/// decomposed (as files from macOS often are) equals its composed form;
/// without options the compare is case- and diacritic-sensitive. `LIKE` is a
/// whole-string match where `*` is any run, `?` one character, and `\`
/// makes the next character literal. Names that are not UTF-8 match byte-wise.
public struct MetadataPredicate: Sendable, Hashable, CustomStringConvertible {
    let node: PredicateNode

    init(node: PredicateNode) {
        self.node = node
    }

    /// Parses predicate text.
    ///
    /// - Throws: `MetadataError` with code `.querySyntax`, the byte `offset`
    ///   of the mistake and a `description` showing the query with a caret
    ///   under it and what was expected.
    public init(_ format: String) throws(MetadataError) {
        try self.init(formatBytes: Array(format.utf8))
    }

    /// Parses predicate text given as raw bytes (a command-line argument that
    /// may not be UTF-8).
    ///
    /// - Throws: `MetadataError` with code `.querySyntax`; see `init(_:)`.
    public init(formatBytes: [UInt8]) throws(MetadataError) {
        var parser = try PredicateParser(formatBytes)
        node = try parser.parse()
    }

    /// The predicate that matches everything.
    public static let alwaysTrue = MetadataPredicate(node: .constant(true))

    /// The predicate in format syntax; parsing it gives back an equal predicate.
    public var predicateFormat: String { node.format }

    public var description: String { predicateFormat }

    /// `mdq --name TEXT`: names containing TEXT, case- and
    /// diacritic-insensitive; with `*` or `?` in TEXT, a `LIKE[cd]` match.
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) for a LIKE pattern ending
    ///   in a lone backslash.
    public static func nameMatching(_ text: [UInt8]) throws(MetadataError) -> MetadataPredicate {
        let hasWildcard = text.contains(UInt8(ascii: "*")) || text.contains(UInt8(ascii: "?"))
        let op: ComparisonOperator = hasWildcard ? .like : .contains
        if hasWildcard { _ = try LikePattern(text) }
        return MetadataPredicate(
            node: .comparison(
                Comparison(
                    attribute: .fsName, op: op, options: [.caseInsensitive, .diacriticInsensitive], value: .string(text)
                )))
    }
}
