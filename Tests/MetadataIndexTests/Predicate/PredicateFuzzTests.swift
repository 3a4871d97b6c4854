import Foundation
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Seeded fuzzing of the parser: random and mutated inputs never crash or
/// hang, and every rejection points inside the input.
struct PredicateFuzzTests {
    static let seeds = [
        "kMDItemFSName LIKE[cd] '*.png'", "kMDItemFSSize > 1000 AND kMDItemFSName ENDSWITH '.mov'",
        "NOT (kMDItemPath CONTAINS '/tmp/' OR kMDItemDisplayName BEGINSWITH[c] \"Re\")",
        "kMDItemFSName IN {'a.txt', 'b.txt'} && kMDItemFSSize BETWEEN {1, 0x10}",
        "kMDItemFSContentChangeDate >= CAST(700000000, \"NSDate\") || FALSEPREDICATE",
        "kMDItemFSName MATCHES '.*[0-9]{4}\\\\.jpg'", "kMDItemFSName == 'caf\\u00E9\\x41\\n'",
        "kMDItemFSName == \"*.png\"cd && kMDItemFSContentChangeDate >= $time.today(-7)",
        "InRange(kMDItemFSSize, 100, 2000) || kMDItemFSContentChangeDate > $time.iso(2025-01-31T00:00:00Z)",
        "ANY kMDItemContentTypeTree == 'public.image' AND kMDItemFSName IN 'my report.txt'",
        "kMDItemContentType UTI-CONFORMS-TO 'public.image' || NSMetadataItemIsUbiquitousKey == YES",
        "kMDItemFSName ==[cdw] 'report' AND kMDItemFSSize == 0b101 AND #kMDItemFSName LIKE '???.txt'",
        "* == \"report*\"wcd && kMDItemFSContentChangeDate > $time.now(-864000)",
        "inRange(kMDItemFSContentChangeDate, 759801600, $time.today()) || kMDItemFSName == 'a\\012\\yFF'",
    ]

    /// Characters that make interesting token boundaries.
    static let alphabet =
        Array(
            "()[]{}'\"\\%@K*?=!<>&|, .-+0123456789xeEabcdwnoyLIKEANDORNOTkMDItemFSName\u{E9}\u{301}$time.iso:TZ#ANY\u{1100}\u{1F3FD}"
                .utf8)
        + [0x00, 0xFF, 0xC3, 0x0A]

    /// Found by libFuzzer: 250 `!` before a comparison parsed, but printed
    /// as `NOT (NOT (...))` it nested twice as deep and no longer parsed.
    /// Whatever parses, even at the depth limit, prints as something that
    /// parses back equal.
    @Test func deepNegationsRoundTrip() throws {
        for count in [1, 2, 250, PredicateParser.maximumDepth - 1] {
            let text = String(repeating: "!", count: count) + "kMDItemFSName LIKE[cd] '*.png'"
            let predicate = try MetadataPredicate(text)
            #expect(try MetadataPredicate(predicate.predicateFormat) == predicate, "\(count)")
        }
        let grouped = try MetadataPredicate("!(kMDItemFSName == 'a' OR !kMDItemFSSize > 1)")
        #expect(grouped.predicateFormat == "NOT ((kMDItemFSName == \"a\") OR (NOT kMDItemFSSize > 1))")
    }

    func check(_ input: [UInt8]) {
        checkSpotlight(input)
        do {
            let predicate = try MetadataPredicate(formatBytes: input)
            // Whatever parses also prints and parses back to itself.
            #expect(try MetadataPredicate(predicate.predicateFormat) == predicate, "\(predicate.predicateFormat)")
            // And compiles and evaluates without trouble.
            _ = CompiledPredicate(predicate).makeEvaluator().matches(TestSubject("f\u{E9}.txt"))
        } catch {
            #expect(error.code == .querySyntax)
            if let offset = error.offset {
                #expect(offset >= 0 && offset <= input.count, "offset \(offset) outside \(input.count) bytes")
            } else {
                Issue.record("a rejection without an offset: \(error.message)")
            }
            _ = error.description  // the caret rendering must not crash either
        }
    }

    /// The same input as an mdfind query: parses and evaluates, or is
    /// rejected at an offset inside it.
    func checkSpotlight(_ input: [UInt8]) {
        do {
            let predicate = try MetadataPredicate(
                spotlightQueryBytes: input, now: Date(timeIntervalSince1970: 1_738_281_600),
                timeZone: TimeZone(identifier: "UTC")!)
            _ = CompiledPredicate(predicate).makeEvaluator().matches(TestSubject("f\u{E9}.txt"))
        } catch {
            #expect(error.code == .querySyntax)
            #expect(error.offset.map { $0 >= 0 && $0 <= input.count } == true, "\(error.message)")
        }
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomAndMutatedInputs(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        for _ in 0..<2500 {
            var input: [UInt8]
            if Bool.random(using: &random) {
                input = (0..<Int.random(in: 0..<60, using: &random)).map { _ in
                    Self.alphabet.randomElement(using: &random)!
                }
            } else {
                input = Array(Self.seeds.randomElement(using: &random)!.utf8)
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let position = Int.random(in: 0...input.count, using: &random)
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0 where !input.isEmpty: input.remove(at: min(position, input.count - 1))
                    case 1: input.insert(Self.alphabet.randomElement(using: &random)!, at: position)
                    default:
                        if position < input.count { input[position] = Self.alphabet.randomElement(using: &random)! }
                    }
                }
            }
            check(input)
        }
    }

    @Test func hugeInputs() {
        check(Array("kMDItemFSName == '".utf8) + [UInt8](repeating: 0x61, count: 200_000) + Array("'".utf8))
        check([UInt8](repeating: 0x28, count: 100_000))
        check(Array(String(repeating: "kMDItemFSName == 'a' OR ", count: 5000).utf8) + Array("TRUEPREDICATE".utf8))
        check(Array("kMDItemFSSize IN {".utf8) + Array(String(repeating: "1, ", count: 20_000).utf8) + Array("1}".utf8))
    }

    /// Random predicates built from the grammar print and parse back equal.
    @Test(arguments: [7, 8, 9] as [UInt64])
    func randomPredicatesRoundTrip(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let generator = RandomPredicates()
        for _ in 0..<500 {
            let original = MetadataPredicate(node: generator.node(&random))
            let reparsed = try MetadataPredicate(original.predicateFormat)
            #expect(reparsed == original, "\(original.predicateFormat)")
        }
    }
}
