import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The mdfind query syntax, against a fixed clock in UTC.
struct SpotlightQueryTests {
    /// 2025-03-05T15:30:00Z, a Wednesday.
    static let now = Date(timeIntervalSince1970: 1_741_188_600)
    static let utc = TimeZone(identifier: "UTC")!

    func parse(_ query: String) throws -> MetadataPredicate {
        try MetadataPredicate(spotlightQueryBytes: Array(query.utf8), now: Self.now, timeZone: Self.utc)
    }

    func cast(_ iso: String) -> String {
        let date = ISO8601DateFormatter().date(from: iso)!
        return "CAST(\(PredicateValue.formatNumber(date.timeIntervalSince1970 - 978_307_200)), \"NSDate\")"
    }

    /// Dates outside what a timestamp holds clamp instead of trapping
    /// (found by the libFuzzer target).
    @Test func datesFarOutsideTheRangeClamp() throws {
        let early = try parse("kMDItemFSContentChangeDate > $time.iso(1012-01-31T00:00:00Z)")
        let late = try parse("kMDItemFSContentChangeDate < $time.this_year(99999)")
        let file = TestSubject("a.txt")
        var dated = file
        dated.entryMetadata = EntryMetadata(kind: .file, size: 1, modificationTime: Timestamp(Self.now))
        #expect(CompiledPredicate(early).makeEvaluator().matches(dated))
        #expect(CompiledPredicate(late).makeEvaluator().matches(dated))
    }

    @Test(arguments: [
        ("kMDItemFSName == \"*.png\"cd", "kMDItemFSName LIKE[cd] '*.png'"),
        ("kMDItemFSName ==[c] \"*.png\"", "kMDItemFSName LIKE[c] '*.png'"),
        ("kMDItemFSName == \"report.pdf\"", "kMDItemFSName == 'report.pdf'"),
        ("kMDItemFSName == report*", "kMDItemFSName LIKE 'report*'"),
        ("kMDItemFSName != \"*.tmp\"", "NOT kMDItemFSName LIKE '*.tmp'"),
        ("kMDItemFSName != \"a.tmp\"c", "kMDItemFSName !=[c] 'a.tmp'"),
        ("kMDItemFSName == \"*.png\"w", "kMDItemFSName LIKE[w] '*.png'"),
        ("kMDItemFSSize > 1000000", "kMDItemFSSize > 1000000"),
        ("kMDItemFSSize >= \"0x10\"", "kMDItemFSSize >= 16"),
        ("InRange(kMDItemFSSize, 1000, 2000)", "kMDItemFSSize BETWEEN {1000, 2000}"),
        (
            "kMDItemFSName == \"*.png\" && kMDItemFSSize > 10 || !(kMDItemFSName == a)",
            "(kMDItemFSName LIKE '*.png' AND kMDItemFSSize > 10) OR NOT kMDItemFSName == 'a'"
        ),
        (
            "(kMDItemFSName == a || kMDItemFSName == b) && kMDItemFSSize < 5",
            "(kMDItemFSName == 'a' OR kMDItemFSName == 'b') AND kMDItemFSSize < 5"
        ),
        ("kMDItemFSName == \"a\\*b\"", "kMDItemFSName == 'a*b'"),
        ("kMDItemFSName == \"x\\*y*\"", "kMDItemFSName LIKE 'x\\*y*'"),
        ("*", "TRUEPREDICATE"),
    ])
    func translatesToPredicates(query: String, equivalent: String) throws {
        #expect(try parse(query) == (try MetadataPredicate(equivalent)), "\(query)")
    }

    @Test(arguments: [
        ("$time.now", "2025-03-05T15:30:00Z"),
        ("$time.now(-60)", "2025-03-05T15:29:00Z"),
        ("$time.today", "2025-03-05T00:00:00Z"),
        ("$time.today(-7)", "2025-02-26T00:00:00Z"),
        ("$time.today(+1)", "2025-03-06T00:00:00Z"),
        ("$time.yesterday", "2025-03-04T00:00:00Z"),
        ("$time.yesterday(-1)", "2025-03-03T00:00:00Z"),
        ("$time.this_week", "2025-03-02T00:00:00Z"),
        ("$time.this_week(-1)", "2025-02-23T00:00:00Z"),
        ("$time.this_month", "2025-03-01T00:00:00Z"),
        ("$time.this_month(-2)", "2025-01-01T00:00:00Z"),
        ("$time.this_year", "2025-01-01T00:00:00Z"),
        ("$time.this_year(-1)", "2024-01-01T00:00:00Z"),
        ("$time.iso(2025-01-31T00:00:00Z)", "2025-01-31T00:00:00Z"),
        ("$time.iso(2025-01-31)", "2025-01-31T00:00:00Z"),
    ])
    func timeForms(time: String, iso: String) throws {
        let predicate = try parse("kMDItemFSContentChangeDate >= \(time)")
        #expect(predicate == (try MetadataPredicate("kMDItemFSContentChangeDate >= \(cast(iso))")), "\(time)")
    }

    @Test(arguments: [
        ("kMDItemFSNam == a", 0, "did you mean kMDItemFSName?"),
        ("kMDItemFSName ==", 16, "expected a value after '=='"),
        ("kMDItemFSName == \"abc", 17, "unterminated string"),
        ("kMDItemFSSize > big", 16, "kMDItemFSSize is a number"),
        ("kMDItemFSContentChangeDate > soon", 29, "is a date: use $time"),
        ("kMDItemFSContentChangeDate > $time.tomorrow", 29, "unknown $time.tomorrow"),
        ("kMDItemFSContentChangeDate > $time.iso(yesterday)", 39, "ISO-8601"),
        ("kMDItemFSContentChangeDate > $time.today(x)", 41, "whole number offset"),
        ("kMDItemFSName == \"a\"q", 20, "unknown comparison option 'q'"),
        ("kMDItemFSName > a", 14, "compare it with == or !="),
        ("kMDItemFSName == a &&", 21, "expected an attribute"),
        ("(kMDItemFSName == a", 19, "expected ')'"),
        ("InRange(kMDItemFSName, 1, 2)", 8, "InRange takes a number or date attribute"),
        ("kMDItemFSName == a extra", 19, "after a complete query"),
        ("kMDItemFSName == ab*\\", 20, "lone backslash"),
    ])
    func errorsPointAtTheMistake(query: String, offset: Int, message: String) {
        #expect {
            _ = try parse(query)
        } throws: { error in
            guard let error = error as? MetadataError, error.code == .querySyntax else { return false }
            #expect(error.offset == offset, "\(query): offset \(String(describing: error.offset))")
            #expect(error.message.contains(message), "\(error.message)")
            return true
        }
    }

    @Test func matchesFilesLikeTheEquivalentPredicate() throws {
        var subject = TestSubject("Photo.PNG")
        subject.entryMetadata = EntryMetadata(
            kind: .file, size: 2048, modificationTime: Timestamp(nanosecondsSinceEpoch: 1_741_100_000_000_000_000))
        let compiled = CompiledPredicate(
            try parse("kMDItemFSName == \"*.png\"c && kMDItemFSContentChangeDate >= $time.today(-7)"))
        #expect(compiled.makeEvaluator().matches(subject))
    }
}
