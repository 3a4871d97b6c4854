import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The typed builder makes the tree the parser makes, prints format text
/// that parses back to it, and evaluates the same.
struct PredicateBuilderTests {
    static let jan31 = Date(timeIntervalSince1970: 1_738_281_600)
    static let feb1 = Date(timeIntervalSince1970: 1_738_368_000)

    @Test(
        arguments: [
            (
                MetadataPredicate.name(like: "*.png", options: .caseInsensitive) && .size(greaterThan: 1_000_000),
                "kMDItemFSName LIKE[c] '*.png' AND kMDItemFSSize > 1000000"
            ),
            (.name(equalTo: "a.txt"), "kMDItemFSName == 'a.txt'"),
            (
                .name(beginsWith: "IMG_", options: [.caseInsensitive, .diacriticInsensitive]),
                "kMDItemFSName BEGINSWITH[cd] 'IMG_'"
            ),
            (.name(endsWith: ".mov"), "kMDItemFSName ENDSWITH '.mov'"),
            (.name(contains: "caf\u{E9}", options: .diacriticInsensitive), "kMDItemFSName CONTAINS[d] 'caf\u{E9}'"),
            (.name(in: ["a.txt", "b.txt"]), "kMDItemFSName IN {'a.txt', 'b.txt'}"),
            (.string(.displayName, .notEqualTo("x")), "kMDItemDisplayName != 'x'"),
            (.string(.path, .contains("/tmp/")), "kMDItemPath CONTAINS '/tmp/'"),
            (
                .size(atLeast: 10) && .size(atMost: 20) && .size(lessThan: 30) && .size(equalTo: 15),
                "kMDItemFSSize >= 10 AND kMDItemFSSize <= 20 AND kMDItemFSSize < 30 AND kMDItemFSSize == 15"
            ),
            (.size(in: 1...0x10), "kMDItemFSSize BETWEEN {1, 16}"),
            (
                .modified(after: jan31) || .modified(before: feb1),
                "kMDItemFSContentChangeDate > CAST(\(jan31.timeIntervalSinceReferenceDate), 'NSDate') OR kMDItemFSContentChangeDate < CAST(\(feb1.timeIntervalSinceReferenceDate), 'NSDate')"
            ),
            (
                .date(.creationDate, in: jan31...feb1),
                "kMDItemFSCreationDate BETWEEN {CAST(\(jan31.timeIntervalSinceReferenceDate), 'NSDate'), CAST(\(feb1.timeIntervalSinceReferenceDate), 'NSDate')}"
            ),
            (.has(.fsSize) && !.lacks(.creationDate), "kMDItemFSSize != nil AND NOT kMDItemFSCreationDate == nil"),
            (.all(of: []), "TRUEPREDICATE"), (.any(of: []), "FALSEPREDICATE"),
            (
                (.name(like: "a*") || .name(like: "b*")) && .name(like: "*c"),
                "(kMDItemFSName LIKE 'a*' OR kMDItemFSName LIKE 'b*') AND kMDItemFSName LIKE '*c'"
            ),
        ] as [(MetadataPredicate, String)])
    func builderMatchesParsedText(built: MetadataPredicate, text: String) throws {
        #expect(built == (try MetadataPredicate(text)), "\(built.predicateFormat)")
        #expect(try MetadataPredicate(built.predicateFormat) == built)
    }

    @Test func likeWithALoneTrailingBackslashMatchesABackslash() throws {
        let built = MetadataPredicate.name(like: "a\\")
        #expect(try MetadataPredicate(built.predicateFormat) == built)
        #expect(CompiledPredicate(built).makeEvaluator().matches(TestSubject("a\\")))
        #expect(!CompiledPredicate(built).makeEvaluator().matches(TestSubject("a")))
    }

    @Test func regexBuilderValidates() throws {
        let built = try MetadataPredicate.name(matching: ".*[0-9]{4}\\.jpg")
        #expect(try MetadataPredicate(built.predicateFormat) == built)
        #expect(CompiledPredicate(built).makeEvaluator().matches(TestSubject("IMG_2024.jpg")))
        #expect(throws: MetadataError.self) { try MetadataPredicate.name(matching: "([unclosed") }
    }

    @Test func builtPredicatesEvaluate() {
        var big = TestSubject("Photo.PNG")
        big.entryMetadata = EntryMetadata(kind: .file, size: 2_000_000, modificationTime: Timestamp(Self.feb1))
        var small = big
        small.entryMetadata?.size = 10
        let predicate =
            MetadataPredicate.name(like: "*.png", options: .caseInsensitive) && .size(greaterThan: 1_000_000)
        #expect(CompiledPredicate(predicate).makeEvaluator().matches(big))
        #expect(!CompiledPredicate(predicate).makeEvaluator().matches(small))
        #expect(CompiledPredicate(.modified(after: Self.jan31)).makeEvaluator().matches(big))
        #expect(!CompiledPredicate(.modified(before: Self.jan31)).makeEvaluator().matches(big))
    }
}
