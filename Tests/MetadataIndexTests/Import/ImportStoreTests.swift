import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The on-disk store of imported attributes and text.
@Suite(.timeLimit(.minutes(1)))
struct ImportStoreTests {
    typealias Key = FileKey
    typealias Stamp = FileStamp

    func report(text: String?, tags: [String] = [], failure: String? = nil) -> ImportReport {
        var report = ImportReport(path: FilePath("/x"), typeByName: "public.plain-text")
        if let text { report.values[.textContent] = .text(Array(text.utf8)) }
        if !tags.isEmpty { report.values[.userTags] = .list(tags) }
        if let failure {
            report.steps = [
                ImportReport.Step(importer: "text", values: ImportedValues(), failure: ImportFailure(failure))
            ]
        }
        return report
    }

    @Test func importsRoundTripAndStaleStampsAreNoticed() throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        let key = Key(device: 2049, inode: 12)
        let stamp = Stamp(modification: 1_700_000_000_000_000_000, size: 42)
        #expect(store.needsImport(key, stamp: stamp))
        try store.save([(key, stamp, report(text: "Invoice for the café", tags: ["tax", "2024"]))])
        let record = try #require(store.record(for: key))
        #expect(record.stamp == stamp)
        #expect(record.values[.userTags] == .list(["tax", "2024"]))
        #expect(record.values[.textContent] == nil, "text lives in the full-text table")
        #expect(store.text(for: key) == "Invoice for the café")
        #expect(!store.needsImport(key, stamp: stamp))
        #expect(store.needsImport(key, stamp: Stamp(modification: stamp.modification, size: 43)))
        // Imported again after a change: replaced, not duplicated.
        try store.save([(key, Stamp(modification: 1, size: 3), report(text: "new words"))])
        #expect(store.count == 1)
        #expect(store.text(for: key) == "new words")
        #expect(try store.filesMatching(text: "invoice").isEmpty)
        #expect(try store.filesMatching(text: "words") == [key])
        try store.remove([key])
        #expect(store.record(for: key) == nil)
        #expect(store.text(for: key) == nil)
        #expect(try store.filesMatching(text: "words").isEmpty)
    }

    /// One compressor serves text after text, short and long, repetitive
    /// and random, in any order: each comes back exactly, as the one-off
    /// `Deflate.compress` gives it back, and is read by `decompress`.
    @Test func aReusedCompressorGivesBackEveryText() throws {
        var generator = SeededGenerator(seed: 37)
        let compressor = Deflate.Compressor()
        let lengths = [
            0, 1, 2, 100, Deflate.Compressor.shortText - 1, Deflate.Compressor.shortText,
            Deflate.Compressor.shortText + 1, 70_000, 300_000,
        ]
        for round in 0..<3 {
            for length in lengths.shuffled(using: &generator) {
                let random = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                let prose = Array(
                    String(repeating: "Invoice for the café, round \(round). ", count: length / 36 + 1)
                        .utf8.prefix(length))
                for text in [random, prose] {
                    let packed = compressor.compress(text)
                    #expect(!packed.isEmpty)
                    #expect(Deflate.decompress(packed) == text, "\(length) bytes, round \(round)")
                    #expect(Deflate.decompress(Deflate.compress(text)) == text)
                }
            }
        }
        // Prose shrinks with either stream.
        let long = Array(String(repeating: "the quick brown fox ", count: 1000).utf8)
        #expect(compressor.compress(long).count < long.count / 10)
        let short = Array(String(repeating: "the quick brown fox ", count: 40).utf8)
        #expect(compressor.compress(short).count < short.count / 2)
    }

    /// The engine looks files up under its lock, and queries ask the
    /// full-text index: neither waits for a batch being written, and each
    /// sees only what was committed.
    @Test func lookupsDoNotWaitForAWrite() throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        let key = Key(device: 2049, inode: 7)
        let stamp = Stamp(modification: 1_700_000_000_000_000_000, size: 5)
        try store.save([(key, stamp, report(text: "hello"))])
        var seen: (FileStamp?, String?, Set<FileKey>?, Set<FileKey>?) = (nil, nil, nil, nil)
        try store.whileWriting(key, stamp: Stamp(modification: 1, size: 1)) {
            seen = (
                store.stamp(for: key), store.text(for: key),
                store.candidates(.word(Array("hello".utf8), prefix: false)),
                store.candidates(.substring(Array("ell".utf8)))
            )
        }
        #expect(seen.0 == stamp)
        #expect(seen.1 == "hello")
        #expect(seen.2 == [key])
        #expect(seen.3 == [key])
        #expect(store.stamp(for: key) == stamp)
    }

    /// A reconcile finds each indexed file in the store's sorted stamps,
    /// whatever its device and inode (the store orders them as signed
    /// integers: numbers past 2^63 sort first), and no file that is not
    /// there.
    @Test func everyStoredFileIsFoundInTheSortedStamps() throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        var generator = SeededGenerator(seed: 11)
        var keys: [FileKey] = [
            Key(device: .max, inode: .max), Key(device: 0, inode: 0), Key(device: 1 << 63, inode: 1),
        ]
        for _ in 0..<300 {
            keys.append(
                Key(
                    device: [2049, 1 << 63 | 5, 0].randomElement(using: &generator)!,
                    inode: UInt64.random(in: 0...UInt64.max, using: &generator)))
        }
        let stamp = { (key: FileKey) in Stamp(modification: Int64(bitPattern: key.inode / 3), size: key.device / 7) }
        try store.save(keys.map { ($0, stamp($0), report(text: nil)) })
        let sorted = store.sortedStamps()
        #expect(sorted.count == Set(keys).count)
        for key in keys {
            let i = try #require(ImportStore.StoredStamp.index(of: key, in: sorted))
            #expect(sorted[i].key == key)
            #expect(sorted[i].stamp == stamp(key))
        }
        for _ in 0..<300 {
            let absent = Key(device: 7, inode: UInt64.random(in: 0...UInt64.max, using: &generator))
            #expect(ImportStore.StoredStamp.index(of: absent, in: sorted) == nil)
        }
    }

    @Test func wordsPrefixesAndDiacriticsAreFound() throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        let a = Key(device: 1, inode: 1)
        let b = Key(device: 1, inode: 2)
        try store.save([
            (a, Stamp(modification: 1, size: 1), report(text: "Crème brûlée recipe")),
            (b, Stamp(modification: 1, size: 1), report(text: "Quarterly REPORT draft")),
        ])
        #expect(try store.filesMatching(text: "creme") == [a])
        #expect(try store.filesMatching(text: "brul*") == [a])
        #expect(try store.filesMatching(text: "report") == [b])
        #expect(try Set(store.filesMatching(text: "recipe OR draft")) == [a, b])
        #expect(try store.filesMatching(text: "\"quarter\" *") == [b])
        // No positions are kept (the store stays small): phrases are refused.
        #expect(throws: MetadataError.self) { try store.filesMatching(text: "\"report draft\"") }
        let error = #expect(throws: MetadataError.self) { try store.filesMatching(text: "\"unbalanced") }
        #expect(error?.code == .persistence)
    }

    @Test func failuresAreRecordedUntilTheFileChanges() throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        let key = Key(device: 1, inode: 9)
        let stamp = Stamp(modification: 5, size: 5)
        try store.save([(key, stamp, report(text: nil, failure: "binary content in a file of type public.plain-text"))])
        #expect(store.record(for: key)?.failure == "binary content in a file of type public.plain-text")
        #expect(!store.needsImport(key, stamp: stamp))
    }

    /// A store that is not a database, is damaged or is of another version
    /// is rebuilt with one log line; what it held is imported again.
    @Test(arguments: ["garbage", "truncated", "version"])
    func aDamagedStoreIsRebuilt(damage: String) throws {
        let temp = try TemporaryDirectory()
        let path = temp.path.appending("imports.sqlite")
        do {
            let store = try ImportStore.open(at: path)
            try store.save([(Key(device: 1, inode: 1), Stamp(modification: 1, size: 1), report(text: "kept?"))])
        }
        switch damage {
        case "garbage":
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path.string))
        case "truncated":
            let data = try Data(contentsOf: URL(fileURLWithPath: path.string))
            try data.prefix(1500).write(to: URL(fileURLWithPath: path.string))
            unlink(path.string + "-wal")
        default:
            let set = try Shell.run("/usr/bin/env", ["sqlite3", path.string, "PRAGMA user_version = 99"])
            try #require(set.status == 0, "\(set.stderrText)")
        }
        let lines = Locked<[String]>([])
        let store = try ImportStore.open(at: path, log: { line in lines.withLock { $0.append(line) } })
        #expect(lines.withLock { $0.count } == 1, "\(lines.withLock { $0 })")
        #expect(lines.withLock { $0.first?.contains("discarded") } == true)
        #expect(store.count == 0)
        try store.save([(Key(device: 1, inode: 1), Stamp(modification: 1, size: 1), report(text: "again"))])
        #expect(store.text(for: Key(device: 1, inode: 1)) == "again")
    }

    @Test func theStoreIsPrivateToItsUser() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path.appending("imports.sqlite")
        let previous = umask(0)
        defer { umask(previous) }
        _ = try ImportStore.open(at: path)
        var info = stat()
        #expect(stat(path.string, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test func threadsShareOneStore() throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<25 {
                let key = Key(device: UInt64(thread), inode: UInt64(i))
                try? store.save([(key, Stamp(modification: 1, size: 1), report(text: "thread\(thread) item\(i)"))])
                _ = store.record(for: key)
            }
        }
        #expect(store.count == 200)
        #expect(try store.filesMatching(text: "thread3").count == 25)
    }
}

/// `CONTAINS` on text looks up the words holding its run in a table of
/// the index's words with a trigram index: the same words the full-text
/// index's own vocabulary gives (more only until stale ones are pruned), so
/// the files it narrows to hold every match, for every script, case and
/// diacritic option.
@Suite(.timeLimit(.minutes(1)))
struct TextSubstringTests {
    static let pool = [
        "invoice", "Invoicé", "naïve", "NAÏVE", "Straße", "strasse", "\u{FB01}nance", "İstanbul", "ısı", "café",
        "cafe\u{301}", "Ελληνικά", "кириллица", "中文字符", "عربى", "日本語テキスト", "camelCaseWord", "snake_case_word",
        "x2024y", "über", "Ångström", "ǅemal", "e\u{301}toile", "ＦＵＬＬＷＩＤＴＨ", "🙂emoji", "quetzalcoatlus",
        "reinvoiced", "in-voice", "voice", "2024", "a", "ab", "Ab1", "ΣΊΣΥΦΟΣ", "Wörterbuch", "ﬀ",
        "\u{212A}elvin", "\u{17F}tra\u{17F}\u{17F}e", "\u{149}ext", "\u{1F0}unk", "GRO\u{1E9E}", "fa\u{FB06}",
        "\u{FB03}ce", "\u{FB04}uent", "ǈubljana", "\u{1E96}ah",
    ]

    static func text(_ random: inout SeededGenerator) -> String {
        (0..<Int.random(in: 1...8, using: &random)).map { _ in pool.randomElement(using: &random)! }
            .joined(separator: [" ", ", ", "\n", "/"].randomElement(using: &random)!)
    }

    /// Runs a `TextPrefilter` can take: lower-case ASCII letters and
    /// digits, from the pool's words and a few that no word holds.
    static func runs() -> [[UInt8]] {
        var runs: Set<[UInt8]> = [Array("zzq".utf8), Array("x".utf8), Array("ss".utf8), Array("fi".utf8)]
        for word in pool {
            let ascii = Array(word.lowercased().utf8).split { !($0 < 0x80 && (isalnum(Int32($0)) != 0)) }
            for piece in ascii where !piece.isEmpty {
                for length in 1...min(6, piece.count) {
                    for start in stride(from: 0, through: piece.count - length, by: 2) {
                        runs.insert(Array(piece[piece.startIndex + start..<piece.startIndex + start + length]))
                    }
                }
            }
        }
        return runs.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// The full-text index's own words whose key holds `run`, read from
    /// its vocabulary (as the lookup did before it had a table of words,
    /// which matched the words alone and so missed `ß` for `ss`).
    static func vocabularyScan(_ store: ImportStore, _ run: [UInt8]) throws -> Set<String> {
        let database = try SQLiteDatabase.open(store.path)
        let s = try database.prepare("SELECT term FROM content_vocabulary")
        let keys = SubstringKeys()
        var terms = Set<String>()
        while try s.step() {
            let term = s.bytes(0)
            if keys.key(of: term).firstRange(of: run) != nil { terms.insert(String(decoding: term, as: UTF8.self)) }
        }
        return terms
    }

    @Test(arguments: [1, 2] as [UInt64])
    func theWordsHoldingARunAreTheIndexs(seed: UInt64) throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        var random = SeededGenerator(seed: seed)
        var texts: [FileKey: String] = [:]
        func save(_ keys: [FileKey]) throws {
            var batch: [(key: FileKey, stamp: FileStamp, report: ImportReport)] = []
            for key in keys {
                let text = Self.text(&random)
                texts[key] = text
                var report = ImportReport(path: FilePath("/x"), typeByName: "public.plain-text")
                report.values[.textContent] = .text(Array(text.utf8))
                batch.append((key, FileStamp(modification: Int64(batch.count), size: 1), report))
            }
            try store.save(batch)
        }
        let keys = (0..<240).map { FileKey(device: 7, inode: UInt64($0)) }
        for start in stride(from: 0, to: keys.count, by: 20) { try save(Array(keys[start..<start + 20])) }
        // Replaced and removed texts leave words no text holds.
        try save(Array(keys.shuffled(using: &random).prefix(60)))
        let removed = Array(keys.shuffled(using: &random).prefix(40))
        try store.remove(removed)
        for key in removed { texts[key] = nil }

        let runs = Self.runs()
        let limit = 100_000
        for run in runs {
            let found = try #require(store.vocabulary(containing: run, limit: limit))
            let scanned = try Self.vocabularyScan(store, run)
            #expect(Set(found).isSuperset(of: scanned), "\(String(decoding: run, as: UTF8.self))")
        }
        let before = store.wordCount
        store.pruneWords()
        #expect(store.wordCount <= before)
        for run in runs {
            let found = try #require(store.vocabulary(containing: run, limit: limit))
            #expect(Set(found) == (try Self.vocabularyScan(store, run)), "\(String(decoding: run, as: UTF8.self))")
        }

        // Every predicate the index narrows keeps every file that matches.
        for run in runs {
            let literal = String(decoding: run, as: UTF8.self)
            for options in ["", "[c]", "[d]", "[cd]"] {
                for form in ["CONTAINS\(options) '\(literal)'", "LIKE\(options) '*\(literal)*'"] {
                    let predicate = try MetadataPredicate("kMDItemTextContent \(form)")
                    let compiled = CompiledPredicate(predicate)
                    guard let filter = compiled.textPrefilter else { continue }
                    let candidates = try #require(store.candidates(filter, vocabularyLimit: limit))
                    let evaluator = compiled.makeEvaluator()
                    for (key, text) in texts {
                        var subject = TestSubject("f")
                        var values = ImportedValues()
                        values[.textContent] = .text(Array(text.utf8))
                        subject.importedValues = values
                        if evaluator.matches(subject) {
                            let kept = candidates.contains(key)
                            #expect(kept, "\(form) matches \(text)")
                        }
                    }
                }
            }
        }
    }

    /// A word pruned once no text held it is found again when a text
    /// brings it back (the words remembered as stored are forgotten with
    /// it).
    @Test func aPrunedWordComesBackWithItsText() throws {
        let temp = try TemporaryDirectory()
        let store = try ImportStore.open(at: temp.path.appending("imports.sqlite"))
        func save(_ inode: UInt64, _ text: String) throws {
            var report = ImportReport(path: FilePath("/x"), typeByName: "public.plain-text")
            report.values[.textContent] = .text(Array(text.utf8))
            try store.save([(FileKey(device: 1, inode: inode), FileStamp(modification: 1, size: 1), report)])
        }
        try save(1, "a zebracorn grazes")
        try save(2, "nothing else")
        #expect(store.vocabulary(containing: Array("bracor".utf8), limit: 10) == ["zebracorn"])
        try store.remove([FileKey(device: 1, inode: 1)])
        store.pruneWords()
        #expect(store.vocabulary(containing: Array("bracor".utf8), limit: 10) == [])
        try save(3, "the zebracorn is back")
        #expect(store.vocabulary(containing: Array("bracor".utf8), limit: 10) == ["zebracorn"])
        let filter = try #require(
            CompiledPredicate(try MetadataPredicate("kMDItemTextContent CONTAINS 'bracor'")).textPrefilter)
        #expect(store.candidates(filter) == [FileKey(device: 1, inode: 3)])
    }

    /// A store of the version before the table of words gains it, filled
    /// from the index's vocabulary, without importing anything again.
    @Test func aStoreWithoutTheTableOfWordsGainsIt() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path.appending("imports.sqlite")
        do {
            let store = try ImportStore.open(at: path)
            var report = ImportReport(path: FilePath("/x"), typeByName: "public.plain-text")
            report.values[.textContent] = .text(Array("Quetzalcoatlus flew over the café".utf8))
            try store.save([(FileKey(device: 1, inode: 1), FileStamp(modification: 1, size: 1), report)])
        }
        do {
            let database = try SQLiteDatabase.open(path)
            try database.execute(
                "DROP TABLE word_grams; DROP TABLE words; DROP TABLE counters; PRAGMA user_version = 3;")
        }
        let store = try ImportStore.open(at: path)
        #expect(store.count == 1, "nothing imported again")
        #expect(store.vocabulary(containing: Array("tzalc".utf8), limit: 10) == ["quetzalcoatlus"])
        #expect(store.vocabulary(containing: Array("af".utf8), limit: 10) == ["cafe"])
        #expect(store.wordCount == 5)
    }
}
