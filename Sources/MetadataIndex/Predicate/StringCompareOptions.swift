/// The `[c]`, `[d]` options of a string comparison.
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

    /// The bracket suffix as written in a predicate: `""`, `"[c]"`, `"[d]"`, `"[cd]"`.
    var formatSuffix: String {
        var letters = ""
        if contains(.caseInsensitive) { letters += "c" }
        if contains(.diacriticInsensitive) { letters += "d" }
        return letters.isEmpty ? "" : "[\(letters)]"
    }
}
