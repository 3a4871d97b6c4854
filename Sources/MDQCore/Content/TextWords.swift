/// A text's words as a `[cdw]` test reads them, for an index of words that
/// answers such tests without the text (the shared index's `tsvector`s):
/// each word as `WordBoundaries` finds it on text (runs of letters and
/// digits with their marks, no split inside camelCase), folded as `[cd]`
/// folds it (`UnicodeFolder`: NFD, case folded, marks removed).
///
/// A one-word test, `'invoice'cdw`, holds for the text exactly when the
/// folded word is among these; a word's start, `'invoi*'cdw`, exactly when
/// one of them starts with the folded start, provided that start ends in
/// an ASCII character (a folded start ending inside a character, a Hangul
/// syllable's first jamo, would match bytes the test does not:
/// `wordTest(_:)` says nil for it).
package enum TextWords {
    /// The longest word kept whole, in bytes; a longer one is kept as its
    /// first bytes (whole characters), so a word's start still finds it
    /// (PostgreSQL takes lexemes of less than 2 KiB).
    package static let longestWord = 2046
    /// The most bytes of words one text gives: PostgreSQL's bound on the
    /// lexemes of a `tsvector` (each starts within 2^20 - 1 bytes). The
    /// words of a text are no longer than it unless folding lengthens them
    /// (a Hangul syllable folds to two or three jamo), so those of any
    /// text an import keeps (1 MiB, `ImportLimits`) that folding does not
    /// lengthen are complete: at least two words, one byte between them.
    package static let mostBytes = (1 << 20) - 1

    /// The distinct folded words of `text`, in byte order, and whether all
    /// of them are there (false when they passed `mostBytes`: those met
    /// first are kept).
    package static func words(of text: [UInt8]) -> (words: [[UInt8]], complete: Bool) {
        var starts: [Int] = []
        var ends: [Int] = []
        text.withUnsafeBytes { WordBoundaries.find(in: $0, splitsCamelCase: false, starts: &starts, ends: &ends) }
        let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])
        var seen: Set<[UInt8]> = []
        var bytes = 0
        var complete = true
        for (start, end) in zip(starts, ends) {
            let word = text[start..<end]
            var folded: [UInt8]
            if word.allSatisfy({ $0 < 0x80 }) {
                folded = word.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }
            } else {
                folded = folder.folded(Array(word))
            }
            // Marks alone fold to nothing.
            guard !folded.isEmpty else { continue }
            if folded.count > longestWord {
                var cut = longestWord
                while cut > 0 && folded[cut] & 0xC0 == 0x80 { cut -= 1 }
                folded.removeSubrange(cut...)
            }
            guard !seen.contains(folded) else { continue }
            guard bytes + folded.count <= mostBytes else {
                complete = false
                break
            }
            bytes += folded.count
            seen.insert(folded)
        }
        return (seen.sorted { $0.lexicographicallyPrecedes($1) }, complete)
    }

    /// What a test on a text asks of its words, when `words(of:)` decides
    /// it exactly: the folded word, and whether it is a word's start. Nil
    /// for any other test (without `[c]`, `[d]` and `[w]`, several words,
    /// wildcards other than one trailing `*`, a value that is not UTF-8).
    package static func wordTest(_ c: Comparison) -> (word: [UInt8], prefix: Bool)? {
        guard c.attribute == .textContent, c.quantifier == nil,
            c.options.isSuperset(of: [.caseInsensitive, .diacriticInsensitive, .wordBased]),
            [.equal, .like, .beginsWith].contains(c.op), case .string(let value) = c.value,
            String(validating: value, as: UTF8.self) != nil,
            let pattern = try? LikePattern.forOperator(c.op, value: value)
        else { return nil }
        let matcher = NameMatcher(pattern, options: [.caseInsensitive, .diacriticInsensitive])
        let word: [UInt8]
        let prefix: Bool
        switch matcher.shape {
        case .exact(let literal): (word, prefix) = (literal, false)
        case .prefix(let literal): (word, prefix) = (literal, true)
        default: return nil
        }
        // A whole word as long as a cut one (`longestWord`) could equal a
        // longer word's start.
        guard !word.isEmpty, word.count <= longestWord - 4 || prefix && word.count <= longestWord,
            !prefix || word.last! < 0x80
        else { return nil }
        // One word, the whole literal: as a text's words are found.
        var starts: [Int] = []
        var ends: [Int] = []
        word.withUnsafeBytes { WordBoundaries.find(in: $0, splitsCamelCase: false, starts: &starts, ends: &ends) }
        guard starts == [0], ends == [word.count] else { return nil }
        return (word, prefix)
    }
}
