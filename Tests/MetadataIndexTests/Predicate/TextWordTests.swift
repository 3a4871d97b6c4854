import Foundation
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// `[w]` on a file's text: words as the full-text index splits them, runs
/// of at most as many words as the pattern, and the ASCII shortcut for a
/// word or word prefix agreeing with the general path.
struct TextWordTests {
    /// A word or word prefix in ASCII text, by the shortcut and by
    /// splitting every word (the reference), over seeded texts.
    @Test func theASCIIShortcutAgreesWithSplittingWords() {
        var random = SeededGenerator(seed: 42)
        let alphabet = Array("abAB1 -_.,xyzXYZ\n".utf8)
        let literals = ["ab", "a", "xyz", "b1", "zz", "ab1", "1"].map { Array($0.utf8) }
        for _ in 0..<3000 {
            let text = (0..<Int(random.next() % 40)).map { _ in alphabet[Int(random.next() % UInt64(alphabet.count))] }
            let literal = literals[Int(random.next() % UInt64(literals.count))]
            let whole = random.next() % 2 == 0
            let ignoringCase = random.next() % 2 == 0
            var starts: [Int] = []
            var ends: [Int] = []
            text.withUnsafeBytes { WordBoundaries.find(in: $0, splitsCamelCase: false, starts: &starts, ends: &ends) }
            let expected = zip(starts, ends).contains { start, end in
                var word = Array(text[start..<end])
                if ignoringCase { word = word.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 } }
                return whole ? word == literal : word.starts(with: literal)
            }
            let found = text.withUnsafeBytes {
                WordBoundaries.asciiWord(literal, in: $0, wholeWord: whole, ignoringCase: ignoringCase)
            }
            #expect(found == expected, "\(String(decoding: text, as: UTF8.self)) \(literal) \(whole) \(ignoringCase)")
        }
    }

    /// Through predicates: a pattern of n words tries runs of n words; a
    /// camelCase word in text is one word; names still split camelCase.
    @Test func wordRunsOnTextAndNames() throws {
        func item(name: String, text: String) -> MetadataItem {
            var item = MetadataItem(
                serial: 1, pathBytes: Array("/t/\(name)".utf8), kind: .file, metadata: EntryMetadata(kind: .file))
            var values = ImportedValues()
            values[.textContent] = .text(Array(text.utf8))
            item.importedValues = values
            return item
        }
        let note = item(name: "MyInvoice.txt", text: "Pay the myInvoice now; tax return due")
        #expect(try note.matches(MetadataPredicate("kMDItemTextContent LIKE[cdw] 'tax retu*'")))
        #expect(try !note.matches(MetadataPredicate("kMDItemTextContent LIKE[cdw] 'tax due'")))
        #expect(try !note.matches(MetadataPredicate("kMDItemTextContent LIKE[cdw] 'invoice*'")))
        #expect(try note.matches(MetadataPredicate("kMDItemTextContent LIKE[cdw] 'myinvoice'")))
        #expect(try note.matches(MetadataPredicate("kMDItemFSName LIKE[cdw] 'invoice*'")))
        let accented = item(name: "a.txt", text: "Facture réglée, INVOICÉ")
        #expect(try accented.matches(MetadataPredicate("kMDItemTextContent LIKE[cdw] 'invoice'")))
        #expect(try accented.matches(MetadataPredicate("kMDItemTextContent LIKE[cdw] 'regl*'")))
        #expect(try !accented.matches(MetadataPredicate("kMDItemTextContent LIKE[cw] 'regl*'")))
    }

    /// A text's words (`TextWords`, what hosts publish for searches across
    /// hosts) decide a word or word-start test exactly as the test on the
    /// text does, for every test they claim to decide: seeded texts of
    /// ASCII, precomposed and decomposed accents, `ß`, Greek, Hangul, CJK,
    /// emoji with joiners, bytes that are not UTF-8, and patterns taken
    /// from them in other cases and accents.
    @Test func aTextsWordsDecideWordTestsAsTheTextDoes() throws {
        var random = SeededGenerator(seed: 1138)
        let pieces = [
            "a", "b", "Z", "1", " ", "-", "_", ".", "'", "\n", "é", "É", "e\u{301}", "ß", "SS", "Σ", "ς", "λόγος",
            "한", "하", "국", "中文", "👩\u{200D}💻", "\u{200D}", "ﬁ", "Ǆ", "ｘ", "٣",
        ]
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        var decided = 0
        for round in 0..<2500 {
            var text = Array((0..<Int(random.next() % 12)).map { _ in pick(pieces) }.joined().utf8)
            if random.next() % 10 == 0 { text.insert(0xFF, at: Int(random.next() % UInt64(text.count + 1))) }
            // A pattern: a word of the text, part of one, or pieces, in
            // another case, perhaps a word's start.
            var starts: [Int] = []
            var ends: [Int] = []
            text.withUnsafeBytes { WordBoundaries.find(in: $0, splitsCamelCase: false, starts: &starts, ends: &ends) }
            var pattern: String
            if !starts.isEmpty, random.next() % 3 != 0 {
                let i = Int(random.next() % UInt64(starts.count))
                pattern = String(decoding: text[starts[i]..<ends[i]], as: UTF8.self)
                switch random.next() % 3 {
                case 0: pattern = String(pattern.prefix(max(1, pattern.count / 2)))
                case 1:
                    // Cut inside a character: its decomposed scalars.
                    let scalars = Array(pattern.decomposedStringWithCanonicalMapping.unicodeScalars)
                    let cut = 1 + Int(random.next() % UInt64(scalars.count))
                    pattern = String(String.UnicodeScalarView(scalars.prefix(cut)))
                default: break
                }
            } else {
                pattern = (0..<(1 + Int(random.next() % 3))).map { _ in pick(pieces) }.joined()
            }
            if random.next() % 2 == 0 { pattern = random.next() % 2 == 0 ? pattern.uppercased() : pattern.lowercased() }
            if random.next() % 2 == 0 { pattern += "*" }
            let escaped = pattern.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(
                of: "'", with: "\\'")
            guard let predicate = try? MetadataPredicate("kMDItemTextContent LIKE[cdw] '\(escaped)'"),
                case .comparison(let c) = predicate.node, let test = TextWords.wordTest(c)
            else { continue }
            decided += 1
            let words = TextWords.words(of: text).words
            let byWords = test.prefix ? words.contains { $0.starts(with: test.word) } : words.contains(test.word)
            var item = MetadataItem(
                serial: 1, pathBytes: Array("/t/a.txt".utf8), kind: .file, metadata: EntryMetadata(kind: .file))
            var values = ImportedValues()
            values[.textContent] = .text(text)
            item.importedValues = values
            #expect(
                item.matches(predicate) == byWords,
                "round \(round): \(Array(text)) '\(pattern)' \(test) \(words.map { String(decoding: $0, as: UTF8.self) })"
            )
        }
        // Most patterns are decided by words.
        #expect(decided > 1200, "\(decided)")
    }

    /// The words of a text: distinct, folded, in PostgreSQL's order (bytes,
    /// a prefix first); a word longer than PostgreSQL takes is kept as its
    /// start, whole characters; past the most bytes, those met first.
    @Test func aTextsWordsAreFoldedDistinctAndBounded() {
        let (words, complete) = TextWords.words(of: Array("Café, cafe CAFÉ; Straße b a ab 𝔘 l'eau".utf8))
        #expect(
            words.map { String(decoding: $0, as: UTF8.self) } == ["a", "ab", "b", "cafe", "eau", "l", "strasse", "𝔘"])
        #expect(complete)
        let long = String(repeating: "é", count: 1500)
        let cut = TextWords.words(of: Array(long.utf8)).words
        #expect(
            cut.count == 1 && cut[0].count <= TextWords.longestWord
                && cut[0] == Array(String(repeating: "e", count: 1500).utf8))
        let wide = String(repeating: "ü", count: 1200)
        let kept = TextWords.words(of: Array(wide.utf8)).words
        #expect(kept.count == 1 && kept[0].count == 1200)
        var many: [UInt8] = []
        for i in 0..<150_000 { many += Array("word\(i)x ".utf8) }
        let bounded = TextWords.words(of: many)
        #expect(!bounded.complete && bounded.words.reduce(0) { $0 + $1.count } <= TextWords.mostBytes)
        #expect(bounded.words.contains(Array("word0x".utf8)))
    }

    /// Which tests words decide: a word or a word's start, `[cdw]`, as one
    /// word; not a substring, several words, other wildcards, or a test
    /// without `[c]`, `[d]` or `[w]`.
    @Test(
        arguments: [
            ("kMDItemTextContent LIKE[cdw] 'Invoice'", "invoice", false),
            ("kMDItemTextContent LIKE[cdw] 'invoi*'", "invoi", true),
            ("kMDItemTextContent ==[cdw] 'invoice'", "invoice", false),
            ("kMDItemTextContent LIKE[cdw] 'RÉGLÉE'", "reglee", false),
            ("kMDItemTextContent LIKE[cdw] 'régl*'", "regl", true),
            ("kMDItemTextContent LIKE[cdw] '한*'", nil, false),
            ("kMDItemTextContent LIKE[cdw] '한국'", "한국", false),
            ("kMDItemTextContent LIKE[cd] 'invoice'", nil, false),
            ("kMDItemTextContent LIKE[cw] 'invoice'", nil, false),
            ("kMDItemTextContent LIKE[cdw] 'tax return'", nil, false),
            ("kMDItemTextContent LIKE[cdw] '*voice'", nil, false),
            ("kMDItemTextContent LIKE[cdw] 'in?oice'", nil, false),
            ("kMDItemTextContent LIKE[cdw] 'in*ce'", nil, false),
            ("kMDItemTextContent CONTAINS[cd] 'voice'", nil, false),
            ("kMDItemTextContent LIKE[cdw] '*'", nil, false),
            ("kMDItemTextContent LIKE[cdw] 'e-mail'", nil, false),
            ("kMDItemTitle LIKE[cdw] 'invoice'", nil, false),
        ] as [(String, String?, Bool)])
    func wordTestsAreTheOnesWordsDecide(query: String, word: String?, prefix: Bool) throws {
        guard case .comparison(let c) = try MetadataPredicate(query).node else {
            Issue.record("not a comparison")
            return
        }
        let test = TextWords.wordTest(c)
        if let word {
            #expect(
                test?.word.map { $0 } == Array(word.decomposedStringWithCanonicalMapping.utf8) && test?.prefix == prefix
            )
        } else {
            #expect(test == nil, "\(String(describing: test))")
        }
    }
}
