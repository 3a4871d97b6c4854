import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// A deterministic random generator (SplitMix64), so failures reproduce.
struct FileIndexTests {
    func file(size: UInt64 = 0, inode: UInt64 = 1) -> EntryMetadata {
        EntryMetadata(
            kind: .file, size: size, modificationTime: Timestamp(nanosecondsSinceEpoch: 1_700_000_000_123_456_789),
            birthTime: nil, inode: inode)
    }

    let folder = EntryMetadata(kind: .folder, size: 0, modificationTime: Timestamp(nanosecondsSinceEpoch: 5), inode: 2)

    @Test func insertLookUpAndRebuildPaths() {
        let index = FileIndex()
        let root = index.addRoot(path: "/data/scope", metadata: folder)
        let docs = index.insert(name: Array("Documents".utf8), in: root, metadata: folder)
        let report = index.insert(name: Array("report.pdf".utf8), in: docs, metadata: file(size: 42))
        #expect(index.count == 3)
        #expect(index.child(named: Array("Documents".utf8), in: root) == docs)
        #expect(index.child(named: Array("report.pdf".utf8), in: docs) == report)
        #expect(index.child(named: Array("report.pdf".utf8), in: root) == nil)
        #expect(index.path(of: report) == "/data/scope/Documents/report.pdf")
        #expect(index.path(of: root) == "/data/scope")
        #expect(index.parent(of: report) == docs)
        #expect(index.parent(of: root) == nil)
        #expect(index.isRoot(root) && !index.isRoot(docs))
        #expect(index.metadata(of: report).size == 42)
        #expect(index.metadata(of: report).modificationTime?.nanosecondsSinceEpoch == 1_700_000_000_123_456_789)
        #expect(index.root(of: report) == root)
        index._checkInvariants()
    }

    /// Two scopes ending in the same name (two containers' `Documents`)
    /// are two roots, each with its own children.
    @Test func rootsMayShareTheirLastName() {
        let index = FileIndex()
        let a = index.addRoot(path: "/c/iCloud~a/Documents", metadata: folder)
        let b = index.addRoot(path: "/c/iCloud~b/Documents", metadata: folder)
        #expect(a != b)
        let inA = index.insert(name: Array("x.txt".utf8), in: a, metadata: file())
        let inB = index.insert(name: Array("x.txt".utf8), in: b, metadata: file())
        #expect(inA != inB)
        #expect(index.path(of: inB) == "/c/iCloud~b/Documents/x.txt")
        index._checkInvariants()
        index.remove(a)
        #expect(index.path(of: inB) == "/c/iCloud~b/Documents/x.txt")
        index._checkInvariants()
    }

    @Test func insertIsIdempotentAndUpdatesMetadata() {
        let index = FileIndex()
        let root = index.addRoot(path: "/r", metadata: folder)
        let first = index.insert(name: Array("a".utf8), in: root, metadata: file(size: 1))
        let second = index.insert(name: Array("a".utf8), in: root, metadata: file(size: 2))
        #expect(first == second)
        #expect(index.count == 2)
        #expect(index.metadata(of: first).size == 2)
        index._checkInvariants()
    }

    @Test func replacingAFolderByAFileDropsItsSubtree() {
        let index = FileIndex()
        let root = index.addRoot(path: "/r", metadata: folder)
        let dir = index.insert(name: Array("x".utf8), in: root, metadata: folder)
        index.insert(name: Array("inner".utf8), in: dir, metadata: file())
        let same = index.insert(name: Array("x".utf8), in: root, metadata: file())
        #expect(same == dir)
        #expect(index.kind(of: same) == .file)
        #expect(index.count == 2)
        index._checkInvariants()
    }

    @Test func removeDropsTheWholeSubtreeAndSlotsAreReused() {
        let index = FileIndex()
        let root = index.addRoot(path: "/r", metadata: folder)
        let a = index.insert(name: Array("a".utf8), in: root, metadata: folder)
        let b = index.insert(name: Array("b".utf8), in: a, metadata: folder)
        for i in 0..<100 { index.insert(name: Array("f\(i)".utf8), in: b, metadata: file()) }
        let keep = index.insert(name: Array("keep".utf8), in: root, metadata: file())
        #expect(index.count == 104)
        #expect(index.remove(a) == 102)
        #expect(index.count == 2)
        #expect(index.child(named: Array("a".utf8), in: root) == nil)
        #expect(index.children(of: root) == [keep])
        let slots = index.slotCount
        for i in 0..<102 { index.insert(name: Array("g\(i)".utf8), in: root, metadata: file()) }
        #expect(index.slotCount == slots, "freed slots are reused before new ones")
        index._checkInvariants()
    }

    @Test func moveReparentsASubtreeAndRenames() {
        let index = FileIndex()
        let root = index.addRoot(path: "/r", metadata: folder)
        let a = index.insert(name: Array("a".utf8), in: root, metadata: folder)
        let b = index.insert(name: Array("b".utf8), in: root, metadata: folder)
        let deep = index.insert(name: Array("deep".utf8), in: a, metadata: folder)
        let leaf = index.insert(name: Array("leaf.txt".utf8), in: deep, metadata: file())
        index.move(deep, to: b, name: Array("renamed".utf8))
        #expect(index.path(of: leaf) == "/r/b/renamed/leaf.txt")
        #expect(index.child(named: Array("deep".utf8), in: a) == nil)
        #expect(index.child(named: Array("renamed".utf8), in: b) == deep)
        #expect(index.child(named: Array("leaf.txt".utf8), in: deep) == leaf)
        index._checkInvariants()
    }

    @Test func moveOntoAnExistingNameReplacesIt() {
        let index = FileIndex()
        let root = index.addRoot(path: "/r", metadata: folder)
        let a = index.insert(name: Array("a".utf8), in: root, metadata: file(size: 1))
        let b = index.insert(name: Array("b".utf8), in: root, metadata: folder)
        index.insert(name: Array("child".utf8), in: b, metadata: file())
        index.move(a, to: root, name: Array("b".utf8))
        #expect(index.count == 2)
        #expect(index.child(named: Array("b".utf8), in: root) == a)
        #expect(index.metadata(of: a).size == 1)
        index._checkInvariants()
    }

    @Test func largeSizesAndInodesRoundTrip() {
        let index = FileIndex()
        let root = index.addRoot(path: "/r", metadata: folder)
        let big = index.insert(name: Array("big".utf8), in: root, metadata: file(size: 5_000_000_000, inode: 1 << 40))
        let edge = index.insert(
            name: Array("edge".utf8), in: root, metadata: file(size: UInt64(UInt32.max), inode: UInt64(UInt32.max)))
        #expect(index.metadata(of: big).size == 5_000_000_000)
        #expect(index.metadata(of: big).inode == 1 << 40)
        #expect(index.metadata(of: edge).size == UInt64(UInt32.max))
        #expect(index.metadata(of: edge).inode == UInt64(UInt32.max))
        index.update(big, metadata: file(size: 3))
        #expect(index.metadata(of: big).size == 3)
        index._checkInvariants()
    }

    @Test func rawByteNamesAreKeptExactly() {
        let index = FileIndex()
        let root = index.addRoot(path: "/r", metadata: folder)
        let name: [UInt8] = [0x66, 0xFF, 0x0A, 0x5C, 0x22]
        let id = index.insert(name: name, in: root, metadata: file())
        #expect(index.name(of: id) == name)
        #expect(index.path(of: id).bytes == Array("/r/".utf8) + name)
        let long = [UInt8](repeating: 0x61, count: 255)
        let longID = index.insert(name: long, in: root, metadata: file())
        #expect(index.name(of: longID) == long)
    }

    /// Random inserts, removals and moves, checked against a model after each
    /// step: the set of paths and the invariants must agree.
    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomOperationsMatchAModel(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let index = FileIndex()
        let root = index.addRoot(path: "/m", metadata: folder)
        var model: [String: EntryKind] = [:]  // relative path -> kind
        func id(of path: String) -> EntryID? {
            var current = root
            for part in path.split(separator: "/") {
                guard let next = index.child(named: Array(part.utf8), in: current) else { return nil }
                current = next
            }
            return current
        }
        func folders() -> [String] { [""] + model.filter { $0.value == .folder }.map(\.key).sorted() }
        let names = ["a", "b", "c", "d", "e", "long-name-\(seed)", "caf\u{E9}"]
        for step in 0..<1500 {
            let choice = Int.random(in: 0..<10, using: &random)
            let parentPath = folders().randomElement(using: &random)!
            let name = names.randomElement(using: &random)!
            let path = parentPath.isEmpty ? name : parentPath + "/" + name
            switch choice {
            case 0..<5:
                let kind: EntryKind = Bool.random(using: &random) ? .folder : .file
                guard let parent = id(of: parentPath) else { continue }
                if let old = model[path], old != kind {
                    for key in model.keys where key.hasPrefix(path + "/") { model[key] = nil }
                }
                index.insert(name: Array(name.utf8), in: parent, metadata: kind == .folder ? folder : file())
                model[path] = kind
            case 5..<7:
                guard let victim = model.keys.sorted().randomElement(using: &random), let victimID = id(of: victim)
                else { continue }
                index.remove(victimID)
                for key in model.keys where key == victim || key.hasPrefix(victim + "/") { model[key] = nil }
            default:
                guard let source = model.keys.sorted().randomElement(using: &random), let sourceID = id(of: source),
                    let parent = id(of: parentPath)
                else { continue }
                if parentPath == source || parentPath.hasPrefix(source + "/") { continue }
                if path == source || source.hasPrefix(path + "/") { continue }
                let moved = model.filter { $0.key == source || $0.key.hasPrefix(source + "/") }
                for key in model.keys where key == path || key.hasPrefix(path + "/") { model[key] = nil }
                for key in moved.keys { model[key] = nil }
                for (key, kind) in moved { model[path + key.dropFirst(source.count)] = kind }
                index.move(sourceID, to: parent, name: Array(name.utf8))
            }
            if step % 50 == 0 { index._checkInvariants() }
            #expect(index.count == model.count + 1, "step \(step)")
        }
        index._checkInvariants()
        var paths: Set<String> = []
        index.forEachEntry { entry in
            if !index.isRoot(entry) { paths.insert(String(index.path(of: entry).string.dropFirst(3))) }
        }
        #expect(paths == Set(model.keys))
    }

    @Test func timestampsFormatAsISO8601() {
        #expect(Timestamp(nanosecondsSinceEpoch: 0).iso8601 == "1970-01-01T00:00:00Z")
        #expect(Timestamp(nanosecondsSinceEpoch: 1_738_281_600_500_000_000).iso8601 == "2025-01-31T00:00:00.5Z")
        #expect(Timestamp(nanosecondsSinceEpoch: 951_782_400_000_000_001).iso8601 == "2000-02-29T00:00:00.000000001Z")
        #expect(Timestamp(nanosecondsSinceEpoch: -1_000_000_000).iso8601 == "1969-12-31T23:59:59Z")
    }
}
