package import MDQCore
import MDQSystem

/// One result's state as the client last saw it and as it is now.
package struct ItemChange {
    /// nil: the client does not have it.
    var before: MetadataItem?
    /// nil: it is no longer a result.
    package var after: MetadataItem?
    /// Known to have changed even if `before` and `after` look alike (when
    /// updates are merged, `before` is only known by its path).
    var forced = false
}

/// How the changes of one identity-keyed interval become one update that a
/// client can act on without losing anything.
package enum ResultDelta {
    /// The update taking a client from every `before` to every `after`, and
    /// the identities that took over another's current item.
    ///
    /// - An item that appears where another item was (at its last reported
    ///   path) is a change of that other item, never a removal plus an
    ///   addition: an atomic save (a temporary renamed over the file), a
    ///   delete and re-create, a folder replaced by a folder. The replaced
    ///   item keeps its identity with the new attributes; the arriving one,
    ///   if the client knew it, is removed at its old path. So no update
    ///   holds one path in both `removed` and `added`.
    /// - Changed items whose path changed carry the path the client last saw
    ///   (`previousPath`); removed items are the client's last view of them.
    /// - Order, the same in every run: `added` and `changed` by path (a
    ///   folder before what is inside it), `removed` by path reversed (what
    ///   is inside a folder before the folder).
    ///
    /// - Complexity: O(k log k) for k changed identities.
    package static func update(_ changes: [UInt64: ItemChange]) -> (update: ResultUpdate, transfers: [Transfer]) {
        var changes = changes
        var added: Set<UInt64> = []
        var changed: Set<UInt64> = []
        var removed: [UInt64] = []
        // Items now at a path they were not at: candidates to take the place
        // of a removed item.
        var arrivedAt: [[UInt8]: UInt64] = [:]
        for (id, change) in changes {
            switch (change.before, change.after) {
            case (nil, nil): continue
            case (nil, let after?):
                added.insert(id)
                arrivedAt[after.pathBytes] = id
            case (.some, nil):
                removed.append(id)
            case (let before?, let after?):
                if change.forced || !before.hasSameAttributes(as: after) { changed.insert(id) }
                if before.pathBytes != after.pathBytes { arrivedAt[after.pathBytes] = id }
            }
        }
        var transfers: [Transfer] = []
        var gone: [UInt64] = []
        // Deterministic whatever the dictionary order: by path.
        removed.sort { changes[$0]!.before!.pathBytes.lexicographicallyPrecedes(changes[$1]!.before!.pathBytes) }
        // A removed item and an added one that are the same file (inode and
        // birth time, which a rename keeps and a reused inode does not) moved
        // where nothing could pair the rename (a rescan, a restart): a change
        // of the item the client has, at its new path.
        var addedFiles: [FileIdentity: UInt64] = [:]
        for id in added.sorted() {
            if let key = FileIdentity(changes[id]!.after!) { addedFiles[key] = addedFiles[key] ?? id }
        }
        if !addedFiles.isEmpty {
            removed = removed.filter { moved in
                guard let key = FileIdentity(changes[moved]!.before!),
                    let arriving = addedFiles.removeValue(forKey: key)
                else { return true }
                changes[moved]!.after = changes[arriving]!.after!.withIdentity(moved)
                changes[arriving] = nil
                added.remove(arriving)
                arrivedAt[changes[moved]!.after!.pathBytes] = nil
                changed.insert(moved)
                transfers.append(Transfer(from: arriving, to: moved))
                return false
            }
        }
        var work = removed.reversed() as [UInt64]
        while let replaced = work.popLast() {
            let path = changes[replaced]!.before!.pathBytes
            guard let arriving = arrivedAt.removeValue(forKey: path), arriving != replaced,
                let item = changes[arriving]?.after
            else {
                gone.append(replaced)
                continue
            }
            // The item at `path` keeps its identity, with what is there now.
            changes[replaced]!.after = item.withIdentity(replaced)
            changed.insert(replaced)
            transfers.append(Transfer(from: arriving, to: replaced))
            if added.remove(arriving) != nil {
                changes[arriving] = nil
            } else {
                // It was a result elsewhere: gone from there.
                changed.remove(arriving)
                changes[arriving]!.after = nil
                work.append(arriving)
            }
        }
        func after(_ id: UInt64) -> MetadataItem { changes[id]!.after! }
        var update = ResultUpdate(
            added: added.map(after).sorted { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) },
            changed: changed.map(after).sorted { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) },
            removed: gone.map { changes[$0]!.before! }.sorted { $1.pathBytes.lexicographicallyPrecedes($0.pathBytes) })
        for id in changed {
            let change = changes[id]!
            if let before = change.before, before.pathBytes != change.after!.pathBytes {
                update.previousPathBytes[id] = before.pathBytes
            }
        }
        return (update, transfers)
    }

    /// What stays the same when a file is renamed: its inode, and its birth
    /// time (or, where the filesystem keeps none, its modification time and
    /// size), which tell it from a new file that reuses a freed inode.
    struct FileIdentity: Hashable {
        var inode: UInt64
        var kind: EntryKind
        var birth: Int64?
        var modification: Int64?
        var size: UInt64?

        init?(_ item: MetadataItem) {
            let metadata = item.metadata
            guard metadata.inode != 0, metadata.isStatted else { return nil }
            inode = metadata.inode
            kind = item.kind
            birth = metadata.birthTime?.nanosecondsSinceEpoch
            modification = birth == nil ? metadata.modificationTime?.nanosecondsSinceEpoch : nil
            size = birth == nil && item.kind != .folder ? metadata.size : nil
        }
    }

    /// The identity `to` now stands for the current item of `from`.
    package struct Transfer: Equatable {
        var from: UInt64
        var to: UInt64
    }

    /// Splits an update into updates of at most `limit` items each, in
    /// order: removals first, then changes, then additions.
    static func split(_ update: ResultUpdate, limit: Int) -> [ResultUpdate] {
        let total = update.added.count + update.changed.count + update.removed.count
        guard total > limit else { return total == 0 ? [] : [update] }
        var parts: [ResultUpdate] = []
        var current = ResultUpdate(added: [], changed: [], removed: [])
        var count = 0
        func take(_ item: MetadataItem, _ place: WritableKeyPath<ResultUpdate, [MetadataItem]>) {
            current[keyPath: place].append(item)
            if let previous = update.previousPathBytes[item.id] { current.previousPathBytes[item.id] = previous }
            count += 1
            if count == limit {
                parts.append(current)
                current = ResultUpdate(added: [], changed: [], removed: [])
                count = 0
            }
        }
        for item in update.removed { take(item, \.removed) }
        for item in update.changed { take(item, \.changed) }
        for item in update.added { take(item, \.added) }
        if count > 0 { parts.append(current) }
        return parts
    }

    /// What a run of updates did, per identity, from the first one's view
    /// to the last one's: for merging updates a slow reader has not taken.
    package static func collapse(_ updates: [ResultUpdate]) -> [UInt64: ItemChange] {
        var changes: [UInt64: ItemChange] = [:]
        for update in updates {
            for item in update.added {
                if changes[item.id] == nil { changes[item.id] = ItemChange(before: nil, after: item) }
                changes[item.id]!.after = item
            }
            for item in update.changed {
                if changes[item.id] == nil {
                    let before = update.previousPathBytes[item.id].map { item.replacingPath($0) } ?? item
                    changes[item.id] = ItemChange(before: before, after: item, forced: true)
                }
                changes[item.id]!.after = item
                changes[item.id]!.forced = true
            }
            for item in update.removed {
                if changes[item.id] == nil { changes[item.id] = ItemChange(before: item, after: nil) }
                changes[item.id]!.after = nil
            }
        }
        return changes
    }
}
