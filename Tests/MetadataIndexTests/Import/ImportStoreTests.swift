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
