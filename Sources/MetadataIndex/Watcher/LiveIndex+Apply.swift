import Foundation
import SystemPackage

extension LiveIndex {
    /// Applies one batch of events, runs the crawls they call for, then
    /// hands the batch's changes to the observers.
    func applyBatch(_ first: [InotifyEvent]) {
        var events = first
        var crawls: [UInt32] = []
        var rescan = false
        var recover: Set<UInt32> = []
        lock.lock()
        index.beginQuarantine()
        while true {
            for event in events {
                apply(event, crawls: &crawls, rescan: &rescan, recover: &recover)
            }
            if pendingMoves.isEmpty { break }
            // A MOVED_FROM waits for its MOVED_TO, which may come in the next
            // read (up to 20 ms, watchman's settle time; the wait ends with
            // the next event); after that it is a move out of the scope.
            lock.unlock()
            let more = takeMoreEvents()
            lock.lock()
            guard let more, !more.isEmpty else { break }
            events = more
        }
        // Unmatched MOVED_FROM: moved out of the scope.
        for entry in pendingMoves.values where index.contains(EntryID(entry)) {
            removeEntry(entry)
        }
        pendingMoves.removeAll()
        entriesInFlight.removeAll()
        lock.unlock()

        var crawled: Set<UInt32> = []
        for folder in crawls where crawled.insert(folder).inserted {
            crawlFolder(folder)
        }
        if rescan {
            reconcileAll()
            let missing = lock.withLock { topRoots.filter { $0.value.missing }.map(\.key) }
            for root in missing { recoverRoot(root) }
        }
        for root in recover { recoverRoot(root) }
        cleanDirtyFolders(force: false)

        lock.lock()
        needsAudit = true
        dispatchChanges()
        index.endQuarantine()
        lock.unlock()
    }

    /// Hands the accumulated changes to every observer. Caller holds the lock.
    func dispatchChanges() {
        guard !changes.isEmpty else { return }
        let batch = changes
        changes = IndexChanges()
        for observer in observers.values { observer(batch) }
    }

    private func takeMoreEvents() -> [InotifyEvent]? {
        takeEvents(timeout: .milliseconds(20))
    }

    /// Applies one event. Caller holds the lock.
    private func apply(_ event: InotifyEvent, crawls: inout [UInt32], rescan: inout Bool, recover: inout Set<UInt32>) {
        if event.mask.contains(.queueOverflow) {
            rescan = true
            return
        }
        if let root = recoveryWatches[event.watch] {
            recover.insert(root)
            if event.mask.contains(.ignored) {
                recoveryWatches[event.watch] = nil
                topRoots[root]?.recoveryWatch = nil
            }
            if watchToFolder[event.watch] == nil { return }
        }
        guard let folder = watchToFolder[event.watch] else { return }
        if event.mask.contains(.ignored) {
            watchToFolder[event.watch] = nil
            if folderToWatch[folder] == event.watch { folderToWatch[folder] = nil }
            if topRoots[folder] != nil && !(topRoots[folder]?.missing ?? true) {
                rootGone(folder)
                recover.insert(folder)
            }
            return
        }
        if listing.contains(folder) {
            deferred[folder, default: []].append(event)
            return
        }
        guard index.contains(EntryID(folder)), index.kind(of: EntryID(folder)) == .folder else { return }
        if event.name.isEmpty {
            if event.mask.contains(.deleteSelf) || event.mask.contains(.moveSelf) {
                // An inner folder's fate is told by its parent's DELETE or
                // MOVED_FROM; a scope root has no parent in the index.
                if topRoots[folder] != nil {
                    rootGone(folder)
                    recover.insert(folder)
                }
            } else if event.mask.contains(.attributes) || event.mask.contains(.modify) {
                refreshItself(folder)
            }
            return
        }
        let name = event.name
        guard accepts(name, in: folder) else { return }
        let current = index.child(named: name, in: EntryID(folder))
        if event.mask.contains(.movedTo), let entry = pendingMoves.removeValue(forKey: event.cookie),
            entriesInFlight.remove(entry) != nil, index.contains(EntryID(entry))
        {
            if let current, current.rawValue != entry, entriesInFlight.remove(current.rawValue) != nil {
                removeEntry(current.rawValue)
            }
            moveEntry(entry, to: folder, name: name, crawls: &crawls)
            return
        }
        if let current, entriesInFlight.contains(current.rawValue) {
            // The name is reused while its old entry is still in flight: that
            // entry left (if its MOVED_TO comes, the destination is re-read).
            entriesInFlight.remove(current.rawValue)
            pendingMoves = pendingMoves.filter { $0.value != current.rawValue }
            removeEntry(current.rawValue)
        }
        if event.mask.contains(.movedFrom) {
            if let moving = index.child(named: name, in: EntryID(folder)) {
                pendingMoves[event.cookie] = moving.rawValue
                entriesInFlight.insert(moving.rawValue)
            }
            return
        }
        if event.mask.contains(.delete) {
            if let child = index.child(named: name, in: EntryID(folder)) { removeEntry(child.rawValue) }
            return
        }
        refresh(name, in: folder, crawls: &crawls)
    }

    /// Whether entries called `name` in `folder` belong in the index: not
    /// hidden (unless the root includes them), not an excluded child of a root.
    func accepts(_ name: [UInt8], in folder: UInt32) -> Bool {
        let root = index.root(of: EntryID(folder)).rawValue
        guard let info = topRoots[root] else { return true }
        if name.first == 0x2E && !info.includeHidden { return false }
        if folder == root && info.crawlRoot.excludedChildNames.contains(name) { return false }
        return true
    }

    func pathBytes(of id: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        index.appendPath(of: id, to: &bytes)
        return bytes
    }

    /// Whether the folder's path in the index still leads to that folder
    /// (same inode): false while a rename of an ancestor is not applied yet.
    func pathIsCurrent(_ folder: UInt32) -> Bool {
        guard case .success(let status) = FileStatus.of(pathBytes: pathBytes(of: folder)) else { return false }
        return status.kind == .folder && status.inode == index.metadata(of: EntryID(folder)).inode
    }

    /// Rescans dirty folders whose path is current again; with `force`, the
    /// roots of those that are not.
    func cleanDirtyFolders(force: Bool) {
        let (ready, roots) = lock.withLock { () -> ([UInt32], Set<UInt32>) in
            var ready: [UInt32] = []
            var roots: Set<UInt32> = []
            for folder in dirtyFolders {
                guard index.contains(EntryID(folder)), index.kind(of: EntryID(folder)) == .folder else {
                    dirtyFolders.remove(folder)
                    continue
                }
                if pathIsCurrent(folder) {
                    ready.append(folder)
                    dirtyFolders.remove(folder)
                } else if force {
                    roots.insert(index.root(of: EntryID(folder)).rawValue)
                    dirtyFolders.remove(folder)
                }
            }
            index.beginQuarantine()
            return (ready, roots)
        }
        for folder in ready { reconcile(folder: folder) }
        for root in roots { reconcile(root: root) }
        if force {
            lock.withLock {
                dispatchChanges()
                index.endQuarantine()
            }
        }
    }

    /// Re-reads `folder/name` from disk and makes the index agree.
    private func refresh(_ name: [UInt8], in folder: UInt32, crawls: inout [UInt32]) {
        var path = pathBytes(of: folder)
        if path.last != 0x2F { path.append(0x2F) }
        path += name
        let existing = index.child(named: name, in: EntryID(folder))
        let result = FileStatus.of(pathBytes: path)
        // The path is the index's idea of where the folder is; if an ancestor
        // was renamed and that is not applied yet, what it names is not ours.
        guard index.isRoot(EntryID(folder)) || pathIsCurrent(folder) else {
            dirtyFolders.insert(folder)
            return
        }
        switch result {
        case .failure(.noSuchFileOrDirectory), .failure(.notDirectory):
            if let existing { removeEntry(existing.rawValue) }
        case .failure:
            break
        case .success(let status):
            // Another kind, or another folder (inode) under the same name: the
            // old entry and its subtree are not what is there now.
            if let existing,
                index.kind(of: existing) != status.kind
                    || (status.kind == .folder && index.metadata(of: existing).inode != status.inode)
            {
                removeEntry(existing.rawValue)
            }
            let (id, outcome) = name.withUnsafeBytes {
                index.upsert(name: $0, in: EntryID(folder), metadata: EntryMetadata(status), device: status.device)
            }
            switch outcome {
            case .inserted:
                changes.added.insert(id.rawValue)
                noteConflictCopy(id.rawValue)
                if status.kind == .folder { crawls.append(id.rawValue) }
            case .updated(let changed):
                if changed { changes.changed.insert(id.rawValue) }
                if status.kind == .folder && folderToWatch[id.rawValue] == nil { crawls.append(id.rawValue) }
            }
        }
    }

    /// Re-reads a watched folder's own attributes.
    private func refreshItself(_ folder: UInt32) {
        guard !index.isRoot(EntryID(folder)) else { return }
        if case .success(let status) = FileStatus.of(pathBytes: pathBytes(of: folder)), status.kind == .folder {
            let before = index.metadata(of: EntryID(folder))
            index.update(EntryID(folder), metadata: EntryMetadata(status), device: status.device)
            if before != index.metadata(of: EntryID(folder)) { changes.changed.insert(folder) }
        }
    }

    /// A conflict copy appearing, going or being renamed changes whether
    /// the item it conflicts with has unresolved conflicts: report that
    /// item changed. Caller holds the lock.
    func noteConflictCopy(_ id: UInt32) {
        if let original = index.conflictOriginal(of: id) { changes.changed.insert(original) }
    }

    /// Removes an entry and its subtree, recording the removals and dropping
    /// the watches. Caller holds the lock.
    func removeEntry(_ id: UInt32) {
        noteConflictCopy(id)
        changes.removed.insert(id)
        if index.kind(of: EntryID(id)) == .folder {
            for descendant in index.descendants(of: EntryID(id)) { changes.removed.insert(descendant.rawValue) }
        }
        dropWatches(under: id)
        index.remove(EntryID(id))
    }

    private func moveEntry(_ entry: UInt32, to folder: UInt32, name: [UInt8], crawls: inout [UInt32]) {
        // The index can lag the disk (a folder's events wait while it is
        // listed), so a move that is impossible in the index (into its own
        // subtree, or over an ancestor) is applied as a removal and a fresh
        // look at the destination.
        var ancestor: EntryID? = EntryID(folder)
        var impossible = false
        while let current = ancestor {
            if current.rawValue == entry { impossible = true }
            ancestor = index.parent(of: current)
        }
        let occupant = index.child(named: name, in: EntryID(folder))
        if let occupant, occupant.rawValue != entry {
            var above = index.parent(of: EntryID(entry))
            while let current = above {
                if current == occupant { impossible = true }
                above = index.parent(of: current)
            }
        }
        if impossible {
            removeEntry(entry)
            refresh(name, in: folder, crawls: &crawls)
            return
        }
        if let occupant, occupant.rawValue != entry {
            removeEntry(occupant.rawValue)
        }
        noteConflictCopy(entry)
        index.move(EntryID(entry), to: EntryID(folder), name: name)
        noteConflictCopy(entry)
        changes.changed.insert(entry)
        // Verify against the disk: the index may lag, and a pairing made on a
        // stale view must not leave a wrong entry under the new name.
        refresh(name, in: folder, crawls: &crawls)
        guard index.child(named: name, in: EntryID(folder))?.rawValue == entry else { return }
        if index.kind(of: EntryID(entry)) == .folder {
            for descendant in index.descendants(of: EntryID(entry)) { changes.changed.insert(descendant.rawValue) }
            // A folder renamed between its parent's listing and its own
            // opening was never listed or watched: crawl it where it is now.
            if folderToWatch[entry] == nil && !listing.contains(entry) { crawls.append(entry) }
        }
    }

    /// A scope root disappeared: its contents are removed (and reported);
    /// the root entry stays, marked missing, until the folder returns.
    func rootGone(_ root: UInt32) {
        for child in index.children(of: EntryID(root)) { removeEntry(child.rawValue) }
        if let watch = folderToWatch.removeValue(forKey: root) {
            if watchToFolder[watch] == root { watchToFolder[watch] = nil }
            removeWatch(watch)
        }
        topRoots[root]?.missing = true
    }
}
