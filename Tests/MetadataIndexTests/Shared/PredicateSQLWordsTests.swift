import MDQShared
import Testing

@testable import MDQCore

/// What a search across hosts makes of a test of a file's text: a word or
/// a word's start becomes a condition on the published words, exact;
/// anything else is refused with its reason; and what mdq checks on each
/// row leaves out what the database decides exactly, so it never needs the
/// text.
struct PredicateSQLWordsTests {
    func translated(_ query: String) throws -> PredicateSQL {
        try PredicateSQL(try MetadataPredicate(query))
    }

    @Test func aWordOrAWordsStartIsAConditionOnTheWords() throws {
        let word = try translated("kMDItemTextContent LIKE[cdw] 'Invoice'")
        #expect(word.condition == .words(Array("invoice".utf8), prefix: false) && word.exact && word.narrows)
        #expect(word.condition.json == #"["words","invoice"]"#)
        let start = try translated("kMDItemTextContent LIKE[cdw] 'régl*'")
        #expect(start.condition == .words(Array("regl".utf8), prefix: true) && start.exact && start.narrows)
        #expect(start.condition.json == #"["word-prefix","regl"]"#)
        // A start of one or two letters narrows no more than a name
        // fragment that short: bounded only by --limit or --budget.
        #expect(try !translated("kMDItemTextContent LIKE[cdw] 'in*'").narrows)
        #expect(try translated("kMDItemTextContent LIKE[cdw] 'in'").narrows)
        // Beside a name, both are the database's.
        let both = try translated("kMDItemTextContent LIKE[cdw] 'invoice' && kMDItemFSName LIKE[cd] '*.pdf'")
        #expect(both.exact && both.condition.testsWords)
        #expect(SQLCondition.entries([1, UInt64.max]).json == #"["entries",["1","-1"]]"#)
    }

    @Test(arguments: [
        ("kMDItemTextContent CONTAINS[cd] 'voice'", "a word or a word's start"),
        ("kMDItemTextContent LIKE[cw] 'invoice'", "a word or a word's start"),
        ("kMDItemTextContent LIKE[cdw] 'tax return'", "a word or a word's start"),
        ("kMDItemTextContent LIKE[cdw] '*voice'", "a word or a word's start"),
        ("kMDItemTextContent == nil", "a word or a word's start"),
        ("NOT kMDItemTextContent LIKE[cdw] 'invoice'", "not tested under NOT"),
        ("kMDItemTextContent != 'invoice'", "a word or a word's start"),
        ("kMDItemTextContent LIKE[cdw] 'invoice' || kMDItemFSName LIKE 'Invoice*'", "ORed only with tests"),
    ])
    func otherTestsOfTheTextAreRefusedWithTheReason(query: String, reason: String) {
        #expect {
            _ = try translated(query)
        } throws: { error in
            guard let refused = error as? PredicateSQL.Unpublished else { return false }
            return refused.attribute == "kMDItemTextContent" && refused.reason?.contains(reason) == true
        }
    }

    /// A test of another imported attribute (schema version 12): the
    /// files whose published attributes hold it, each checked by mdq on
    /// the values; a test that a file without the attribute passes (a
    /// negation, `!=`, ALL or NONE of a list) narrows nothing.
    @Test func anImportedAttributeNarrowsToTheFilesThatHaveIt() throws {
        for query in [
            "kMDItemTitle LIKE[cd] 'Report*'", "kMDItemAuthors == 'Ada'", "kMDItemNumberOfPages > 3",
            "kMDItemContentCreationDate > CAST(725846400, 'NSDate')",
        ] {
            let search = try translated(query)
            let name = String(query.prefix { $0 != " " })
            #expect(search.condition == .attribute(name) && !search.exact && search.narrows, "\(query)")
            #expect(search.condition.json == "[\"attribute\",\"\(name)\"]")
            #expect(search.recheck.node == (try MetadataPredicate(query)).node, "\(query)")
        }
        // A file that has it is what `!= nil` asks for.
        #expect(try translated("kMDItemTitle != nil").condition == .attribute("kMDItemTitle"))
        for query in [
            "kMDItemTitle != 'Report'", "NOT kMDItemTitle == 'Report'", "ALL kMDItemAuthors == 'Ada'",
            "NONE kMDItemAuthors == 'Ada'", "kMDItemTitle == nil",
        ] {
            let search = try translated(query)
            #expect(!search.narrows && !search.exact, "\(query)")
        }
        // Narrowed by a name beside it, the database tests both.
        let both = try translated("kMDItemTitle LIKE[cd] 'Report*' && kMDItemFSName LIKE[cd] '*.pdf'")
        #expect(both.narrows && !both.exact)
        #expect(both.condition == .and([.attribute("kMDItemTitle"), .equals(.ext, "pdf")]), "\(both.condition)")
        #expect(PredicateSQL.publishes(.title) && !PredicateSQL.publishes(.textContent))
    }

    /// The rows' check leaves out the conjuncts the condition decides
    /// exactly: a case-sensitive name test stays, the words go.
    @Test func theRowsCheckIsWhatTheDatabaseDoesNotDecide() throws {
        let search = try translated("kMDItemTextContent LIKE[cdw] 'invoice' && kMDItemFSName LIKE 'Invoice*'")
        #expect(!search.exact)
        #expect(search.recheck.node == (try MetadataPredicate("kMDItemFSName LIKE 'Invoice*'")).node)
        let exact = try translated("kMDItemTextContent LIKE[cdw] 'invoice' && kMDItemFSSize > 10")
        #expect(exact.exact && exact.recheck.node == .and([]))
        // Without words too: only the inexact part is checked again.
        let names = try translated("kMDItemFSName LIKE[cd] 'a*' && kMDItemFSName LIKE 'A*'")
        #expect(names.recheck.node == (try MetadataPredicate("kMDItemFSName LIKE 'A*'")).node)
    }
}
