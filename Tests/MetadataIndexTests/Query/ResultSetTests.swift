import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The query's bookkeeping, without a filesystem: what a client is told for
/// each sequence of engine changes.
struct ResultSetTests {
    /// An engine snapshot of a file.
    static func snapshot(_ entry: UInt64, _ path: String, size: UInt64 = 1, inode: UInt64? = nil) -> EntrySnapshot {
        EntrySnapshot(
            entry: entry, pathBytes: Array(path.utf8), kind: .file,
            metadata: EntryMetadata(
                kind: .file, size: size, modificationTime: Timestamp(nanosecondsSinceEpoch: Int64(size)),
                inode: inode ?? UInt64(entry)),
            hasUnresolvedConflicts: false)
    }

    static func folder(_ entry: UInt64, _ path: String) -> EntrySnapshot {
        EntrySnapshot(
            entry: entry, pathBytes: Array(path.utf8), kind: .folder,
            metadata: EntryMetadata(
                kind: .folder, size: 4096, modificationTime: Timestamp(nanosecondsSinceEpoch: 1),
                inode: UInt64(entry)),
            hasUnresolvedConflicts: false)
    }

    func makeSet(_ initial: [EntrySnapshot], sorted: Bool = false) -> ResultSet {
        var set = ResultSet(
            factory: ItemFactory(container: nil),
            descriptors: sorted ? [MetadataSortDescriptor(key: "kMDItemFSName")] : [])
        set.install(initial)
        return set
    }

    func paths(_ items: [MetadataItem]) -> [String] { items.map { String(decoding: $0.pathBytes, as: UTF8.self) } }

    @Test func atomicSaveIsAChangeOfTheItemThatWasThere() throws {
        var set = makeSet([Self.snapshot(1, "/s/notes.txt")])
        let before = set.visible[0]
        // notes.txt.tmp written (not a result of this query), renamed over:
        // the engine removes entry 1 and reports entry 2 at the path.
        set.apply(added: [Self.snapshot(2, "/s/notes.txt", size: 9)], changed: [], removed: [1])
        let updates = set.takeUpdates(limit: 50_000)
        try #require(updates.count == 1)
        #expect(updates[0].removed.isEmpty && updates[0].added.isEmpty)
        #expect(updates[0].changed.map(\.id) == [before.id])
        #expect(updates[0].changed.first?.metadata.size == 9)
        #expect(updates[0].previousPathBytes.isEmpty)
        #expect(set.visible.map(\.id) == [before.id])
        // The identity follows the new entry: a later change of entry 2 is
        // a change of the same item.
        set.apply(added: [], changed: [Self.snapshot(2, "/s/notes.txt", size: 10)], removed: [])
        #expect(set.takeUpdates(limit: 50_000).first?.changed.map(\.id) == [before.id])
        #expect(set.position(of: before.id) == 0)
    }

    @Test func atomicSaveOfATemporaryTheClientKnowsRemovesTheTemporary() throws {
        var set = makeSet([Self.snapshot(1, "/s/doc.md"), Self.snapshot(2, "/s/doc.md.tmp")])
        let (doc, temporary) = (set.visible[0], set.visible[1])
        set.apply(added: [], changed: [Self.snapshot(2, "/s/doc.md", size: 5)], removed: [1])
        let update = try #require(set.takeUpdates(limit: 50_000).first)
        #expect(update.changed.map(\.id) == [doc.id])
        #expect(update.changed.first?.metadata.size == 5)
        #expect(update.removed.map(\.id) == [temporary.id])
        #expect(paths(update.removed) == ["/s/doc.md.tmp"], "removed where the client last saw it")
        #expect(update.added.isEmpty)
        #expect(paths(set.visible) == ["/s/doc.md"])
    }

    @Test func deleteAndRecreateWithinAnIntervalIsAChange() throws {
        var set = makeSet([Self.snapshot(1, "/s/a.txt")])
        let id = set.visible[0].id
        set.apply(added: [], changed: [], removed: [1])
        set.apply(added: [Self.snapshot(7, "/s/a.txt", size: 3)], changed: [], removed: [])
        let update = try #require(set.takeUpdates(limit: 50_000).first)
        #expect(update.changed.map(\.id) == [id])
        #expect(update.added.isEmpty && update.removed.isEmpty)
    }

    @Test func createdAndDeletedWithinAnIntervalIsNothing() throws {
        var set = makeSet([])
        set.apply(added: [Self.snapshot(1, "/s/flash")], changed: [], removed: [])
        set.apply(added: [], changed: [], removed: [1])
        #expect(set.takeUpdates(limit: 50_000).isEmpty)
    }

    @Test func renameCarriesThePathLastSeen() throws {
        var set = makeSet([Self.snapshot(1, "/s/a.txt")])
        let id = set.visible[0].id
        set.apply(added: [], changed: [Self.snapshot(1, "/s/b.txt")], removed: [])
        set.apply(added: [], changed: [Self.snapshot(1, "/s/c.txt")], removed: [])
        let update = try #require(set.takeUpdates(limit: 50_000).first)
        #expect(update.changed.map(\.id) == [id])
        #expect(update.changed.first.flatMap { update.previousPath(of: $0) } == "/s/a.txt")
        // Renamed, then removed before delivery: removed at the path the
        // client last saw.
        set.apply(added: [], changed: [Self.snapshot(1, "/s/d.txt")], removed: [])
        set.apply(added: [], changed: [], removed: [1])
        #expect(paths(set.takeUpdates(limit: 50_000)[0].removed) == ["/s/c.txt"])
    }

    @Test func folderReplacedByAFolderKeepsItsIdentity() throws {
        var set = makeSet([Self.folder(1, "/s/site"), Self.folder(2, "/s/site.new"), Self.snapshot(3, "/s/site.new/i")])
        let (site, staging, index) = (set.visible[0].id, set.visible[1].id, set.visible[2].id)
        // rename(site.new, site) over the empty old folder.
        set.apply(
            added: [], changed: [Self.folder(2, "/s/site"), Self.snapshot(3, "/s/site/i")], removed: [1])
        let update = try #require(set.takeUpdates(limit: 50_000).first)
        #expect(Set(update.changed.map(\.id)) == [site, index])
        #expect(update.removed.map(\.id) == [staging])
        #expect(update.changed.first { $0.id == index }.flatMap { update.previousPath(of: $0) } == "/s/site.new/i")
        #expect(update.added.isEmpty)
    }

    @Test func updatesArePathOrderedParentsFirstAndRemovalsChildrenFirst() throws {
        var set = makeSet([])
        set.apply(
            added: [
                Self.snapshot(4, "/s/a/b/c.txt"), Self.folder(2, "/s/a"), Self.snapshot(5, "/s/z"),
                Self.folder(3, "/s/a/b"), Self.snapshot(6, "/s/a.txt"),
            ], changed: [], removed: [])
        let added = set.takeUpdates(limit: 50_000)[0].added
        #expect(paths(added) == ["/s/a", "/s/a.txt", "/s/a/b", "/s/a/b/c.txt", "/s/z"])
        set.apply(added: [], changed: [], removed: [2, 3, 4, 5, 6])
        let removed = set.takeUpdates(limit: 50_000)[0].removed
        #expect(paths(removed) == ["/s/z", "/s/a/b/c.txt", "/s/a/b", "/s/a.txt", "/s/a"])
    }

    @Test func largeUpdatesAreSplitInOrder() throws {
        var set = makeSet((0..<5).map { Self.snapshot(UInt64($0), "/s/old\($0)") })
        set.apply(
            added: (10..<17).map { Self.snapshot(UInt64($0), "/s/new\($0)") }, changed: [],
            removed: [0, 1, 2, 3, 4])
        let updates = set.takeUpdates(limit: 4)
        #expect(updates.map { $0.added.count + $0.changed.count + $0.removed.count } == [4, 4, 4])
        #expect(updates[0].removed.count == 4 && updates[1].removed.count == 1)
        #expect(updates.flatMap(\.added).count == 7)
    }

    @Test func sortedResultsTakeChangesAtTheirPlaces() throws {
        var set = makeSet([Self.snapshot(1, "/s/b"), Self.snapshot(2, "/s/d")], sorted: true)
        set.apply(
            added: [Self.snapshot(3, "/s/c"), Self.snapshot(4, "/s/a")], changed: [Self.snapshot(2, "/s/e")],
            removed: [])
        _ = set.takeUpdates(limit: 50_000)
        #expect(paths(set.visible) == ["/s/a", "/s/b", "/s/c", "/s/e"])
        #expect(set.position(of: set.visible[2].id) == 2)
    }

    @Test func resynchronizingKeepsIdentitiesOfTheSameFiles() throws {
        var set = makeSet([Self.snapshot(1, "/s/a", inode: 100), Self.snapshot(2, "/s/b", inode: 200)])
        let (a, b) = (set.visible[0].id, set.visible[1].id)
        // The engine dropped messages: entry 1 was renamed, entry 2 deleted
        // and its id reused for an unrelated file.
        set.resynchronize([Self.snapshot(1, "/s/a2", inode: 100), Self.snapshot(2, "/s/other", inode: 300)])
        let update = try #require(set.takeUpdates(limit: 50_000).first)
        #expect(update.changed.map(\.id) == [a])
        #expect(update.changed.first.flatMap { update.previousPath(of: $0) } == "/s/a")
        #expect(update.removed.map(\.id) == [b])
        #expect(paths(update.added) == ["/s/other"])
        #expect(update.added.first?.id != b)
    }

    /// Random engine messages: whatever they are, every update keeps the
    /// promises a sync client relies on, and replaying them gives the
    /// current results.
    @Test(arguments: 1...20 as ClosedRange<UInt64>)
    func randomChangesReplayToTheCurrentResults(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var set = makeSet([])
        let initial = set.visible
        var updates: [MetadataQuery.Update] = []
        // The engine's view: entry -> path, paths unique.
        var entries: [UInt64: String] = [:]
        var nextEntry: UInt64 = 1
        let names = (0..<12).map { "/s/f\($0)" }
        for round in 0..<200 {
            var added: [EntrySnapshot] = []
            var changed: [EntrySnapshot] = []
            var removed: [UInt64] = []
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let free = names.filter { !entries.values.contains($0) }
                switch Int.random(in: 0..<4, using: &random) {
                case 0 where !free.isEmpty:
                    let entry = nextEntry
                    nextEntry += 1
                    entries[entry] = free.randomElement(using: &random)!
                    added.append(Self.snapshot(entry, entries[entry]!, size: UInt64(round)))
                case 1 where !entries.isEmpty:
                    let entry = entries.keys.randomElement(using: &random)!
                    entries[entry] = nil
                    removed.append(entry)
                    added.removeAll { $0.entry == entry }
                    changed.removeAll { $0.entry == entry }
                case 2 where !entries.isEmpty && !free.isEmpty:
                    let entry = entries.keys.randomElement(using: &random)!
                    entries[entry] = free.randomElement(using: &random)!
                    changed.removeAll { $0.entry == entry }
                    if let at = added.firstIndex(where: { $0.entry == entry }) {
                        added[at] = Self.snapshot(entry, entries[entry]!, size: UInt64(round))
                    } else {
                        changed.append(Self.snapshot(entry, entries[entry]!, size: UInt64(round)))
                    }
                case 3 where !entries.isEmpty:
                    // A rename over another entry: the occupant goes.
                    let entry = entries.keys.randomElement(using: &random)!
                    guard let occupant = entries.keys.filter({ $0 != entry }).randomElement(using: &random) else {
                        break
                    }
                    entries[entry] = entries[occupant]
                    entries[occupant] = nil
                    removed.append(occupant)
                    added.removeAll { $0.entry == occupant }
                    changed.removeAll { $0.entry == occupant || $0.entry == entry }
                    if let at = added.firstIndex(where: { $0.entry == entry }) {
                        added[at] = Self.snapshot(entry, entries[entry]!, size: UInt64(round))
                    } else {
                        changed.append(Self.snapshot(entry, entries[entry]!, size: UInt64(round)))
                    }
                default:
                    break
                }
            }
            set.apply(added: added, changed: changed, removed: removed)
            if Int.random(in: 0..<3, using: &random) == 0 {
                updates += set.takeUpdates(limit: 50_000)
            }
        }
        updates += set.takeUpdates(limit: 50_000)
        let (problems, state) = replay(updates, on: initial)
        #expect(problems.isEmpty, "\(problems.prefix(3))")
        #expect(Set(state.values.map(\.pathBytes)) == Set(entries.values.map { Array($0.utf8) }))
        #expect(Set(state.keys) == Set(set.visible.map(\.id)))
    }

    /// A rename nothing paired (a rescan, a restart) is recognised by the
    /// file's inode and birth time; a new file that reuses a freed inode is
    /// not mistaken for it.
    @Test func renamesAreRecognisedByInodeAndBirthTime() throws {
        func file(_ entry: UInt64, _ path: String, inode: UInt64, born: Int64) -> EntrySnapshot {
            EntrySnapshot(
                entry: entry, pathBytes: Array(path.utf8), kind: .file,
                metadata: EntryMetadata(
                    kind: .file, size: 3, modificationTime: Timestamp(nanosecondsSinceEpoch: 5),
                    birthTime: Timestamp(nanosecondsSinceEpoch: born), inode: inode),
                hasUnresolvedConflicts: false)
        }
        var set = makeSet([file(1, "/s/a", inode: 77, born: 100), file(2, "/s/b", inode: 88, born: 200)])
        let (a, b) = (set.visible[0].id, set.visible[1].id)
        set.apply(
            added: [file(3, "/s/moved/a", inode: 77, born: 100), file(4, "/s/c", inode: 88, born: 999)], changed: [],
            removed: [1, 2])
        let update = try #require(set.takeUpdates(limit: 50_000).first)
        #expect(update.changed.map(\.id) == [a])
        #expect(update.changed.first.flatMap { update.previousPath(of: $0) } == "/s/a")
        #expect(update.removed.map(\.id) == [b], "a reused inode is another file")
        #expect(paths(update.added) == ["/s/c"])
        // The identity follows the moved file's entry.
        set.apply(added: [], changed: [], removed: [3])
        #expect(set.takeUpdates(limit: 50_000).first?.removed.map(\.id) == [a])
    }

    /// A slow reader's queued updates merged (`EventBuffer.compact`) say
    /// what their sequence said, and never make one item stand for another.
    @Test func compactedUpdatesSayWhatTheirSequenceSaid() throws {
        var set = makeSet([Self.snapshot(1, "/s/a"), Self.snapshot(2, "/s/b")])
        let initial = set.visible
        var events: [MetadataQuery.Event] = []
        func deliver() { events += set.takeUpdates(limit: 50_000).map { .didUpdate($0) } }
        set.apply(added: [Self.snapshot(3, "/s/c")], changed: [Self.snapshot(1, "/s/a2")], removed: [])
        deliver()
        set.apply(added: [], changed: [Self.snapshot(1, "/s/a3")], removed: [2, 3])
        deliver()
        events.append(.gatheringProgress(gathered: 1))
        events.append(.gatheringProgress(gathered: 2))
        // b was delivered as removed: a new file at its path is a new item.
        set.apply(added: [Self.snapshot(4, "/s/b", size: 8)], changed: [], removed: [])
        deliver()
        let compacted = EventBuffer.compact(events)
        let updates = compacted.compactMap { if case .didUpdate(let u) = $0 { u } else { nil } }
        #expect(updates.count == 2, "one merged run, then the addition the merge would have turned into a change")
        #expect(compacted.filter { $0 == .gatheringProgress(gathered: 2) }.count == 1)
        #expect(!compacted.contains(.gatheringProgress(gathered: 1)))
        let (problems, state) = replay(updates, on: initial)
        #expect(problems.isEmpty, "\(problems)")
        #expect(Set(state.keys) == Set(set.visible.map(\.id)))
        #expect(
            updates.first?.changed.first { $0.id == initial[0].id }.flatMap { updates[0].previousPath(of: $0) }
                == "/s/a")
    }
}
