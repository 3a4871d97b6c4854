package import MDQSystem
package import SystemPackage

/// The snapshot file of an index: what a daemon saves so that a restart
/// answers at once, before re-verifying the disk.
///
/// Layout (little-endian, this machine's):
///
/// | bytes | field |
/// |---|---|
/// | 0-7 | magic `MDQINDEX` |
/// | 8-11 | format version (4; 3 kept access classes for folders only) |
/// | 12-15 | header size (48) |
/// | 16-23 | payload length |
/// | 24-31 | payload checksum (`Checksum64`, xxHash64) |
/// | 32-39 | when it was written, nanoseconds since 1970 |
/// | 40-47 | zero |
///
/// The payload is a sequence of sections, each a 4-byte tag, an 8-byte
/// length and its bytes: `INDX` (counts), `COLS` (the columns, `slotCount`
/// elements each), `BUCK` (hash buckets), `NAME` (the name arena),
/// `FREE` (its free spans), `SIDE` (large sizes and inodes), `ROOT` (root
/// paths), `DEVS` (devices), `ACCS` (entries' access classes), `QUAR`
/// (ids freed but not yet reusable), `GRAM` when the index keeps name
/// trigrams (`NameGrams+Snapshot`: a restart searches with them at once),
/// and `XTRA` (the owner's own bytes: the engine's roots and rules). A file
/// that is truncated, corrupted, of another version or inconsistent is
/// refused with the reason; nothing in it is trusted before the checksum
/// and the structure are checked. The children lists and the hash chains
/// (in `COLS` and `BUCK`) are written but not read back: a load makes
/// them again from the parents and names (`FileIndex.linkProblem`).
package enum IndexSnapshot {
    static let magic = Array("MDQINDEX".utf8)
    static let version: UInt32 = 4
    static let headerSize = 48

    /// Why a snapshot was refused.
    package struct Refusal: Error, CustomStringConvertible {
        package var reason: String
        /// Found once the checksum had matched (the file is as written).
        var afterChecksum = false
        package var description: String { reason }

        package init(reason: String) { self.reason = reason }
    }

    /// A loaded snapshot.
    package struct Loaded {
        package var index: FileIndex
        package var extra: [UInt8]
        package var written: Timestamp
    }

    /// Writes `index` and `extra` through `writer` (the caller commits).
    ///
    /// - Complexity: O(slots + name bytes), sequential writes; no copy of
    ///   the index is made.
    package static func write(
        _ index: FileIndex, extra: [UInt8], written: Timestamp, to writer: inout AtomicFileWriter
    ) throws(Errno) {
        var checksum = Checksum64()
        var header = [UInt8](repeating: 0, count: headerSize)
        try withBytes(of: header) { (bytes) throws(Errno) in try writer.write(bytes) }

        var scratch = ByteWriter()
        func emit(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
            checksum.update(bytes)
            try writer.write(bytes)
        }
        func emitScratch() throws(Errno) {
            try withBytes(of: scratch.bytes) { (bytes) throws(Errno) in try emit(bytes) }
            scratch = ByteWriter()
        }
        func section(_ tag: String, length: Int) throws(Errno) {
            scratch.append(contentsOf: Array(tag.utf8))
            scratch.append(UInt64(length))
            try emitScratch()
        }

        // INDX
        var counts = ByteWriter()
        for value in [
            index.slotCount, index.count, Int(index.freeHead), index.chunkCount, index.bucketMask,
        ] { counts.append(UInt64(value)) }
        try section("INDX", length: counts.bytes.count)
        scratch = counts
        try emitScratch()

        // COLS
        var columnBytes = 0
        index.forEachColumn { columnBytes += $0.elementSize * index.slotCount }
        try section("COLS", length: columnBytes)
        var columns: [FileIndex.ColumnHandle] = []
        index.forEachColumn { columns.append($0) }
        for column in columns {
            var remaining = index.slotCount
            var chunk = 0
            while remaining > 0 {
                let n = min(remaining, 1 << 16)
                try emit(UnsafeRawBufferPointer(start: column.chunk(chunk), count: n * column.elementSize))
                remaining -= n
                chunk += 1
            }
        }

        // BUCK
        try section("BUCK", length: (index.bucketMask + 1) * 4)
        try emit(UnsafeRawBufferPointer(start: index.buckets, count: (index.bucketMask + 1) * 4))

        // NAME, FREE
        try section("NAME", length: index.names.usedBytes)
        try index.names.forEachUsedChunk { (bytes) throws(Errno) in try emit(bytes) }
        var spans = ByteWriter()
        for (length, offsets) in index.names.spans.enumerated() {
            spans.append(UInt32(length))
            spans.append(UInt32(offsets.count))
            for offset in offsets { spans.append(offset) }
        }
        try section("FREE", length: spans.bytes.count)
        scratch = spans
        try emitScratch()

        // SIDE, ROOT, DEVS, QUAR, XTRA
        var side = ByteWriter()
        for table in [index.largeSizes, index.largeInodes] {
            side.append(UInt64(table.count))
            for (id, value) in table.sorted(by: { $0.key < $1.key }) {
                side.append(id)
                side.append(value)
            }
        }
        try section("SIDE", length: side.bytes.count)
        scratch = side
        try emitScratch()
        var roots = ByteWriter()
        roots.append(UInt64(index.rootPaths.count))
        for (id, path) in index.rootPaths.sorted(by: { $0.key < $1.key }) {
            roots.append(id)
            roots.appendBlob(path.bytes)
        }
        try section("ROOT", length: roots.bytes.count)
        scratch = roots
        try emitScratch()
        var devices = ByteWriter()
        devices.append(UInt64(index.devices.count))
        for device in index.devices {
            devices.append(device.major)
            devices.append(device.minor)
        }
        try section("DEVS", length: devices.bytes.count)
        scratch = devices
        try emitScratch()
        var access = ByteWriter()
        access.append(UInt64(index.accessClasses.count))
        for stored in index.accessClasses {
            access.append(UInt32(stored.mode))
            access.append(stored.owner)
            access.append(stored.group)
            // The ACL's entries, 0xFFFFFFFF when it has none.
            access.append(stored.acl.map { UInt32($0.count) } ?? UInt32.max)
            for entry in stored.acl ?? [] {
                access.append(entry.tag)
                access.append(entry.permissions)
                access.append(entry.id)
            }
        }
        try section("ACCS", length: access.bytes.count)
        scratch = access
        try emitScratch()
        var quarantine = ByteWriter()
        let held = index.quarantine ?? []
        quarantine.append(UInt64(held.count))
        for id in held { quarantine.append(id) }
        try section("QUAR", length: quarantine.bytes.count)
        scratch = quarantine
        try emitScratch()
        if let grams = index.nameGrams {
            try section("GRAM", length: grams.encodedSize)
            try grams.encode { (bytes) throws(Errno) in try emit(bytes) }
        }
        try section("XTRA", length: extra.count)
        try withBytes(of: extra) { (bytes) throws(Errno) in try emit(bytes) }

        // The header, now that the payload is known.
        var head = ByteWriter()
        head.append(contentsOf: magic)
        head.append(version)
        head.append(UInt32(headerSize))
        head.append(UInt64(writer.offset - headerSize))
        head.append(checksum.finalize())
        head.append(UInt64(bitPattern: written.nanosecondsSinceEpoch))
        head.append(UInt64(0))
        header = head.bytes
        try withBytes(of: header) { (bytes) throws(Errno) in try writer.overwrite(bytes, at: 0) }
    }

    /// Loads a snapshot file's bytes.
    ///
    /// - Throws: `Refusal` saying what is wrong (never traps, whatever the bytes).
    /// - Complexity: O(file size + slots): a checksum pass, copies, and a
    ///   structural check of every entry, on two threads.
    package static func load(_ file: [UInt8]) throws(Refusal) -> Loaded {
        try withBytes(of: file) { (raw) throws(Refusal) -> Loaded in try load(raw) }
    }

    /// Loads a snapshot from bytes in memory (a mapped file); nothing of
    /// them is kept.
    package static func load(_ raw: UnsafeRawBufferPointer) throws(Refusal) -> Loaded {
        var header = ByteReader(raw)
        guard raw.count >= headerSize else { throw Refusal(reason: "truncated header (\(raw.count) bytes)") }
        guard Array(try header.bytes(8)) == magic else { throw Refusal(reason: "not an mdq index snapshot") }
        let fileVersion: UInt32 = try header.read()
        guard fileVersion == version else {
            throw Refusal(reason: "snapshot format \(fileVersion), this mdq reads format \(version)")
        }
        guard try header.read() as UInt32 == UInt32(headerSize) else { throw Refusal(reason: "bad header size") }
        let payloadLength: UInt64 = try header.read()
        let expected: UInt64 = try header.read()
        let written = Timestamp(nanosecondsSinceEpoch: Int64(bitPattern: try header.read() as UInt64))
        guard payloadLength == UInt64(raw.count - headerSize) else {
            throw Refusal(
                reason: "truncated or padded: \(raw.count - headerSize) payload bytes, header says \(payloadLength)"
            )
        }
        let payload = UnsafeRawBufferPointer(rebasing: raw[headerSize...])
        func checksumMatches() -> Bool {
            var checksum = Checksum64()
            checksum.update(payload)
            return checksum.finalize() == expected
        }
        do {
            return try loadPayload(payload, checksumMatches: checksumMatches, written: written)
        } catch {
            // A corrupted file is named so, whatever part of it failed
            // first (the payload is read before its checksum is known;
            // after it matched, the refusal says why itself).
            if !error.afterChecksum && error.reason != mismatch.reason && !checksumMatches() { throw mismatch }
            throw error
        }
    }

    private static let mismatch = Refusal(reason: "checksum mismatch (corrupted)")

    /// Loads the sections of a payload. The sections are read before the
    /// checksum is known (every read is bounded either way, and nothing
    /// is kept unless it matches): the checksum, the copies of the columns
    /// and names, and the decoding of the name trigrams run side by side,
    /// then the checks of the links, so that a restart answers sooner.
    private static func loadPayload(
        _ payload: UnsafeRawBufferPointer, checksumMatches: @escaping () -> Bool, written: Timestamp
    ) throws(Refusal) -> Loaded {
        var sections: [String: UnsafeRawBufferPointer] = [:]
        var cursor = ByteReader(payload)
        while !cursor.isAtEnd {
            let tag = String(decoding: try cursor.bytes(4), as: UTF8.self)
            let length: UInt64 = try cursor.read()
            guard length <= UInt64(cursor.remaining) else { throw Refusal(reason: "section \(tag) overruns") }
            sections[tag] = try cursor.bytes(Int(length))
        }
        func section(_ tag: String) throws(Refusal) -> ByteReader {
            guard let bytes = sections[tag] else { throw Refusal(reason: "missing section \(tag)") }
            return ByteReader(bytes)
        }
        let index = FileIndex()
        var counts = try section("INDX")
        let slotCount = Int(try counts.read() as UInt64)
        let count = Int(try counts.read() as UInt64)
        let freeHead = UInt32(truncatingIfNeeded: try counts.read() as UInt64)
        let chunkCount = Int(try counts.read() as UInt64)
        let bucketMask = Int(try counts.read() as UInt64)
        guard slotCount >= 0, slotCount < Int(FileIndex.none), chunkCount == (slotCount + 0xFFFF) >> 16,
            chunkCount <= 1 << 12, count <= slotCount,
            bucketMask >= 1023, bucketMask < 1 << 31, (bucketMask + 1) & bucketMask == 0
        else { throw Refusal(reason: "impossible counts") }

        var columns: [FileIndex.ColumnHandle] = []
        index.forEachColumn { columns.append($0) }
        var columnBytes = try section("COLS")
        guard columnBytes.remaining == columns.reduce(0, { $0 + $1.elementSize * slotCount }) else {
            throw Refusal(reason: "column section size")
        }
        let columnSource = try columnBytes.bytes(columnBytes.remaining)
        var buckets = try section("BUCK")
        guard buckets.remaining == (bucketMask + 1) * 4 else { throw Refusal(reason: "bucket section size") }
        let bucketBytes = try buckets.bytes((bucketMask + 1) * 4)

        var nameSection = try section("NAME")
        let nameBytes = try nameSection.bytes(nameSection.remaining)
        var free = try section("FREE")
        var spans = [[UInt32]](repeating: [], count: 256)
        while !free.isAtEnd {
            let length = Int(try free.read() as UInt32)
            let n = Int(try free.read() as UInt32)
            guard length < 256, n <= free.remaining / 4 else { throw Refusal(reason: "free spans") }
            for _ in 0..<n {
                let offset: UInt32 = try free.read()
                // Inside the arena and inside one chunk: a span is reused
                // for a name of its length, written at its offset.
                guard length > 0, Int(offset) + length <= nameBytes.count,
                    (Int(offset) & (NameArena.chunkSize - 1)) + length <= NameArena.chunkSize
                else {
                    throw Refusal(reason: "free span")
                }
                spans[length].append(offset)
            }
        }

        var side = try section("SIDE")
        for table in 0..<2 {
            let n = Int(try side.read() as UInt64)
            guard n <= side.remaining / 12 else { throw Refusal(reason: "side tables") }
            for _ in 0..<n {
                let id: UInt32 = try side.read()
                let value: UInt64 = try side.read()
                if table == 0 { index.largeSizes[id] = value } else { index.largeInodes[id] = value }
            }
        }
        var roots = try section("ROOT")
        let rootCount = Int(try roots.read() as UInt64)
        guard rootCount <= roots.remaining / 8 else { throw Refusal(reason: "roots") }
        for _ in 0..<rootCount {
            let id: UInt32 = try roots.read()
            let path = try roots.readBlob()
            guard !path.isEmpty, path.first == 0x2F, !path.contains(0) else { throw Refusal(reason: "root path") }
            index.rootPaths[id] = FilePath.fromBytes(path)
        }
        var devices = try section("DEVS")
        let deviceCount = Int(try devices.read() as UInt64)
        guard deviceCount <= 256, deviceCount <= devices.remaining / 8 else { throw Refusal(reason: "devices") }
        for _ in 0..<deviceCount {
            let device = DeviceNumber(major: try devices.read(), minor: try devices.read())
            index.deviceIndexes[device] = index.devices.count
            index.devices.append(device)
        }
        var access = try section("ACCS")
        let classes = Int(try access.read() as UInt64)
        guard classes <= access.remaining / 16 else { throw Refusal(reason: "access classes") }
        for _ in 0..<classes {
            var stored = EntryAccess(
                mode: UInt16(truncatingIfNeeded: try access.read() as UInt32), owner: try access.read(),
                group: try access.read())
            let entries: UInt32 = try access.read()
            if entries != UInt32.max {
                guard Int(entries) <= access.remaining / 8 else { throw Refusal(reason: "access lists") }
                var acl: [EntryAccess.ACLEntry] = []
                for _ in 0..<entries {
                    acl.append(
                        EntryAccess.ACLEntry(
                            tag: try access.read(), permissions: try access.read(), id: try access.read()))
                }
                stored.acl = acl
            }
            guard index.accessNumbers[stored] == nil else { throw Refusal(reason: "access classes repeat") }
            index.accessClasses.append(stored)
            index.accessNumbers[stored] = UInt32(index.accessClasses.count)
        }
        var quarantine = try section("QUAR")
        let held = Int(try quarantine.read() as UInt64)
        guard held <= quarantine.remaining / 4 else { throw Refusal(reason: "quarantine") }
        var heldIDs: [UInt32] = []
        for _ in 0..<held { heldIDs.append(try quarantine.read()) }
        var extraSection = try section("XTRA")
        let extra = Array(try extraSection.bytes(extraSection.remaining))

        index.slotCount = slotCount
        index.count = count
        index.freeHead = freeHead

        // Two threads: one the checksum, then the trigram lists; the other
        // the copies, then each entry's own fields.
        let jobs = UncheckedSendable(
            LoadJobs(
                columns: columnSource, buckets: bucketBytes, names: nameBytes, spans: spans,
                grams: sections["GRAM"], index: index, checksumMatches: checksumMatches))
        WorkerThreads.run(count: 2, name: "mdq-snapshot-load") { worker in
            if worker == 0 { jobs.value.checkAndDecode() } else { jobs.value.copyAndCheckEntries() }
        }
        let done = jobs.value
        guard done.checksumMatched else { throw mismatch }
        if var refusal = done.gramsRefusal {
            refusal.afterChecksum = true
            throw refusal
        }
        index.nameGrams = done.decoded
        if let problem = done.entryProblem ?? index.linkProblem(held: heldIDs) {
            var refusal = Refusal(reason: "inconsistent index: \(problem)")
            refusal.afterChecksum = true
            throw refusal
        }
        // Held ids were told to nobody in this process: free now.
        for id in heldIDs {
            index.nextSiblingColumn[id] = index.freeHead
            index.freeHead = id
        }
        return Loaded(index: index, extra: extra, written: written)
    }
}

/// The heavy parts of a snapshot's load, run on two threads: the bytes
/// they read are the mapped file's, the index is written by one of them
/// only, and the caller reads the results after both end.
private final class LoadJobs {
    let columns, buckets, names: UnsafeRawBufferPointer
    let spans: [[UInt32]]
    let grams: UnsafeRawBufferPointer?
    let index: FileIndex
    /// The index's slots, read by both threads (the index itself only by
    /// the copying one).
    let slotCount: Int
    let checksumMatches: () -> Bool
    var checksumMatched = false
    var decoded: NameGrams?
    var gramsRefusal: IndexSnapshot.Refusal?
    var entryProblem: String?

    init(
        columns: UnsafeRawBufferPointer, buckets: UnsafeRawBufferPointer,
        names: UnsafeRawBufferPointer, spans: [[UInt32]], grams: UnsafeRawBufferPointer?, index: FileIndex,
        checksumMatches: @escaping () -> Bool
    ) {
        self.columns = columns
        self.buckets = buckets
        self.names = names
        self.spans = spans
        self.grams = grams
        self.index = index
        slotCount = index.slotCount
        self.checksumMatches = checksumMatches
    }

    /// The checksum, then the trigram lists (whose decoding checks their
    /// own structure, and which nothing uses unless the checksum matched).
    func checkAndDecode() {
        checksumMatched = checksumMatches()
        guard checksumMatched, let grams else { return }
        do {
            decoded = try NameGrams.decode(grams, slotCount: slotCount)
        } catch {
            gramsRefusal = error
        }
    }

    /// The columns, the hash buckets and the names copied into the index,
    /// then each entry's own fields checked.
    func copyAndCheckEntries() {
        for chunk in 0..<(slotCount + 0xFFFF) >> 16 { index.forEachColumn { $0.addChunk(chunk) } }
        index.chunkCount = (slotCount + 0xFFFF) >> 16
        var offset = 0
        index.forEachColumn { column in
            var remaining = slotCount
            var chunk = 0
            while remaining > 0 {
                let n = min(remaining, 1 << 16)
                column.chunk(chunk).copyMemory(from: columns.baseAddress! + offset, byteCount: n * column.elementSize)
                offset += n * column.elementSize
                remaining -= n
                chunk += 1
            }
        }
        // The saved chains are not copied: the other thread links them
        // again (`linkProblem`).
        index.buckets.deallocate()
        index.buckets = RandomAccessMemory.allocate(UInt32.self, capacity: buckets.count / 4)
        index.bucketMask = buckets.count / 4 - 1
        index.names.restore(names, freeSpans: spans)
        entryProblem = index.entryProblem()
    }
}

extension FileIndex {
    /// What is wrong with the entries of an index whose columns came from
    /// outside (a snapshot), each on its own, or nil: a kind, a name
    /// inside the arena, a parent in range, roots as the root table
    /// says, side tables and access classes for what needs them, as many
    /// live as counted. Clears the marks and signature flags (neither is
    /// saved). `linkProblem` then checks the links between them.
    ///
    /// - Complexity: O(slots), in id order.
    func entryProblem() -> String? {
        let slots = UInt32(slotCount)
        func valid(_ id: UInt32) -> Bool { id == Self.none || id < slots }
        let arena = names.usedBytes
        var live = 0
        for id in 0..<slots {
            var b = bits(id)
            if b.isFree { continue }
            guard EntryKind(rawValue: b.kindRawValue) != nil else { return "entry \(id) has no kind" }
            guard b.nameLength >= 1, Int(nameOffsetColumn[id]) + b.nameLength <= arena,
                (Int(nameOffsetColumn[id]) & (NameArena.chunkSize - 1)) + b.nameLength <= NameArena.chunkSize
            else { return "entry \(id) has a name outside the arena" }
            // Its other links are made again (`linkProblem`).
            guard valid(parentColumn[id]) else { return "entry \(id) links out of range" }
            guard b.isRoot == (parentColumn[id] == Self.none), !b.isRoot || rootPaths[id] != nil else {
                return "entry \(id) is a malformed root"
            }
            if b.hasLargeSize && largeSizes[id] == nil { return "entry \(id) lost its size" }
            if b.hasLargeInode && largeInodes[id] == nil { return "entry \(id) lost its inode" }
            if Int(accessColumn[id]) > accessClasses.count { return "entry \(id) names an unknown access class" }
            b.isMarked = false
            b.hasSignature = false
            bitsColumn[id] = b.rawValue
            live += 1
        }
        guard live == count else { return "count \(count), \(live) live entries" }
        // Each root in the table live and marked a root (every entry marked
        // one is in the table: checked above), so the table is the roots.
        for id in rootPaths.keys where id >= slots || bits(id).isFree || !bits(id).isRoot {
            return "root table names \(id)"
        }
        return freeSpanProblem()
    }

    /// Free name spans that overlap each other or a live entry's name, or
    /// nil: a span is written over when a name of its length is stored.
    ///
    /// - Complexity: O(spans log spans + slots log spans); nothing when
    ///   no span is free.
    private func freeSpanProblem() -> String? {
        var free: [(start: Int, end: Int)] = []
        for (length, offsets) in names.spans.enumerated() {
            for offset in offsets { free.append((Int(offset), Int(offset) + length)) }
        }
        guard !free.isEmpty else { return nil }
        free.sort { $0.start < $1.start }
        for i in 1..<max(1, free.count) where free[i].start < free[i - 1].end { return "free name spans overlap" }
        for id in 0..<UInt32(slotCount) where !bits(id).isFree {
            let start = Int(nameOffsetColumn[id])
            let end = start + bits(id).nameLength
            // The last span starting before this name's end must end
            // before its start.
            var low = 0
            var high = free.count
            while low < high {
                let middle = (low + high) / 2
                if free[middle].start < end { low = middle + 1 } else { high = middle }
            }
            if low > 0 && free[low - 1].end > start { return "entry \(id)'s name is in a free span" }
        }
        return nil
    }

    /// What is wrong with the tree, once `entryProblem` found nothing
    /// wrong with each entry, or nil; what is derived from the parents and
    /// names is made again meanwhile.
    ///
    /// A snapshot's parents and names are the index; its children lists
    /// and hash chains only say again what they imply, and are not read:
    /// making them afresh costs less than checking them (walking either
    /// waits for a cache miss at every link), and leaves nothing to trust.
    /// They are written still, for readers of the same format that do
    /// check them.
    ///
    /// - Complexity: O(slots), the tree on one thread and the hash chains
    ///   on another (a restart answers once both are done).
    func linkProblem(held: [UInt32]) -> String? {
        var problem: String?
        // Each thread writes columns the other does not touch: the tree's
        // the children lists, the other the hash chains and buckets.
        let shared = UncheckedSendable(self)
        let liveCount = count
        withUnsafeMutablePointer(to: &problem) { result in
            let out = UncheckedSendable(result)
            WorkerThreads.run(count: 2, name: "mdq-snapshot-check") { worker in
                if worker == 0 {
                    out.value.pointee =
                        shared.value.parentProblem(live: liveCount)
                        ?? shared.value.relinkedChildren(thenFreeProblem: liveCount, held: held)
                } else {
                    shared.value.relinkHashChains()
                }
            }
        }
        return problem
    }

    /// What is wrong with the parents: each live entry's is a live folder,
    /// and every chain of parents reaches a root (no cycle), or nil.
    ///
    /// Each chain is climbed until an entry known to reach a root, and
    /// the entries on the way are then known to: each is climbed past once.
    /// Entries are taken in id order, and a crawl gives a folder an id
    /// below its children's, so the climbs are short and near.
    private func parentProblem(live: Int) -> String? {
        let slots = UInt32(slotCount)
        for id in 0..<slots {
            let b = bits(id)
            guard !b.isFree, !b.isRoot else { continue }
            let parent = bits(parentColumn[id])
            guard !parent.isFree, parent.kind == .folder else { return "entry \(id)'s parent is not a folder" }
        }
        var reaches = EntrySet(capacity: slotCount)
        for id in 0..<slots where !bits(id).isFree && !reaches.contains(id) {
            var top = id
            var climbed = 0
            while !reaches.contains(top) && !bits(top).isRoot {
                top = parentColumn[top]
                climbed += 1
                // Longer than every entry: a cycle.
                guard climbed <= live else { return "entries do not reach a root (a cycle of parents)" }
            }
            var entry = id
            while true {
                reaches.insert(entry)
                if entry == top { break }
                entry = parentColumn[entry]
            }
        }
        return nil
    }

    /// The children lists made again from the parents, in id order (each
    /// list newest first, as a crawl leaves it), then what is wrong with
    /// the free slots.
    private func relinkedChildren(thenFreeProblem live: Int, held: [UInt32]) -> String? {
        let slots = UInt32(slotCount)
        for id in 0..<slots where !bits(id).isFree { firstChildColumn[id] = Self.none }
        for id in 0..<slots {
            let b = bits(id)
            guard !b.isFree else { continue }
            if b.isRoot {
                // Roots are no one's children.
                nextSiblingColumn[id] = Self.none
                previousSiblingColumn[id] = Self.none
            } else {
                linkIntoParent(id)
            }
        }
        return freeProblem(live: live, held: held)
    }

    /// Free slots: the free list and the held ids, each free, each once.
    private func freeProblem(live: Int, held: [UInt32]) -> String? {
        let slots = UInt32(slotCount)
        var seen = [Bool](repeating: false, count: slotCount)
        var id = freeHead
        var freeCount = 0
        while id != Self.none {
            guard id < slots, bits(id).isFree, !seen[Int(id)] else { return "broken free list" }
            seen[Int(id)] = true
            freeCount += 1
            id = nextSiblingColumn[id]
        }
        for id in held {
            guard id < slots, bits(id).isFree, !seen[Int(id)] else { return "broken quarantine" }
            seen[Int(id)] = true
            freeCount += 1
        }
        guard live + freeCount == slotCount else { return "\(slotCount - live - freeCount) slots leak" }
        return nil
    }
}

/// Little-endian bytes for snapshot sections.
package struct ByteWriter {
    package private(set) var bytes: [UInt8] = []

    package init() {}

    package mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    package mutating func append(contentsOf other: [UInt8]) {
        bytes.append(contentsOf: other)
    }

    /// A length (32 bits) and the bytes.
    package mutating func appendBlob(_ blob: [UInt8]) {
        append(UInt32(blob.count))
        bytes.append(contentsOf: blob)
    }
}

/// Reads little-endian values from bytes, refusing to read past the end.
package struct ByteReader {
    private let buffer: UnsafeRawBufferPointer
    private var position = 0

    package init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    package var remaining: Int { buffer.count - position }
    package var isAtEnd: Bool { position >= buffer.count }

    mutating func bytes(_ count: Int) throws(IndexSnapshot.Refusal) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw IndexSnapshot.Refusal(reason: "truncated section") }
        defer { position += count }
        return UnsafeRawBufferPointer(rebasing: buffer[position..<position + count])
    }

    package mutating func read<T: FixedWidthInteger>() throws(IndexSnapshot.Refusal) -> T {
        let raw = try bytes(MemoryLayout<T>.size)
        return T(littleEndian: raw.loadUnaligned(as: T.self))
    }

    package mutating func readBlob() throws(IndexSnapshot.Refusal) -> [UInt8] {
        let length = Int(try read() as UInt32)
        return Array(try bytes(length))
    }
}
