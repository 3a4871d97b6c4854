package import Foundation
package import MDQSystem

/// A query as a person types it on a command line: a predicate, or a bare
/// name search, as `fd PATTERN` and `mdfind`'s free text take it.
///
/// Text that *looks like a predicate* is parsed strictly, so a typo in a
/// real predicate is an error that points at it, never a name search that
/// silently finds nothing. Anything else (`report`, `*.png`,
/// `tom and jerry`) is a name search, exactly as `mdq --name TEXT`; with a
/// `/` in it (`Reports/2021`, `*/src/*.swift`), a search of the whole path,
/// as `locate` does.
///
/// Text looks like a predicate when it has any of:
/// - an operator: `=`, `<`, `>` anywhere, `&&` or `||`;
/// - an attribute key: a word starting with `kMDItem`, `kMDQ` or
///   `NSMetadata` (any case), a `%K`/`%@` substitution, `$time.` or
///   `InRange(`;
/// - `TRUEPREDICATE` or `FALSEPREDICATE`, or a word within three edits of
///   either (`TRUEPREDICAT`);
/// - a comparison word (`LIKE`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`,
///   `MATCHES`, `BETWEEN`, `IN`, any case) followed by what only a
///   comparison has there: `[` options, a quote, a number, `{`, `%`, `$`, or
///   a literal word (`YES`, `NO`, `TRUE`, `FALSE`, `NIL`, `NULL`, `CAST`);
///   so `sign in` and `things I like` stay name searches;
/// - a quoted string: a quote at the start or after a space, `(`, `{` or
///   `,`, closed later and followed by the end, a space, `)`, `,`, `}` or
///   mdfind's modifier letters.
///
/// So `kMDItemFSNme LIKE '*.png'` (unknown key), `kMDItemFSName LIK '*.png'`
/// (unknown operator) and `FSName LIKE '*.png'` are parse errors, while
/// `Bob's notes` and `report (1)` are names.
package enum CommandLineQuery {
    /// Whether `text` is free text, mdfind's words (not a predicate, not a
    /// glob): a daemon that indexes content searches it in names and
    /// text.
    package static func isFreeText(_ text: [UInt8]) -> Bool {
        !text.contains(UInt8(ascii: "*")) && !text.contains(UInt8(ascii: "?")) && !text.contains(UInt8(ascii: "/"))
            && !looksLikePredicate(text)
    }

    /// Whether `text` is parsed as a predicate (see the type's rules).
    package static func looksLikePredicate(_ text: [UInt8]) -> Bool {
        let words = Word.split(text)
        if hasOperator(text) || hasQuotedString(text) { return true }
        for word in words {
            let lower = word.lowercased
            if lower.starts(with: Array("kmditem".utf8)) || lower.starts(with: Array("kmdq".utf8))
                || lower.starts(with: Array("nsmetadata".utf8)) || lower.starts(with: Array("$time.".utf8))
            {
                return true
            }
            if word.bytes.first == UInt8(ascii: "%"), word.bytes.count == 2,
                [UInt8(ascii: "K"), UInt8(ascii: "@")].contains(word.bytes[1])
            {
                return true
            }
            if lower == Array("inrange".utf8), word.next == UInt8(ascii: "(") { return true }
            if lower.count >= 10,
                ["truepredicate", "falsepredicate"].contains(where: { EditDistance.between(lower, $0.utf8) <= 3 })
            {
                return true
            }
            if comparisonWords.contains(lower), startsOperand(after: word, in: text) {
                return true
            }
        }
        return false
    }

    /// The predicate `text` means: parsed strictly (NSPredicate syntax, or
    /// mdfind's with `spotlight`) when it looks like one, else a name search
    /// as `MetadataPredicate.nameMatching(_:)`.
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) with the offset of the
    ///   mistake; `.invalidArgument` for empty text.
    /// - Parameter timeZone: the zone mdfind's `$time.today` and its kin
    ///   are days of (the user's: a daemon is given the client's).
    package static func predicate(
        _ text: [UInt8], spotlight: Bool, timeZone: TimeZone = .current
    ) throws(MetadataError) -> MetadataPredicate {
        let trimmed = text.drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A }.reversed()
            .drop { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A }
        guard !trimmed.isEmpty else {
            throw MetadataError.invalidArgument("the query is empty")
        }
        guard looksLikePredicate(text) else {
            // A `/` makes it a path pattern, as locate reads one.
            let pattern = Array(trimmed.reversed())
            return pattern.contains(UInt8(ascii: "/"))
                ? try MetadataPredicate.pathMatching(pattern) : try MetadataPredicate.nameMatching(pattern)
        }
        if spotlight { return try MetadataPredicate(spotlightQueryBytes: text, timeZone: timeZone) }
        if readsOnlyAsSpotlight(text) {
            // mdfind's syntax, unless only an NSPredicate reads it (an
            // NSPredicate word beside a wildcard ==): then its error is
            // the one that says what is wrong.
            do {
                return try MetadataPredicate(spotlightQueryBytes: text, timeZone: timeZone)
            } catch {
                if let predicate = try? MetadataPredicate(formatBytes: text) { return predicate }
                throw error
            }
        }
        return try MetadataPredicate(formatBytes: text)
    }

    /// How a query read one way would read the other, for a query that
    /// matched nothing: `predicate` is the other reading, `note(count)`
    /// the line that says so when it matches `count` items.
    package struct OtherReading: Sendable {
        package let predicate: MetadataPredicate
        package let note: @Sendable (Int) -> String
    }

    /// The other reading of free text of several words: `mdq` searches
    /// names containing the whole text (`report 2024` with its space), while
    /// mdfind's free text finds every word, in any order. Nil for anything
    /// else: a predicate, a glob or path pattern, one word (each reads one
    /// way), or text whose `==` wildcards are mdfind's (a literal name
    /// matches its own wildcard pattern, so that reading finds no less).
    package static func otherReading(of text: [UInt8]) -> OtherReading? {
        guard isFreeText(text) else { return nil }
        let words = text.split(whereSeparator: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A }).map { Array($0) }
        guard words.count >= 2, words.count <= 16 else { return nil }
        var predicate: MetadataPredicate?
        for word in words {
            guard let each = try? MetadataPredicate.nameMatching(word) else { return nil }
            predicate = predicate.map { $0 && each } ?? each
        }
        guard let predicate else { return nil }
        let quoted = String(decoding: text, as: UTF8.self)
        // The predicate to type, when each word is plain enough to quote.
        let plain = words.allSatisfy { word in
            word.allSatisfy { byte in
                byte >= 0x80 || isWordByte(byte)
                    || [UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "+")].contains(byte)
            }
        }
        let typed = words.map { "kMDItemFSName LIKE[cd] '*\(String(decoding: $0, as: UTF8.self))*'" }
            .joined(separator: " && ")
        return OtherReading(predicate: predicate) { count in
            let names = count == 1 ? "1 name contains" : "\(count) names contain"
            return "no name contains \"\(quoted)\" as one piece; \(names) each of its words, as mdfind reads "
                + (plain ? "them: mdq \"\(typed)\"" : "them")
        }
    }

    /// Whether `text` only makes sense in mdfind's syntax, so it is read in
    /// that syntax without `--spotlight`: a quoted value followed by
    /// mdfind's modifier letters (`"*.pdf"cd`), `$time.` or `InRange(`, or
    /// `==`, `=` or `!=` before a quoted value with `*` or `?` (a wildcard
    /// in mdfind; in an NSPredicate a literal character no name is likely
    /// to hold, so `kMDItemFSName == '*.pdf'` would find nothing).
    static func readsOnlyAsSpotlight(_ text: [UInt8]) -> Bool {
        let lower = text.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        if lower.firstRange(of: Array("$time.".utf8)) != nil || lower.firstRange(of: Array("inrange(".utf8)) != nil {
            return true
        }
        var i = 0
        var quote: UInt8?
        var start = 0
        var afterEquality = false
        var wildcard = false
        while i < text.count {
            let byte = text[i]
            if let open = quote {
                if byte == UInt8(ascii: "\\") {
                    i += 2
                    continue
                }
                if byte == UInt8(ascii: "*") || byte == UInt8(ascii: "?") { wildcard = true }
                if byte == open {
                    quote = nil
                    // "…"cd: modifiers glued to the closing quote.
                    if i + 1 < text.count,
                        [UInt8(ascii: "c"), UInt8(ascii: "d"), UInt8(ascii: "w")].contains(text[i + 1]),
                        i + 2 == text.count || !isWordByte(text[i + 2]) || modifierRun(text, from: i + 1)
                    {
                        return true
                    }
                    if afterEquality && wildcard && start > 0 { return true }
                    afterEquality = false
                }
                i += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                quote = byte
                start = i + 1
                wildcard = false
            case UInt8(ascii: "="):
                let previous = i > 0 ? text[i - 1] : 0
                if previous != UInt8(ascii: "<") && previous != UInt8(ascii: ">") { afterEquality = true }
            case 0x20, 0x09:
                break
            default:
                if !(byte == UInt8(ascii: "!") && i + 1 < text.count && text[i + 1] == UInt8(ascii: "=")) {
                    afterEquality = false
                }
            }
            i += 1
        }
        return false
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
    }

    /// Whether the letters from `index` are only mdfind modifiers up to a
    /// space, a parenthesis or the end (`cdw`, not `cdrom`).
    private static func modifierRun(_ text: [UInt8], from index: Int) -> Bool {
        var i = index
        while i < text.count, [UInt8(ascii: "c"), UInt8(ascii: "d"), UInt8(ascii: "w")].contains(text[i]) { i += 1 }
        return i == text.count || !isWordByte(text[i])
    }

    private static let comparisonWords: Set<[UInt8]> = Set(
        ["like", "beginswith", "endswith", "contains", "matches", "between", "in"].map { Array($0.utf8) })
    private static let literalWords: Set<[UInt8]> = Set(
        ["yes", "no", "true", "false", "nil", "null", "cast"].map { Array($0.utf8) })

    private static func hasOperator(_ text: [UInt8]) -> Bool {
        for (i, byte) in text.enumerated() {
            switch byte {
            case UInt8(ascii: "="), UInt8(ascii: "<"), UInt8(ascii: ">"): return true
            case UInt8(ascii: "&"), UInt8(ascii: "|"):
                if i + 1 < text.count && text[i + 1] == byte { return true }
            default: break
            }
        }
        return false
    }

    /// Whether what follows `word` (after spaces) can only be a comparison's operand.
    private static func startsOperand(after word: Word, in text: [UInt8]) -> Bool {
        var i = word.end
        while i < text.count && text[i] == 0x20 { i += 1 }
        guard i < text.count else { return false }
        switch text[i] {
        case UInt8(ascii: "["), UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "%"),
            UInt8(ascii: "$"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "+"):
            return i + 1 < text.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[i + 1])
        default:
            let next = Word.split(Array(text[i...])).first
            return next.map { literalWords.contains($0.lowercased) } ?? false
        }
    }

    private static func hasQuotedString(_ text: [UInt8]) -> Bool {
        let openers: Set<UInt8> = [0x20, UInt8(ascii: "("), UInt8(ascii: "{"), UInt8(ascii: ",")]
        let closers: Set<UInt8> = [0x20, UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: "}")]
        let modifiers: Set<UInt8> = [UInt8(ascii: "c"), UInt8(ascii: "d"), UInt8(ascii: "w")]
        var i = 0
        while i < text.count {
            let quote = text[i]
            guard quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\""), i == 0 || openers.contains(text[i - 1])
            else {
                i += 1
                continue
            }
            var j = i + 1
            while j < text.count {
                if text[j] == UInt8(ascii: "\\") {
                    j += 2
                    continue
                }
                if text[j] == quote {
                    var after = j + 1
                    while after < text.count && modifiers.contains(text[after]) { after += 1 }
                    if after == text.count || closers.contains(text[after]) { return true }
                }
                j += 1
            }
            i += 1
        }
        return false
    }

    /// A run of identifier characters (letters, digits, `_`, `.`, `$`, `%`,
    /// `@`, and every byte of a non-ASCII character).
    private struct Word {
        var bytes: [UInt8]
        var end: Int
        /// The first byte after the word that is not a space, if any.
        var next: UInt8?

        var lowercased: [UInt8] {
            bytes.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }
        }

        static func isWordByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "$"),
                UInt8(ascii: "%"), UInt8(ascii: "@"), 0x80...0xFF:
                return true
            default:
                return false
            }
        }

        static func split(_ text: [UInt8]) -> [Word] {
            var words: [Word] = []
            var i = 0
            while i < text.count {
                guard isWordByte(text[i]) else {
                    i += 1
                    continue
                }
                let start = i
                while i < text.count && isWordByte(text[i]) { i += 1 }
                var k = i
                while k < text.count && text[k] == 0x20 { k += 1 }
                words.append(Word(bytes: Array(text[start..<i]), end: i, next: k < text.count ? text[k] : nil))
            }
            return words
        }
    }
}
