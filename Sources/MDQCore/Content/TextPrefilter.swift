import MDQSystem

/// What the full-text index can rule out before a predicate on a file's
/// text is tested file by file: a set of files that holds every match (a
/// superset), found in the store's FTS5 index in milliseconds instead of
/// reading every file's text.
///
/// Derived only from tests that are false for a file without the text:
/// `kMDItemTextContent LIKE[cdw] 'invoice*'` (a word, or a word prefix, one
/// word of ASCII letters and digits) and `kMDItemTextContent CONTAINS[cd]
/// 'voice'` or `LIKE '*voice*'` (a run of ASCII letters and digits, found
/// through the index's vocabulary: every indexed word holding it). An `AND`
/// is filtered by any of its parts that has a filter, an `OR` only when all
/// of its parts have one; `NOT` never is. Files outside the set cannot
/// match; those inside are still tested exactly.
///
/// Why a superset: the index's words are runs of letters and digits, case
/// and diacritics folded (`unicode61 remove_diacritics 2`), as `[w]` reads
/// text; a run of ASCII letters and digits inside the text lies inside one
/// such word.
package indirect enum TextPrefilter: Hashable, Sendable {
    /// Files with a word equal to (or, with `prefix`, starting with) the
    /// lower-case ASCII word.
    case word([UInt8], prefix: Bool)
    /// Files with a word holding the lower-case ASCII run.
    case substring([UInt8])
    case all([TextPrefilter])
    case any([TextPrefilter])

    /// The filter for a predicate, or nil when the index cannot narrow it.
    static func of(_ node: PredicateNode) -> TextPrefilter? {
        switch node {
        case .constant, .not: return nil
        case .comparison(let c): return of(c)
        case .and(let parts):
            let filters = parts.compactMap(of)
            if filters.isEmpty { return nil }
            return filters.count == 1 ? filters[0] : .all(filters)
        case .or(let parts):
            var filters: [TextPrefilter] = []
            for part in parts {
                guard let filter = of(part) else { return nil }
                filters.append(filter)
            }
            if filters.isEmpty { return nil }
            return filters.count == 1 ? filters[0] : .any(filters)
        }
    }

    private static func of(_ c: Comparison) -> TextPrefilter? {
        guard c.attribute == .textContent, c.quantifier == nil, case .string(let value) = c.value else { return nil }
        // `*` is a wildcard for LIKE only (an escaped one keeps its
        // backslash, which no word holds: no filter).
        let star = UInt8(ascii: "*")
        var core = value[...]
        var leading = false
        var trailing = false
        if c.op == .like {
            leading = core.first == star
            if leading { core = core.dropFirst() }
            trailing = core.last == star
            if trailing { core = core.dropLast() }
        }
        guard !core.isEmpty, core.allSatisfy(isASCIIAlphanumeric) else { return nil }
        let lower = core.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }
        if c.options.contains(.wordBased) {
            guard c.op == .equal || c.op == .like, !leading else { return nil }
            // Ignoring case folds `ß` to `ss` and ligatures (`ﬁ`, `ﬆ`) to
            // their letters, which the index's words keep as they are: such
            // words are tested file by file. (Runs inside words are looked
            // up by the words' folded keys, `SubstringKeys`, which hold
            // them.)
            if c.options.contains(.caseInsensitive) && containsFoldedLigature(lower) { return nil }
            return .word(lower, prefix: trailing)
        }
        switch c.op {
        case .equal, .like, .beginsWith, .endsWith, .contains:
            // The run lies inside one indexed word.
            return .substring(lower)
        default:
            return nil
        }
    }

    /// Whether `run` holds letters that a non-ASCII character folds to
    /// when case is ignored (`ß` → `ss`, `ﬀ` `ﬁ` `ﬂ` `ﬃ` `ﬄ` `ﬅ` `ﬆ`).
    private static func containsFoldedLigature(_ run: [UInt8]) -> Bool {
        let pairs: [(UInt8, UInt8)] = [(0x73, 0x73), (0x66, 0x66), (0x66, 0x69), (0x66, 0x6C), (0x73, 0x74)]
        return zip(run, run.dropFirst()).contains { a, b in pairs.contains { $0 == (a, b) } }
    }

    private static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        byte &- 0x30 < 10 || byte &- 0x41 < 26 || byte &- 0x61 < 26
    }
}

/// What the full-text index decides about a predicate for one scan: the
/// files that may match (`TextPrefilter`), and for each `[w]` word or word
/// prefix test that ignores case, the files it holds for, exact for files
/// whose text is all ASCII (the index splits and folds ASCII text as `[w]`
/// does: runs of letters and digits, lower-cased), so their text is not
/// read.
package struct TextAcceleration: Sendable {
    package var candidates: Set<FileKey>?
    package var decided: [NameMatcher: Set<FileKey>] = [:]
    /// Files whose text has non-ASCII bytes: their tests read the text.
    package var nonASCII: Set<FileKey> = []
    /// Every test on the text is decided (for an ASCII file): its text is
    /// never needed.
    package var decidesAllTextTests = false

    package init() {}
}

extension CompiledPredicate {
    /// The `[w]` tests on the text the full-text index decides exactly for
    /// ASCII text, with the index query for each; and whether they are all
    /// of its tests on the text.
    package var decidableWordTests: (tests: [NameMatcher: TextPrefilter], all: Bool) {
        var tests: [NameMatcher: TextPrefilter] = [:]
        var textTests = 0
        func walk(_ program: Program) {
            switch program {
            case .constant: break
            case .not(let inner): walk(inner)
            case .and(let parts), .or(let parts): parts.forEach(walk)
            case .test(let test):
                guard test.attribute == .textContent else { return }
                textTests += 1
                guard case .words(let matcher, let spans) = test.kind, spans.maximumWords == 1,
                    matcher.options.contains(.caseInsensitive), matcher.literalIsASCII
                else { return }
                switch matcher.shape {
                case .prefix(let literal) where Self.isIndexWord(literal):
                    tests[matcher] = .word(literal, prefix: true)
                case .exact(let literal) where Self.isIndexWord(literal):
                    tests[matcher] = .word(literal, prefix: false)
                default:
                    break
                }
            }
        }
        walk(program)
        let decided = tests.count
        // Several tests can share a matcher; count distinct decidable ones
        // against all tests conservatively.
        return (tests, decided > 0 && decided >= textTests)
    }

    private static func isIndexWord(_ literal: [UInt8]) -> Bool {
        !literal.isEmpty && literal.allSatisfy { $0 &- 0x30 < 10 || $0 &- 0x61 < 26 }
    }
}

/// The keys the index's words are found by for a `.substring` run: each
/// word folded for case and diacritics as `[cd]` folds (`ß` to `ss`, `ﬁ` to
/// `fi`). A run a predicate matches inside the text, under any options,
/// lies inside the key of the word that holds it: the index's words are
/// already lower-cased and stripped of diacritics, except for the
/// characters that fold to several letters, which the key spells out; and
/// the key of an ASCII word is the word.
package final class SubstringKeys {
    private let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])

    package init() {}

    /// The key of one word of the full-text index.
    package func key(of word: [UInt8]) -> [UInt8] {
        word.allSatisfy { $0 < 0x80 } ? word : folder.folded(word)
    }
}
