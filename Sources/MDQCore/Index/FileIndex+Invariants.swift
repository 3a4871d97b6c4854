import MDQSystem

extension FileIndex {
    /// Verifies every structural invariant of the index; traps on the first
    /// violation. O(entries): tests call it, and debug builds call it after
    /// removals and moves (insertions check only the entry they touch).
    public func _checkInvariants() {
        var live = 0
        var freeSlots = Set<UInt32>()
        var id = freeHead
        while id != Self.none {
            precondition(bits(id).isFree, "free list holds a live entry \(id)")
            precondition(freeSlots.insert(id).inserted, "free list has a cycle at \(id)")
            id = nextSiblingColumn[id]
        }
        for id in quarantine ?? [] {
            precondition(bits(id).isFree, "quarantine holds a live entry \(id)")
            precondition(freeSlots.insert(id).inserted, "slot \(id) both free and quarantined")
        }
        for raw in 0..<UInt32(slotCount) {
            let b = bits(raw)
            if b.isFree {
                precondition(freeSlots.contains(raw), "free slot \(raw) is not on the free list")
                continue
            }
            live += 1
            _checkEntryInvariants(raw)
            // Every child points back, and siblings link both ways.
            var previous = Self.none
            var child = firstChildColumn[raw]
            while child != Self.none {
                precondition(parentColumn[child] == raw, "child \(child) of \(raw) names another parent")
                precondition(previousSiblingColumn[child] == previous, "broken sibling links at \(child)")
                previous = child
                child = nextSiblingColumn[child]
            }
        }
        precondition(live == count, "count \(count) but \(live) live entries")
        precondition(live + freeSlots.count == slotCount, "slots leak")
        precondition(rootPaths.count == rootPaths.keys.filter { bits($0).isRoot }.count, "root table out of step")
    }

    /// Checks one entry: name, kind, parent link and hash reachability.
    func _checkEntryInvariants(_ id: UInt32) {
        let b = bits(id)
        precondition(!b.isFree, "entry \(id) is free")
        precondition(b.nameLength >= 1, "entry \(id) has an empty name")
        let name = nameBytes(id)
        precondition(b.isASCIIName == NameBytes.isASCII(name), "entry \(id) has a stale ASCII flag")
        let parent = parentColumn[id]
        if b.isRoot {
            precondition(parent == Self.none && rootPaths[id] != nil, "root \(id) is malformed")
            // Roots are found by path, not by name: two scopes may end in
            // the same name (two containers' `Documents`), so a lookup by
            // (none, name) may find the other; each is still hashed.
            precondition(isHashed(id), "root \(id) is missing from its hash chain")
        } else {
            precondition(lookup(name, in: parent) == id, "entry \(id) is not reachable by (parent, name)")
            precondition(parent != Self.none && !bits(parent).isFree, "entry \(id) has a dead parent")
            let parentKind = bits(parent).kind
            precondition(parentKind == .folder, "entry \(id) has a \(parentKind) for a parent")
            let previous = previousSiblingColumn[id]
            let linked = previous == Self.none ? firstChildColumn[parent] == id : nextSiblingColumn[previous] == id
            precondition(linked, "entry \(id) is missing from its parent's children")
        }
    }
}
