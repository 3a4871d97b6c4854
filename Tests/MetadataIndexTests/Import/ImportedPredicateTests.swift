import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Predicates on attributes read from inside files, evaluated on subjects
/// that carry imported values: every comparison works on them as on names,
/// and they are tested after every cheaper term.
struct ImportedPredicateTests {
    /// A subject whose imports are counted.
    final class Counter: @unchecked Sendable {
        var calls = 0
    }

    struct CountingSubject: PredicateSubject {
        var base: TestSubject
        let counter: Counter
        var kind: EntryKind { base.kind }
        func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R { base.withName(body) }
        func appendPath(to bytes: inout [UInt8]) { base.appendPath(to: &bytes) }
        func metadata() -> EntryMetadata? { base.metadata() }
        func ubiquity() -> MetadataItem.Ubiquity? { nil }
        func hasUnresolvedConflicts() -> Bool { false }
        func conflictOriginalPath() -> [UInt8]? { nil }
        func imported() -> ImportedValues? {
            counter.calls += 1
            return base.importedValues
        }
    }

    static func subject(_ name: String) -> TestSubject {
        var subject = TestSubject(name)
        var values = ImportedValues()
        values[.textContent] = .text(Array("Invoice for the Café Lumière, total 120 EUR".utf8))
        values[.authors] = .list(["Ada Lovelace", "Charles Babbage"])
        values[.pixelWidth] = .integer(4000)
        values[.durationSeconds] = .real(61.5)
        values[.contentCreationDate] = .date(Timestamp(nanosecondsSinceEpoch: 1_710_495_000_000_000_000))
        values[.userTags] = .list(["tax", "2024"])
        subject.importedValues = values
        return subject
    }

    static let cases: [(String, Bool)] = [
        ("kMDItemTextContent CONTAINS[cd] 'cafe lumiere'", true),
        ("kMDItemTextContent CONTAINS 'invoice'", false),
        ("kMDItemTextContent LIKE[c] '*total ??? eur'", true),
        ("kMDItemAuthors == 'Ada Lovelace'", true),
        ("kMDItemAuthors BEGINSWITH 'Charles'", true),
        ("ALL kMDItemAuthors CONTAINS 'a'", true),
        ("kMDItemAuthors == 'Grace Hopper'", false),
        ("kMDItemUserTags == 'tax'", true),
        ("kMDItemUserTags IN {'personal', '2024'}", true),
        ("kMDItemPixelWidth >= 3000", true),
        ("kMDItemPixelWidth BETWEEN {100, 200}", false),
        ("kMDItemDurationSeconds > 60 AND kMDItemDurationSeconds < 62", true),
        ("kMDItemContentCreationDate > CAST(725846400, 'NSDate')", true),
        ("kMDItemPixelHeight > 0", false),
        ("kMDItemTitle == NIL", true),
        ("kMDItemPixelWidth != NIL", true),
    ]

    @Test(arguments: cases)
    func comparisonsOnImportedValues(query: String, expected: Bool) throws {
        let predicate = try MetadataPredicate(query)
        let evaluator = CompiledPredicate(predicate).makeEvaluator()
        #expect(evaluator.matches(Self.subject("a.pdf")) == expected, "\(query)")
    }

    /// The file is imported only when its cheap terms pass, once however
    /// many imported terms the predicate has.
    @Test func importsComeLastAndOnce() throws {
        let predicate = try MetadataPredicate(
            "kMDItemPixelWidth > 100 AND kMDItemFSName ENDSWITH '.jpg' AND kMDItemTextContent CONTAINS 'x'")
        let evaluator = CompiledPredicate(predicate).makeEvaluator()
        let counter = Counter()
        #expect(!evaluator.matches(CountingSubject(base: Self.subject("notes.txt"), counter: counter)))
        #expect(counter.calls == 0)
        _ = evaluator.matches(CountingSubject(base: Self.subject("photo.jpg"), counter: counter))
        #expect(counter.calls == 1)
        #expect(CompiledPredicate(predicate).importedAttributes == [.pixelWidth, .textContent])
    }

    /// Only the importers filling a wanted attribute run: a query on pixel
    /// sizes never reads a text file's text.
    @Test func onlyTheImportersForTheWantedAttributesRun() throws {
        let temp = try TemporaryDirectory()
        let file = try temp.file("notes.txt", contents: "some words")
        let pixels = ImportReport.importFile(at: file, wanted: [.pixelWidth])
        #expect(pixels.steps.isEmpty)
        #expect(pixels.values[.textContent] == nil)
        let text = ImportReport.importFile(at: file, wanted: [.textContent])
        #expect(text.steps.map(\.importer) == ["text"])
        #expect(text.values[.textContent] == .text(Array("some words".utf8)))
    }

    @Test func everyImportedAttributeIsInTheTable() {
        for attribute in MetadataAttribute.importedAttributes {
            #expect(MetadataAttribute(key: attribute.rawValue) == attribute)
            #expect(MetadataAttribute(key: attribute.constantName) == attribute)
            #expect(attribute.isImported)
        }
        #expect(MetadataAttribute.authors.isList && MetadataAttribute.userTags.isList)
        #expect(!MetadataAttribute.title.isList)
    }

    /// A live query in a process that imports nothing (no daemon) says so
    /// instead of matching nothing.
    @Test func aLiveQueryOnImportedAttributesSaysWhyItCannotRun() throws {
        let temp = try TemporaryDirectory()
        try temp.file("a.txt", contents: "words")
        let query = MetadataQuery()
        query.predicate = try MetadataPredicate("kMDItemTextContent CONTAINS 'words'")
        query.searchScopes = [.directory(temp.path)]
        let recorder = QueryRecorder(query)
        #expect(query.start())
        #expect(recorder.waitForFinish())
        #expect(query.resultCount == 0)
        #expect(
            query.errors.contains { $0.message.contains("live queries in this process cannot test kMDItemTextContent") }
        )
        query.stop()
    }
}
