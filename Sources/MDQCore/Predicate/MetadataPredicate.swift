public import MDQSystem

/// A parsed query predicate in Apple's `NSPredicate` format syntax.
///
/// ```swift
/// let pngs = try MetadataPredicate("kMDItemFSName LIKE[c] '*.png'")
/// ```
///
/// Keys: every attribute of `MetadataAttribute.all` by its raw key or its
/// `NSMetadata...Key` constant: names, paths and types (strings), the size
/// (a number), dates, and the ubiquitous keys (booleans, a percentage, the
/// downloading status), which need the query's container to say yes.
/// Operators: `==`/`=`, `!=`/`<>`, `<`, `<=`/`=<`, `>`, `>=`/`=>`,
/// `BETWEEN {lo, hi}` (inclusive), `IN {a, b}` or `IN 'text'` (the value
/// occurs in the text), and for strings `LIKE`, `BEGINSWITH`, `ENDSWITH`,
/// `CONTAINS`, `MATCHES` (whole-string regular expression), `UTI-CONFORMS-TO`
/// and `UTI-EQUALS` (on `kMDItemContentType`), with options `[c]`, `[d]`,
/// `[w]` (mdfind's word matching, on `==`, `!=`, `LIKE`) and `[n]` (a
/// no-op: every comparison normalises); `ANY`/`SOME`/`ALL`/`NONE` before a
/// key; `AND`/`&&`, `OR`/`||`, `NOT`/`!`, parentheses, `TRUEPREDICATE`,
/// `FALSEPREDICATE`; `#key` escapes a reserved word. Values: quoted strings
/// (escapes `\n`, `\t`, `\r`, octal `\012`, `\xHH` and `\uHHHH` name
/// characters; `\yHH` is one raw byte, for names that are not UTF-8),
/// numbers (decimal, `0x`, `0o`, `0b`, exponent), `YES`/`NO`/`TRUE`/`FALSE`,
/// `nil`/`NULL`, `{...}` lists, `CAST(seconds since 2001, "NSDate")`.
/// A size compares with numbers and a date with dates; anything else, and
/// what metadata queries do not support (`SUBQUERY`, functions,
/// `$variables`, key paths), is a syntax error that says so.
///
/// Strings compare after canonical decomposition, so a name written
/// decomposed (as files from macOS often are) equals its composed form;
/// without options the compare is case- and diacritic-sensitive. `LIKE` is a
/// whole-string match where `*` is any run, `?` one character (an extended
/// grapheme cluster: a Hangul syllable, an emoji with its modifiers, a
/// flag), and `\` makes the next character literal. Names that are not
/// UTF-8 match byte-wise.
public struct MetadataPredicate: Sendable, Hashable, CustomStringConvertible {
    package let node: PredicateNode

    /// The attributes read from inside files that the predicate tests
    /// (`kMDItemTextContent`, `kMDItemPixelWidth`, ...): answering it
    /// imports files, which only a one-shot search does for now.
    public var importedAttributes: Set<MetadataAttribute> { CompiledPredicate(self).importedAttributes }

    package init(node: PredicateNode) {
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

    /// Parses a format with substitutions, as `NSPredicate(format:)` does:
    /// `%K` takes a key (a `String` or `MetadataAttribute`), `%@` a value
    /// (`String`, number, `Date`, `Bool`, an array for `IN`/`BETWEEN`),
    /// `%d`/`%i`/`%ld` an integer, `%f` a number. A quoted specifier (`'%@'`)
    /// stays literal.
    ///
    /// ```swift
    /// try MetadataPredicate(format: "%K LIKE %@ AND %K > %d", MetadataAttribute.fsName, "*.mov",
    ///                       MetadataAttribute.fsSize, 1_000_000)
    /// ```
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) for a malformed format, a
    ///   missing or extra argument, or an argument of the wrong type.
    public init(format: String, _ arguments: any PredicateArgumentConvertible...) throws(MetadataError) {
        var parser = try PredicateParser(Array(format.utf8), arguments: arguments.map(\.predicateArgument))
        node = try parser.parse()
    }

    /// Parses a format with arguments given as `PredicateArgument` values.
    public init(format: String, arguments: [PredicateArgument]) throws(MetadataError) {
        var parser = try PredicateParser(Array(format.utf8), arguments: arguments)
        node = try parser.parse()
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
    /// The predicate that matches nothing.
    public static let alwaysFalse = MetadataPredicate(node: .constant(false))

    /// The predicate in format syntax; parsing it gives back an equal predicate.
    public var predicateFormat: String { node.format }

    public var description: String { predicateFormat }

    /// The words of free text: what `words(_:)` searches for and
    /// `rankWords` ranks by (spaces, tabs and line breaks separate them).
    static func freeTextWords(_ text: [UInt8]) -> [[UInt8]] {
        text.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }).map(Array.init)
    }

    /// mdfind's free text over names and what is inside files: every
    /// whitespace-separated word is in the name (`CONTAINS[cd]`) or begins
    /// a word of the file's text (`LIKE[cdw] 'word*'`). Wildcards in a word
    /// are literal.
    ///
    /// - Throws: `MetadataError` `.querySyntax` for text with no word.
    public static func words(_ text: [UInt8]) throws(MetadataError) -> MetadataPredicate {
        let words = freeTextWords(text)
        guard !words.isEmpty else { throw MetadataError.syntax("the search has no word", offset: 0) }
        let folded: StringCompareOptions = [.caseInsensitive, .diacriticInsensitive]
        let parts = words.map { word -> PredicateNode in
            var pattern: [UInt8] = []
            for byte in word {
                if byte == UInt8(ascii: "*") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "\\") {
                    pattern.append(UInt8(ascii: "\\"))
                }
                pattern.append(byte)
            }
            pattern.append(UInt8(ascii: "*"))
            return .or([
                .comparison(Comparison(attribute: .fsName, op: .contains, options: folded, value: .string(word))),
                .comparison(
                    Comparison(
                        attribute: .textContent, op: .like, options: folded.union(.wordBased), value: .string(pattern))),
            ])
        }
        return MetadataPredicate(node: parts.count == 1 ? parts[0] : .and(parts))
    }

    /// `mdq --name TEXT`: names containing TEXT, case- and
    /// diacritic-insensitive; with `*` or `?` in TEXT, a `LIKE[cd]` match.
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) for a LIKE pattern ending
    ///   in a lone backslash.
    public static func nameMatching(_ text: [UInt8]) throws(MetadataError) -> MetadataPredicate {
        try matching(text, in: .fsName)
    }

    /// What `locate` does with a pattern holding a `/`: the same test as
    /// `nameMatching(_:)` on the whole path (`Reports/2021` is a path
    /// containing it; `*/src/*.swift` a path matching it).
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) for a malformed pattern.
    public static func pathMatching(_ text: [UInt8]) throws(MetadataError) -> MetadataPredicate {
        try matching(text, in: .path)
    }

    private static func matching(_ text: [UInt8], in attribute: MetadataAttribute) throws(MetadataError)
        -> MetadataPredicate
    {
        let hasWildcard = text.contains(UInt8(ascii: "*")) || text.contains(UInt8(ascii: "?"))
        let op: ComparisonOperator = hasWildcard ? .like : .contains
        if hasWildcard { _ = try LikePattern(text) }
        return MetadataPredicate(
            node: .comparison(
                Comparison(
                    attribute: attribute, op: op, options: [.caseInsensitive, .diacriticInsensitive],
                    value: .string(text))))
    }
}
