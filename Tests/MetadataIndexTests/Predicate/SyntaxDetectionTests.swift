import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// A query pasted from mdfind is read in mdfind's syntax without
/// `--spotlight` when only that syntax makes sense of it; everything an
/// NSPredicate reads stays an NSPredicate.
@Suite struct SyntaxDetectionTests {
    func read(_ text: String) throws -> String {
        try CommandLineQuery.predicate(Array(text.utf8), spotlight: false).predicateFormat
    }

    func spotlight(_ text: String) throws -> String {
        try MetadataPredicate(spotlightQuery: text).predicateFormat
    }

    func nsPredicate(_ text: String) throws -> String {
        try MetadataPredicate(text).predicateFormat
    }

    @Test(arguments: [
        "kMDItemFSName == '*.pdf'",
        "kMDItemFSName == \"*.PDF\"c",
        "kMDItemDisplayName == \"report*\"cd",
        "kMDItemFSName = 'IMG_????.jpg'",
        "kMDItemFSName != '*.tmp'",
        "kMDItemFSContentChangeDate > $time.today(-7)",
        "kMDItemFSContentChangeDate >= $time.this_week",
        "InRange(kMDItemFSSize, 10, 2000)",
        "kMDItemFSName == \"note\"w",
        "kMDItemFSName == '*.pdf' && kMDItemFSSize > 100",
        "kMDItemFSName == '*.pdf' AND kMDItemFSSize > 100",
        "(kMDItemFSName == '*.png'c || kMDItemFSName == '*.jpg'c) and not kMDItemFSSize < 10",
    ])
    func mdfindOnlyQueriesAreReadAsMdfind(text: String) throws {
        #expect(CommandLineQuery.readsOnlyAsSpotlight(Array(text.utf8)), "\(text)")
        #expect(try read(text) == spotlight(text))
    }

    @Test(arguments: [
        "kMDItemFSName == 'report.pdf'",
        "kMDItemFSName LIKE '*.pdf'",
        "kMDItemFSName LIKE[c] '*.PDF' AND kMDItemFSSize > 10",
        "kMDItemFSName BEGINSWITH 'a' OR kMDItemFSName ENDSWITH '?'",
        "kMDItemFSSize <= 100",
        "kMDItemFSSize >= 10 && kMDItemFSName CONTAINS '*'",
        "kMDItemFSName IN {'a*', 'b'}",
        "kMDItemFSName MATCHES '.*[.]pdf'",
        "kMDItemPath CONTAINS '/cdrom' OR kMDItemFSName == 'a'",
        "kMDItemFSName == \"x\" && kMDItemFSSize > 1",
        "TRUEPREDICATE",
    ])
    func nsPredicatesStayNSPredicates(text: String) throws {
        #expect(!CommandLineQuery.readsOnlyAsSpotlight(Array(text.utf8)), "\(text)")
        #expect(try read(text) == nsPredicate(text))
    }

    /// An mdfind query with an NSPredicate operator beside the wildcard is
    /// still read (the mdfind reading accepts AND, OR and NOT), and one
    /// that neither syntax reads gets mdfind's error.
    @Test func mixedAndBrokenQueries() throws {
        #expect(try read("kMDItemFSName == '*.pdf' AND kMDItemFSSize > 100") != nsPredicate("TRUEPREDICATE"))
        #expect(throws: MetadataError.self) { try read("kMDItemFSName == '*.pdf' &&") }
        #expect(throws: MetadataError.self) { try read("kMDItemFSName == \"*.pdf\"cz") }
    }
}
