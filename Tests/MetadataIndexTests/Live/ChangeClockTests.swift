import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQEngine
@testable import MDQLive
@testable import MetadataIndex

/// The engine's clock and journal as values: which clocks resume, what a
/// resumption is told, what a snapshot keeps.
@Suite struct ChangeClockTests {
    /// A clock with `batches` batches of the given identities.
    static func clock(_ batches: [[(UInt64, ChangeClock.Kind)]], capacity: Int = 1 << 10) -> ChangeClock {
        var clock = ChangeClock(capacity: capacity)
        for batch in batches {
            clock.advance()
            for (identity, kind) in batch { clock.record(identity, kind) }
        }
        return clock
    }

    @Test func clocksReadBackAndRefuseWhatTheyDidNotWrite() {
        let clock = EngineClock(epoch: 0xDEAD_BEEF, tick: 42)
        #expect(clock.description == "c:00000000deadbeef:42")
        #expect(EngineClock(clock.description) == clock)
        for text in [
            "", "c:deadbeef:42", "c:00000000deadbeef:", "x:00000000deadbeef:1", "c:00000000deadbeefff:1",
            "c:00000000deadbeef:1:2", "c:00000000deadbeeg:1", "c:00000000deadbeef:-1",
        ] {
            #expect(EngineClock(text) == nil, "\(text)")
        }
    }

    /// What changed after a tick, each identity once: created since is
    /// an addition, anything else a change or a removal.
    @Test func aResumptionNamesEachIdentityOnce() {
        let clock = Self.clock([
            [(1, .added), (2, .added)],
            [(1, .changed), (3, .removed)],
            [(2, .removed), (4, .added), (1, .changed)],
        ])
        #expect(clock.tick == 3)
        let (all, created) = clock.changes(after: 0)
        #expect(all == [1, 2, 3, 4] && created == [1, 2, 4])
        let (later, createdLater) = clock.changes(after: 1)
        #expect(later == [1, 3, 2, 4] && createdLater == [4])
        #expect(clock.changes(after: 3).identities.isEmpty)
    }

    /// Its own clocks resume up to now; another instance's, a future one,
    /// or one older than the journal keeps do not.
    @Test func onlyClocksTheJournalReachesResume() {
        var clock = Self.clock(Array(repeating: [(7, .changed)], count: 10), capacity: 4)
        #expect(clock.resolve(EngineClock(epoch: clock.epoch, tick: 10)) == 10)
        #expect(clock.resolve(EngineClock(epoch: clock.epoch, tick: 6)) == 6)
        #expect(clock.resolve(EngineClock(epoch: clock.epoch, tick: 5)) == nil, "its changes were dropped")
        #expect(clock.resolve(EngineClock(epoch: clock.epoch, tick: 11)) == nil, "not given out yet")
        #expect(clock.resolve(EngineClock(epoch: clock.epoch &+ 1, tick: 8)) == nil)
        // A permission change: a user of the system index starts afresh.
        clock.advance()
        clock.noteAccessChange()
        clock.record(9, .changed)
        #expect(clock.resolve(EngineClock(epoch: clock.epoch, tick: 10), viewer: true) == nil)
        #expect(clock.resolve(EngineClock(epoch: clock.epoch, tick: 10)) == 10)
    }

    /// A restart continues the saver's history: its clocks up to what it
    /// saved resume, later ones (handed out before a crash) do not, and
    /// the new instance's ticks go on from the saved one.
    @Test func aSnapshotCarriesTheHistoryOn() throws {
        let saver = Self.clock([[(1, .added)], [(2, .added)], [(1, .removed)]])
        var out = ByteWriter()
        saver.encode(to: &out)
        let restored = try withBytes(of: out.bytes) { raw throws(IndexSnapshot.Refusal) -> ChangeClock? in
            var reader = ByteReader(raw)
            return try ChangeClock.decode(&reader)
        }
        let clock = try #require(restored)
        #expect(clock.epoch != saver.epoch && clock.tick == 3)
        #expect(clock.resolve(EngineClock(epoch: saver.epoch, tick: 1)) == 1)
        #expect(clock.changes(after: 1).identities == [2, 1])
        #expect(clock.resolve(EngineClock(epoch: saver.epoch, tick: 4)) == nil, "past what the saver saved")
        // Damaged bytes are refused, not trusted.
        for cut in [4, 20, out.bytes.count - 3] {
            let refused = withBytes(of: Array(out.bytes.prefix(cut))) { raw -> Bool in
                var reader = ByteReader(raw)
                do { _ = try ChangeClock.decode(&reader) } catch { return true }
                return false
            }
            #expect(refused, "cut at \(cut)")
        }
    }

    /// Changes merged for one update: added then removed is nothing,
    /// added then changed is added, changed then removed is removed; the
    /// lines keep their bound and their order.
    @Test func updatesMergePerEntry() {
        func item(_ id: UInt64, _ path: String) -> EntrySnapshot {
            EntrySnapshot(entry: id, pathBytes: Array(path.utf8), kind: .file, metadata: EntryMetadata(kind: .file))
        }
        var delta = WireDelta()
        delta.merge(added: [item(1, "/s/b"), item(2, "/s/a")], changed: [item(3, "/s/c")], removed: [])
        delta.merge(added: [], changed: [item(1, "/s/b2"), item(4, "/s/d")], removed: [2, 3])
        let lines = delta.lines(limit: 2)
        #expect(lines.count == 2)
        #expect(lines.flatMap(\.removed) == [3])
        #expect(lines.flatMap(\.changed).map(\.entry) == [4])
        #expect(lines.flatMap(\.added).map { String(decoding: $0.pathBytes, as: UTF8.self) } == ["/s/b2"])
        #expect(lines.allSatisfy { $0.added.count + $0.changed.count + $0.removed.count <= 2 })
    }
}
