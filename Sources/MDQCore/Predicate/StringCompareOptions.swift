import MDQSystem

/// The `[c]`, `[d]`, `[w]` options of a string comparison (`[n]` is
/// accepted and means nothing more: every comparison is normalised).
public struct StringCompareOptions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8

    public init(rawValue: UInt8) {
        self.rawValue = rawValue
    }

    /// `[c]`: case-insensitive (Unicode case folding).
    public static let caseInsensitive = StringCompareOptions(rawValue: 1)
    /// `[d]`: diacritic-insensitive (combining marks removed after
    /// canonical decomposition).
    public static let diacriticInsensitive = StringCompareOptions(rawValue: 2)
    /// `[w]`, mdfind's word-based matching: the value matches a run of
    /// whole words of the text. A word starts at the beginning, after a
    /// character that is not a letter or digit, or where lower case turns
    /// to upper case (`"report"wc` matches `MyReport.txt`; `"Paris"wc`
    /// matches `I love Paris` and `paris-france.jpg`, not `Comparison`).
    /// Applies to `==`, `!=` and `LIKE`.
    public static let wordBased = StringCompareOptions(rawValue: 4)

    /// The options that change how text is folded (`[c]`, `[d]`).
    var folding: StringCompareOptions { intersection([.caseInsensitive, .diacriticInsensitive]) }

    /// The bracket suffix as written in a predicate: `""`, `"[c]"`, `"[cdw]"`...
    var formatSuffix: String {
        var letters = ""
        if contains(.caseInsensitive) { letters += "c" }
        if contains(.diacriticInsensitive) { letters += "d" }
        if contains(.wordBased) { letters += "w" }
        return letters.isEmpty ? "" : "[\(letters)]"
    }

    /// The option an option letter names: `c`, `d`, `w`, or `n` (none:
    /// comparisons always normalise); nil for any other letter.
    static func letter(_ byte: UInt8) -> StringCompareOptions? {
        switch byte | 0x20 {
        case UInt8(ascii: "c"): .caseInsensitive
        case UInt8(ascii: "d"): .diacriticInsensitive
        case UInt8(ascii: "w"): .wordBased
        case UInt8(ascii: "n"): []
        default: nil
        }
    }
}
