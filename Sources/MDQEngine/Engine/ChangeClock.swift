import MDQCore
import MDQSystem

/// A point in an engine's history, as clients hold it: the instance that
/// stamped it and the number of batches that instance's index had applied.
/// On the wire it is an opaque string (`description`).
package struct EngineClock: Hashable, Sendable, CustomStringConvertible {
    package var epoch: UInt64
    package var tick: UInt64

    package init(epoch: UInt64, tick: UInt64) {
        self.epoch = epoch
        self.tick = tick
    }

    /// Reads a clock's string; nil for anything this engine did not write.
    package init?(_ text: String) {
        let parts = text.utf8.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].elementsEqual("c".utf8), parts[1].count == 16, parts[2].count <= 20,
            let epoch = UInt64(Substring(parts[1]), radix: 16), let tick = UInt64(Substring(parts[2]))
        else { return nil }
        self.init(epoch: epoch, tick: tick)
    }

    /// `c:<epoch, 16 hex digits>:<tick>`.
    package var description: String {
        let hex = String(epoch, radix: 16)
        return "c:" + String(repeating: "0", count: 16 - hex.count) + hex + ":" + String(tick)
    }
}

/// The engine's clock and its journal: every applied batch of changes
/// advances `tick`, and the identity of every entry the batch added,
/// changed or removed is journalled with it. A subscriber that comes back
/// with the clock of the last thing it was told is sent only what the
/// journal holds after it (`changes(after:)`).
///
/// The journal is bounded: past `capacity` records the oldest go, and a
/// clock older than what is kept is answered in full (`resolve` is nil).
/// It is saved in the snapshot with the tick, so a restarted daemon
/// continues the history of the one that saved it: its clocks up to the
/// saved tick stay good (`ancestors`); later ones (the saver crashed after
/// giving them out) are not, as the new instance's ticks go another way.
package struct ChangeClock: Sendable {
    /// This instance's number, random.
    package let epoch: UInt64
    /// Batches applied since the index was first made.
    package private(set) var tick: UInt64 = 0
    /// Earlier instances whose history this one continues, oldest first,
    /// with the last tick each one saved.
    private(set) var ancestors: [(epoch: UInt64, through: UInt64)] = []
    /// The last tick at which some folder's permissions changed: what a
    /// user of the system index may see changed below it without the
    /// entries changing, so such a user's clock from before is not resumed.
    private(set) var accessTick: UInt64 = 0
    private(set) var journal: ChangeJournal

    /// How many earlier instances are remembered.
    static let ancestorLimit = 8

    package enum Kind: UInt8, Sendable {
        case added = 1, changed = 2, removed = 3
    }

    init(capacity: Int = ChangeJournal.defaultCapacity) {
        var random = SystemRandomNumberGenerator()
        epoch = random.next()
        journal = ChangeJournal(capacity: capacity)
    }

    /// The clock of the current tick.
    package var now: EngineClock { EngineClock(epoch: epoch, tick: tick) }

    /// Starts the next batch.
    mutating func advance() {
        tick += 1
    }

    mutating func record(_ identity: UInt64, _ kind: Kind) {
        journal.append(tick: tick, identity: identity, kind: kind)
    }

    mutating func noteAccessChange() {
        accessTick = tick
    }

    /// Keeps at most `capacity` records (tests shorten the journal).
    mutating func setCapacity(_ capacity: Int) {
        journal.setCapacity(capacity)
    }

    /// The tick `clock` stands for, when every change after it is in the
    /// journal; nil when it is another instance's that this one does not
    /// continue, past what that instance saved, or older than the journal.
    /// `viewer`: for a user of the system index, also nil when a folder's
    /// permissions changed since.
    package func resolve(_ clock: EngineClock, viewer: Bool = false) -> UInt64? {
        let resolved: UInt64?
        if clock.epoch == epoch {
            resolved = clock.tick <= tick ? clock.tick : nil
        } else if let ancestor = ancestors.last(where: { $0.epoch == clock.epoch }), clock.tick <= ancestor.through {
            resolved = clock.tick
        } else {
            resolved = nil
        }
        guard let resolved, resolved >= journal.floor, !(viewer && accessTick > resolved) else { return nil }
        return resolved
    }

    /// The identities journalled after `tick`, each once, in the order of
    /// their first record; and those whose first record after it is their
    /// addition (made since).
    package func changes(after tick: UInt64) -> (identities: [UInt64], created: Set<UInt64>) {
        var seen: Set<UInt64> = []
        var identities: [UInt64] = []
        var created: Set<UInt64> = []
        journal.forEach(after: tick) { identity, kind in
            guard seen.insert(identity).inserted else { return }
            identities.append(identity)
            if kind == .added { created.insert(identity) }
        }
        return (identities, created)
    }

    // MARK: Snapshots

    /// Appends the clock to a snapshot's owner bytes.
    func encode(to out: inout ByteWriter) {
        out.append(contentsOf: Self.tag)
        out.append(epoch)
        out.append(tick)
        out.append(accessTick)
        let kept = ancestors.suffix(Self.ancestorLimit - 1)
        out.append(UInt32(kept.count))
        for ancestor in kept {
            out.append(ancestor.epoch)
            out.append(ancestor.through)
        }
        journal.encode(to: &out)
    }

    /// The clock a restarted engine continues from a snapshot's: a new
    /// epoch, the saver's tick, its journal, and the saver among the
    /// ancestors. Nil when the bytes hold no clock (a snapshot from before
    /// clocks: the history starts here).
    static func decode(_ reader: inout ByteReader, capacity: Int = ChangeJournal.defaultCapacity)
        throws(IndexSnapshot.Refusal) -> ChangeClock?
    {
        guard !reader.isAtEnd else { return nil }
        for byte in tag where try reader.read() as UInt8 != byte {
            throw IndexSnapshot.Refusal(reason: "clock section")
        }
        var clock = ChangeClock(capacity: capacity)
        let saver: UInt64 = try reader.read()
        clock.tick = try reader.read()
        clock.accessTick = try reader.read()
        let count: UInt32 = try reader.read()
        guard count < UInt32(ancestorLimit) else { throw IndexSnapshot.Refusal(reason: "clock ancestors") }
        for _ in 0..<count {
            let epoch: UInt64 = try reader.read()
            let through: UInt64 = try reader.read()
            guard through <= clock.tick else { throw IndexSnapshot.Refusal(reason: "clock ancestors") }
            clock.ancestors.append((epoch, through))
        }
        clock.ancestors.append((saver, clock.tick))
        clock.journal = try ChangeJournal.decode(&reader, capacity: capacity, through: clock.tick)
        guard clock.accessTick <= clock.tick else { throw IndexSnapshot.Refusal(reason: "clock access tick") }
        return clock
    }

    private static let tag = Array("CLK1".utf8)
}

/// The bounded record of which entries each batch touched: a ring of
/// (tick, identity, kind), 17 bytes a record, ticks never decreasing.
package struct ChangeJournal: Sendable {
    /// 131,072 records: about 2.2 MB when full.
    package static let defaultCapacity = 1 << 17

    private(set) var capacity: Int
    private var ticks: [UInt64] = []
    private var identities: [UInt64] = []
    private var kinds: [UInt8] = []
    /// Where the oldest record is, once the ring is full.
    private var head = 0
    /// The newest tick whose records were dropped: every change after it
    /// is still here.
    private(set) var floor: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    mutating func append(tick: UInt64, identity: UInt64, kind: ChangeClock.Kind) {
        if ticks.count < capacity {
            ticks.append(tick)
            identities.append(identity)
            kinds.append(kind.rawValue)
            return
        }
        floor = ticks[head]
        ticks[head] = tick
        identities[head] = identity
        kinds[head] = kind.rawValue
        head = (head + 1) % capacity
    }

    mutating func setCapacity(_ newCapacity: Int) {
        var kept = ChangeJournal(capacity: newCapacity)
        kept.floor = floor
        forEachRecord(after: 0) { kept.append(tick: $2, identity: $0, kind: $1) }
        self = kept
    }

    /// Each record with a tick after `tick`, oldest first (ticks start at
    /// 1: after 0 is every record).
    ///
    /// - Complexity: O(log n + k) for k such records.
    func forEach(after tick: UInt64, _ body: (UInt64, ChangeClock.Kind) -> Void) {
        forEachRecord(after: tick) { identity, kind, _ in body(identity, kind) }
    }

    private func forEachRecord(after tick: UInt64, _ body: (UInt64, ChangeClock.Kind, UInt64) -> Void) {
        let n = ticks.count
        // Records in age order are ring positions head, head+1, ...: the
        // first one past `tick` is found by bisection.
        var low = 0
        var high = n
        while low < high {
            let middle = (low + high) / 2
            let t = ticks[(head + middle) % n]
            if t > tick { high = middle } else { low = middle + 1 }
        }
        for i in low..<n {
            let at = (head + i) % n
            body(identities[at], ChangeClock.Kind(rawValue: kinds[at]) ?? .changed, ticks[at])
        }
    }

    func encode(to out: inout ByteWriter) {
        out.append(floor)
        out.append(UInt32(ticks.count))
        forEachRecord(after: 0) { identity, kind, tick in
            out.append(tick)
            out.append(identity)
            out.append(kind.rawValue)
        }
    }

    static func decode(_ reader: inout ByteReader, capacity: Int, through last: UInt64)
        throws(IndexSnapshot.Refusal) -> ChangeJournal
    {
        var journal = ChangeJournal(capacity: capacity)
        journal.floor = try reader.read()
        let count = Int(try reader.read() as UInt32)
        guard count <= reader.remaining / 17 else { throw IndexSnapshot.Refusal(reason: "journal") }
        var previous = journal.floor
        for _ in 0..<count {
            let tick: UInt64 = try reader.read()
            let identity: UInt64 = try reader.read()
            let raw: UInt8 = try reader.read()
            guard tick >= previous, tick <= last, let kind = ChangeClock.Kind(rawValue: raw) else {
                throw IndexSnapshot.Refusal(reason: "journal")
            }
            previous = tick
            journal.append(tick: tick, identity: identity, kind: kind)
        }
        return journal
    }
}
