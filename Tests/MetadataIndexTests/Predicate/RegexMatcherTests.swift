import Foundation
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// `MATCHES` through ICU itself: whole-name matches with NSPredicate's
/// options, long patterns (past the 256 UTF-16 units Foundation's compiler
/// leaked a copy of), many threads matching one compiled pattern, a
/// runaway pattern stopped by its budget, and compile errors placed.
struct RegexMatcherTests {
    func matches(_ pattern: String, _ name: String, _ options: StringCompareOptions = []) -> Bool {
        guard let matcher = RegexMatcher(Array(pattern.utf8), options: options) else { return false }
        return Array(name.utf8).withUnsafeBytes { matcher.matches($0) }
    }

    @Test(
        arguments: [
            ("a.*\\.txt", "a report.txt", [], true),
            ("a.*\\.txt", "a report.txt.bak", [], false),  // the whole name
            ("report|notes", "notes", [], true),
            ("report|notes", "my notes", [], false),
            ("REPORT.*", "report.pdf", [.caseInsensitive], true),
            ("REPORT.*", "report.pdf", [], false),
            ("cafe.*", "café menu.txt", [.diacriticInsensitive], true),
            ("café.*", "cafe\u{301} menu.txt", [], true),  // NFC both sides
            ("", "", [], true),
            ("x?", "", [], true),
        ] as [(String, String, StringCompareOptions, Bool)])
    func wholeNamesWithNSPredicatesOptions(pattern: String, name: String, options: StringCompareOptions, expected: Bool)
    {
        #expect(matches(pattern, name, options) == expected, "\(pattern) on \(name)")
    }

    /// A pattern of 3,000 alternatives (30,000 UTF-16 units): found where
    /// one alternative is the whole name, from many threads at once (each
    /// takes its own copy of the compiled pattern).
    @Test func longPatternsFromManyThreads() {
        var random = SeededGenerator(seed: 35)
        let words = (0..<3000).map { _ in
            String((0..<8).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement(using: &random)! })
        }
        let pattern = "(" + words.joined(separator: "|") + ")x"
        guard let matcher = RegexMatcher(Array(pattern.utf8), options: []) else {
            Issue.record("a long pattern did not compile")
            return
        }
        let names = words.prefix(200).map { $0 + "x" } + words.prefix(200).map { $0 + "y" }
        let found = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var count = 0
            for name in names where Array(name.utf8).withUnsafeBytes({ matcher.matches($0) }) { count += 1 }
            found.withLock { $0 += count }
        }
        #expect(found.withLock { $0 } == 8 * 200)
    }

    /// Under a query's limit a pattern that backtracks without end stops,
    /// marking the limit, instead of running on.
    @Test func aRunawayPatternStopsAtItsLimit() throws {
        let matcher = try #require(RegexMatcher(Array("(a+)+b".utf8), options: []))
        let limit = QueryLimit(seconds: 60)
        let name = Array(String(repeating: "a", count: 40).utf8)
        let matched = QueryLimit.withCurrent(limit) { name.withUnsafeBytes { matcher.matches($0) } }
        #expect(!matched)
        #expect(limit.error?.code == .tooExpensive)
    }

    /// A pattern that does not compile says why, and where.
    @Test func compileErrorsArePlaced() throws {
        let unclosed = try #require(RegexMatcher.validate(Array("ab(cd".utf8)))
        #expect(unclosed.reason == "its parentheses do not pair")
        #expect(unclosed.offset == 5)
        let nul = try #require(RegexMatcher.validate([0x61, 0, 0x62]))
        #expect(nul.offset == 1)
        #expect(RegexMatcher.validate(Array("a[bc]+".utf8)) == nil)
        // Offsets are bytes: a two-byte letter before the mistake counts two.
        let accented = try #require(RegexMatcher.validate(Array("é(".utf8)))
        #expect(accented.offset == 3)
    }
}
