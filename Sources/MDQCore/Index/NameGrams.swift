import MDQSystem

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
/// **Extensions, exact.** Beside the lists, each covered entry has the
/// code of its folded name's extension (the ASCII bytes after its last
/// dot, 1 to 16 of them), interned in a small table. Unlike the lists this
/// is kept exact: a freed or renamed entry's code is replaced at once. So
/// `name LIKE[cd] '*.png'` is decided for the covered entries by their
/// code alone, with no name read (`NameGramPlan`). An extension whose dot
/// does not start a character (a prepended mark before it) has the code
/// `unsureExtension`: such entries are tested as usual.
///
/// **Memory.** Each list is a sorted run of ids as LEB128 varint deltas
/// (the common trigrams' ids lie close together: about 1.3 bytes per
/// posting on a generated home), plus a short sorted array of ids that came
/// out of order (a reused slot, a renamed older entry), merged into the run
/// when it grows past an eighth of it. About 13 postings per 15-byte name.
/// Extension codes take 2 bytes per entry.
package final class NameGrams {
    /// An extension of up to 16 ASCII bytes, packed (no name holds a NUL,
    /// so the zero padding tells lengths apart).
    struct ExtensionKey: Hashable {
        var low: UInt64 = 0
        var high: UInt64 = 0
    }

    /// The code of a name without an extension the table records (none,
    /// empty, longer than 16 bytes, or not ASCII once folded).
    static let noExtension: UInt16 = 0
    /// The code of an extension whose dot does not start a character:
    /// matched by the usual tests.
    static let unsureExtension: UInt16 = 1
    /// Set in an entry's code when its name is not all ASCII: its folded
    /// extension may differ from its extension folded for case alone.
    static let nonASCIIName: UInt16 = 0x8000

    struct List {
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
    let lists: UnsafeMutablePointer<List>
    let bucketCount: Int
    let bucketShift: UInt32
    /// Ids below this are indexed.
    package internal(set) var covered = 0
    /// Whether the last `extend` reached the end of the slots.
    package internal(set) var isComplete = false
    /// How many times the lists were dropped (`reset()`): what was looked
    /// up before (extension codes, which are numbered again) is stale.
    package private(set) var epoch = 0
    /// Postings stored, and how many of them belong to names since freed
    /// or renamed.
    package internal(set) var postings = 0
    var stale = 0
    private let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])
    /// Each covered id's extension code (with `nonASCIIName`), the live
    /// entries per code, and the table of codes.
    var extensionCodes: [UInt16] = []
    var extensionCounts: [Int] = [0, 0]
    var extensionTable: [ExtensionKey: UInt16] = [:]

    /// An index sized for about `expectedEntries` names.
    package convenience init(expectedEntries: Int) {
        // About four names per bucket: a rare trigram's list stays short
        // even when it shares its bucket.
        var bits: UInt32 = Self.bucketBits.lowerBound
        while bits < Self.bucketBits.upperBound && (1 << bits) * 4 < expectedEntries { bits += 1 }
        self.init(bucketBits: bits)
    }

    /// The powers of two a table's bucket count may be.
    static let bucketBits: ClosedRange<UInt32> = 12...22

    init(bucketBits bits: UInt32) {
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
        setExtension(Self.noExtension, of: id)
    }

    /// Whether the lists should be dropped and built again (`reset()`).
    package var needsRebuild: Bool { stale > 1 << 16 && stale > postings / 2 }

    /// Drops every list; `extend(by:)` builds them again.
    package func reset() {
        for i in 0..<bucketCount { lists[i] = List() }
        covered = 0
        epoch += 1
        isComplete = false
        postings = 0
        stale = 0
        extensionCodes = []
        extensionCounts = [0, 0]
        extensionTable = [:]
    }

    /// Indexes the names of the next `slots` ids of `index`; returns
    /// whether the index is complete.
    @discardableResult
    package func extend(by slots: Int, of index: FileIndex) -> Bool {
        let end = min(index.slotCount, covered + slots)
        while covered < end {
            let id = UInt32(covered)
            let b = EntryBits(rawValue: index.bitsColumn[id])
            extensionCodes.append(Self.noExtension)
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
            setExtension(extensionCode(ofASCII: name), of: id)
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
            let (folded, boundaries) = folder.folded
            setExtension(extensionCode(ofFolded: folded, boundaries: boundaries) | Self.nonASCIIName, of: id)
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

    // MARK: Extensions

    /// Records `code` as covered entry `id`'s, keeping the counts.
    private func setExtension(_ code: UInt16, of id: UInt32) {
        let i = Int(id)
        let old = extensionCodes[i] & ~Self.nonASCIIName
        if old != Self.noExtension { extensionCounts[Int(old)] -= 1 }
        extensionCodes[i] = code
        let new = code & ~Self.nonASCIIName
        if new != Self.noExtension { extensionCounts[Int(new)] += 1 }
    }

    /// The code of an ASCII name's extension, lowercased.
    private func extensionCode(ofASCII name: UnsafeRawBufferPointer) -> UInt16 {
        var dot = name.count - 1
        while dot >= 0 && name[dot] != 0x2E {
            if name.count - dot > 17 { return Self.noExtension }
            dot -= 1
        }
        guard dot >= 0 else { return Self.noExtension }
        return intern(UnsafeRawBufferPointer(rebasing: name[(dot + 1)...]), lowercasing: true)
    }

    /// The code of a folded name's extension; `unsureExtension` when its
    /// dot does not start a character (a suffix test would not match
    /// there).
    private func extensionCode(ofFolded name: UnsafeBufferPointer<UInt8>, boundaries: UnsafeBufferPointer<Bool>)
        -> UInt16
    {
        var dot = name.count - 1
        while dot >= 0 && name[dot] != 0x2E {
            if name.count - dot > 17 || name[dot] >= 0x80 { return Self.noExtension }
            dot -= 1
        }
        guard dot >= 0 else { return Self.noExtension }
        let code = intern(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: name[(dot + 1)...])), lowercasing: false)
        guard code != Self.noExtension else { return code }
        return boundaries[dot] ? code : Self.unsureExtension
    }

    /// The code of `bytes` (ASCII after the last dot), made when new;
    /// `unsureExtension` once the table is full.
    private func intern(_ bytes: UnsafeRawBufferPointer, lowercasing: Bool) -> UInt16 {
        guard let key = Self.key(bytes, lowercasing: lowercasing) else { return Self.noExtension }
        if let code = extensionTable[key] { return code }
        guard extensionCounts.count < Int(Self.nonASCIIName) else { return Self.unsureExtension }
        let code = UInt16(extensionCounts.count)
        extensionTable[key] = code
        extensionCounts.append(0)
        return code
    }

    /// `bytes` packed, or nil when empty, longer than 16 bytes, or holding
    /// a byte that is not ASCII or is CR or LF (no literal a suffix test
    /// can be decided by holds one).
    private static func key(_ bytes: UnsafeRawBufferPointer, lowercasing: Bool) -> ExtensionKey? {
        guard !bytes.isEmpty && bytes.count <= 16 else { return nil }
        var key = ExtensionKey()
        for (i, raw) in bytes.enumerated() {
            guard raw < 0x80, raw != 0x0D, raw != 0x0A else { return nil }
            let byte = UInt64(lowercasing ? ASCIIText.fold(raw, true) : raw)
            if i < 8 { key.low |= byte << (8 * UInt64(i)) } else { key.high |= byte << (8 * UInt64(i - 8)) }
        }
        return key
    }

    /// The code of `extension` (folded for case and diacritics, without
    /// its dot): nil when it is not one the table can record, `noExtension`
    /// when no covered name has it.
    func extensionCode(ofFolded literal: [UInt8]) -> UInt16? {
        literal.withUnsafeBytes { bytes -> UInt16? in
            guard let key = Self.key(bytes, lowercasing: false), !bytes.contains(0x2E) else { return nil }
            return extensionTable[key] ?? Self.noExtension
        }
    }

    /// Covered entries whose extension has one of `codes` (an upper bound
    /// while some are freed), and those whose extension is unsure.
    func extensionCount(of codes: [UInt16]) -> Int {
        codes.reduce(extensionCounts[Int(Self.unsureExtension)]) {
            $0 + ($1 == Self.noExtension ? 0 : extensionCounts[Int($1)])
        }
    }

    /// The codes of `codes` as a set for `select(_:asciiOnly:in:exact:unsure:)`
    /// (the unsure code always in it), and how many covered entries it
    /// holds; nil when none.
    func extensionSet(_ codes: [UInt16]) -> (set: ExtensionSet, entries: Int)? {
        var bits = [UInt64](repeating: 0, count: Int(Self.nonASCIIName) / 64)
        var entries = extensionCounts[Int(Self.unsureExtension)]
        for code in Set(codes) where code > Self.unsureExtension {
            bits[Int(code) >> 6] |= 1 << UInt64(code & 63)
            entries += extensionCounts[Int(code)]
        }
        guard entries > 0 else { return nil }
        bits[0] |= 1 << UInt64(Self.unsureExtension)
        let wanted = Set(codes).filter { $0 > Self.unsureExtension }
        let single = wanted.count == 1 && extensionCounts[Int(Self.unsureExtension)] == 0 ? wanted.first : nil
        return (ExtensionSet(bits: bits, single: single), entries)
    }

    /// Writes the ids in `range` (covered) whose extension is in `set`,
    /// ascending: to `exact` those decided by their code (every one, or
    /// only ASCII names when `asciiOnly`), to `unsure` the others (unsure
    /// extensions; non-ASCII names when `asciiOnly`). Each buffer must hold
    /// `range.count` ids. Returns the counts.
    func select(
        _ set: ExtensionSet, asciiOnly: Bool, in range: Range<Int>, exact: UnsafeMutablePointer<UInt32>,
        unsure: UnsafeMutablePointer<UInt32>
    ) -> (exact: Int, unsure: Int) {
        // A chunk wholly past the coverage asks for nothing.
        guard !range.isEmpty else { return (0, 0) }
        precondition(range.upperBound <= extensionCodes.count, "extension codes read past coverage")
        if let code = set.single, !asciiOnly {
            return (Self.select(code, in: range, of: extensionCodes, into: exact), 0)
        }
        let flag: UInt16 = asciiOnly ? Self.nonASCIIName : 0
        return extensionCodes.withUnsafeBufferPointer { column in
            set.bits.withUnsafeBufferPointer { bits in
                // Branch-free: each id is written to both lists and kept
                // where it belongs (a tenth of the entries may match, so
                // a branch per entry would mispredict often).
                var e = 0
                var u = 0
                for i in range {
                    let raw = column[i]
                    let code = raw & ~Self.nonASCIIName
                    let wanted = Int(truncatingIfNeeded: bits[Int(code &>> 6)] &>> UInt64(code & 63)) & 1
                    let doubtful = (code == Self.unsureExtension || raw & flag != 0) ? 1 : 0
                    exact[e] = UInt32(truncatingIfNeeded: i)
                    unsure[u] = UInt32(truncatingIfNeeded: i)
                    e &+= wanted & (1 &- doubtful)
                    u &+= wanted & doubtful
                }
                return (e, u)
            }
        }
    }

    /// `select` for one code, no unsure entry and every name decided (the
    /// usual `*.png`): sixteen codes compared at once, the matching lanes
    /// read from a bit mask.
    private static func select(
        _ code: UInt16, in range: Range<Int>, of codes: [UInt16], into exact: UnsafeMutablePointer<UInt32>
    ) -> Int {
        codes.withUnsafeBufferPointer { column in
            let lanes = SIMD16<UInt16>(
                0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200, 0x400, 0x800, 0x1000, 0x2000, 0x4000,
                0x8000)
            let wanted = SIMD16<UInt16>(repeating: code)
            let low = SIMD16<UInt16>(repeating: ~NameGrams.nonASCIIName)
            var e = 0
            var i = range.lowerBound
            while i + 16 <= range.upperBound {
                let block = UnsafeRawPointer(column.baseAddress! + i).loadUnaligned(as: SIMD16<UInt16>.self)
                var mask = lanes.replacing(with: 0, where: (block & low) .!= wanted).wrappedSum()
                while mask != 0 {
                    exact[e] = UInt32(truncatingIfNeeded: i + mask.trailingZeroBitCount)
                    e += 1
                    mask &= mask &- 1
                }
                i += 16
            }
            while i < range.upperBound {
                if column[i] & ~NameGrams.nonASCIIName == code {
                    exact[e] = UInt32(truncatingIfNeeded: i)
                    e += 1
                }
                i += 1
            }
            return e
        }
    }

    /// Every covered id whose extension has one of `codes`, ascending
    /// (unsure ones included).
    package func entries(withExtensions codes: [UInt16]) -> [UInt32] {
        guard let (set, _) = extensionSet(codes) else { return [] }
        let end = covered
        var unsureIDs: [UInt32] = []
        let exact = [UInt32](unsafeUninitializedCapacity: end) { exact, filled in
            unsureIDs = [UInt32](unsafeUninitializedCapacity: end) { unsure, unsureFilled in
                let (e, u) = select(
                    set, asciiOnly: false, in: 0..<end, exact: exact.baseAddress!, unsure: unsure.baseAddress!)
                filled = e
                unsureFilled = u
            }
        }
        return SortedIDs.union(exact, unsureIDs)
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
    package func candidates(inAll buckets: [Int]) -> [UInt32] {
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
    package var allocatedBytes: Int {
        (0..<bucketCount).reduce(
            bucketCount * MemoryLayout<List>.stride + extensionCodes.capacity * 2 + extensionCounts.capacity * 8
                + extensionTable.capacity * 24
        ) {
            $0 + lists[$1].run.capacity + lists[$1].extras.capacity * 4
        }
    }
}

/// A set of extension codes, as bits (`NameGrams.extensionSet(_:)`).
struct ExtensionSet: Sendable {
    let bits: [UInt64]
    /// The one code wanted, when there is one and no entry is unsure.
    let single: UInt16?
}
