/// A trigram index of the index's names, folded for case and diacritics:
/// for every run of three bytes of a folded name, the ids of the entries
/// whose name holds it. A name search with a literal of three bytes or more
/// reads the lists of the literal's trigrams and tests only the entries on
/// all of them, instead of every name (`IndexScan` takes them as the first
/// selection; the usual tests then decide, so answers are the scan's).
///
/// **Superset, never exact.** A list may hold ids that no longer match:
/// removal is lazy (a freed or renamed entry's postings stay until the
/// lists are rebuilt), distinct trigrams may share a list (lists are
/// buckets of a hash), and a case- or diacritic-sensitive query is looked
/// up by its folded literal. What a list must never lack is an entry whose
/// folded name holds the trigram: every name stored below `covered` is
/// added when it is stored.
///
/// **Coverage.** Ids below `covered` are indexed; the rest are scanned as
/// before. `extend(by:)` indexes the next ids (a builder calls it a slice
/// at a time under the engine's lock, after each crawl and each batch of
/// changes): new slots are added in bulk behind a crawl, not one by one
/// while it runs; a covered slot that is reused or renamed is indexed at
/// once. When stale postings outnumber live ones the lists are dropped and
/// built again the same way.
///
/// **Memory.** Each list is a sorted run of ids as LEB128 varint deltas
/// (the common trigrams' ids lie close together: about 1.3 bytes per
/// posting on a generated home), plus a short sorted array of ids that came
/// out of order (a reused slot, a renamed older entry), merged into the run
/// when it grows past an eighth of it. About 13 postings per 15-byte name.
final class NameGrams {
    private struct List {
        /// Ascending ids as varint deltas (the first: the id itself).
        var run: [UInt8] = []
        /// The run's last id and length.
        var last: UInt32 = 0
        var count: UInt32 = 0
        /// Ids below `last`, sorted, not in the run.
        var extras: [UInt32] = []
    }

    /// One list per bucket (a pointer, not an array: appending to a list
    /// then costs no uniqueness check of the whole table).
    private let lists: UnsafeMutablePointer<List>
    private let bucketCount: Int
    private let bucketShift: UInt32
    /// Ids below this are indexed.
    private(set) var covered = 0
    /// Whether the last `extend` reached the end of the slots.
    private(set) var isComplete = false
    /// Postings stored, and how many of them belong to names since freed
    /// or renamed.
    private(set) var postings = 0
    private(set) var stale = 0
    private let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])

    /// An index sized for about `expectedEntries` names.
    init(expectedEntries: Int) {
        // About four names per bucket: a rare trigram's list stays short
        // even when it shares its bucket.
        var bits: UInt32 = 12
        while bits < 22 && (1 << bits) * 4 < expectedEntries { bits += 1 }
        bucketShift = 32 - bits
        bucketCount = 1 << bits
        lists = .allocate(capacity: bucketCount)
        lists.initialize(repeating: List(), count: bucketCount)
    }

    deinit {
        lists.deinitialize(count: bucketCount).deallocate()
    }

    /// The bucket of a folded trigram.
    @inline(__always)
    private func bucket(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Int {
        Int(((UInt32(a) &<< 16 | UInt32(b) &<< 8 | UInt32(c)) &* 0x9E37_79B1) &>> bucketShift)
    }

    // MARK: Building

    /// Records `name` as entry `id`'s (a new entry or a rename) when `id`
    /// is covered; a new slot beyond is left to `extend`.
    func stored(_ id: UInt32, name: UnsafeRawBufferPointer, isASCII: Bool) {
        if Int(id) < covered {
            add(id, name: name, isASCII: isASCII)
        } else {
            isComplete = false
        }
    }

    /// Notes that entry `id`'s name of `length` bytes was replaced or freed:
    /// its postings are stale.
    func released(_ id: UInt32, length: Int) {
        guard Int(id) < covered else { return }
        stale += max(0, length - 2)
    }

    /// Whether the lists should be dropped and built again (`reset()`).
    var needsRebuild: Bool { stale > 1 << 16 && stale > postings / 2 }

    /// Drops every list; `extend(by:)` builds them again.
    func reset() {
        for i in 0..<bucketCount { lists[i] = List() }
        covered = 0
        isComplete = false
        postings = 0
        stale = 0
    }

    /// Indexes the names of the next `slots` ids of `index`; returns
    /// whether the index is complete.
    @discardableResult
    func extend(by slots: Int, of index: FileIndex) -> Bool {
        let end = min(index.slotCount, covered + slots)
        while covered < end {
            let id = UInt32(covered)
            let b = EntryBits(rawValue: index.bitsColumn[id])
            if b.kindRawValue != 0 {
                add(
                    id, name: index.names.bytes(at: index.nameOffsetColumn[id], length: b.nameLength),
                    isASCII: b.isASCIIName)
            }
            covered += 1
        }
        if covered == index.slotCount { isComplete = true }
        return isComplete
    }

    private func add(_ id: UInt32, name: UnsafeRawBufferPointer, isASCII: Bool) {
        if isASCII {
            guard name.count >= 3 else { return }
            var a = ASCIIText.fold(name[0], true)
            var b = ASCIIText.fold(name[1], true)
            for i in 2..<name.count {
                let c = ASCIIText.fold(name[i], true)
                append(id, to: bucket(a, b, c))
                a = b
                b = c
            }
        } else {
            folder.fold(name)
            let folded = folder.folded.bytes
            guard folded.count >= 3 else { return }
            for i in 2..<folded.count {
                append(id, to: bucket(folded[i - 2], folded[i - 1], folded[i]))
            }
        }
    }

    @inline(__always)
    private func append(_ id: UInt32, to bucket: Int) {
        let list = lists + bucket
        if list.pointee.count == 0 {
            Self.appendVarint(id, to: &list.pointee.run)
        } else if id > list.pointee.last {
            Self.appendVarint(id - list.pointee.last, to: &list.pointee.run)
        } else if id == list.pointee.last {
            return  // a trigram the name holds twice
        } else {
            Self.insertExtra(id, into: &list.pointee)
            return
        }
        list.pointee.last = id
        list.pointee.count += 1
        postings += 1
    }

    private static func insertExtra(_ id: UInt32, into list: inout List) {
        let low = SortedIDs.lowerBound(of: id, in: list.extras)
        if low < list.extras.count && list.extras[low] == id { return }
        list.extras.insert(id, at: low)
        if list.extras.count > 16 && list.extras.count > Int(list.count) / 8 {
            // Merge into the run (duplicates of run ids go).
            let merged = decode(list, below: .max)
            list = List()
            for id in merged {
                appendVarint(list.count == 0 ? id : id - list.last, to: &list.run)
                list.last = id
                list.count += 1
            }
        }
    }

    @inline(__always)
    private static func appendVarint(_ value: UInt32, to bytes: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    // MARK: Looking up

    /// The folded trigrams of `literal` (already folded for case and
    /// diacritics), as buckets.
    func buckets(ofFolded literal: [UInt8]) -> [Int] {
        guard literal.count >= 3 else { return [] }
        return (2..<literal.count).map { bucket(literal[$0 - 2], literal[$0 - 1], literal[$0]) }
    }

    /// How many ids bucket `bucket` holds (an upper bound of its matches).
    func count(of bucket: Int) -> Int {
        Int(lists[bucket].count) + lists[bucket].extras.count
    }

    /// The ids below `covered` in every bucket of `buckets`, ascending: a
    /// superset of the covered entries whose folded name holds all those
    /// trigrams. Reads the shortest lists first and stops intersecting once
    /// few ids are left (the tests that follow decide those).
    func candidates(inAll buckets: [Int]) -> [UInt32] {
        var order = Array(Set(buckets))
        order.sort { count(of: $0) < count(of: $1) }
        guard let first = order.first else { return [] }
        var result = Self.decode(lists[first], below: UInt32(clamping: covered))
        for bucket in order.dropFirst() {
            guard result.count > 64, count(of: bucket) <= 32 * result.count else { break }
            result = SortedIDs.intersection(result, Self.decode(lists[bucket], below: UInt32(clamping: covered)))
        }
        return result
    }

    /// A list's ids below `limit`, ascending, without duplicates.
    private static func decode(_ list: List, below limit: UInt32) -> [UInt32] {
        var out: [UInt32] = []
        out.reserveCapacity(Int(list.count) + list.extras.count)
        var value: UInt32 = 0
        var first = true
        var e = 0
        list.run.withUnsafeBufferPointer { run in
            var i = 0
            while i < run.count {
                var delta: UInt32 = 0
                var shift: UInt32 = 0
                while true {
                    let byte = run[i]
                    i += 1
                    delta |= UInt32(byte & 0x7F) &<< shift
                    if byte < 0x80 { break }
                    shift += 7
                }
                value = first ? delta : value &+ delta
                first = false
                while e < list.extras.count && list.extras[e] < value {
                    if list.extras[e] < limit { out.append(list.extras[e]) }
                    e += 1
                }
                if e < list.extras.count && list.extras[e] == value { e += 1 }
                if value < limit { out.append(value) }
            }
        }
        while e < list.extras.count {
            if list.extras[e] < limit { out.append(list.extras[e]) }
            e += 1
        }
        return out
    }

    /// Bytes the lists hold (runs, extras, list headers), for status and
    /// the memory figures.
    var allocatedBytes: Int {
        (0..<bucketCount).reduce(bucketCount * MemoryLayout<List>.stride) {
            $0 + lists[$1].run.capacity + lists[$1].extras.capacity * 4
        }
    }
}
