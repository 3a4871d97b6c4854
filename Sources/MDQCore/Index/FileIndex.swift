public import MDQSystem
public import SystemPackage

/// The in-memory store of every crawled entry: a tree of names with metadata,
/// built to hold millions of entries in well under 100 bytes each.
///
/// Layout: structure of arrays in 64 Ki-entry chunks, one small integer
/// (`EntryID`) per entry. An entry refers to its parent, first child and
/// siblings by id; its name lives in a shared byte arena; a chained hash table
/// keyed by (parent, name) finds a child in O(1). There is no object, `String`
/// or `FilePath` per entry: full paths are rebuilt on demand from the parent
/// chain. Names are raw bytes, so names that are not UTF-8 are kept exactly.
///
/// Scope roots are entries without a parent that remember their full path.
/// Every mutation keeps the tree, the sibling lists and the hash table in step;
/// debug builds verify that after each one (`_checkInvariants()`).
///
/// Not thread-safe: one owner mutates it (the crawler's sink and later the
/// watcher serialise through a lock).
public final class FileIndex {
    package static let none = UInt32.max

    let parentColumn = ChunkedColumn<UInt32>(fill: FileIndex.none)
    let firstChildColumn = ChunkedColumn<UInt32>(fill: FileIndex.none)
    let nextSiblingColumn = ChunkedColumn<UInt32>(fill: FileIndex.none)
    let previousSiblingColumn = ChunkedColumn<UInt32>(fill: FileIndex.none)
    let hashNextColumn = ChunkedColumn<UInt32>(fill: FileIndex.none)
    let nameOffsetColumn = ChunkedColumn<UInt32>(fill: 0)
    let bitsColumn = ChunkedColumn<UInt32>(fill: 0)
    /// Sizes below 2^32 - 1; larger ones live in `largeSizes`. Folders
    /// have none: 0.
    let sizeColumn = ChunkedColumn<UInt32>(fill: 0)
    /// The number of the entry's access class (`accessClasses`; 0: not
    /// stat'ed).
    let accessColumn = ChunkedColumn<UInt32>(fill: 0)
    /// Inode numbers below 2^32; larger ones live in `largeInodes`.
    let inodeColumn = ChunkedColumn<UInt32>(fill: 0)
    let modificationColumn = ChunkedColumn<Int64>(fill: 0)
    let birthColumn = ChunkedColumn<Int64>(fill: 0)
    /// How many times each slot was given to a new entry after its first:
    /// with the slot, an entry's identity for as long as the index lives
    /// (`identity(of:)`), which no later entry in that slot shares.
    let incarnationColumn = ChunkedColumn<UInt32>(fill: 0)
    /// Chunks allocated in every column.
    var chunkCount = 0
    var largeSizes: [UInt32: UInt64] = [:]
    var largeInodes: [UInt32: UInt64] = [:]
    let names = NameArena()
    /// Bigram signatures of names, built by substring queries (lazily).
    let signatures = NameSignatures()
    /// Counts the changes to names and slots (insert, rename, free): what
    /// was derived from the index at one value still holds at the same.
    package var generation = 0
    /// The trigram index of names, when the owner keeps one (the daemon
    /// does: `LiveEngine.keepNameGrams()`); maintained by every mutation.
    package var nameGrams: NameGrams?

    var buckets: UnsafeMutablePointer<UInt32>
    var bucketMask: Int

    /// One past the highest id ever handed out.
    public internal(set) var slotCount = 0
    /// Live entries, scope roots included.
    public internal(set) var count = 0
    var freeHead = FileIndex.none
    /// While non-nil, freed slots wait here instead of the free list, so an
    /// id removed in a batch of changes is not reused before every query has
    /// seen the batch.
    var quarantine: [UInt32]?

    package var rootPaths: [UInt32: FilePath] = [:]
    /// While true, the identities of files removed from the index (or
    /// replaced by another file under their name) are kept in
    /// `removedFiles`, for the content indexer to drop their imports.
    package var collectsRemovedFiles = false {
        didSet { if !collectsRemovedFiles { removedFiles = [] } }
    }
    package var removedFiles: [FileKey] = []
    /// Entries' access classes (`EntryAccess`), numbered from 1 in the
    /// order first seen; `accessColumn` holds each entry's number.
    var accessClasses: [EntryAccess] = []
    var accessNumbers: [EntryAccess: UInt32] = [:]
    /// The class last interned, and its number: a folder's files mostly
    /// share one, so a crawl seldom hashes.
    var lastAccess: (access: EntryAccess, number: UInt32)?
    /// Folders whose access class changed since the owner last took them
    /// (`takeAccessChanges`): what they hold may be seen by other users now.
    var accessChanges: [UInt32] = []
    /// Bumped whenever what a user's walk meets may have changed: a folder
    /// given another access class, an entry moved, classes renumbered.
    /// What a `Visibility` remembers is good for one generation.
    var accessGeneration: UInt64 = 0
    /// When `accessClasses` reaches this many, classes no entry uses any
    /// more are dropped (`compactAccessClasses`): `chmod` and `setfacl`
    /// churn by any user would otherwise grow them without bound.
    var accessCompactionAt = 4096
    var devices: [DeviceNumber] = []
    var deviceIndexes: [DeviceNumber: Int] = [:]

    /// Creates an empty index.
    public init() {
        bucketMask = 1023
        buckets = .allocate(capacity: bucketMask + 1)
        buckets.initialize(repeating: Self.none, count: bucketMask + 1)
    }

    deinit {
        buckets.deallocate()
        forEachColumn { $0.deallocate(chunkCount: chunkCount) }
    }

    /// Applies `body` to each column, type-erased to its deallocation/growth.
    func forEachColumn(_ body: (ColumnHandle) -> Void) {
        body(ColumnHandle(parentColumn))
        body(ColumnHandle(firstChildColumn))
        body(ColumnHandle(nextSiblingColumn))
        body(ColumnHandle(previousSiblingColumn))
        body(ColumnHandle(hashNextColumn))
        body(ColumnHandle(nameOffsetColumn))
        body(ColumnHandle(bitsColumn))
        body(ColumnHandle(sizeColumn))
        body(ColumnHandle(accessColumn))
        body(ColumnHandle(inodeColumn))
        body(ColumnHandle(modificationColumn))
        body(ColumnHandle(birthColumn))
        body(ColumnHandle(incarnationColumn))
    }

    /// A column's chunk management, whatever its element type.
    struct ColumnHandle {
        let addChunk: (Int) -> Void
        let deallocate: (Int) -> Void
        /// A chunk's storage, for snapshots.
        let chunk: (Int) -> UnsafeMutableRawPointer
        let elementSize: Int
        init<E>(_ column: ChunkedColumn<E>) {
            addChunk = column.addChunk
            deallocate = { column.deallocate(chunkCount: $0) }
            chunk = { UnsafeMutableRawPointer(column.chunk($0)) }
            elementSize = MemoryLayout<E>.stride
        }
        func deallocate(chunkCount: Int) { deallocate(chunkCount) }
    }

    // MARK: Reading

    /// Whether `id` names a live entry.
    public func contains(_ id: EntryID) -> Bool {
        Int(id.rawValue) < slotCount && !EntryBits(rawValue: bitsColumn[id.rawValue]).isFree
    }

    @inline(__always)
    func bits(_ id: UInt32) -> EntryBits { EntryBits(rawValue: bitsColumn[id]) }

    /// The entry's kind.
    public func kind(of id: EntryID) -> EntryKind { bits(id.rawValue).kind }

    /// Whether the entry's size and dates were read (`EntryMetadata.isStatted`),
    /// without building its metadata.
    package func isStatted(_ id: EntryID) -> Bool { bits(id.rawValue).isStatted }

    /// The entry's parent; nil for a scope root.
    public func parent(of id: EntryID) -> EntryID? {
        let p = parentColumn[id.rawValue]
        return p == Self.none ? nil : EntryID(p)
    }

    /// Whether the entry is a scope root.
    public func isRoot(_ id: EntryID) -> Bool { bits(id.rawValue).isRoot }

    /// The scope roots, in no particular order.
    public var roots: [EntryID] { rootPaths.keys.map(EntryID.init) }

    /// Calls `body` with the entry's name bytes, valid during the call.
    @inline(__always)
    public func withName<R>(of id: EntryID, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(nameBytes(id.rawValue))
    }

    @inline(__always)
    func nameBytes(_ id: UInt32) -> UnsafeRawBufferPointer {
        names.bytes(at: nameOffsetColumn[id], length: bits(id).nameLength)
    }

    /// The entry's name as raw bytes.
    public func name(of id: EntryID) -> [UInt8] {
        withName(of: id) { Array($0) }
    }

    /// What the index knows about the entry.
    public func metadata(of id: EntryID) -> EntryMetadata {
        let raw = id.rawValue
        let b = bits(raw)
        var metadata = EntryMetadata(kind: b.kind, inode: inode(raw, b))
        if b.isStatted {
            if b.kind == .folder {
                metadata.size = 0
            } else {
                metadata.size = b.hasLargeSize ? largeSizes[raw, default: 0] : UInt64(sizeColumn[raw])
            }
            metadata.access = access(of: raw)
            metadata.modificationTime = Timestamp(nanosecondsSinceEpoch: modificationColumn[raw])
            if b.hasBirthTime { metadata.birthTime = Timestamp(nanosecondsSinceEpoch: birthColumn[raw]) }
        }
        return metadata
    }

    /// An entry's access class, when it was stat'ed.
    package func access(of id: UInt32) -> EntryAccess? {
        let number = Int(accessColumn[id])
        guard number > 0 && number <= accessClasses.count else { return nil }
        return accessClasses[number - 1]
    }

    /// The number of a folder's access class (0: none, or not a folder).
    func accessNumber(of id: UInt32) -> UInt32 {
        bits(id).kind == .folder ? accessColumn[id] : 0
    }

    /// The folders whose access changed since the last call.
    package func takeAccessChanges() -> [UInt32] {
        defer { accessChanges.removeAll() }
        return accessChanges
    }

    /// The number of `access`'s class, interning it.
    func accessNumber(_ access: EntryAccess) -> UInt32 {
        if let last = lastAccess, last.access == access { return last.number }
        if let number = accessNumbers[access] {
            lastAccess = (access, number)
            return number
        }
        if accessClasses.count >= accessCompactionAt { compactAccessClasses() }
        accessClasses.append(access)
        let number = UInt32(accessClasses.count)
        accessNumbers[access] = number
        lastAccess = (access, number)
        return number
    }

    /// Keeps only the access classes some entry uses, renumbered in the
    /// order first used, and sets the next compaction at twice as many
    /// (at least 4096): each compaction costs a pass over the slots, paid
    /// for by as many new classes as there are live ones.
    ///
    /// - Complexity: O(slots).
    func compactAccessClasses() {
        var renumbered = [UInt32](repeating: 0, count: accessClasses.count + 1)
        var kept: [EntryAccess] = []
        for id in 0..<UInt32(slotCount) {
            guard !bits(id).isFree else { continue }
            let old = Int(accessColumn[id])
            guard old > 0 && old <= accessClasses.count else { continue }
            if renumbered[old] == 0 {
                kept.append(accessClasses[old - 1])
                renumbered[old] = UInt32(kept.count)
            }
            accessColumn[id] = renumbered[old]
        }
        lastAccess = nil
        accessClasses = kept
        accessNumbers = Dictionary(uniqueKeysWithValues: kept.enumerated().map { ($1, UInt32($0 + 1)) })
        accessCompactionAt = max(4096, 2 * kept.count)
        accessGeneration &+= 1
    }

    /// Incarnations wrap within 31 bits, so an identity stays a positive
    /// 64-bit integer.
    static let incarnationMask: UInt32 = 0x7FFF_FFFF

    /// The entry's identity for subscribers: its slot and the slot's
    /// incarnation. It is kept through renames and moves (the entry keeps
    /// its slot), across restarts (snapshots keep slots and incarnations),
    /// and never given to a later entry, even one made again at the same
    /// path. Valid for a removed entry until the next batch reuses slots.
    package func identity(of id: UInt32) -> UInt64 {
        UInt64(incarnationColumn[id]) << 32 | UInt64(id)
    }

    /// The slot an identity names, when that entry is still in the index.
    package func entry(identity: UInt64) -> EntryID? {
        let slot = UInt32(truncatingIfNeeded: identity)
        guard identity >> 63 == 0, Int(slot) < slotCount, contains(EntryID(slot)),
            UInt64(incarnationColumn[slot]) == identity >> 32
        else { return nil }
        return EntryID(slot)
    }

    /// A statted file's identity (device and inode), as the import store
    /// keys it; nil for folders, links and entries not statted.
    package func fileKey(of id: EntryID) -> FileKey? {
        contains(id) ? fileKey(id.rawValue, bits(id.rawValue)) : nil
    }

    package func fileKey(_ id: UInt32, _ b: EntryBits) -> FileKey? {
        guard b.isStatted, b.kind == .file, b.deviceIndex < devices.count else { return nil }
        let device = devices[b.deviceIndex]
        return FileKey(
            device: UInt64(device.major) << 32 | UInt64(device.minor), inode: inode(id, b))
    }

    /// A statted folder's device (a filesystem mounted inside another
    /// has its own); nil for other entries.
    package func folderDevice(of id: EntryID) -> DeviceNumber? {
        guard contains(id) else { return nil }
        let b = bits(id.rawValue)
        guard b.isStatted, b.kind == .folder, b.deviceIndex < devices.count else { return nil }
        return devices[b.deviceIndex]
    }

    /// A statted file's modification time and size, as the import store
    /// stamps an import.
    package func fileStamp(of id: EntryID) -> FileStamp? {
        guard contains(id) else { return nil }
        let raw = id.rawValue
        let b = bits(raw)
        guard b.isStatted, b.kind == .file else { return nil }
        return FileStamp(
            modification: modificationColumn[raw],
            size: b.hasLargeSize ? largeSizes[raw, default: 0] : UInt64(sizeColumn[raw]))
    }

    private func inode(_ id: UInt32, _ b: EntryBits) -> UInt64 {
        b.hasLargeInode ? largeInodes[id, default: 0] : UInt64(inodeColumn[id])
    }

    /// The child of `parent` called `name`, if any.
    ///
    /// - Complexity: O(1) expected.
    public func child(named name: UnsafeRawBufferPointer, in parent: EntryID) -> EntryID? {
        let id = lookup(name, in: parent.rawValue)
        return id == Self.none ? nil : EntryID(id)
    }

    /// The child of `parent` called `name`, if any.
    public func child(named name: [UInt8], in parent: EntryID) -> EntryID? {
        name.withUnsafeBytes { child(named: $0, in: parent) }
    }

    func lookup(_ name: UnsafeRawBufferPointer, in parent: UInt32) -> UInt32 {
        let h = NameBytes.hash(parent: parent, name: name)
        var id = buckets[Int(truncatingIfNeeded: h) & bucketMask]
        while id != Self.none {
            if parentColumn[id] == parent {
                let b = bits(id)
                if b.nameLength == name.count,
                    NameBytes.equal(names.pointer(at: nameOffsetColumn[id]), name.baseAddress!, count: name.count)
                {
                    return id
                }
            }
            id = hashNextColumn[id]
        }
        return Self.none
    }

    /// The entry's children, in no particular order.
    ///
    /// - Complexity: O(number of children).
    public func children(of id: EntryID) -> [EntryID] {
        var result: [EntryID] = []
        var child = firstChildColumn[id.rawValue]
        while child != Self.none {
            result.append(EntryID(child))
            child = nextSiblingColumn[child]
        }
        return result
    }

    /// What a names-first fill reads in `folder` (`LiveEngine.fill`): the
    /// children not stat'ed yet but folders (their names, NUL-terminated,
    /// appended to `names`, each child with its identity and where its name
    /// starts), and the child folders that hold something (the same way,
    /// in `folders`).
    ///
    /// - Complexity: O(children).
    package func unreadChildren(
        of folder: EntryID, files: inout [(identity: UInt64, name: Int)],
        folders: inout [(identity: UInt64, name: Int)],
        names: inout [CChar]
    ) {
        var child = firstChildColumn[folder.rawValue]
        while child != Self.none {
            let b = bits(child)
            let wanted = b.kind == .folder ? firstChildColumn[child] != Self.none : !b.isStatted
            if wanted {
                let start = names.count
                for byte in nameBytes(child) { names.append(CChar(bitPattern: byte)) }
                names.append(0)
                if b.kind == .folder {
                    folders.append((identity(of: child), start))
                } else {
                    files.append((identity(of: child), start))
                }
            }
            child = nextSiblingColumn[child]
        }
    }

    /// The absolute path of the entry, rebuilt from its parent chain.
    ///
    /// - Complexity: O(depth).
    public func path(of id: EntryID) -> FilePath {
        var bytes: [UInt8] = []
        appendPath(of: id.rawValue, to: &bytes)
        return FilePath.fromBytes(bytes)
    }

    /// Appends the absolute path of the entry as raw bytes (no terminator):
    /// for printing many paths without a `FilePath` each.
    ///
    /// - Complexity: O(depth).
    public func appendPath(of id: EntryID, to bytes: inout [UInt8]) {
        appendPath(of: id.rawValue, to: &bytes)
    }

    /// Appends the absolute path of `id` as raw bytes (no terminator).
    ///
    /// Two walks up the parents and no allocation: the first measures the
    /// part below the root, the second fills it in from its end (printing
    /// 100,000 paths is 100,000 calls).
    package func appendPath(of id: UInt32, to bytes: inout [UInt8]) {
        var length = 0
        var current = id
        while current != Self.none, !bits(current).isRoot {
            length += bits(current).nameLength + 1
            current = parentColumn[current]
        }
        if current != Self.none, let root = rootPaths[current] {
            root.appendBytes(to: &bytes)
        }
        guard length > 0 else { return }
        // Under a root that ends with a slash (`/`), no second one.
        if bytes.last == 0x2F { length -= 1 }
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var end = start + length
            var current = id
            while current != Self.none, !bits(current).isRoot {
                let name = nameBytes(current)
                end -= name.count
                if name.count > 0 {
                    UnsafeMutableRawPointer(buffer.baseAddress! + end).copyMemory(
                        from: name.baseAddress!, byteCount: name.count)
                }
                if end > start {
                    end -= 1
                    buffer[end] = 0x2F
                }
                current = parentColumn[current]
            }
        }
    }

    /// Where the last path `appendPath(of:to:siblings:)` built lies in its
    /// buffer, and whose child it was; valid for one buffer, while the
    /// index is unchanged.
    package struct SiblingPaths {
        fileprivate var parent = FileIndex.none
        fileprivate var prefix = 0..<0

        package init() {}

        fileprivate init(parent: UInt32, prefix: Range<Int>) {
            self.parent = parent
            self.prefix = prefix
        }
    }

    /// Appends the absolute path of `id`, copying its folder's part from
    /// the last path appended to `bytes` when that was a sibling's: matches
    /// come in id order, and a folder's entries lie together, so most
    /// paths of a long answer cost a copy and a name.
    package func appendPath(of id: UInt32, to bytes: inout [UInt8], siblings: inout SiblingPaths) {
        let parent = parentColumn[id]
        let start = bytes.count
        guard parent == siblings.parent, siblings.prefix.upperBound <= start else {
            appendPath(of: id, to: &bytes)
            siblings = SiblingPaths(parent: parent, prefix: start..<(bytes.count - bits(id).nameLength))
            return
        }
        let prefix = siblings.prefix
        bytes.append(contentsOf: repeatElement(0, count: prefix.count))
        bytes.withUnsafeMutableBytes { buffer in
            buffer.baseAddress!.advanced(by: start).copyMemory(
                from: buffer.baseAddress!.advanced(by: prefix.lowerBound), byteCount: prefix.count)
        }
        bytes.append(contentsOf: nameBytes(id))
    }

    /// The scope root above `id` (itself for a root).
    public func root(of id: EntryID) -> EntryID {
        var current = id.rawValue
        while !bits(current).isRoot {
            current = parentColumn[current]
        }
        return EntryID(current)
    }

    /// Calls `body` for every live entry, scope roots included, in id order.
    ///
    /// - Complexity: O(slots).
    public func forEachEntry(_ body: (EntryID) throws -> Void) rethrows {
        var base = 0
        while base < slotCount {
            let chunk = bitsColumn.chunk(base >> 16)
            let length = min(1 << 16, slotCount - base)
            for i in 0..<length where chunk[i] & 0x700 != 0 {
                try body(EntryID(UInt32(base + i)))
            }
            base += 1 << 16
        }
    }

    /// Bytes the index has allocated: columns, hash table, names and side tables.
    public var allocatedBytes: Int {
        var total = 0
        forEachColumn { total += $0.elementSize * chunkCount << 16 }
        total += (bucketMask + 1) * MemoryLayout<UInt32>.stride
        total += names.allocatedBytes
        total += signatures.allocatedBytes
        total += (largeSizes.capacity + largeInodes.capacity) * 24
        return total
    }
}
