import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The whole-index scan (column loops, selection vectors, threads) must
/// agree with evaluating the predicate entry by entry, for any predicate
/// and any names.
struct IndexScanTests {
    static let namePieces = [
        "IMG_", "report", "Report", "REPORT", ".png", ".PNG", ".txt", "caf\u{E9}", "cafe\u{301}", "\u{DF}",
        "\u{130}", "\u{C5}", "A\u{30A}", "\u{5831}\u{544A}", " ", "a", "x", "0", "1", "2024", ".", "K\u{212A}",
    ]

    static func makeIndex(entries: Int, seed: UInt64) -> FileIndex {
        var random = SeededGenerator(seed: seed)
        let index = FileIndex()
        let root = index.addRoot(path: "/scan", metadata: EntryMetadata(kind: .folder, size: 0))
        var folders = [root]
        var removable: [EntryID] = []
        for i in 0..<entries {
            var name: [UInt8] = []
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                name += Array(namePieces.randomElement(using: &random)!.utf8)
            }
            if Int.random(in: 0..<40, using: &random) == 0 { name.append(0xFF) }
            name += Array("\(i)".utf8)
            let parent = folders.randomElement(using: &random)!
            let kind: EntryKind = Int.random(in: 0..<10, using: &random) == 0 ? .folder : .file
            var metadata = EntryMetadata(
                kind: kind, size: [0, 17, 4096, 2_000_000, 5_000_000_000].randomElement(using: &random)!,
                modificationTime: Timestamp(
                    nanosecondsSinceEpoch: Int64.random(in: 0...2_000_000_000, using: &random) * 1_000_000_000),
                inode: UInt64(i))
            if Bool.random(using: &random) {
                metadata.birthTime = Timestamp(
                    nanosecondsSinceEpoch: Int64.random(in: 0...2_000_000_000, using: &random) * 1_000_000_000)
            }
            // Some entries not stat'ed yet: no size or dates known.
            if Int.random(in: 0..<20, using: &random) == 0 { metadata = EntryMetadata(kind: kind, inode: UInt64(i)) }
            let id = index.insert(name: name, in: parent, metadata: metadata)
            if kind == .folder {
                folders.append(id)
            } else if removable.count < 10 && Int.random(in: 0..<500, using: &random) == 0 {
                removable.append(id)
            }
        }
        // Free slots inside chunks.
        for id in removable { index.remove(id) }
        return index
    }

    static let generator = RandomPredicates(
        stringPieces: [
            "*", "*", "?", "IMG_", "report", ".png", ".PNG", "\u{E9}", "e", "E\u{301}", "\u{DF}", "ss", "i",
            "\u{130}", "\u{C5}", "\u{5831}", "0", "1", "k", "a", " ",
        ],
        invalidBytes: true, maxDepth: 3,
        stringOperators: [.like, .like, .like, .beginsWith, .endsWith, .contains, .in, .matches], nullOneIn: 20)

    func entryByEntry(_ index: FileIndex, _ predicate: MetadataPredicate) -> [UInt32] {
        let evaluator = CompiledPredicate(predicate).makeEvaluator()
        var result: [UInt32] = []
        index.forEachEntry { id in
            if !index.isRoot(id) && evaluator.matches(IndexSubject(index: index, id: id.rawValue)) {
                result.append(id.rawValue)
            }
        }
        return result
    }

    func check(_ index: FileIndex, _ predicate: MetadataPredicate, threads: [Int] = [1]) {
        let expected = entryByEntry(index, predicate)
        for threads in threads {
            var scan = IndexScan(index: index, predicate: CompiledPredicate(predicate))
            scan.threads = threads
            let found = scan.matchingEntries()
            #expect(found == expected, "\(threads) threads: \(predicate.predicateFormat)")
            #expect(scan.matchCount() == expected.count)
        }
    }

    /// Many predicates over a small index.
    @Test(arguments: [1, 2] as [UInt64])
    func randomPredicatesAgreeOnASmallIndex(seed: UInt64) {
        let index = Self.makeIndex(entries: 2000, seed: seed)
        var random = SeededGenerator(seed: seed &+ 100)
        for _ in 0..<150 {
            check(index, MetadataPredicate(node: Self.generator.node(&random)))
        }
    }

    /// Fewer predicates over an index of several chunks (chunk edges,
    /// free slots, one thread per chunk).
    @Test func randomPredicatesAgreeAcrossChunks() {
        let index = Self.makeIndex(entries: 70_000, seed: 9)
        var random = SeededGenerator(seed: 99)
        for _ in 0..<4 {
            check(index, MetadataPredicate(node: Self.generator.node(&random)), threads: [1, 2])
        }
        for query in [
            "kMDItemFSName LIKE '*.png'", "kMDItemFSName LIKE[cd] '*report*'", "kMDItemFSName LIKE 'IMG_??1*'",
            "kMDItemFSSize > 1000000 AND NOT kMDItemFSName ENDSWITH[c] '.png'",
            "kMDItemFSName BEGINSWITH[c] 'caf' OR kMDItemDisplayName ==[cd] 'report'",
        ] {
            check(index, try! MetadataPredicate(query), threads: [2])
        }
    }

    /// An OR chain of suffixes (merged into one test) finds exactly the
    /// union of what each suffix finds alone.
    @Test func suffixChainsFindTheUnionOfTheirParts() throws {
        let index = Self.makeIndex(entries: 3000, seed: 4)
        for options in ["", "[c]", "[cd]"] {
            let parts = [
                "LIKE\(options) '*.png'", "ENDSWITH\(options) '1'", "LIKE\(options) '*e\u{301}'",
                "ENDSWITH\(options) 'caf\u{E9}0'",
            ]
            var union = Set<EntryID>()
            for part in parts {
                union.formUnion(index.entries(matching: try MetadataPredicate("kMDItemFSName \(part)")))
            }
            let chain = try MetadataPredicate(parts.map { "kMDItemFSName \($0)" }.joined(separator: " OR "))
            #expect(Set(index.entries(matching: chain)) == union, "\(options)")
            #expect(!union.isEmpty)
            check(index, chain)
        }
    }

    /// Bigram signatures kept from one substring query follow renames.
    @Test func signaturesFollowRenames() throws {
        let index = FileIndex()
        let root = index.addRoot(path: "/t", metadata: EntryMetadata(kind: .folder))
        let a = index.insert(name: Array("quarterly report.pdf".utf8), in: root, metadata: EntryMetadata(kind: .file))
        let b = index.insert(name: Array("R\u{E9}sum\u{E9}.txt".utf8), in: root, metadata: EntryMetadata(kind: .file))
        let report = try MetadataPredicate("kMDItemFSName CONTAINS[cd] 'report'")
        let resume = try MetadataPredicate("kMDItemDisplayName LIKE[cd] '*resume*'")
        #expect(index.entries(matching: report) == [a])
        #expect(index.entries(matching: resume) == [b])
        index.move(a, to: root, name: Array("minutes.pdf".utf8))
        index.move(b, to: root, name: Array("old REPORT.txt".utf8))
        #expect(index.entries(matching: report) == [b])
        #expect(index.entries(matching: resume) == [])
    }

    /// The signature is of bigrams, not of letters: a name made of the
    /// literal's letters in another order is rejected by it, and random
    /// names rarely pass a 6-letter literal (the filter is what makes
    /// substring queries cheap, so a weak hash is a performance bug that
    /// no result would show).
    @Test func signaturesAreSelective() {
        func signature(_ text: String) -> UInt64 {
            Array(text.utf8).withUnsafeBytes { NameSignatures.signature($0, lowercasingASCII: true) }
        }
        let required = signature("report")
        #expect(signature("Quarterly REPORT.pdf") & required == required)
        for anagram in ["trope", "porter", "troper", "tropre_2024.txt"] {
            #expect(signature(anagram) & required != required, "\(anagram)")
        }
        var random = SeededGenerator(seed: 11)
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789_ .".utf8)
        var passed = 0
        for _ in 0..<10_000 {
            let name = (0..<15).map { _ in letters.randomElement(using: &random)! }
            if name.withUnsafeBytes({ NameSignatures.signature($0, lowercasingASCII: true) }) & required == required {
                passed += 1
            }
        }
        // About one in a thousand by chance (15 bytes set about a fifth of the bits).
        #expect(passed < 100, "\(passed) of 10,000 random names pass")
    }

    /// Deciding a non-ASCII name from its ASCII ends never disagrees with
    /// folding it.
    @Test func asciiEndsDecideLikeFolding() {
        var random = SeededGenerator(seed: 5)
        var decided = 0
        for _ in 0..<5000 {
            var name: [UInt8] = []
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                name += Array(Self.namePieces.randomElement(using: &random)!.utf8)
            }
            if Int.random(in: 0..<10, using: &random) == 0 { name.append(0xFF) }
            var literal: [UInt8] = []
            for _ in 0..<Int.random(in: 1...2, using: &random) {
                literal += Array(
                    ["png", ".PNG", "IMG_", "report", "e", "E", "ss", "a", "1", "k", " "].randomElement(using: &random)!
                        .utf8)
            }
            let options = StringCompareOptions(rawValue: UInt8.random(in: 0...3, using: &random))
            let op = [ComparisonOperator.equal, .beginsWith, .endsWith, .contains, .like].randomElement(using: &random)!
            if op == .like {
                // Wildcards around and inside: the general shape.
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    literal.insert(
                        ["*", "?"].randomElement(using: &random)!.utf8.first!,
                        at: Int.random(in: 0...literal.count, using: &random))
                }
            }
            let matcher = NameMatcher(try! LikePattern.forOperator(op, value: literal), options: options)
            let folder = UnicodeFolder(options: options)
            name.withUnsafeBytes { bytes in
                guard !NameBytes.isASCII(bytes), let decision = matcher.decideWithoutFolding(bytes) else { return }
                decided += 1
                let folded = matcher.matchesFolding(bytes, folder: folder)
                #expect(
                    decision == folded,
                    "\(String(decoding: name, as: UTF8.self)) \(op) \(String(decoding: literal, as: UTF8.self)) \(options)"
                )
            }
        }
        #expect(decided > 250, "the shortcut should decide most of these")
    }
}
