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
}
