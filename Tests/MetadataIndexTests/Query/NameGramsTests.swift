import TestSupport
import Testing

@testable import MetadataIndex

/// The trigram lists only choose where a scan looks: a scan that starts
/// from their candidates finds exactly what the whole scan finds, for any
/// predicate, any names (every script and normalization form the folder
/// handles, bytes that are not UTF-8), with the lists partly built, and
/// after renames, removals and reused slots.
struct NameGramsTests {
    /// What the engine's query path does: the whole scan, or the scan from
    /// the plan's candidates when there is a plan (`slots: .max` takes any
    /// plan, however unselective, so the lists are always exercised).
    /// Returns whether a plan was used.
    @discardableResult
    static func check(_ index: FileIndex, _ predicate: MetadataPredicate, _ comment: String = "") -> Bool {
        let compiled = CompiledPredicate(predicate)
        var whole = IndexScan(index: index, predicate: compiled)
        whole.threads = 1
        let expected = whole.matchingEntries()
        guard let grams = index.nameGrams, let plan = NameGramPlan(compiled, grams: grams, slots: .max) else {
            return false
        }
        var scan = IndexScan(index: index, predicate: compiled)
        scan.candidates = ScanCandidates(ids: plan.candidates(grams), covered: grams.covered)
        for threads in [1, 2] {
            scan.threads = threads
            let found = scan.matchingEntries()
            let missing = Set(expected).subtracting(found).sorted().prefix(5)
            #expect(
                found == expected,
                "\(comment) \(predicate.predicateFormat): \(found.count) found, \(expected.count) expected, missing \(Array(missing))"
            )
            #expect(scan.matchCount() == expected.count, "\(comment) \(predicate.predicateFormat)")
        }
        return true
    }

    static let literals = [
        "report", "REPORT", "Report", "IMG_", ".png", ".PNG", "caf\u{E9}", "cafe\u{301}", "CAF\u{C9}", "\u{DF}",
        "ss", "SS", "\u{130}", "i\u{307}", "\u{C5}", "A\u{30A}", "\u{5831}\u{544A}", "2024", "K\u{212A}", "kk", "eport",
        "e\u{301}", "\u{1F642}", "png", "a 1", "_2",
    ]

    static func predicates(_ random: inout SeededGenerator) -> [MetadataPredicate] {
        var out: [MetadataPredicate] = []
        for _ in 0..<60 {
            var literal = ""
            for _ in 0..<Int.random(in: 1...2, using: &random) { literal += literals.randomElement(using: &random)! }
            let escaped = literal  // no quote among the pieces
            let options = ["", "[c]", "[d]", "[cd]"].randomElement(using: &random)!
            let key = ["kMDItemFSName", "kMDItemFSName", "kMDItemDisplayName"].randomElement(using: &random)!
            let form = [
                "\(key) LIKE\(options) '*\(escaped)*'", "\(key) CONTAINS\(options) '\(escaped)'",
                "\(key) BEGINSWITH\(options) '\(escaped)'", "\(key) ENDSWITH\(options) '\(escaped)'",
                "\(key) ==\(options) '\(escaped)'", "\(key) LIKE\(options) '*\(escaped)?*'",
                "\(key) LIKE\(options) '*\(escaped)*' AND kMDItemFSSize > 100",
                "\(key) LIKE\(options) '*\(escaped)*' OR kMDItemFSName ENDSWITH '.txt'",
                "kMDItemFSName ENDSWITH\(options) '.png' OR kMDItemFSName ENDSWITH\(options) '\(escaped)'",
                "NOT \(key) CONTAINS\(options) '\(escaped)'",
            ].randomElement(using: &random)!
            out.append(try! MetadataPredicate(form))
        }
        return out
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func candidatesGiveTheWholeScansAnswer(seed: UInt64) {
        let index = IndexScanTests.makeIndex(entries: 3000, seed: seed)
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        var random = SeededGenerator(seed: seed &+ 7)
        let predicates = Self.predicates(&random)
        // Nothing covered yet, half covered, all covered.
        grams.extend(by: 0, of: index)
        for predicate in predicates.prefix(10) { Self.check(index, predicate, "uncovered") }
        grams.extend(by: index.slotCount / 2, of: index)
        for predicate in predicates { Self.check(index, predicate, "half") }
        grams.extend(by: index.slotCount, of: index)
        #expect(grams.isComplete)
        var planned = 0
        for predicate in predicates where Self.check(index, predicate, "complete") { planned += 1 }
        #expect(planned > predicates.count / 2, "\(planned) of \(predicates.count) used the lists")
    }

    /// Renames, removals, reused slots and new slots keep the lists a
    /// superset; past enough stale postings they are built again.
    @Test(arguments: [4, 5] as [UInt64])
    func listsFollowChanges(seed: UInt64) {
        let index = IndexScanTests.makeIndex(entries: 2000, seed: seed)
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        grams.extend(by: 1000, of: index)  // changes on both sides of the coverage
        var random = SeededGenerator(seed: seed)
        let predicates = Self.predicates(&random)
        for round in 0..<6 {
            var live: [EntryID] = []
            index.forEachEntry { if !index.isRoot($0) { live.append($0) } }
            for _ in 0..<300 {
                let id = live.randomElement(using: &random)!
                guard index.contains(id) else { continue }
                var name = Array(Self.literals.randomElement(using: &random)!.utf8)
                name += Array("\(Int.random(in: 0..<1_000_000, using: &random))".utf8)
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    if index.child(named: name, in: index.parent(of: id)!) == nil {
                        index.move(id, to: index.parent(of: id)!, name: name)
                    }
                case 1:
                    if index.kind(of: id) != .folder { _ = index.remove(id) }
                default:
                    let parent = index.parent(of: id)!
                    if index.child(named: name, in: parent) == nil {
                        _ = index.insert(name: name, in: parent, metadata: EntryMetadata(kind: .file, size: 5))
                    }
                }
            }
            if round == 2 { grams.extend(by: index.slotCount, of: index) }
            if grams.needsRebuild {
                grams.reset()
                grams.extend(by: index.slotCount, of: index)
            }
            for predicate in predicates { Self.check(index, predicate, "round \(round)") }
        }
    }

    /// A rare literal's candidates are few: the lists are what makes the
    /// search cheap, so a list that grew to everything would be a
    /// performance bug no answer would show.
    @Test func aRareLiteralHasFewCandidates() throws {
        let index = IndexScanTests.makeIndex(entries: 20_000, seed: 8)
        let root = index.roots[0]
        let rare = index.insert(
            name: Array("Quarterly Zebra Minutes.odt".utf8), in: root, metadata: EntryMetadata(kind: .file))
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        grams.extend(by: index.slotCount, of: index)
        let predicate = try MetadataPredicate("kMDItemFSName CONTAINS[cd] 'zebra min'")
        let plan = try #require(NameGramPlan(CompiledPredicate(predicate), grams: grams, slots: index.slotCount))
        let candidates = plan.candidates(grams)
        #expect(candidates.contains(rare.rawValue))
        #expect(candidates.count < 20, "\(candidates.count) candidates")
        // A literal every name holds is not worth the lists.
        let common = try MetadataPredicate("kMDItemFSName LIKE '*'")
        #expect(NameGramPlan(CompiledPredicate(common), grams: grams, slots: index.slotCount) == nil)
    }
}
