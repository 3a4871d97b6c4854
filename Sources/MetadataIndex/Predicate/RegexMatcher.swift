import Foundation

/// `MATCHES`: a whole-string regular expression (ICU syntax, as
/// NSPredicate), compiled once per query.
///
/// Matching needs a `String` per tested value, so it allocates; the
/// compiler runs it after every cheaper term.
struct RegexMatcher: @unchecked Sendable {
    // NSRegularExpression is immutable and thread-safe for matching.
    let expression: NSRegularExpression
    let options: StringCompareOptions

    init?(_ pattern: [UInt8], options: StringCompareOptions) {
        guard !pattern.contains(0) else { return nil }
        var regexOptions: NSRegularExpression.Options = []
        if options.contains(.caseInsensitive) { regexOptions.insert(.caseInsensitive) }
        let text = String(decoding: pattern, as: UTF8.self)
        guard let expression = try? NSRegularExpression(pattern: "^(?:" + text + ")$", options: regexOptions) else {
            return nil
        }
        self.expression = expression
        self.options = options
    }

    /// Why the pattern does not compile, or nil when it does.
    static func validate(_ pattern: [UInt8]) -> String? {
        // No name holds a NUL, and Foundation's regex compiler leaks on one.
        if pattern.contains(0) { return "it contains a NUL character, which no name can hold" }
        do {
            _ = try NSRegularExpression(pattern: String(decoding: pattern, as: UTF8.self))
            return nil
        } catch {
            return "the pattern does not compile"
        }
    }

    /// Whether the whole text matches; `[d]` strips diacritics first.
    func matches(_ text: UnsafeRawBufferPointer) -> Bool {
        var string = String(decoding: text, as: UTF8.self)
        if options.contains(.diacriticInsensitive) {
            string = string.folding(options: .diacriticInsensitive, locale: nil)
        }
        let range = NSRange(string.startIndex..<string.endIndex, in: string)
        return expression.firstMatch(in: string, options: [.anchored], range: range) != nil
    }
}

extension RegexMatcher: Hashable {
    static func == (lhs: RegexMatcher, rhs: RegexMatcher) -> Bool {
        lhs.expression.pattern == rhs.expression.pattern && lhs.options == rhs.options
    }
    func hash(into hasher: inout Hasher) { hasher.combine(expression.pattern) }
}
