public import MDQSystem
public import SystemPackage

extension FileIndex {
    /// Adds a scope root: a folder known by its absolute path.
    ///
    /// Adding a path that is already a root returns the existing root.
    ///
    /// - Complexity: O(number of roots).
    @discardableResult
    public func addRoot(path: FilePath, metadata: EntryMetadata, device: DeviceNumber? = nil) -> EntryID {
        if let existing = rootPaths.first(where: { $0.value == path }) {
            return EntryID(existing.key)
        }
        var name: [UInt8] = path.lastComponent.map { FilePath(root: nil, [$0]).bytes } ?? [0x2F]
        if name.isEmpty || name.count > 255 { name = [0x2F] }
        let id = name.withUnsafeBytes { allocateEntry(name: $0, parent: Self.none, metadata: metadata, device: device) }
        var b = bits(id)
        b.isRoot = true
        bitsColumn[id] = b.rawValue
        rootPaths[id] = path
        #if MDQ_INVARIANTS
            _checkInvariants()
        #endif
        return EntryID(id)
    }

    /// Inserts the child `name` of `parent`, or updates it if it exists.
    ///
    /// Idempotent: applying the same creation twice leaves one entry. If the
    /// existing entry changes kind (a file replaced by a folder), its subtree
    /// is dropped.
    ///
    /// - Parameters:
    ///   - name: 1 to 255 raw bytes, no `/`.
    ///   - parent: a live folder or root.
    /// - Returns: the entry's id.
    /// - Complexity: O(1) expected; O(size of a replaced subtree).
    @discardableResult
    public func insert(
        name: UnsafeRawBufferPointer, in parent: EntryID, metadata: EntryMetadata, device: DeviceNumber? = nil
    ) -> EntryID {
        let existing = lookup(name, in: parent.rawValue)
        if existing != Self.none {
            if bits(existing).kind != metadata.kind { removeChildren(of: existing) }
            update(existing, metadata: metadata, device: device)
            return EntryID(existing)
        }
        let id = allocateEntry(name: name, parent: parent.rawValue, metadata: metadata, device: device)
        #if MDQ_INVARIANTS
            _checkEntryInvariants(id)
        #endif
        return EntryID(id)
    }

    /// Inserts the child `name` of `parent`, or updates it if it exists.
    @discardableResult
    public func insert(
        name: [UInt8], in parent: EntryID, metadata: EntryMetadata, device: DeviceNumber? = nil
    ) -> EntryID {
        name.withUnsafeBytes { insert(name: $0, in: parent, metadata: metadata, device: device) }
    }

    /// What `upsert` did.
    package enum UpsertOutcome: Equatable {
        case inserted
        /// The entry existed; `changed` when kind, size, times or inode differ.
        case updated(changed: Bool)
    }

    /// Inserts or updates the child `name` of `parent` and says which, for
    /// change reporting. Sets the reconciliation mark.
    package func upsert(
        name: UnsafeRawBufferPointer, in parent: EntryID, metadata: EntryMetadata, device: DeviceNumber?
    ) -> (EntryID, UpsertOutcome) {
        let existing = lookup(name, in: parent.rawValue)
        return upsert(
            existing == Self.none ? nil : EntryID(existing), name: name, in: parent, metadata: metadata,
            device: device)
    }

    /// `upsert` for a caller that looked the name up already: `found` is
    /// the child of `parent` called `name`, or nil when it has none (a
    /// folder being filled for the first time has none: no lookup at all).
    package func upsert(
        _ found: EntryID?, name: UnsafeRawBufferPointer, in parent: EntryID, metadata: EntryMetadata,
        device: DeviceNumber?
    ) -> (EntryID, UpsertOutcome) {
        guard let existing = found?.rawValue else {
            let id = allocateEntry(name: name, parent: parent.rawValue, metadata: metadata, device: device)
            setMark(id, true)
            return (EntryID(id), .inserted)
        }
        let old = self.metadata(of: EntryID(existing))
        let changed =
            old.kind != metadata.kind || old.size != metadata.size
            || old.modificationTime != metadata.modificationTime || old.inode != metadata.inode
            || old.birthTime != metadata.birthTime || old.access != metadata.access
        if old.kind != metadata.kind { removeChildren(of: existing) }
        update(existing, metadata: metadata, device: device)
        setMark(existing, true)
        return (EntryID(existing), .updated(changed: changed))
    }

    package func setMark(_ id: UInt32, _ on: Bool) {
        var b = bits(id)
        b.isMarked = on
        bitsColumn[id] = b.rawValue
    }

    package func isMarked(_ id: EntryID) -> Bool { bits(id.rawValue).isMarked }

    /// Calls `body` for every entry below `id` (not `id` itself), depth
    /// first, without building a list.
    package func forEachDescendant(of id: EntryID, _ body: (EntryID) -> Void) {
        var stack: [UInt32] = [id.rawValue]
        while let entry = stack.popLast() {
            var child = firstChildColumn[entry]
            while child != Self.none {
                body(EntryID(child))
                if firstChildColumn[child] != Self.none { stack.append(child) }
                child = nextSiblingColumn[child]
            }
        }
    }

    /// Every entry of the subtree below `id` (not `id` itself), depth first.
    func descendants(of id: EntryID) -> [EntryID] {
        var result: [EntryID] = []
        forEachDescendant(of: id) { result.append($0) }
        return result
    }

    /// Turns a scope root into an ordinary child of `parent` named `name`:
    /// used when a new, larger scope contains an existing one, so the
    /// existing entries (and their ids and watches) are kept.
    package func graft(root: EntryID, into parent: EntryID, name: UnsafeRawBufferPointer) {
        let raw = root.rawValue
        precondition(bits(raw).isRoot && lookup(name, in: parent.rawValue) == Self.none, "graft of a non-root")
        unlinkFromHash(raw)
        var b = bits(raw)
        b.isRoot = false
        bitsColumn[raw] = b.rawValue
        replaceName(of: raw, with: name)
        rootPaths[raw] = nil
        parentColumn[raw] = parent.rawValue
        linkIntoParent(raw)
        linkIntoHash(raw)
        #if MDQ_INVARIANTS
            _checkInvariants()
        #endif
    }

    /// Inserts a child known not to exist yet (its parent had no children
    /// when the caller began filling it), skipping the lookup. The crawler's
    /// fresh folders use this; anything else must use `insert`.
    func insertNew(
        name: UnsafeRawBufferPointer, in parent: EntryID, metadata: EntryMetadata, device: DeviceNumber?
    ) -> EntryID {
        let id = allocateEntry(name: name, parent: parent.rawValue, metadata: metadata, device: device)
        #if MDQ_INVARIANTS
            _checkEntryInvariants(id)
        #endif
        return EntryID(id)
    }

    /// Whether the folder has no children.
    package func hasNoChildren(_ id: EntryID) -> Bool {
        firstChildColumn[id.rawValue] == Self.none
    }

    /// Replaces the entry's metadata (kind, size, times, inode).
    public func update(_ id: EntryID, metadata: EntryMetadata, device: DeviceNumber? = nil) {
        update(id.rawValue, metadata: metadata, device: device)
    }

    /// Removes an entry and its whole subtree.
    ///
    /// - Returns: how many entries were removed.
    /// - Complexity: O(size of the subtree).
    @discardableResult
    public func remove(_ id: EntryID) -> Int {
        let raw = id.rawValue
        precondition(contains(id), "remove of a dead entry")
        unlinkFromHash(raw)
        unlinkFromParent(raw)
        let removed = freeSubtree(raw)
        #if MDQ_INVARIANTS
            _checkInvariants()
        #endif
        return removed
    }

    /// Removes every child of a folder (and their subtrees).
    @discardableResult
    public func removeChildren(of id: EntryID) -> Int {
        removeChildren(of: id.rawValue)
    }

    /// Moves and/or renames an entry; its subtree follows unchanged.
    ///
    /// An entry already at the destination is replaced (removed with its
    /// subtree), as `rename(2)` replaces it; it must not be an ancestor of
    /// `id` (`rename(2)` refuses that too).
    ///
    /// - Parameters:
    ///   - id: the entry; not a scope root.
    ///   - newParent: a live folder or root outside `id`'s own subtree.
    ///   - newName: 1 to 255 raw bytes.
    /// - Complexity: O(depth of `newParent`) plus the size of a replaced subtree.
    public func move(_ id: EntryID, to newParent: EntryID, name newName: UnsafeRawBufferPointer) {
        let raw = id.rawValue
        precondition(contains(id) && contains(newParent) && !bits(raw).isRoot, "move of a dead entry or a root")
        var ancestor = newParent.rawValue
        while ancestor != Self.none {
            precondition(ancestor != raw, "cannot move an entry into its own subtree")
            ancestor = parentColumn[ancestor]
        }
        let occupant = lookup(newName, in: newParent.rawValue)
        if occupant == raw { return }
        if occupant != Self.none {
            var above = parentColumn[raw]
            while above != Self.none {
                precondition(above != occupant, "cannot move an entry over one of its own ancestors")
                above = parentColumn[above]
            }
            unlinkFromHash(occupant)
            unlinkFromParent(occupant)
            freeSubtree(occupant)
        }
        unlinkFromHash(raw)
        unlinkFromParent(raw)
        let oldName = nameBytes(raw)
        if oldName.count != newName.count
            || !NameBytes.equal(oldName.baseAddress!, newName.baseAddress!, count: newName.count)
        {
            replaceName(of: raw, with: newName)
        }
        parentColumn[raw] = newParent.rawValue
        linkIntoParent(raw)
        linkIntoHash(raw)
        // The folders above it, and so who may reach it, changed.
        accessGeneration &+= 1
        #if MDQ_INVARIANTS
            _checkInvariants()
        #endif
    }

    /// Stores a new name for a live entry (the old span goes back to the
    /// arena) and drops what was derived from the old one.
    private func replaceName(of raw: UInt32, with name: UnsafeRawBufferPointer) {
        var b = bits(raw)
        names.release(offset: nameOffsetColumn[raw], length: b.nameLength)
        nameGrams?.released(raw, length: b.nameLength)
        nameOffsetColumn[raw] = names.store(name)
        b.nameLength = name.count
        b.isASCIIName = NameBytes.isASCII(name)
        b.hasSignature = false
        bitsColumn[raw] = b.rawValue
        nameGrams?.stored(raw, name: name, isASCII: b.isASCIIName)
        generation &+= 1
    }

    /// Moves and/or renames an entry; see `move(_:to:name:)`.
    public func move(_ id: EntryID, to newParent: EntryID, name newName: [UInt8]) {
        newName.withUnsafeBytes { move(id, to: newParent, name: $0) }
    }

    // MARK: Internals

    func allocateEntry(
        name: UnsafeRawBufferPointer, parent: UInt32, metadata: EntryMetadata, device: DeviceNumber?
    ) -> UInt32 {
        precondition(name.count > 0 && name.count <= 255, "entry names are 1 to 255 bytes")
        let id: UInt32
        if freeHead != Self.none {
            id = freeHead
            freeHead = nextSiblingColumn[id]
            // Another entry in this slot: another identity. Freed slots are
            // quarantined until every subscriber heard of the removal, so
            // the removed entry's identity was told under its own number.
            incarnationColumn[id] = (incarnationColumn[id] &+ 1) & Self.incarnationMask
        } else {
            precondition(slotCount < Int(Self.none), "index full")
            id = UInt32(slotCount)
            slotCount += 1
            reserveColumns(through: Int(id))
        }
        var b = EntryBits(rawValue: 0)
        b.nameLength = name.count
        b.isASCIIName = NameBytes.isASCII(name)
        bitsColumn[id] = b.rawValue
        nameOffsetColumn[id] = names.store(name)
        nameGrams?.stored(id, name: name, isASCII: b.isASCIIName)
        generation &+= 1
        parentColumn[id] = parent
        firstChildColumn[id] = Self.none
        nextSiblingColumn[id] = Self.none
        previousSiblingColumn[id] = Self.none
        count += 1
        update(id, metadata: metadata, device: device)
        if parent != Self.none { linkIntoParent(id) }
        linkIntoHash(id)
        if count > 2 * (bucketMask + 1) { growBuckets() }
        return id
    }

    private func reserveColumns(through index: Int) {
        while index >= chunkCount << 16 {
            let chunk = chunkCount
            forEachColumn { $0.addChunk(chunk) }
            chunkCount += 1
        }
    }

    package func update(_ id: UInt32, metadata: EntryMetadata, device: DeviceNumber?) {
        var b = bits(id)
        if collectsRemovedFiles, let old = fileKey(id, b) {
            // Replaced by another file under the same name (an atomic save).
            let device = device.map { b.deviceIndex == deviceIndex(for: $0) } ?? true
            if !device || old.inode != metadata.inode || metadata.kind != .file { removedFiles.append(old) }
        }
        b.kindRawValue = metadata.kind.rawValue
        if b.hasLargeSize { largeSizes[id] = nil }
        if b.hasLargeInode { largeInodes[id] = nil }
        let size = metadata.size ?? 0
        b.hasLargeSize = metadata.kind != .folder && size >= UInt64(UInt32.max)
        let number = metadata.access.map(accessNumber) ?? 0
        if b.kind == .folder && b.isStatted && accessColumn[id] != number {
            // Who may list what it holds changed.
            accessChanges.append(id)
            accessGeneration &+= 1
        }
        accessColumn[id] = number
        if metadata.kind == .folder {
            sizeColumn[id] = 0
        } else if b.hasLargeSize {
            largeSizes[id] = size
            sizeColumn[id] = UInt32.max
        } else {
            sizeColumn[id] = UInt32(size)
        }
        b.hasLargeInode = metadata.inode > UInt64(UInt32.max)
        if b.hasLargeInode {
            largeInodes[id] = metadata.inode
            inodeColumn[id] = 0
        } else {
            inodeColumn[id] = UInt32(metadata.inode)
        }
        b.isStatted = metadata.modificationTime != nil
        modificationColumn[id] = metadata.modificationTime?.nanosecondsSinceEpoch ?? 0
        b.hasBirthTime = metadata.birthTime != nil
        birthColumn[id] = metadata.birthTime?.nanosecondsSinceEpoch ?? 0
        if let device { b.deviceIndex = deviceIndex(for: device) }
        bitsColumn[id] = b.rawValue
    }

    /// A small index for a device number; the 255th and later devices share
    /// the last slot (only `stayOnFileSystem` reads it, from fresh stats).
    func deviceIndex(for device: DeviceNumber) -> Int {
        if let index = deviceIndexes[device] { return index }
        let index = min(devices.count, 255)
        if devices.count < 256 {
            devices.append(device)
            deviceIndexes[device] = index
        }
        return index
    }

    @discardableResult
    func removeChildren(of id: UInt32) -> Int {
        var removed = 0
        var child = firstChildColumn[id]
        while child != Self.none {
            let next = nextSiblingColumn[child]
            unlinkFromHash(child)
            removed += freeSubtree(child)
            child = next
        }
        firstChildColumn[id] = Self.none
        #if MDQ_INVARIANTS
            _checkInvariants()
        #endif
        return removed
    }

    /// Frees `id` and everything below it. `id` must already be unlinked from
    /// its parent and the hash table; descendants are unlinked here.
    @discardableResult
    func freeSubtree(_ id: UInt32) -> Int {
        var stack: [UInt32] = [id]
        var removed = 0
        while let entry = stack.popLast() {
            var child = firstChildColumn[entry]
            while child != Self.none {
                stack.append(child)
                child = nextSiblingColumn[child]
            }
            if entry != id { unlinkFromHash(entry) }
            freeSlot(entry)
            removed += 1
        }
        return removed
    }

    private func freeSlot(_ id: UInt32) {
        let b = bits(id)
        if collectsRemovedFiles, let key = fileKey(id, b) { removedFiles.append(key) }
        names.release(offset: nameOffsetColumn[id], length: b.nameLength)
        nameGrams?.released(id, length: b.nameLength)
        generation &+= 1
        if b.hasLargeSize { largeSizes[id] = nil }
        if b.hasLargeInode { largeInodes[id] = nil }
        if b.isRoot { rootPaths[id] = nil }
        bitsColumn[id] = 0
        parentColumn[id] = Self.none
        firstChildColumn[id] = Self.none
        previousSiblingColumn[id] = Self.none
        hashNextColumn[id] = Self.none
        count -= 1
        if quarantine != nil {
            nextSiblingColumn[id] = Self.none
            quarantine!.append(id)
        } else {
            nextSiblingColumn[id] = freeHead
            freeHead = id
        }
    }

    /// Starts holding freed ids back from reuse.
    package func beginQuarantine() {
        if quarantine == nil { quarantine = [] }
    }

    /// Lets ids freed since `beginQuarantine` be reused.
    package func endQuarantine() {
        guard let held = quarantine else { return }
        quarantine = nil
        for id in held {
            nextSiblingColumn[id] = freeHead
            freeHead = id
        }
    }

    func linkIntoParent(_ id: UInt32) {
        let parent = parentColumn[id]
        let head = firstChildColumn[parent]
        nextSiblingColumn[id] = head
        previousSiblingColumn[id] = Self.none
        if head != Self.none { previousSiblingColumn[head] = id }
        firstChildColumn[parent] = id
    }

    private func unlinkFromParent(_ id: UInt32) {
        let parent = parentColumn[id]
        guard parent != Self.none else { return }
        let previous = previousSiblingColumn[id]
        let next = nextSiblingColumn[id]
        if previous != Self.none {
            nextSiblingColumn[previous] = next
        } else {
            firstChildColumn[parent] = next
        }
        if next != Self.none { previousSiblingColumn[next] = previous }
        nextSiblingColumn[id] = Self.none
        previousSiblingColumn[id] = Self.none
    }

    private func bucket(of id: UInt32) -> Int {
        Int(truncatingIfNeeded: NameBytes.hash(parent: parentColumn[id], name: nameBytes(id))) & bucketMask
    }

    func linkIntoHash(_ id: UInt32) {
        let slot = bucket(of: id)
        hashNextColumn[id] = buckets[slot]
        buckets[slot] = id
    }

    /// Whether the entry is on the hash chain its (parent, name) leads to.
    func isHashed(_ id: UInt32) -> Bool {
        var current = buckets[bucket(of: id)]
        while current != Self.none && current != id { current = hashNextColumn[current] }
        return current == id
    }

    func unlinkFromHash(_ id: UInt32) {
        let slot = bucket(of: id)
        var current = buckets[slot]
        if current == id {
            buckets[slot] = hashNextColumn[id]
        } else {
            while current != Self.none {
                let next = hashNextColumn[current]
                if next == id {
                    hashNextColumn[current] = hashNextColumn[id]
                    break
                }
                current = next
            }
        }
        hashNextColumn[id] = Self.none
    }

    /// Doubles the bucket array (load factor kept at or below 2).
    private func growBuckets() {
        let newCount = (bucketMask + 1) * 2
        buckets.deallocate()
        buckets = RandomAccessMemory.allocate(UInt32.self, capacity: newCount)
        bucketMask = newCount - 1
        relinkHashChains()
    }

    /// Empties the buckets and links every live entry into its name's
    /// chain again, in id order.
    ///
    /// Every name's bucket is computed first, then the entries linked in
    /// a loop of a few instructions: its reads of the buckets fall at
    /// random and miss the cache, and only a short loop lets the processor
    /// have many of them under way at once (walking the chains instead
    /// waits for a miss at every link; hashing between the reads keeps two
    /// or three under way).
    ///
    /// - Complexity: O(slots), and 4 bytes per slot for the moment.
    func relinkHashChains() {
        buckets.initialize(repeating: Self.none, count: bucketMask + 1)
        let slots = UInt32(slotCount)
        let bucketOf = UnsafeMutablePointer<UInt32>.allocate(capacity: max(1, slotCount))
        defer { bucketOf.deallocate() }
        for id in 0..<slots {
            // Free slots are marked with a bucket past the last.
            bucketOf[Int(id)] = bits(id).isFree ? UInt32.max : UInt32(truncatingIfNeeded: bucket(of: id))
        }
        for id in 0..<slots {
            let slot = bucketOf[Int(id)]
            guard slot != UInt32.max else { continue }
            hashNextColumn[id] = buckets[Int(slot)]
            buckets[Int(slot)] = id
        }
    }
}
