import Foundation

/// `MATCHES`: a whole-string regular expression (ICU syntax, as
/// NSPredicate), compiled once per query.
///
/// Pattern and text get the same normalisation: both are put in canonical
/// composed form (NFC), so a name written decomposed matches as `==` would,
/// and with `[d]` both lose their diacritics first (`MATCHES[d] 'cafe.*'`
/// finds `café menu.txt`). `[c]` is the expression's case-insensitive flag.
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
        let text = Self.normalized(String(decoding: pattern, as: UTF8.self), options)
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

    /// Text (a pattern or a value) in the form both are compared in.
    private static func normalized(_ text: String, _ options: StringCompareOptions) -> String {
        let folded =
            options.contains(.diacriticInsensitive) ? text.folding(options: .diacriticInsensitive, locale: nil) : text
        return folded.precomposedStringWithCanonicalMapping
    }

    /// Whether the whole text matches.
    ///
    /// Under a query's `QueryLimit` the match is bounded: ICU reports
    /// progress about every 10,000 backtracking steps, and past
    /// `QueryLimit.ticksPerName` such reports on one name (or once the query
    /// is past its deadline or cancelled) the match is abandoned and the
    /// limit marked, so the query ends as too expensive; the false returned
    /// then is never an answer anyone sees. A match that finishes is the
    /// same match `firstMatch` finds (the search is anchored, one start).
    func matches(_ text: UnsafeRawBufferPointer) -> Bool {
        let string = Self.normalized(String(decoding: text, as: UTF8.self), options)
        let range = NSRange(string.startIndex..<string.endIndex, in: string)
        guard let limit = QueryLimit.current else {
            return expression.firstMatch(in: string, options: [.anchored], range: range) != nil
        }
        if limit.isStopped { return false }
        var matched = false
        var ticks = 0
        expression.enumerateMatches(in: string, options: [.anchored, .reportProgress], range: range) {
            result, flags, stop in
            if result != nil {
                matched = true
                stop.pointee = true
            } else if flags.contains(.progress) {
                ticks += 1
                if ticks > QueryLimit.ticksPerName {
                    limit.exceed("the MATCHES pattern backtracks too much on a name")
                    stop.pointee = true
                } else if ticks & 15 == 0 && limit.isStopped {
                    stop.pointee = true
                }
            }
        }
        return matched
    }
}

extension RegexMatcher: Hashable {
    static func == (lhs: RegexMatcher, rhs: RegexMatcher) -> Bool {
        lhs.expression.pattern == rhs.expression.pattern && lhs.options == rhs.options
    }
    func hash(into hasher: inout Hasher) { hasher.combine(expression.pattern) }
}
