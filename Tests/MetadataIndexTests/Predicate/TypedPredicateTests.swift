import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Sizes, dates, IN, MATCHES and nil against entries with metadata.
struct TypedPredicateTests {
    /// 2025-01-31T00:00:00Z and one day later, in seconds since 2001.
    static let jan31 = 1_738_281_600 - 978_307_200
    static let feb1 = jan31 + 86_400

    func subject(_ name: String, size: UInt64? = 1500, modified: Int = jan31 + 3600, kind: EntryKind = .file)
        -> TestSubject
    {
        var subject = TestSubject(name, kind: kind)
        subject.entryMetadata = EntryMetadata(
            kind: kind, size: size,
            modificationTime: Timestamp(nanosecondsSinceEpoch: Int64(modified + 978_307_200) * 1_000_000_000),
            birthTime: nil, inode: 7)
        return subject
    }

    @Test(arguments: [
        ("kMDItemFSSize > 1000", true), ("kMDItemFSSize > 1500", false), ("kMDItemFSSize >= 1500", true),
        ("kMDItemFSSize < 1500", false), ("kMDItemFSSize <= 1500", true), ("kMDItemFSSize == 1500", true),
        ("kMDItemFSSize = 1500", true), ("kMDItemFSSize != 1500", false), ("kMDItemFSSize <> 1", true),
        ("kMDItemFSSize BETWEEN {1500, 2000}", true), ("kMDItemFSSize BETWEEN {1, 1499}", false),
        ("kMDItemFSSize IN {1, 1500}", true), ("kMDItemFSSize IN {1, 2}", false),
        ("kMDItemFSSize == nil", false), ("kMDItemFSSize != nil", true), ("kMDItemFSCreationDate == nil", true),
        ("kMDItemFSContentChangeDate > CAST(\(jan31), 'NSDate')", true),
        ("kMDItemFSContentChangeDate > CAST(\(feb1), 'NSDate')", false),
        ("kMDItemFSContentChangeDate BETWEEN {CAST(\(jan31), 'NSDate'), CAST(\(feb1), 'NSDate')}", true),
        ("kMDItemFSContentChangeDate == CAST(\(jan31 + 3600), 'NSDate')", true),
        ("kMDItemFSName IN {'a.txt', 'report.pdf'}", true), ("kMDItemFSName IN {'a.txt', 'REPORT.PDF'}", false),
        ("kMDItemFSName IN[c] {'a.txt', 'REPORT.PDF'}", true),
        ("kMDItemFSName MATCHES 'rep.*\\\\.pdf'", true), ("kMDItemFSName MATCHES 'rep'", false),
        ("kMDItemFSName MATCHES[c] 'REPORT\\\\.PDF'", true),
        (
            "kMDItemFSSize > 1000 AND kMDItemFSName ENDSWITH '.pdf' AND kMDItemFSContentChangeDate > CAST(\(jan31), 'NSDate')",
            true
        ),
        ("kMDItemURL == 'file:///scope/folder/report.pdf'", true),
    ])
    func fileWithMetadata(query: String, expected: Bool) throws {
        #expect(try evaluate(query, subject("report.pdf")) == expected, "\(query)")
    }

    @Test func foldersHaveNoSize() throws {
        let folder = subject("photos", size: 4096, kind: .folder)
        #expect(try !evaluate("kMDItemFSSize > 0", folder))
        #expect(try evaluate("kMDItemFSSize == nil", folder))
        #expect(try evaluate("kMDItemURL == 'file:///scope/folder/photos/'", folder))
    }

    @Test func urlsArePercentEncoded() throws {
        #expect(try evaluate("kMDItemURL ENDSWITH '/caf%C3%A9%20menu.txt'", subject("caf\u{E9} menu.txt")))
    }

    @Test(arguments: [
        // (pattern, options, name, expected): the non-ASCII cases the issue lists
        ("kMDItemFSName ==[c] 'CAFÉ'", "café", true),
        ("kMDItemFSName ==[cd] 'cafe'", "CAFÉ", true),
        ("kMDItemFSName IN[cd] {'cafe'}", "Cafe\u{301}", true),
        ("kMDItemFSName IN {'caf\u{E9}'}", "cafe\u{301}", true),
        ("kMDItemFSName ==[c] 'STRASSE'", "straße", true),
        ("kMDItemFSName ==[c] 'i̇stanbul'", "İstanbul", true),
        ("kMDItemFSName ==[d] 'Angstrom'", "Ångstrom", true),
        ("kMDItemFSName ==[d] 'Ångstrom'", "A\u{30A}ngstrom", true),
        ("kMDItemFSName ==[c] 'Å'", "å", true),
        ("kMDItemFSName LIKE '報告*'", "報告 2025.pdf", true),
        ("kMDItemFSName LIKE[cd] '*報告*'", "月次報告.txt", true),
        ("kMDItemFSName MATCHES[d] 'cafe'", "café", true),
    ])
    func unicodeFolding(query: String, name: String, expected: Bool) throws {
        #expect(try evaluate(query, subject(name)) == expected, "\(query) on \(name)")
    }

    @Test func pathologicalPatternsStayFast() throws {
        // *a*a*...*b against a long run of a's: leftmost-segment matching is
        // linear per segment, no exponential backtracking. (No wall-clock
        // bound: this would not finish at all if it backtracked.)
        let name = String(repeating: "a", count: 255)
        let pattern = "kMDItemFSName LIKE '" + String(repeating: "*a", count: 60) + "*b'"
        #expect(try !evaluate(pattern, subject(name)))
        #expect(try evaluate(pattern.replacingOccurrences(of: "*b'", with: "*'"), subject(name)))
    }
}
