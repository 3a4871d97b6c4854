import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
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
        scan.candidates = plan.candidates(grams)
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

    /// Lists saved in a snapshot come back as they were (the same
    /// candidates for every predicate, the same extension codes), give the
    /// whole scan's answers at once, and go on following changes and
    /// extending where they stopped.
    @Test(arguments: [6, 7] as [UInt64])
    func restoredListsAreTheSavedOnes(seed: UInt64) throws {
        let index = IndexScanTests.makeIndex(entries: 3000, seed: seed)
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        grams.extend(by: 2000, of: index)
        var random = SeededGenerator(seed: seed)
        var live: [EntryID] = []
        index.forEachEntry { if !index.isRoot($0) && index.kind(of: $0) != .folder { live.append($0) } }
        for id in live.shuffled(using: &random).prefix(200) { _ = index.remove(id) }
        let predicates = Self.predicates(&random) + Self.extensionPredicates()

        let loaded = try IndexSnapshot.load(try IndexSnapshotTests.bytes(of: index)).index
        let again = try #require(loaded.nameGrams)
        #expect(
            (again.covered, again.postings, again.stale, again.isComplete)
                == (grams.covered, grams.postings, grams.stale, grams.isComplete))
        #expect(again.extensionCodes == grams.extensionCodes)
        #expect(again.extensionCounts == grams.extensionCounts)
        #expect(again.extensionTable == grams.extensionTable)
        for predicate in predicates {
            let compiled = CompiledPredicate(predicate)
            let saved = NameGramPlan(compiled, grams: grams, slots: .max)?.candidates(grams)
            let back = NameGramPlan(compiled, grams: again, slots: .max)?.candidates(again)
            #expect(saved?.ids == back?.ids, "\(predicate.predicateFormat)")
            #expect(saved?.covered == back?.covered && saved?.count == back?.count, "\(predicate.predicateFormat)")
            Self.check(loaded, predicate, "restored")
        }
        again.extend(by: loaded.slotCount, of: loaded)
        #expect(again.isComplete)
        let folder = try #require(loaded.children(of: loaded.roots[0]).first { loaded.kind(of: $0) == .folder })
        _ = loaded.insert(name: Array("Report-new.PNG".utf8), in: folder, metadata: EntryMetadata(kind: .file))
        for predicate in predicates { Self.check(loaded, predicate, "restored, then changed") }
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
        let candidates = plan.candidates(grams).ids
        #expect(candidates.contains(rare.rawValue))
        #expect(candidates.count < 20, "\(candidates.count) candidates")
        // A literal every name holds is not worth the lists.
        let common = try MetadataPredicate("kMDItemFSName LIKE '*'")
        #expect(NameGramPlan(CompiledPredicate(common), grams: grams, slots: index.slotCount) == nil)
    }

    // MARK: Extension codes

    /// Names at the edges of what an extension code records: case,
    /// diacritics precomposed and decomposed, non-ASCII stems, folding that
    /// makes ASCII of other letters (ß, K), a prepended mark right before
    /// the dot (the dot then starts no character), dots at either end,
    /// extensions of 16 and 17 bytes, CR and LF, bytes that are not UTF-8.
    static let extensionNames: [[UInt8]] =
        [
            "a.png", "B.PNG", "c.Png", ".png", ".PNG", "png", "a.", "a..png", "a.png.txt", "a.txt.png", "x.p\u{F1}g",
            "x.pn\u{303}g", "x.png\u{301}", "x.PNG\u{301}", "\u{5199}\u{771F}.png", "\u{5199}\u{771F}.PNG",
            "\u{600}.png", "a\u{600}.png", "r\u{E9}sum\u{E9}.pdf", "e\u{301}.png", "a.abcdefghijklmnop",
            "a.abcdefghijklmnopq", "A.ABCDEFGHIJKLMNOP", "a.p\rng", "a\r.png", "a\n.png", "a.pdf", "\u{130}.png",
            "a.\u{212A}", "a.k", "a.K", "a.ss", "a.\u{DF}", "a.SS", "a.\u{1F642}", "\u{1F642}.png",
            "a\u{200D}.png", "a.p", "a.P", "A.Txt", "a.tar.gz", "a.TAR.GZ",
        ].map { Array($0.utf8) } + [
            [0xFF, 0x2E, 0x70, 0x6E, 0x67], [0x61, 0x2E, 0x70, 0xFF, 0x67], [0xC3, 0x2E, 0x70, 0x6E, 0x67],
        ]

    static let extensionLiterals = [
        "png", "PNG", "Png", "p\u{F1}g", "pn\u{303}g", "pdf", "txt", "ss", "\u{DF}", "k", "\u{212A}", "p",
        "abcdefghijklmnop", "abcdefghijklmnopq", "ABCDEFGHIJKLMNOP", "gz", "tar.gz", "", "\u{1F642}", "zzz",
    ]

    /// Suffix tests in every form and option set, alone, in AND and OR,
    /// against those names (three copies each, in three folders).
    static func extensionPredicates() -> [MetadataPredicate] {
        var out: [MetadataPredicate] = []
        for literal in extensionLiterals {
            for options in ["", "[c]", "[d]", "[cd]", "[cdw]"] {
                out.append(try! MetadataPredicate("kMDItemFSName LIKE\(options) '*.\(literal)'"))
                guard options != "[cdw]" else { continue }  // [w] is for ==, != and LIKE
                out.append(try! MetadataPredicate("kMDItemFSName ENDSWITH\(options) '.\(literal)'"))
            }
            out.append(try! MetadataPredicate("kMDItemFSName LIKE[cd] '*.\(literal)' AND kMDItemFSSize > 3"))
            out.append(try! MetadataPredicate("kMDItemFSName LIKE[cd] '*.\(literal)' AND kMDItemFSName BEGINSWITH 'a'"))
            out.append(try! MetadataPredicate("kMDItemFSName LIKE[c] '*.\(literal)' OR kMDItemFSName LIKE[c] '*.pdf'"))
            out.append(
                try! MetadataPredicate("kMDItemFSName LIKE[cd] '*.\(literal)' OR kMDItemFSName ENDSWITH[c] '.txt'"))
            out.append(
                try! MetadataPredicate(
                    "(kMDItemFSName LIKE[cd] '*.\(literal)' OR kMDItemFSName LIKE[cd] '*.p') AND kMDItemFSSize < 5"))
            out.append(try! MetadataPredicate("kMDItemFSName LIKE[cd] '*.\(literal)' OR kMDItemFSName CONTAINS 'a'"))
        }
        return out
    }

    /// Inserts the names in three folders; `unsure: false` leaves out those
    /// whose dot starts no character (a prepended mark, U+0600, before it).
    static func insertExtensionNames(
        into index: FileIndex, random: inout SeededGenerator, unsure: Bool = true
    ) -> [EntryID] {
        var inserted: [EntryID] = []
        let prepended = Array("\u{600}".utf8)
        for folderNumber in 0..<3 {
            let folder = index.insert(
                name: Array("ext-\(folderNumber)".utf8), in: index.roots[0], metadata: EntryMetadata(kind: .folder))
            for name in extensionNames where unsure || name.firstRange(of: prepended) == nil {
                inserted.append(
                    index.insert(
                        name: name, in: folder,
                        metadata: EntryMetadata(kind: .file, size: UInt64(Int.random(in: 0..<8, using: &random)))))
            }
        }
        return inserted
    }

    /// A suffix test the extension codes decide gives the whole scan's
    /// answer, with the codes partly and wholly built, and the codes are
    /// used: `[cd]` and `[c]` tests decide most entries without a name read.
    /// Without unsure extensions, a single code is compared sixteen at a
    /// time.
    @Test(arguments: [true, false])
    func extensionCodesDecideSuffixTestsExactly(unsure: Bool) {
        let index = IndexScanTests.makeIndex(entries: 2000 + (unsure ? 0 : 7), seed: 11)
        var random = SeededGenerator(seed: 11)
        _ = Self.insertExtensionNames(into: index, random: &random, unsure: unsure)
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        let predicates = Self.extensionPredicates()
        grams.extend(by: index.slotCount / 2, of: index)
        for predicate in predicates { Self.check(index, predicate, "half") }
        grams.extend(by: index.slotCount, of: index)
        var decided = 0
        for predicate in predicates {
            Self.check(index, predicate, "complete")
            let compiled = CompiledPredicate(predicate)
            if let plan = NameGramPlan(compiled, grams: grams, slots: .max), plan.candidates(grams).extensions != nil {
                decided += 1
            }
        }
        #expect(decided > predicates.count / 3, "\(decided) of \(predicates.count) decided by extension codes")
        // The glob `mdq '*.png'` makes is decided, its names unread.
        let glob = CompiledPredicate(try! MetadataPredicate.nameMatching(Array("*.png".utf8)))
        let plan = NameGramPlan(glob, grams: grams, slots: index.slotCount)
        #expect(plan.map { $0.candidates(grams).extensions?.entries ?? 0 } ?? 0 >= 3 * 10)
        #expect((plan?.candidates(grams).extensions?.set.single != nil) == !unsure)
    }

    /// Renames that change an extension, removals and reused slots keep the
    /// codes exact.
    @Test(arguments: [12, 13] as [UInt64])
    func extensionCodesFollowChanges(seed: UInt64) {
        let index = IndexScanTests.makeIndex(entries: 1500, seed: seed)
        var random = SeededGenerator(seed: seed)
        var entries = Self.insertExtensionNames(into: index, random: &random)
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        grams.extend(by: index.slotCount, of: index)
        let predicates = Self.extensionPredicates().filter { _ in Int.random(in: 0..<3, using: &random) == 0 }
        for round in 0..<5 {
            for _ in 0..<60 {
                let id = entries.randomElement(using: &random)!
                guard index.contains(id), let parent = index.parent(of: id) else { continue }
                let name =
                    Array("\(Int.random(in: 0..<1000, using: &random))".utf8)
                    + Self.extensionNames.randomElement(using: &random)!
                guard index.child(named: name, in: parent) == nil else { continue }
                switch Int.random(in: 0..<3, using: &random) {
                case 0: index.move(id, to: parent, name: name)
                case 1: _ = index.remove(id)
                default:
                    entries.append(index.insert(name: name, in: parent, metadata: EntryMetadata(kind: .file, size: 4)))
                }
            }
            grams.extend(by: index.slotCount, of: index)
            for predicate in predicates { Self.check(index, predicate, "round \(round)") }
        }
    }

    /// An index of several scan chunks with the codes built for part of
    /// the first: chunks wholly past the coverage are scanned whole (a
    /// restarted daemon answers while its lists are being built).
    @Test func chunksPastTheCoverageAreScannedWhole() throws {
        let index = IndexScanTests.makeIndex(entries: 3 * ChunkScanner.chunkSize, seed: 15)
        var random = SeededGenerator(seed: 15)
        _ = Self.insertExtensionNames(into: index, random: &random, unsure: false)
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        let predicates = ["*.png", "*.txt", "*.PDF"].map { try! MetadataPredicate.nameMatching(Array($0.utf8)) }
        for covered in [ChunkScanner.chunkSize / 2, ChunkScanner.chunkSize + 3, index.slotCount] {
            grams.extend(by: covered - grams.covered, of: index)
            for predicate in predicates { Self.check(index, predicate, "covered \(covered)") }
        }
    }

    /// More distinct extensions than the table holds: the ones past it are
    /// unsure, tested by name, and answers stay exact.
    @Test func extensionsPastTheTableAreTestedByName() throws {
        let index = IndexScanTests.makeIndex(entries: 100, seed: 14)
        let folder = index.insert(name: Array("many".utf8), in: index.roots[0], metadata: EntryMetadata(kind: .folder))
        for i in 0..<33_000 {
            _ = index.insert(name: Array("f.e\(i)".utf8), in: folder, metadata: EntryMetadata(kind: .file))
        }
        let grams = NameGrams(expectedEntries: index.count)
        index.nameGrams = grams
        grams.extend(by: index.slotCount, of: index)
        for text in ["*.e5", "*.E32999", "*.e3299", "*.png"] {
            let predicate = try MetadataPredicate.nameMatching(Array(text.utf8))
            let compiled = CompiledPredicate(predicate)
            var whole = IndexScan(index: index, predicate: compiled)
            whole.threads = 1
            #expect(whole.matchCount() == (text == "*.png" ? 0 : 1))
            Self.check(index, predicate, text)
        }
    }
}
