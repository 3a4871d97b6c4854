package import MDQCore
import MDQLive
package import MDQSystem
package import MDQWatch
import SystemPackage

/// A top-level root of the engine's index: one crawled folder tree.
struct EngineRoot {
    package var path: FilePath
    /// What the crawl covers: the union of the rules of every scope using
    /// the root (it only ever grows while the root lives).
    var rules: ScopeRules
    package var device: DeviceNumber
    var inode: UInt64
    /// Scopes of subscriptions that use this root.
    var users: Int
    /// The folder itself is gone; a watch on its nearest existing
    /// ancestor waits for it to return.
    var missing = false
    var recoveryWatch: WatchID?
    /// Its first crawl is under way: what it holds is not complete yet.
    var gathering = false
    /// Names first (`LiveEngine.retain(_:namesFirst:)`): its names are all
    /// in, and watched, but the sizes and dates of its files are still
    /// being read (`LiveEngine.fill`). Queries on names and kinds answer;
    /// one that needs the rest is declined meanwhile, and a subscription
    /// waits, as for a crawl.
    var filling = false
    /// Restored from a snapshot saved before its fill ended: some files'
    /// sizes and dates are unread until the check against the disk reads
    /// them (`LiveEngine.verify`). Queries that need them are declined as
    /// during a fill; nothing waits for it.
    var unreadUntilVerified = false
    /// Whether some of its files' sizes and dates are not read yet.
    var lacksAttributes: Bool { filling || unreadUntilVerified }
    /// Whether a crawl of it is under way that others must wait for
    /// (its first gather, or the fill of its files' attributes).
    var isBusy: Bool { gathering || filling }

    /// Whether the crawl of this root lists the folder at `path` by its
    /// rules (the root itself, or a folder inside it that the rules descend
    /// into). `EngineState.lists(_:in:)` also leaves out what lies on
    /// another filesystem when the root stays on its own.
    func lists(_ folder: FilePath) -> Bool {
        guard folder.starts(with: path) else { return false }
        let names = folder.components.dropFirst(path.components.count).map { FilePath(root: nil, [$0]).bytes }
        guard let last = names.last else { return true }
        return rules.admits(path: names) && rules.descends(into: last)
            && !rules.excludesContents(ofFolderAt: folder.bytes)
    }
}

/// Where a subscription's scope sits in the index.
struct Anchor: Sendable {
    /// The scope folder's entry (a root, or a folder inside one).
    var entry: EntryID
    package var path: FilePath
    var rules: ScopeRules
}

/// Which folders open onto a scope (`EngineState.isInScope(_:anchors:walk:)`),
/// remembered while one lock is held: by folder and anchor.
struct ScopeWalk {
    var opens: [UInt64: Bool] = [:]

    static func key(_ folder: UInt32, _ anchor: Int) -> UInt64 { UInt64(anchor) << 32 | UInt64(folder) }
}

/// A subscription as the engine keeps it.
final class SubscriptionRecord {
    let mailbox: Subscription
    package var anchors: [Anchor]
    let predicate: CompiledPredicate
    let evaluator: PredicateEvaluator
    /// The container, for a predicate on the ubiquitous keys.
    let ubiquity: UbiquityContext?
    /// The entries the subscriber was last told match.
    var members = EntrySet()
    /// The problems it was last told about.
    var problems: [EngineProblem] = []
    /// The query's budget in seconds, for its scans and each batch of changes.
    var budget = QueryLimit.defaultSeconds
    /// Set once the query went past its budget: it is ended, takes no more
    /// changes, and keeps this problem first in its list.
    var failure: EngineProblem?
    /// While the first scan runs in slices (`LiveEngine.subscribe`): the
    /// first slot id not scanned yet. Changes to ids below it update
    /// `pending` (the first snapshot being built); ids from it on are left
    /// to the scan, which meets them as they are then. Nil once the first
    /// snapshot is posted.
    var scanCursor: Int?
    /// The first snapshot being built, by entry id.
    var pending: [UInt32: EntrySnapshot] = [:]
    /// The imported attributes its snapshots carry (`EntrySnapshot.imported`).
    var fetching: Set<MetadataAttribute> = []
    /// The user the system index serves it to: only entries that user may
    /// see are members (`Viewer`).
    var viewer: Viewer?

    package init(mailbox: Subscription, anchors: [Anchor], predicate: CompiledPredicate, ubiquity: UbiquityContext?) {
        self.mailbox = mailbox
        self.anchors = anchors
        self.predicate = predicate
        self.evaluator = predicate.makeEvaluator()
        self.ubiquity = predicate.requirements.contains(.ubiquity) ? ubiquity : nil
    }

    /// The per-batch context the predicate needs (ubiquity, conflicts,
    /// what is imported from files, as the viewer may read them), or nil
    /// when it reads none of them.
    func makeContext(content: ContentIndexer?) -> IndexSubject.Context? {
        IndexSubject.Context.needed(by: predicate, ubiquity: ubiquity, content: content, reader: viewer)
    }
}

/// Why a folder of the index is not fully live.
enum FolderProblem: Equatable {
    /// It could not be opened or listed (permissions): retried when its
    /// entry changes (its attributes, after a chmod, say), never on a timer.
    case unreadable(Errno)
    /// It was listed but could not be watched (`ENOSPC`: the watch limit).
    case unwatchable(Errno)
}

/// Everything the live engine keeps, guarded by the engine's lock: the
/// index, the watches, the roots, events held back, subscriptions and the
/// changes not yet told to them. Not thread-safe; reached only through
/// `LiveEngine.state.withLock`.
///
/// Methods here run with the lock held: they may stat (one entry or
/// folder) but never crawl, never wait for the watcher thread, and never
/// call client code.
package final class EngineState {
    package let index: FileIndex
    var watchToFolder: [WatchID: UInt32] = [:]
    var folderToWatch: [UInt32: WatchID] = [:]
    /// A watch taken over by another entry (the same folder crawled again
    /// as a new entry, inotify and fanotify giving the same watch): the
    /// entry it had before, which gets it back if the newer one goes.
    var earlierWatchOwner: [WatchID: UInt32] = [:]
    /// Folders being listed; their changes wait in `deferred` until the
    /// listing is in the index.
    var listing: Set<UInt32> = []
    var deferred: [UInt32: [FolderChange]] = [:]
    var roots: [UInt32: EngineRoot] = [:]
    var recoveryWatches: [WatchID: UInt32] = [:]
    /// Processes following the events applied under a folder (`EventFollower`).
    var followers: [ObjectIdentifier: EventFollower] = [:]
    /// The handle a follower knows a watched folder by (the watcher's).
    var followHandle: (@Sendable (WatchID) -> [UInt8]?)?
    /// Changes may be older than what the index holds for their name (a
    /// lagging stream, a kernel that merges events out of order:
    /// `FolderWatcher.eventsNeedVerifying`): deletions and moves are
    /// checked against the disk before they are applied.
    var verifiesEvents = false
    /// What each follower's viewer may reach, for the batch being applied.
    var followerVisibility: [ObjectIdentifier: Visibility] = [:]
    /// The entry of each follower's folder.
    var followerStarts: [ObjectIdentifier: EntryID] = [:]
    /// Folders whose path in the index was stale when an event needed it
    /// (a rename of an ancestor not applied yet), or that a crawl found
    /// replaced at their name: rescanned once their path is current again;
    /// when the engine is idle and it is not, the nearest folder above whose
    /// path is current is rescanned (`LiveEngine.cleanDirtyFolders`).
    var dirtyFolders: Set<UInt32> = []
    /// Folders whose own attributes changed (an entry came or went inside
    /// them): re-read at the end of the batch, once each.
    var touchedFolders: Set<UInt32> = []
    var folderProblems: [UInt32: FolderProblem] = [:] {
        didSet { problemsChanged = true }
    }
    var problemsChanged = false
    var changes = IndexChanges()
    /// The daemon's content indexer, when it imports: told of every batch
    /// of changes, and where queries read imported attributes.
    package var content: ContentIndexer?
    /// Changes were applied since the last audit.
    var needsAudit = false
    /// Some folder was refused a watch for lack of watches (`ENOSPC`):
    /// tried again at `nextWatchRetry` (`LiveEngine.retryUnwatchedFolders`).
    var lacksWatches = false
    var nextWatchRetry = ContinuousClock.now
    /// Full rescans done (after overflows); for tests and stats.
    package var rescanCount = 0
    /// Folders rescanned after their events were folded (`EventQueue`).
    var foldedRescans = 0
    /// Batches of changes dispatched so far (a daemon saves its snapshot
    /// when this moved).
    var changeCount = 0
    /// Every dispatched batch's tick, and the journal of what each touched
    /// (`ChangeClock`): what a subscriber resumes from.
    var clock = ChangeClock()
    var subscriptions: [UInt64: SubscriptionRecord] = [:]
    var nextSubscription: UInt64 = 1
    /// Removes a watch (queued to the watcher thread; never waits).
    let removeWatch: (WatchID) -> Void

    /// Restored roots not yet checked against the disk: their entries may
    /// be stale and they have no watches until `LiveEngine.verify()`.
    var unverifiedRoots: Set<UInt32> = []
    /// Whether a thread keeps the name trigrams built (`keepNameGrams`).
    var keepsNameGrams = false

    package init(index: FileIndex = FileIndex(), removeWatch: @escaping (WatchID) -> Void) {
        self.index = index
        self.removeWatch = removeWatch
        // Freed ids are held back until every subscriber has been told of
        // their removal (`releaseRemovedIDs`), so an id never stands for two
        // entries in one message.
        index.beginQuarantine()
    }

    // MARK: Paths and rules

    func pathBytes(of id: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        index.appendPath(of: id, to: &bytes)
        return bytes
    }

    /// Whether the folder's path in the index still leads to that folder
    /// (the same file): false while a rename of an ancestor is not applied
    /// yet.
    func pathIsCurrent(_ folder: UInt32) -> Bool {
        guard case .success(let status) = FileStatus.of(pathBytes: pathBytes(of: folder)) else { return false }
        return status.kind == .folder && Self.isSameFile(index.metadata(of: EntryID(folder)), status)
    }

    /// Whether `status` is the file `metadata` was read from: the same
    /// inode, born at the same time where both times are known. ext4 gives
    /// a removed folder's inode number to the next one made (`rm -rf d;
    /// mkdir d` keeps the number): the birth time tells them apart.
    static func isSameFile(_ metadata: EntryMetadata, _ status: FileStatus) -> Bool {
        isSameFile(metadata, inode: status.inode, birth: status.birthTime)
    }

    private static func isSameFile(_ metadata: EntryMetadata, inode: UInt64, birth: Timestamp?) -> Bool {
        guard metadata.inode == inode else { return false }
        guard let before = metadata.birthTime, let birth else { return true }
        return before == birth
    }

    /// Whether two statted entries of the index are the same file (as
    /// `isSameFile`).
    func areSameFile(_ a: EntryID, _ b: EntryID) -> Bool {
        let (first, second) = (index.metadata(of: a), index.metadata(of: b))
        return first.inode != 0 && index.kind(of: a) == index.kind(of: b)
            && Self.isSameFile(first, inode: second.inode, birth: second.birthTime)
    }

    /// The path of `name` inside `folder`, as the index has the folder.
    func pathBytes(of name: [UInt8], in folder: UInt32) -> [UInt8] {
        var path = pathBytes(of: folder)
        if path.last != 0x2F { path.append(0x2F) }
        return path + name
    }

    /// The rules of the root `id` lies in.
    func rules(at id: UInt32) -> ScopeRules {
        roots[index.root(of: EntryID(id)).rawValue]?.rules ?? ScopeRules()
    }

    /// Whether a folder of the index has its contents in the index (not a
    /// folder whose name the rules exclude).
    func descends(into folder: UInt32) -> Bool {
        if index.isRoot(EntryID(folder)) { return true }
        if isMountedElsewhere(folder) { return false }
        let rules = rules(at: folder)
        return index.withName(of: EntryID(folder)) { rules.descends(into: $0, path: { pathBytes(of: folder) }) }
    }

    /// Whether `folder` is where another filesystem is mounted, in a root
    /// that stays on its own (the system index's scopes): the mounted
    /// filesystem is its own root's, so this root neither lists nor
    /// watches the folder (its watch would be that root's top folder's).
    func isMountedElsewhere(_ folder: UInt32) -> Bool {
        guard let device = index.folderDevice(of: EntryID(folder)),
            let root = roots[index.root(of: EntryID(folder)).rawValue], root.rules.stayOnFileSystem
        else { return false }
        return device != root.device
    }

    /// Whether the root `id` lists the folder at `path`: by its rules, and,
    /// when it stays on its filesystem, with no folder on the way that
    /// another filesystem is mounted on (read from the index, never from
    /// the disk: the path may be a user's).
    func lists(_ path: FilePath, in id: UInt32) -> Bool {
        guard let root = roots[id], root.lists(path) else { return false }
        guard root.rules.stayOnFileSystem, index.contains(EntryID(id)) else { return true }
        var current = EntryID(id)
        for component in path.components.dropFirst(root.path.components.count) {
            guard let child = index.child(named: FilePath(root: nil, [component]).bytes, in: current) else {
                return true
            }
            if isMountedElsewhere(child.rawValue) { return false }
            current = child
        }
        return true
    }

    /// Whether entries called `name` in `folder` belong in the index.
    func accepts(_ name: [UInt8], in folder: UInt32) -> Bool {
        let root = index.root(of: EntryID(folder)).rawValue
        guard let info = roots[root] else { return true }
        guard
            folder == root
                || index.withName(
                    of: EntryID(folder), { info.rules.descends(into: $0, path: { pathBytes(of: folder) }) })
        else {
            return false
        }
        return info.rules.admits(name, isRootChild: folder == root)
    }

    // MARK: Applying changes

    /// Applies one change. `crawls` collects folders to crawl (new, moved
    /// in, or to retry) once the lock is released.
    package func apply(_ change: FolderChange, crawls: inout [UInt32], rescan: inout Bool, recover: inout Set<UInt32>) {
        if case .overflow = change {
            // A folder's overflow is taken by `LiveEngine.applyBatch`; one
            // of a folder not known, or of everything, rescans.
            rescan = true
            return
        }
        // A change on the watch of a missing root's ancestor: look for the
        // root again.
        for watch in recoveryWatches.isEmpty ? [] : change.watches {
            guard let root = recoveryWatches[watch] else { continue }
            recover.insert(root)
            if case .unwatched = change {
                recoveryWatches[watch] = nil
                roots[root]?.recoveryWatch = nil
            }
        }
        // Ends in folders not watched (any more) are not this engine's: a
        // move with one such end is half a move.
        guard let known = change.rewatched({ watchToFolder[$0] == nil ? nil : $0 }) else { return }
        if case .unwatched(let watch) = known {
            unwatched(watch, recover: &recover)
            return
        }
        // A folder being listed takes its changes after the listing: a move
        // with one end there is two halves, each applied in its own time.
        let folders = known.watches.compactMap { watchToFolder[$0] }
        if let held = folders.first(where: listing.contains) {
            if case .moved(let from, let to, let isFolder) = known, folders.count == 2 {
                apply(.movedAway(from, isFolder: isFolder), crawls: &crawls, rescan: &rescan, recover: &recover)
                apply(.arrived(to, isFolder: isFolder), crawls: &crawls, rescan: &rescan, recover: &recover)
            } else {
                deferred[held, default: []].append(known)
            }
            return
        }
        guard
            let live = known.rewatched({ watch in
                watchToFolder[watch].flatMap {
                    index.contains(EntryID($0)) && index.kind(of: EntryID($0)) == .folder ? watch : nil
                }
            })
        else { return }
        if !followers.isEmpty {
            tell(live)
            // A permission may have changed: what viewers may reach is
            // judged afresh.
            if case .changed(_, let aspects) = live, aspects.contains(.attributes) {
                followerVisibility.removeAll(keepingCapacity: true)
            }
        }
        func folder(_ place: ChangePlace) -> UInt32 { watchToFolder[place.watch]! }
        switch live {
        case .overflow, .unwatched:
            return
        case .folderGone(let watch):
            // An inner folder's fate is told by its parent's change; a
            // scope root has no parent in the index.
            let gone = watchToFolder[watch]!
            if roots[gone] != nil {
                rootGone(gone)
                recover.insert(gone)
            }
        case .changed(let place, let aspects):
            let folder = folder(place)
            if place.name.isEmpty {
                touchedFolders.insert(folder)
                return
            }
            guard accepts(place.name, in: folder) else { return }
            refresh(place.name, in: folder, crawls: &crawls)
            if content != nil, aspects.contains(.attributes),
                let child = index.child(named: place.name, in: EntryID(folder)), index.kind(of: child) == .file
            {
                changes.attributes.insert(child.rawValue)
            }
        case .created(let place, _), .arrived(let place, _):
            // An entry came, went or was renamed here: the folder's own
            // dates changed, whatever the entry is (hidden, excluded, or
            // inside a folder watched only for its own attributes).
            touchedFolders.insert(folder(place))
            guard accepts(place.name, in: folder(place)) else { return }
            refresh(place.name, in: folder(place), crawls: &crawls)
        case .removed(let place, _), .movedAway(let place, _):
            touchedFolders.insert(folder(place))
            guard accepts(place.name, in: folder(place)) else { return }
            leave(place.name, in: folder(place), crawls: &crawls)
        case .moved(let from, let to, _):
            let (source, destination) = (folder(from), folder(to))
            touchedFolders.insert(source)
            touchedFolders.insert(destination)
            switch (accepts(from.name, in: source), accepts(to.name, in: destination)) {
            case (false, false):
                return
            case (true, false):
                // Renamed to a name the scope leaves out: it left.
                leave(from.name, in: source, crawls: &crawls)
            case (false, true):
                refresh(to.name, in: destination, crawls: &crawls)
            case (true, true):
                move(from.name, in: source, to: to.name, in: destination, crawls: &crawls)
            }
        }
    }

    /// The watch ended (its folder was deleted, or the watch removed): the
    /// folder no longer hears anything; a live root whose watch ended is
    /// gone.
    private func unwatched(_ watch: WatchID, recover: inout Set<UInt32>) {
        guard let folder = watchToFolder.removeValue(forKey: watch) else { return }
        if folderToWatch[folder] == watch { folderToWatch[folder] = nil }
        if let earlier = earlierWatchOwner.removeValue(forKey: watch), folderToWatch[earlier] == watch {
            folderToWatch[earlier] = nil
        }
        if roots[folder] != nil && !(roots[folder]?.missing ?? true) {
            rootGone(folder)
            recover.insert(folder)
        }
    }

    /// The entry at `folder/name` was deleted or moved out of sight.
    private func leave(_ name: [UInt8], in folder: UInt32, crawls: inout [UInt32]) {
        guard let child = index.child(named: name, in: EntryID(folder)) else { return }
        if verifiesEvents {
            // Perhaps an older change, and something is at the name now:
            // read from the disk.
            refresh(name, in: folder, crawls: &crawls)
        } else {
            removeEntry(child.rawValue)
        }
    }

    /// A rename with both ends in the index's folders.
    private func move(
        _ name: [UInt8], in source: UInt32, to newName: [UInt8], in destination: UInt32, crawls: inout [UInt32]
    ) {
        guard let moving = index.child(named: name, in: EntryID(source)) else {
            // Not in the index under the old name: whatever is at the new
            // one is read.
            refresh(newName, in: destination, crawls: &crawls)
            return
        }
        let entry = moving.rawValue
        if verifiesEvents, index.isRoot(EntryID(destination)) || pathIsCurrent(destination),
            !isFile(entry, at: newName, in: destination)
        {
            // A move older than what was listed: the entry the index has
            // under the old name is not what was moved. Both names are read
            // again instead. (Where the destination's path in the index is
            // stale, an ancestor's rename not applied yet, the disk says
            // nothing of it: the move is applied, and the destination
            // rescanned once its path is current, `moveEntry`.)
            refresh(name, in: source, crawls: &crawls)
            refresh(newName, in: destination, crawls: &crawls)
            return
        }
        if let current = index.child(named: newName, in: EntryID(destination)), current != moving,
            areSameFile(current, moving), index.kind(of: current) != .folder || folderToWatch[current.rawValue] != nil
        {
            // The moved file is already here, listed after the move (a name
            // read again before its rename was applied): that newer entry
            // stays, with the watches it took over; the older one, and what
            // it held, goes. (A folder not listed yet is replaced by the
            // move instead.)
            removeEntry(entry)
            refresh(newName, in: destination, crawls: &crawls)
            return
        }
        moveEntry(entry, to: destination, name: newName, crawls: &crawls)
    }

    /// Whether `folder/name` on the disk is the entry's file: what a move of
    /// that entry to that name would leave there.
    func isFile(_ entry: UInt32, at name: [UInt8], in folder: UInt32) -> Bool {
        guard case .success(let status) = FileStatus.of(pathBytes: pathBytes(of: name, in: folder)) else {
            return false
        }
        return isEntry(entry, status)
    }

    /// Whether `status`, read since the entry was, is the entry's file: the
    /// same kind, and the same file where the entry's inode is known
    /// (`isSameFile`).
    func isEntry(_ entry: UInt32, _ status: FileStatus) -> Bool {
        let metadata = index.metadata(of: EntryID(entry))
        return status.kind == index.kind(of: EntryID(entry))
            && (metadata.inode == 0 || Self.isSameFile(metadata, status))
    }

    /// Re-reads `folder/name` from disk and makes the index agree.
    func refresh(_ name: [UInt8], in folder: UInt32, crawls: inout [UInt32]) {
        let existing = index.child(named: name, in: EntryID(folder))
        let result = FileStatus.of(pathBytes: pathBytes(of: name, in: folder))
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
            // Another kind, or another folder (inode, birth) under the name: the
            // old entry and its subtree are not what is there now.
            if let existing,
                index.kind(of: existing) != status.kind
                    || (status.kind == .folder && !Self.isSameFile(index.metadata(of: existing), status))
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
                // A folder not watched yet, unreadable until now, or listed
                // without its entries' attributes (a chmod is what brought
                // this event) is crawled again.
                if status.kind == .folder {
                    if folderToWatch[id.rawValue] == nil {
                        crawls.append(id.rawValue)
                    } else if case .unreadable = folderProblems[id.rawValue] {
                        crawls.append(id.rawValue)
                    }
                }
            }
        }
    }

    /// Re-reads a folder's own attributes (its dates change whenever an
    /// entry comes or goes inside it).
    func refreshOwnAttributes(_ folder: UInt32) {
        guard index.contains(EntryID(folder)), index.kind(of: EntryID(folder)) == .folder else { return }
        guard case .success(let status) = FileStatus.of(pathBytes: pathBytes(of: folder)), status.kind == .folder,
            Self.isSameFile(index.metadata(of: EntryID(folder)), status)
        else {
            // The path is stale (an ancestor's rename is not applied yet):
            // the folder is rescanned, and re-read, once it is current.
            if !index.isRoot(EntryID(folder)) { dirtyFolders.insert(folder) }
            return
        }
        update(folder, to: status)
    }

    /// Stores fresh attributes of an entry, recording a change when they
    /// differ (unless `recording` is off: a first gather's entries are not
    /// changes yet).
    package func update(_ id: UInt32, to status: FileStatus, recording: Bool = true) {
        let before = index.metadata(of: EntryID(id))
        let after = EntryMetadata(status)
        guard before != after else { return }
        index.update(EntryID(id), metadata: after, device: status.device)
        if recording { changes.changed.insert(id) }
    }

    /// A conflict copy appearing, going or being renamed changes whether
    /// the item it conflicts with has unresolved conflicts: report that
    /// item changed.
    func noteConflictCopy(_ id: UInt32) {
        if let original = index.conflictOriginal(of: id) { changes.changed.insert(original) }
    }

    /// Removes an entry and its subtree, recording the removals and dropping
    /// the watches.
    func removeEntry(_ id: UInt32) {
        endFollowers(touching: id)
        noteConflictCopy(id)
        changes.removed.insert(id)
        if index.kind(of: EntryID(id)) == .folder {
            index.forEachDescendant(of: EntryID(id)) { changes.removed.insert($0.rawValue) }
        }
        dropWatches(under: id)
        index.remove(EntryID(id))
    }

    /// Removes what is inside a folder (its rules now exclude its
    /// contents), keeping the folder and its own watch.
    func removeContents(of folder: UInt32) {
        for child in index.children(of: EntryID(folder)) { removeEntry(child.rawValue) }
    }

    func moveEntry(_ entry: UInt32, to folder: UInt32, name: [UInt8], crawls: inout [UInt32]) {
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
            // Replaced by the rename (an atomic save): the old entry goes;
            // queries report the replacement as a change of the item that
            // was there (`ResultSet`), not as a removal.
            removeEntry(occupant.rawValue)
        }
        let isFolder = index.kind(of: EntryID(entry)) == .folder
        let listedBefore = isFolder && descends(into: entry)
        let excludedPaths = isFolder ? rules(at: entry).prunedFolderPaths : []
        let pathBefore = excludedPaths.isEmpty ? [] : pathBytes(of: entry)
        endFollowers(touching: entry)
        noteConflictCopy(entry)
        index.move(EntryID(entry), to: EntryID(folder), name: name)
        noteConflictCopy(entry)
        changes.changed.insert(entry)
        // Verify against the disk: the index may lag, and a pairing made on a
        // stale view must not leave a wrong entry under the new name.
        refresh(name, in: folder, crawls: &crawls)
        guard index.child(named: name, in: EntryID(folder))?.rawValue == entry, isFolder else { return }
        let listedNow = descends(into: entry)
        if listedNow && !excludedPaths.isEmpty {
            // A folder holding an excluded path moved: what lies at those
            // paths now is another folder. Listed again from the disk.
            let pathNow = pathBytes(of: entry)
            let holdsExcluded = excludedPaths.contains { excluded in
                [pathBefore, pathNow].contains { excluded.count > $0.count && excluded.starts(with: $0 + [0x2F]) }
            }
            if holdsExcluded {
                removeContents(of: entry)
                crawls.append(entry)
                return
            }
        }
        if listedBefore && !listedNow {
            // Renamed to an excluded name: its contents leave the index; the
            // folder stays, watched for its own attributes.
            removeContents(of: entry)
            return
        }
        index.forEachDescendant(of: EntryID(entry)) { changes.changed.insert($0.rawValue) }
        // Renamed out of an excluded name (never listed), or renamed between
        // its parent's listing and its own opening (never listed or
        // watched): crawl it where it is now.
        if (!listedBefore && listedNow) || (folderToWatch[entry] == nil && !listing.contains(entry)) {
            crawls.append(entry)
        }
    }

    /// Drops the watches and problems of every folder in a subtree that is
    /// leaving the index (deleted, or moved out of scope).
    func dropWatches(under id: UInt32) {
        func drop(_ folder: UInt32) {
            // A watch another folder has taken since (the same folder,
            // crawled again as a new entry) stays.
            if let watch = folderToWatch.removeValue(forKey: folder), watchToFolder[watch] == folder {
                if let earlier = earlierWatchOwner.removeValue(forKey: watch), earlier != folder,
                    folderToWatch[earlier] == watch, index.contains(EntryID(earlier)),
                    index.kind(of: EntryID(earlier)) == .folder
                {
                    // The folder is still in the index as its earlier entry
                    // (a rename put it back where the newer one was): the
                    // watch is that entry's again, not removed, or the
                    // folder would hear nothing more.
                    watchToFolder[watch] = earlier
                } else {
                    watchToFolder[watch] = nil
                    removeWatch(watch)
                }
            }
            listing.remove(folder)
            deferred[folder] = nil
            if folderProblems[folder] != nil { folderProblems[folder] = nil }
        }
        drop(id)
        if index.kind(of: EntryID(id)) == .folder {
            index.forEachDescendant(of: EntryID(id)) { if index.kind(of: $0) == .folder { drop($0.rawValue) } }
        }
    }

    /// A scope root disappeared: its contents are removed (and reported);
    /// the root entry stays, marked missing, until the folder returns.
    func rootGone(_ root: UInt32) {
        endFollowers(touching: root)
        for child in index.children(of: EntryID(root)) { removeEntry(child.rawValue) }
        if let watch = folderToWatch.removeValue(forKey: root), watchToFolder[watch] == root {
            watchToFolder[watch] = nil
            earlierWatchOwner[watch] = nil
            removeWatch(watch)
        }
        if folderProblems[root] != nil { folderProblems[root] = nil }
        roots[root]?.missing = true
        problemsChanged = true
    }

    // MARK: Roots

    /// The folder entry at `path` inside the root `root`, walking names.
    func entry(at path: FilePath, from root: UInt32) -> EntryID? {
        guard let rootPath = roots[root]?.path else { return nil }
        var current = EntryID(root)
        for component in path.components.dropFirst(rootPath.components.count) {
            guard let next = index.child(named: FilePath(root: nil, [component]).bytes, in: current) else {
                return nil
            }
            current = next
        }
        return index.kind(of: current) == .folder ? current : nil
    }

    /// A live root other than `except` that is this folder: same path, and
    /// still the same file (inode and device). The path check matters:
    /// inode numbers of deleted folders are reused at once.
    func innerRoot(matching status: FileStatus, path: [UInt8], except: UInt32) -> UInt32? {
        roots.first { id, info in
            id != except && !info.missing && info.inode == status.inode && info.device == status.device
                && info.path.bytes == path
        }?.key
    }

    /// Makes a root a folder of a larger root that contains it, keeping its
    /// entries, ids and watches.
    func graft(_ inner: UInt32, into folder: EntryID, name: UnsafeRawBufferPointer, outer: UInt32) {
        guard let info = roots.removeValue(forKey: inner) else { return }
        if let existing = index.child(named: name, in: folder) { removeEntry(existing.rawValue) }
        index.graft(root: EntryID(inner), into: folder, name: name)
        // The outer root's rules already cover the inner one's (`acquire`).
        roots[outer]?.users += info.users
    }

    /// The root a released anchor belonged to.
    func root(of anchor: Anchor) -> UInt32? {
        if index.contains(anchor.entry) { return index.root(of: anchor.entry).rawValue }
        return roots.first { lists(anchor.path, in: $0.key) }?.key
    }

    /// Clears the reconciliation marks below `folder` before a rescan.
    func clearMarks(under folder: UInt32) {
        index.forEachDescendant(of: EntryID(folder)) { index.setMark($0.rawValue, false) }
    }

    /// Marks a folder and everything below it as seen: a crawl left it
    /// unlisted, and a rescan's sweep must not remove what it did not look at.
    func keepMarks(of folder: UInt32) {
        index.setMark(folder, true)
        index.forEachDescendant(of: EntryID(folder)) { index.setMark($0.rawValue, true) }
    }

    /// The folders of `folders` that lie inside no other of them (a rescan
    /// of each covers the rest).
    func outermost(_ folders: Set<UInt32>) -> [UInt32] {
        folders.filter { folder in
            var above = index.contains(EntryID(folder)) ? index.parent(of: EntryID(folder)) : nil
            while let current = above {
                if folders.contains(current.rawValue) { return false }
                above = index.parent(of: current)
            }
            return true
        }
    }

    /// A root's folder as it is now at the root's path (roots are kept by
    /// path): its device, inode and attributes.
    func adoptRootFolder(_ root: UInt32, _ status: FileStatus) {
        roots[root]?.device = status.device
        roots[root]?.inode = status.inode
        update(root, to: status)
    }

    /// Removes unmarked entries below `folder` (topmost first): a rescan
    /// did not see them.
    func sweep(under folder: UInt32) {
        guard index.contains(EntryID(folder)) else { return }
        var stack = index.children(of: EntryID(folder))
        while let id = stack.popLast() {
            if !index.isMarked(id) {
                removeEntry(id.rawValue)
            } else if index.kind(of: id) == .folder {
                stack += index.children(of: id)
            }
        }
    }

    /// Folders of the index that should be watched and are not (their
    /// changes would go unseen): marked dirty for a rescan. O(entries).
    func audit() {
        guard needsAudit else { return }
        needsAudit = false
        index.forEachEntry { id in
            let raw = id.rawValue
            guard index.kind(of: id) == .folder, folderToWatch[raw] == nil, !listing.contains(raw),
                folderProblems[raw] == nil, !isMountedElsewhere(raw)
            else { return }
            let root = index.root(of: id).rawValue
            // Restored roots are watched by their verification, not here.
            if roots[root]?.missing ?? true || unverifiedRoots.contains(root) { return }
            dirtyFolders.insert(raw)
        }
    }

    /// Lets ids freed since the last call be reused; every subscriber has
    /// been told of their removal.
    func releaseRemovedIDs() {
        index.endQuarantine()
        index.beginQuarantine()
    }
}

/// What one batch of filesystem events did to the index.
///
/// An id may be in several sets (created, then changed, then removed in one
/// batch); `removed` wins. Removed ids are held back from reuse until every
/// subscriber has been told.
struct IndexChanges {
    var added: Set<UInt32> = []
    var changed: Set<UInt32> = []
    var removed: Set<UInt32> = []
    /// Files whose attributes changed, when content is indexed: an extended
    /// attribute (tags, comment, origin) may have changed without the
    /// modification time, so the content indexer reads them again. Not a
    /// change subscribers hear of by itself.
    var attributes: Set<UInt32> = []

    var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
}
