package import MDQCore
import MDQSystem
import SystemPackage

/// The results of a live query as its client sees them, and the changes
/// not yet delivered: pure bookkeeping, no I/O and no lock (the query
/// keeps it inside its own).
///
/// Two states are kept: the delivered one (`visible`, in the query's
/// order) and the current one, which differs only for the identities in
/// `overlay`. Engine messages update the current state; `takeUpdates`
/// delivers the difference (see `ResultDelta`) and makes it the delivered
/// state. Merging per file falls out of this: an item created and deleted
/// between two deliveries was never delivered and is not reported; an item
/// changed twice is one change.
///
/// Identities (`MetadataItem.id`) are the query's own, never reused; the
/// engine's entry ids (reused after removals) map to them.
package struct ResultSet {
    /// How engine snapshots become items.
    let factory: ItemFactory
    let descriptors: [MetadataSortDescriptor]

    /// The delivered results, in order.
    package private(set) var visible: [MetadataItem] = []
    /// Identity to position in `visible`; rebuilt on first use after a
    /// change that moved items.
    private var positions: [UInt64: Int]? = [:]
    /// The current results: engine entry to identity.
    private var identities: [UInt64: UInt64] = [:]
    /// Identities whose current state may differ from the delivered one.
    private var overlay: [UInt64: Current] = [:]
    private var nextIdentity: UInt64 = 1

    private struct Current {
        /// The engine entry, nil when the item is gone.
        var entry: UInt64?
        var item: MetadataItem?
    }

    package init(factory: ItemFactory, descriptors: [MetadataSortDescriptor]) {
        self.factory = factory
        self.descriptors = descriptors
    }

    /// Whether there are changes to deliver.
    package var hasPendingChanges: Bool { !overlay.isEmpty }

    /// The current results (delivered, with the pending changes applied),
    /// in no particular order.
    mutating func currentItems() -> [MetadataItem] {
        var items = visible.filter { overlay[$0.id] == nil }
        for current in overlay.values { if let item = current.item { items.append(item) } }
        return items
    }

    /// Makes the first results both current and delivered (gathering ends
    /// with them), in discovery order or sorted.
    ///
    /// - Complexity: O(n log n) when sorted, else O(n).
    package mutating func install(_ snapshots: [EntrySnapshot]) {
        identities.removeAll(keepingCapacity: true)
        overlay.removeAll()
        var items: [MetadataItem] = []
        items.reserveCapacity(snapshots.count)
        for snapshot in snapshots {
            let id = makeIdentity()
            identities[snapshot.entry] = id
            items.append(factory.item(snapshot, identity: id))
        }
        visible = items.sorted(by: descriptors)
        positions = nil
    }

    /// Records an engine message's changes in the current state.
    package mutating func apply(added: [EntrySnapshot], changed: [EntrySnapshot], removed: [UInt64]) {
        for entry in removed {
            if let id = identities.removeValue(forKey: entry) { overlay[id] = Current(entry: nil, item: nil) }
        }
        for snapshot in added + changed {
            let id: UInt64
            if let known = identities[snapshot.entry] {
                id = known
            } else {
                id = makeIdentity()
                identities[snapshot.entry] = id
            }
            overlay[id] = Current(entry: snapshot.entry, item: factory.item(snapshot, identity: id))
        }
    }

    /// Replaces the current state with a fresh snapshot (after the engine
    /// dropped messages for a subscriber that fell behind): what differs
    /// from the current state becomes pending changes. An entry keeps its
    /// identity when it is still the same file (inode) or at the same path.
    package mutating func resynchronize(_ snapshots: [EntrySnapshot]) {
        var fresh: [UInt64: UInt64] = [:]
        var kept: Set<UInt64> = []
        for snapshot in snapshots {
            var id: UInt64?
            if let known = identities[snapshot.entry], let old = currentItem(known),
                old.metadata.inode == snapshot.metadata.inode || old.pathBytes == snapshot.pathBytes
            {
                id = known
            }
            let identity = id ?? makeIdentity()
            fresh[snapshot.entry] = identity
            kept.insert(identity)
            let item = factory.item(snapshot, identity: identity)
            if let old = currentItem(identity), old.hasSameAttributes(as: item) { continue }
            overlay[identity] = Current(entry: snapshot.entry, item: item)
        }
        for id in identities.values where !kept.contains(id) {
            overlay[id] = Current(entry: nil, item: nil)
        }
        identities = fresh
    }

    /// Delivers the pending changes: returns them as updates of at most
    /// `limit` items (see `ResultDelta` for merging and order) and makes the
    /// current state the delivered one.
    ///
    /// - Complexity: O(k log k) for k changed results, plus O(n) when
    ///   results were removed or, for a sorted query, changed or added (the
    ///   visible array is rebuilt; inserts are merged in, not re-sorted).
    package mutating func takeUpdates(limit: Int) -> [ResultUpdate] {
        guard !overlay.isEmpty else { return [] }
        var changes: [UInt64: ItemChange] = [:]
        changes.reserveCapacity(overlay.count)
        for (id, current) in overlay {
            changes[id] = ItemChange(before: deliveredItem(id), after: current.item)
        }
        let (update, transfers) = ResultDelta.update(changes)
        for transfer in transfers {
            if let entry = overlay[transfer.from]?.entry { identities[entry] = transfer.to }
        }
        overlay.removeAll()
        deliver(update)
        return ResultDelta.split(update, limit: limit)
    }

    /// Makes an update the delivered state.
    private mutating func deliver(_ update: ResultUpdate) {
        let removed = Set(update.removed.map(\.id))
        if descriptors.isEmpty {
            // Unsorted: changed items stay in place, added ones go last.
            for item in update.changed {
                if let at = position(of: item.id) { visible[at] = item }
            }
            if !removed.isEmpty {
                visible.removeAll { removed.contains($0.id) }
                positions = nil
            }
            for item in update.added {
                positions?[item.id] = visible.count
                visible.append(item)
            }
        } else {
            // Sorted: take out what went or changed, then merge the changed
            // and added items in at their places.
            let changed = Set(update.changed.map(\.id))
            if !removed.isEmpty || !changed.isEmpty {
                visible.removeAll { removed.contains($0.id) || changed.contains($0.id) }
            }
            let incoming = (update.changed + update.added).sorted(by: descriptors)
            if !incoming.isEmpty { visible = Self.merge(incoming, into: visible, descriptors) }
            positions = nil
        }
    }

    /// The position of a delivered result.
    ///
    /// - Complexity: O(1), after an O(n) rebuild the first time following a
    ///   delivery that moved results.
    package mutating func position(of id: UInt64) -> Int? {
        if positions == nil {
            var table: [UInt64: Int] = [:]
            table.reserveCapacity(visible.count)
            for (i, item) in visible.enumerated() { table[item.id] = i }
            positions = table
        }
        return positions![id]
    }

    private mutating func deliveredItem(_ id: UInt64) -> MetadataItem? {
        position(of: id).map { visible[$0] }
    }

    private mutating func currentItem(_ id: UInt64) -> MetadataItem? {
        if let current = overlay[id] { return current.item }
        return deliveredItem(id)
    }

    private mutating func makeIdentity() -> UInt64 {
        defer { nextIdentity += 1 }
        return nextIdentity
    }

    /// `incoming` (sorted) merged into `sorted`, each new item after the
    /// equal ones already there.
    private static func merge(
        _ incoming: [MetadataItem], into sorted: [MetadataItem], _ descriptors: [MetadataSortDescriptor]
    ) -> [MetadataItem] {
        func precedes(_ a: MetadataItem, _ b: MetadataItem) -> Bool {
            for descriptor in descriptors {
                switch descriptor.compare(a, b) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return false
        }
        var result: [MetadataItem] = []
        result.reserveCapacity(sorted.count + incoming.count)
        var start = 0
        for item in incoming {
            // The first position in sorted[start...] whose element the item precedes.
            var low = start
            var high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if precedes(item, sorted[middle]) { high = middle } else { low = middle + 1 }
            }
            result += sorted[start..<low]
            result.append(item)
            start = low
        }
        result += sorted[start...]
        return result
    }
}

/// Builds a query's items from engine snapshots: the query's identity, and
/// the ubiquitous keys for items inside its container.
package struct ItemFactory: Sendable {
    /// Where the container and its external folders are, normalized once
    /// (not per item).
    let ubiquity: UbiquityContext?

    package init(container: UbiquityContainer?) {
        ubiquity = container.map { UbiquityContext(container: $0) }
    }

    func item(_ snapshot: EntrySnapshot, identity: UInt64) -> MetadataItem {
        var item = MetadataItem(
            serial: identity, pathBytes: snapshot.pathBytes, kind: snapshot.kind, metadata: snapshot.metadata,
            ubiquity: ubiquity?.ubiquity(ofPath: snapshot.pathBytes),
            hasUnresolvedConflicts: snapshot.hasUnresolvedConflicts,
            conflictOriginalPathBytes: snapshot.conflictOriginalPathBytes)
        item.importedValues = snapshot.imported
        return item
    }
}

extension MetadataItem {
    /// The item for an entry the index daemon reported (its attributes as
    /// the daemon's live index has them), with the ubiquitous keys when it
    /// lies in `container`: the same item a crawl's `MetadataItemReader`
    /// gives for that file.
    package init(daemonEntry entry: EntrySnapshot, container: UbiquityContainer?) {
        self = ItemFactory(container: container)
            .item(entry, identity: 0)
    }
}
