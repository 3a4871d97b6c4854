import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// What Apple's documentation says predicates mean, row by row, each row
/// citing its source in a comment:
///
/// - PFS: "Predicate Format String Syntax" (its sections and the BNF
///   appendix, "BNF Definition of Cocoa Predicates");
/// - NSCP: `NSComparisonPredicate.Options`;
/// - FMQ: "File Metadata Query Expression Syntax" (its tables 3-1 to 3-4
///   and the date section).
///
/// A row holds when the query, in its syntax, gives `expected` for the
/// item (nil: the query must be rejected, with an offset inside it).
struct DocumentationTableTests {
    enum Syntax: Sendable { case format, spotlight }

    struct Row: Sendable, CustomTestStringConvertible {
        var syntax: Syntax
        var query: String
        var name: String
        var expected: Bool?
        var size: UInt64 = 5
        var kind: EntryKind = .file

        var testDescription: String { "\(syntax == .format ? "F" : "S") \(query) on \(name)" }
    }

    static func f(_ query: String, _ name: String, _ expected: Bool?, size: UInt64 = 5) -> Row {
        Row(syntax: .format, query: query, name: name, expected: expected, size: size)
    }

    static func s(_ query: String, _ name: String, _ expected: Bool?, size: UInt64 = 5) -> Row {
        Row(syntax: .spotlight, query: query, name: name, expected: expected, size: size)
    }

    /// 2025-01-31T00:00:00Z; every item was modified a day before.
    static let now = Date(timeIntervalSince1970: 1_738_281_600)
    static let modified = Timestamp(Date(timeIntervalSince1970: 1_738_281_600 - 86_400))

    static let rows: [Row] = [
        // PFS String Comparisons: case- and diacritic-sensitive by default; [c], [d] modify.
        f("kMDItemFSName BEGINSWITH 'rep'", "report.txt", true),
        f("kMDItemFSName BEGINSWITH 'Rep'", "report.txt", false),
        f("kMDItemFSName BEGINSWITH[c] 'Rep'", "report.txt", true),
        f("kMDItemFSName ==[d] 'resume.pages'", "r\u{E9}sum\u{E9}.pages", true),
        f("kMDItemFSName == 'resume.pages'", "r\u{E9}sum\u{E9}.pages", false),
        f("kMDItemFSName ==[cd] 'RESUME.pages'", "r\u{E9}sum\u{E9}.pages", true),
        // PFS String Comparisons: CONTAINS, ENDSWITH.
        f("kMDItemFSName CONTAINS 'port'", "report.txt", true),
        f("kMDItemFSName ENDSWITH '.txt'", "report.txt", true),
        // PFS String Comparisons: LIKE, ? one character and * zero or more.
        f("kMDItemFSName LIKE 'r?port.*'", "report.txt", true),
        f("kMDItemFSName LIKE 'r*t'", "report.txt", true),
        f("kMDItemFSName LIKE '?'", "report.txt", false),
        // PFS String Comparisons: MATCHES, a regular expression (ICU) on the whole string.
        f("kMDItemFSName MATCHES 'rep.*\\\\.txt'", "report.txt", true),
        f("kMDItemFSName MATCHES 'port'", "report.txt", false),
        f("kMDItemFSName MATCHES[c] 'REP.*'", "report.txt", true),
        f("kMDItemFSName MATCHES[cd] 'resume.*'", "R\u{E9}sum\u{E9}.pages", true),
        f("kMDItemFSName MATCHES 'caf\u{E9}.*'", "cafe\u{301}.txt", true),
        // NSCP normalized ([n]): every comparison normalises, so it changes nothing.
        f("kMDItemFSName ==[n] 'caf\u{E9}.txt'", "cafe\u{301}.txt", true),
        f("kMDItemFSName BEGINSWITH[cdn] 'CAFE'", "caf\u{E9}.txt", true),
        // PFS String Comparisons: UTI-CONFORMS-TO and UTI-EQUALS.
        f("kMDItemContentType UTI-CONFORMS-TO 'public.image'", "photo.png", true),
        f("kMDItemContentType UTI-CONFORMS-TO 'public.image'", "report.txt", false),
        f("kMDItemContentType UTI-EQUALS 'public.png'", "photo.png", true),
        f("kMDItemContentType UTI-EQUALS 'public.image'", "photo.png", false),
        // PFS Basic Comparisons: =/==, >=/=>, <=/=<, !=/<>, BETWEEN, IN.
        f("kMDItemFSSize = 5", "report.txt", true),
        f("kMDItemFSSize => 5", "report.txt", true),
        f("kMDItemFSSize =< 4", "report.txt", false),
        f("kMDItemFSSize <> 5", "report.txt", false),
        f("kMDItemFSSize BETWEEN {1, 10}", "report.txt", true),
        f("kMDItemFSName IN {'a.txt', 'report.txt'}", "report.txt", true),
        // PFS Aggregate Operations: ANY, SOME, ALL, NONE.
        f("ANY kMDItemContentTypeTree == 'public.image'", "photo.png", true),
        f("SOME kMDItemContentTypeTree == 'public.image'", "photo.png", true),
        f("ALL kMDItemContentTypeTree == 'public.image'", "photo.png", false),
        f("NONE kMDItemContentTypeTree == 'public.image'", "report.txt", true),
        f("ALL kMDItemContentTypeTree != 'public.audio'", "photo.png", true),
        f("ANY kMDItemFSName == 'report.txt'", "report.txt", true),
        f("NONE kMDItemFSName == 'report.txt'", "report.txt", false),
        // PFS BNF: string IN string, the left a substring of the right.
        f("kMDItemFSName IN 'my report.txt backup'", "report.txt", true),
        f("kMDItemFSName IN 'reports'", "report.txt", false),
        // PFS BNF, numeric literals: hexadecimal, octal, binary, exponent.
        f("kMDItemFSSize == 0x5", "report.txt", true),
        f("kMDItemFSSize == 0o5", "report.txt", true),
        f("kMDItemFSSize == 0b101", "report.txt", true),
        f("kMDItemFSSize == 5e0", "report.txt", true),
        // PFS BNF, string literals: octal, \x and \u character escapes; either quote.
        f("kMDItemFSName == 'report\\056txt'", "report.txt", true),
        f("kMDItemFSName == 'r\\x65port.txt'", "report.txt", true),
        f("kMDItemFSName == 'r\\u0065port.txt'", "report.txt", true),
        f("kMDItemFSName == \"report.txt\"", "report.txt", true),
        // PFS Identifiers: # before an identifier (a reserved word made an identifier).
        f("#kMDItemFSName == 'report.txt'", "report.txt", true),
        f("#IN == 'report.txt'", "report.txt", nil),
        // PFS Boolean Value Predicates and Basic Compound Predicates.
        f("kMDItemFSName == 'report.txt' AND TRUEPREDICATE", "report.txt", true),
        f("FALSEPREDICATE", "report.txt", false),
        f("NOT kMDItemFSName == 'x' && (kMDItemFSName == 'report.txt' || kMDItemFSSize > 9)", "report.txt", true),
        // PFS Subqueries, Function Expressions and variables: not metadata queries. Key paths: only the
        // ones Apple code uses on names (pathExtension, lastPathComponent, stringByDeletingPathExtension).
        f("SUBQUERY(kMDItemContentTypeTree, $x, $x == 'public.image').@count > 0", "photo.png", nil),
        f("kMDItemFSName == $NAME", "report.txt", nil),
        f("FUNCTION(kMDItemFSName, 'lowercaseString') == 'x'", "report.txt", nil),
        f("kMDItemFSName.pathExtension == 'txt'", "report.txt", true),
        f("%K.pathExtension == 'txt'", "report.txt", true),
        f("kMDItemPath.lastPathComponent == 'report.txt'", "report.txt", true),
        f("kMDItemFSName.stringByDeletingPathExtension == 'report'", "report.txt", true),
        f("kMDItemFSName.uppercaseString == 'REPORT.TXT'", "report.txt", nil),
        f("kMDItemFSSize.pathExtension == 'txt'", "report.txt", nil),
        // FMQ Comparison Syntax, Table 3-1: == and != with wildcards; [c] after the operator.
        s("kMDItemFSName == \"report.txt\"", "report.txt", true),
        s("kMDItemFSName ==[c] \"REPORT.TXT\"", "report.txt", true),
        s("kMDItemFSName == \"Report.txt\"", "report.txt", false),
        s("kMDItemFSName != \"*.png\"", "report.txt", true),
        // FMQ Table 3-4: * at the beginning, end, or both.
        s("kMDItemFSName == \"report*\"", "report.txt", true),
        s("kMDItemFSName == \"*.txt\"", "report.txt", true),
        s("kMDItemFSName == \"*port*\"", "report.txt", true),
        // FMQ Table 3-3: "Paris" matches Paris, not paris nor I love Paris.
        s("kMDItemDisplayName == \"Paris\"", "Paris.txt", true),
        s("kMDItemDisplayName == \"Paris\"", "paris.txt", false),
        s("kMDItemDisplayName == \"Paris\"", "I love Paris.txt", false),
        // FMQ Table 3-3: "Paris"c matches Paris and paris, not I love Paris.
        s("kMDItemDisplayName == \"Paris\"c", "paris.txt", true),
        s("kMDItemDisplayName == \"Paris\"c", "I love Paris.txt", false),
        // FMQ Table 3-3: "Paris"wc matches Paris, paris, I love Paris, paris-france.jpg, not Comparison.
        s("kMDItemDisplayName == \"Paris\"wc", "Paris.txt", true),
        s("kMDItemDisplayName == \"Paris\"wc", "I love Paris.txt", true),
        s("kMDItemDisplayName == \"Paris\"wc", "paris-france.jpg", true),
        s("kMDItemDisplayName == \"Paris\"wc", "Comparison.txt", false),
        // FMQ Table 3-2: w detects transitions from lower case to upper case.
        s("kMDItemFSName == \"report\"wc", "MyReport.txt", true),
        s("kMDItemFSName == \"report\"w", "MyReport.txt", false),
        s("kMDItemFSName ==[wc] \"report\"", "MyReport.txt", true),
        s("kMDItemFSName != \"report\"wc", "MyReport.txt", false),
        s("kMDItemFSName == \"go*\"cdw", "Good morning.txt", true),
        // FMQ: && and || combine queries, parentheses group them.
        s("kMDItemFSSize > 4 && kMDItemFSSize < 6", "report.txt", true),
        s("(kMDItemFSSize == 1 || kMDItemFSSize == 5) && kMDItemFSName == \"*.txt\"", "report.txt", true),
        // FMQ Table 3-1: InRange(attributeName, minValue, maxValue).
        s("InRange(kMDItemFSSize, 1, 10)", "report.txt", true),
        s("inRange(kMDItemFSSize, 6, 10)", "report.txt", false),
        // FMQ dates: $time.today(-7), $time.now(NUMBER) in seconds, $time.this_month(-2), $time.iso.
        s("kMDItemFSContentChangeDate > $time.today(-7)", "report.txt", true),
        s("kMDItemFSContentChangeDate > $time.now(-864000)", "report.txt", true),
        s("kMDItemFSContentChangeDate > $time.now(-3600)", "report.txt", false),
        s("kMDItemFSContentChangeDate < $time.now()", "report.txt", true),
        s("kMDItemFSContentChangeDate >= $time.yesterday", "report.txt", true),
        s("kMDItemFSContentChangeDate > $time.this_month(-2)", "report.txt", true),
        s("kMDItemFSContentChangeDate >= $time.iso(2025-01-01T00:00:00Z)", "report.txt", true),
        // FMQ dates: a date value is a number of seconds since 1 January 2001.
        s("kMDItemFSContentChangeDate > 759801600", "report.txt", true),
        s("kMDItemFSContentChangeDate > 759974400", "report.txt", false),
        // FMQ: $time is the only variable.
        s("kMDItemFSName == $name", "report.txt", nil),
    ]

    @Test(arguments: rows)
    func documentedMeaning(row: Row) throws {
        var subject = TestSubject(row.name, kind: row.kind)
        subject.entryMetadata = EntryMetadata(kind: row.kind, size: row.size, modificationTime: Self.modified)
        let bytes = Array(row.query.utf8)
        do {
            let predicate =
                row.syntax == .format
                ? try MetadataPredicate(
                    format: row.query, arguments: row.query.contains("%K") ? [.string("kMDItemFSName")] : [])
                : try MetadataPredicate(
                    spotlightQueryBytes: bytes, now: Self.now, timeZone: TimeZone(identifier: "UTC")!)
            guard let expected = row.expected else {
                Issue.record("accepted, as \(predicate.predicateFormat); the documentation rules it out")
                return
            }
            #expect(CompiledPredicate(predicate).makeEvaluator().matches(subject) == expected)
        } catch {
            #expect(row.expected == nil, "rejected: \(error.message)")
            #expect(error.offset.map { (0...bytes.count).contains($0) } == true)
        }
    }
}
