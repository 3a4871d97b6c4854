import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Snapshots of an index: what is written comes back exactly; anything
/// else is refused with a reason, never trusted, never a crash.
struct IndexSnapshotTests {
    /// The xxHash64 reference values (seed 0).
    @Test(arguments: [
        ("", 0xEF46_DB37_51D8_E999 as UInt64), ("a", 0xD24E_C4F1_A98C_6E5B), ("abc", 0x44BC_2CF5_AD77_0999),
        ("Nobody inspects the spammish repetition", 0xFBCE_A83C_8A37_8BF1),
    ])
    func checksumMatchesTheReferenceVectors(text: String, expected: UInt64) {
        var whole = Checksum64()
        Array(text.utf8).withUnsafeBytes { whole.update($0) }
        #expect(whole.finalize() == expected)
        // Fed one byte at a time: the same.
        var pieces = Checksum64()
        for byte in text.utf8 { [byte].withUnsafeBytes { pieces.update($0) } }
        #expect(pieces.finalize() == expected)
    }

    /// An index of a generated tree with removals (free slots, arena
    /// holes), large values and several roots.
    static func sampleIndex() throws -> (FileIndex, TemporaryDirectory) {
        let temp = try TemporaryDirectory()
        for i in 0..<300 {
            try temp.file("a/d\(i % 7)/caf\u{E9}-\(i).txt", contents: String(repeating: "x", count: i % 5))
        }
        for i in 0..<50 { try temp.file("b/\(i)") }
        // Files and folders of several owners, groups and modes.
        for i in stride(from: 0, to: 300, by: 11) {
            let path = temp.path.appending("a/d\(i % 7)/caf\u{E9}-\(i).txt").string
            _ = chown(path, [0, 65534][i % 2], [0, 100, 65534][i % 3])
            _ = chmod(path, [0o600, 0o640, 0o4755][i % 3])
        }
        _ = chmod(temp.path.appending("a/d3").string, 0o750)
        let index = FileIndex()
        try index.gather([CrawlRoot(path: temp.path.appending("a")), CrawlRoot(path: temp.path.appending("b"))])
        let root = index.roots.first { index.path(of: $0) == temp.path.appending("a") }!
        for child in index.children(of: root).prefix(2) { index.remove(child) }
        let first = index.children(of: index.children(of: root)[0])[0]
        index.update(first, metadata: EntryMetadata(kind: .file, size: 1 << 40, inode: 1 << 40))
        // Trigram lists over part of the slots (a daemon's, mid-build).
        index.nameGrams = NameGrams(expectedEntries: index.count)
        index.nameGrams?.extend(by: index.slotCount - 40, of: index)
        index.beginQuarantine()
        index.remove(index.children(of: index.children(of: root)[0])[1])
        return (index, temp)
    }

    static func bytes(of index: FileIndex, extra: [UInt8] = [1, 2, 3]) throws -> [UInt8] {
        let temp = try TemporaryDirectory()
        let file = temp.path.appending("snapshot")
        var writer = try AtomicFileWriter(replacing: file)
        try IndexSnapshot.write(index, extra: extra, written: Timestamp(nanosecondsSinceEpoch: 42), to: &writer)
        try writer.commit()
        return try readWholeFile(file)
    }

    /// Every entry as (path, metadata).
    static func contents(_ index: FileIndex) -> [String: EntryMetadata] {
        var result: [String: EntryMetadata] = [:]
        index.forEachEntry { result[index.path(of: $0).string] = index.metadata(of: $0) }
        return result
    }

    static func ids(of index: FileIndex) -> [EntryID] {
        var ids: [EntryID] = []
        index.forEachEntry { ids.append($0) }
        return ids
    }

    @Test func roundTripKeepsEveryEntry() throws {
        let (index, _) = try Self.sampleIndex()
        // Every entry's owner, group and mode kept (`contents` compares them).
        let owners = Set(Self.contents(index).values.compactMap { $0.access.map { [$0.owner, $0.group] } })
        let modes = Set(Self.contents(index).values.compactMap { $0.access?.mode })
        #expect(owners.count >= 4 && modes.isSuperset(of: [0o600, 0o640, 0o4755, 0o750]), "\(owners) \(modes)")
        let loaded = try IndexSnapshot.load(try Self.bytes(of: index))
        #expect(loaded.extra == [1, 2, 3])
        #expect(loaded.written == Timestamp(nanosecondsSinceEpoch: 42))
        #expect(Self.contents(loaded.index) == Self.contents(index))
        loaded.index._checkInvariants()
        // Lookups and queries work, and the index keeps changing correctly.
        let predicate = try MetadataPredicate("kMDItemFSName LIKE[cd] 'cafe-1*.txt'")
        #expect(loaded.index.count(matching: predicate) == index.count(matching: predicate))
        let root = try #require(loaded.index.roots.first { loaded.index.path(of: $0).lastComponent == "a" })
        let folder = try #require(loaded.index.children(of: root).first { loaded.index.kind(of: $0) == .folder })
        loaded.index.insert(name: Array("new".utf8), in: folder, metadata: EntryMetadata(kind: .file))
        loaded.index.remove(folder)
        loaded.index._checkInvariants()
    }

    @Test func emptyIndexRoundTrips() throws {
        let loaded = try IndexSnapshot.load(try Self.bytes(of: FileIndex(), extra: []))
        #expect(loaded.index.count == 0)
        loaded.index._checkInvariants()
    }

    @Test func truncatedSnapshotsAreRefused() throws {
        let (index, _) = try Self.sampleIndex()
        let bytes = try Self.bytes(of: index)
        for length in [0, 7, 47, 48, 100, bytes.count / 2, bytes.count - 1] {
            #expect(throws: IndexSnapshot.Refusal.self) { try IndexSnapshot.load(Array(bytes.prefix(length))) }
        }
        #expect(throws: IndexSnapshot.Refusal.self) { try IndexSnapshot.load(bytes + [0]) }
    }

    @Test func corruptedSnapshotsAreRefused() throws {
        let (index, _) = try Self.sampleIndex()
        let bytes = try Self.bytes(of: index)
        var random = SeededGenerator(seed: 3)
        for _ in 0..<50 {
            var damaged = bytes
            let at = Int.random(in: 48..<damaged.count, using: &random)
            damaged[at] ^= UInt8.random(in: 1...255, using: &random)
            #expect(throws: IndexSnapshot.Refusal.self) { try IndexSnapshot.load(damaged) }
        }
        var foreign = bytes
        foreign[8] = 9  // another format version
        let refusal = #expect(throws: IndexSnapshot.Refusal.self) { try IndexSnapshot.load(foreign) }
        #expect(refusal?.reason.contains("format 9") == true)
    }

    /// Bytes with a valid checksum but an unsound tree (a bug, or a file
    /// written by hand) are refused: an entry its own parent, a parent
    /// that is a file or a free slot, a name outside the arena, a parent
    /// out of range.
    @Test func anUnsoundTreeIsRefused() throws {
        for damage in 0..<6 {
            let (copy, _) = try Self.sampleIndex()
            let root = try #require(copy.roots.first { copy.path(of: $0).lastComponent == "a" })
            let folder = try #require(copy.children(of: root).first { copy.kind(of: $0) == .folder })
            let victim = try #require(copy.children(of: folder).first).rawValue
            let file = try #require(Self.ids(of: copy).first { copy.kind(of: $0) == .file }).rawValue
            switch damage {
            case 0: copy.parentColumn[victim] = victim
            case 1: copy.parentColumn[victim] = file
            case 2:
                // Its parent freed, the link left behind.
                let free = copy.freeHead
                copy.parentColumn[victim] = try #require(free == FileIndex.none ? nil : free)
            case 3: copy.nameOffsetColumn[victim] = UInt32.max - 10
            case 4: copy.accessColumn[file] = UInt32(copy.accessClasses.count + 1)
            default: copy.parentColumn[victim] = 5_000_000
            }
            let refusal = #expect(throws: IndexSnapshot.Refusal.self, "damage \(damage)") {
                try IndexSnapshot.load(try Self.bytes(of: copy))
            }
            #expect(refusal?.reason.contains("inconsistent index") == true, "\(refusal?.reason ?? "")")
            if damage == 4 {
                #expect(refusal?.reason.contains("unknown access class") == true, "\(refusal?.reason ?? "")")
            }
        }
    }

    /// Crafted files whose every link is in range, refused all the same:
    /// a free slot named in the root table (and marked a root), a free name
    /// span crossing a chunk of the arena or lying over a live name, a
    /// cycle of three folders, and a folder whose parents lead into a
    /// cycle without being on it.
    @Test func craftedRootsSpansAndCyclesAreRefused() throws {
        for damage in 0..<5 {
            let index = FileIndex()
            let root = index.addRoot(path: "/t", metadata: EntryMetadata(kind: .folder))
            var folders: [EntryID] = []
            var parent = root
            for i in 0..<4 {
                parent = index.insert(name: Array("d\(i)".utf8), in: parent, metadata: EntryMetadata(kind: .folder))
                folders.append(parent)
            }
            let file = index.insert(name: Array("f.txt".utf8), in: folders[1], metadata: EntryMetadata(kind: .file))
            let gone = index.insert(name: Array("gone".utf8), in: root, metadata: EntryMetadata(kind: .file))
            index.remove(gone)
            #expect(throws: Never.self) { try IndexSnapshot.load(try Self.bytes(of: index)) }
            switch damage {
            case 0:
                var bits = EntryBits(rawValue: index.bitsColumn[gone.rawValue])
                bits.isRoot = true
                index.bitsColumn[gone.rawValue] = bits.rawValue
                index.rootPaths[gone.rawValue] = "/gone"
            case 1:
                // The arena must reach past its first chunk for the span to be inside it.
                for i in 0..<(NameArena.chunkSize / 200 + 1) {
                    _ = index.insert(
                        name: Array((String(i) + String(repeating: "n", count: 200)).utf8), in: folders[3],
                        metadata: EntryMetadata(kind: .file))
                }
                index.names.release(offset: UInt32(NameArena.chunkSize - 2), length: 4)
            case 2: index.names.release(offset: index.nameOffsetColumn[file.rawValue], length: 3)
            case 3: index.parentColumn[folders[0].rawValue] = folders[2].rawValue  // d0 → d2 → d1 → d0
            default: index.parentColumn[folders[1].rawValue] = folders[3].rawValue  // d1 ↔ d3 cycle; d2 leads in
            }
            let refusal = #expect(throws: IndexSnapshot.Refusal.self, "damage \(damage)") {
                try IndexSnapshot.load(try Self.bytes(of: index))
            }
            #expect(
                refusal?.reason.contains("inconsistent index") == true || refusal?.reason.contains("free span") == true,
                "\(refusal?.reason ?? "")")
        }
    }

    /// The children lists and hash chains only repeat what the parents
    /// and names say: a snapshot's are made again, not read, so damage
    /// to them (a bug, or a file written by hand) costs nothing: every
    /// entry comes back, every lookup finds it, and the index changes
    /// correctly after.
    @Test func childrenListsAndHashChainsAreMadeAgain() throws {
        for damage in 0..<8 {
            let (copy, _) = try Self.sampleIndex()
            let expected = Self.contents(copy)
            let root = copy.roots[0]
            let victim = copy.children(of: root)[0].rawValue
            switch damage {
            case 0: copy.nextSiblingColumn[victim] = victim  // a sibling cycle
            case 1: copy.hashNextColumn[victim] = victim  // a hash chain cycle
            case 2: copy.unlinkFromHash(victim)  // missing from the hash table
            case 3:
                // Every bucket's chain moved to the next bucket.
                let first = copy.buckets[0]
                for bucket in 0..<copy.bucketMask { copy.buckets[bucket] = copy.buckets[bucket + 1] }
                copy.buckets[copy.bucketMask] = first
            case 4: copy.hashNextColumn[victim] = 5_000_000  // out of range
            case 5: copy.firstChildColumn[root.rawValue] = FileIndex.none  // children lost
            case 6: copy.previousSiblingColumn[victim] = 5_000_000
            default:
                // Every list and chain empty.
                for id in 0..<UInt32(copy.slotCount) where copy.contains(EntryID(id)) {
                    copy.firstChildColumn[id] = FileIndex.none
                    copy.hashNextColumn[id] = FileIndex.none
                }
                copy.buckets.update(repeating: FileIndex.none, count: copy.bucketMask + 1)
            }
            let loaded = try IndexSnapshot.load(try Self.bytes(of: copy)).index
            loaded._checkInvariants()
            let same = Self.contents(loaded) == expected
            #expect(same, "damage \(damage)")
            for id in Self.ids(of: loaded) {
                guard let parent = loaded.parent(of: id) else { continue }
                #expect(loaded.child(named: loaded.nameBytes(id.rawValue), in: parent) == id, "damage \(damage)")
            }
            let folder = try #require(
                Self.ids(of: loaded).first { loaded.kind(of: $0) == .folder && !loaded.isRoot($0) })
            loaded.insert(name: Array("new".utf8), in: folder, metadata: EntryMetadata(kind: .file))
            loaded.remove(folder)
            loaded._checkInvariants()
        }
    }

    /// Trigram lists with a valid checksum but unsound contents (a code
    /// past the extension table, a run that does not end its last varint,
    /// extras out of order) are refused: a lookup would read past them.
    @Test func unsoundNameTrigramsAreRefused() throws {
        for damage in 0..<3 {
            let (copy, _) = try Self.sampleIndex()
            let grams = try #require(copy.nameGrams)
            let bucket = try #require((0..<grams.bucketCount).first { grams.lists[$0].count > 2 })
            switch damage {
            case 0: grams.extensionCodes[3] = UInt16(grams.extensionCounts.count)
            case 1: grams.lists[bucket].run.append(0x81)
            default: grams.lists[bucket].extras = [grams.lists[bucket].last - 1, 0]
            }
            let refusal = #expect(throws: IndexSnapshot.Refusal.self, "damage \(damage)") {
                try IndexSnapshot.load(try Self.bytes(of: copy))
            }
            #expect(refusal?.reason.contains("name trigrams") == true, "\(refusal?.reason ?? "")")
        }
    }

    /// Two folders made each other's parent, with children lists and hash
    /// chains that agree with that: every link is in range and every list
    /// sound, yet neither reaches a root. Refused by the reachability check.
    @Test func aCycleOfParentsIsRefused() throws {
        let index = FileIndex()
        let root = index.addRoot(path: "/t", metadata: EntryMetadata(kind: .folder))
        let a = index.insert(name: Array("a".utf8), in: root, metadata: EntryMetadata(kind: .folder))
        let b = index.insert(name: Array("b".utf8), in: a, metadata: EntryMetadata(kind: .folder))
        _ = index.insert(name: Array("f.txt".utf8), in: b, metadata: EntryMetadata(kind: .file))
        #expect(throws: Never.self) { try IndexSnapshot.load(try Self.bytes(of: index)) }
        let (A, B) = (a.rawValue, b.rawValue)
        index.unlinkFromHash(A)
        index.firstChildColumn[root.rawValue] = FileIndex.none
        index.parentColumn[A] = B
        index.previousSiblingColumn[A] = FileIndex.none
        index.nextSiblingColumn[A] = FileIndex.none
        // b's children: a first, then what b held.
        index.nextSiblingColumn[A] = index.firstChildColumn[B]
        index.previousSiblingColumn[index.firstChildColumn[B]] = A
        index.firstChildColumn[B] = A
        index.linkIntoHash(A)
        let refusal = #expect(throws: IndexSnapshot.Refusal.self) { try IndexSnapshot.load(try Self.bytes(of: index)) }
        #expect(refusal?.reason.contains("reach a root") == true, "\(String(describing: refusal))")
    }

    /// Random bytes of every size, and random damage to a valid header:
    /// refused, never a crash.
    @Test(arguments: 1...3 as ClosedRange<UInt64>)
    func arbitraryBytesAreRefused(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let length = Int.random(in: 0..<400, using: &random)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            if length >= 8 && Bool.random(using: &random) { bytes.replaceSubrange(0..<8, with: IndexSnapshot.magic) }
            #expect(throws: IndexSnapshot.Refusal.self) { try IndexSnapshot.load(bytes) }
        }
    }
}
