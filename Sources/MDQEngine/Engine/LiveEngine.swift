import Foundation
package import MDQCore
import MDQLive
package import MDQSystem
package import MDQWatch
package import SystemPackage

/// The live engine: one index and one set of inotify watches, shared by
/// every subscription whose scopes overlap, kept equal to the disk.
///
/// Clients (in-process queries, the daemon's remote subscribers) use it
/// through a narrow surface: `subscribe` with scopes, rules and a
/// predicate, and receive in their `Subscription`'s mailbox the initial
/// matching entries and then, in order, what each batch of changes did to
/// them; `unsubscribe`; read `problems`. The engine never calls client code
/// while it holds its lock: it fills mailboxes under the lock and wakes
/// their owners after releasing it.
///
/// Folders are watched before they are listed (the crawler's `willList`
/// seam). While a folder is being listed its events are held back and
/// applied after the listing is in the index, so a deletion that races the
/// listing is never undone by it. Events are applied on a dedicated thread.
package final class LiveEngine: Sendable {
    /// Everything mutable; see `EngineState`.
    package let state: Locked<EngineState>
    /// Per-folder inotify watches, or fanotify filesystem marks (the
    /// system index).
    let watcher: any FolderWatcher
    /// This engine's id with the watcher.
    let owner: Int
    let crawlThreads: Int
    /// Changes between the watcher thread and the applier.
    private let events: EventQueue
    /// Counts crawls that new subscribers must wait for (a root's first
    /// gather or fill, or the crawl of what looser rules admit) as they end; a
    /// subscriber whose scope overlaps such a crawl waits for the count to
    /// move (see `acquire`). A leaf lock, taken under the state lock.
    let crawlsEnded = ConditionLocked(0)
    /// Called in every folder's listing by the engine's crawls, before the
    /// listing (a folder whose contents are excluded: before its watch);
    /// tests slow crawls down with it to widen race windows.
    let crawlHook = Locked<(@Sendable (EntryID) -> Void)?>(nil)
    /// Called in every folder's listing by the engine's crawls, after the
    /// folder is read and before its entries go into the index; tests
    /// change the folder there (taken away, by its events) to widen race
    /// windows.
    let listedHook = Locked<(@Sendable (EntryID) -> Void)?>(nil)
    /// Called as a names-first root's fill begins (`fill`), on its
    /// thread; tests hold the fill with it.
    let fillHook = Locked<(@Sendable () -> Void)?>(nil)
    /// Called after each fill ends: the daemon's content indexer, which
    /// needs files' sizes and dates, reconciles then.
    package let onFillEnded = Locked<(@Sendable () -> Void)?>(nil)
    /// Called between the slices of a subscription's sliced first scan,
    /// without the lock; tests slow the scan down with it to widen race
    /// windows.
    let sliceHook = Locked<(@Sendable () -> Void)?>(nil)
    /// Turns at `state` for the slices of one-shot queries.
    let sliceTurns = SliceTurns()
    /// Slots per slice of a streamed paths answer (`answer(stream:)`);
    /// tests make it small to stream many parts from a small tree.
    let streamSliceSlots = Locked(2 * ChunkScanner.chunkSize)
    /// Wakes the name-trigram builder (`keepNameGrams()`): true when the
    /// index has slots the trigrams do not cover yet. A leaf lock.
    let nameGramsWanted = ConditionLocked(false)

    /// The process's engine.
    package static func shared() throws(MetadataError) -> LiveEngine {
        try sharedEngine.withLock { (engine) throws(MetadataError) -> LiveEngine in
            if let engine { return engine }
            let made = try LiveEngine()
            engine = made
            return made
        }
    }

    private static let sharedEngine = Locked<LiveEngine?>(nil)

    /// A private engine (tests inject a watch limit here; the daemon owns
    /// one). It shares the process's one inotify watcher but has its own
    /// index.
    ///
    /// - Parameters:
    ///   - watchLimit: a limit of this engine's own below the kernel's.
    ///   - eventCapacity: events held between the watcher and the applier
    ///     before the backlog is dropped and the scopes rescanned (as after a
    ///     kernel queue overflow).
    /// - Throws: `MetadataError` `.watcherUnavailable` when inotify or the
    ///   applier thread cannot start.
    package convenience init(
        watchLimit: Int? = nil, crawlThreads: Int? = nil, eventCapacity: Int = 1 << 20,
        fanotify: FanotifyWatcher? = nil
    ) throws(MetadataError) {
        try self.init(
            index: FileIndex(), watcher: fanotify, watchLimit: watchLimit, crawlThreads: crawlThreads,
            eventCapacity: eventCapacity)
    }

    /// An engine over an existing index (restored from a snapshot),
    /// watching with `watcher` (nil: the process's inotify watcher).
    package init(
        index: FileIndex, watcher: (any FolderWatcher)? = nil, watchLimit: Int?, crawlThreads: Int?,
        eventCapacity: Int
    ) throws(MetadataError) {
        self.crawlThreads = crawlThreads ?? max(2, ProcessLimits.processorCount)
        if let watcher {
            self.watcher = watcher
        } else {
            let backend = try WatcherRegistry.backend(for: .inProcess)
            if let made = try WatcherRegistry.make(backend) {
                self.watcher = made
            } else {
                self.watcher = try InotifyWatcher.shared()
            }
        }
        let watcher = self.watcher
        let events = EventQueue(capacity: eventCapacity)
        self.events = events
        let box = WeakBox()
        owner = watcher.register(
            watchLimit: watchLimit,
            onWatchAdded: { watch, purpose in
                // A watch on a missing root's ancestor is recorded by
                // `recoverRoot` itself.
                if case .folder(let folder) = purpose { box.engine?.watchAdded(watch, folder: folder) }
            },
            onChanges: { batch in events.append(batch) })
        let owner = owner
        let initial = EngineState(index: index, removeWatch: { watch in watcher.removeWatch(watch, owner: owner) })
        initial.verifiesEvents = watcher.eventsNeedVerifying
        state = Locked(initial)
        box.engine = self
        let started = WorkerThreads.start(name: "mdq-applier") { [weak self] in
            while let engine = self, engine.applyNext() {}
        }
        if started == nil {
            watcher.unregister(owner)
            throw MetadataError.watcherUnavailable("cannot start the engine's thread (the thread limit)")
        }
    }

    /// Weak back-reference for the watcher's callbacks, which are made
    /// before the engine exists.
    private final class WeakBox: @unchecked Sendable {
        // Set once right after init, before any callback can fire.
        weak var engine: LiveEngine?
    }

    /// Stops the applier and gives back the watches; for private engines.
    package func shutdown() {
        watcher.unregister(owner)
        events.stop()
    }

    // MARK: Facts

    /// This engine's live watches.
    package var watchCount: Int { watcher.watchCount(owner: owner) }

    /// Entries in the index, scope roots included.
    package var entryCount: Int { state.withLock { $0.index.count } }

    /// Batches of changes applied so far.
    package var changeCount: Int { state.withLock { $0.changeCount } }
    /// The clock of the last batch applied (`ChangeClock`).
    package var clock: EngineClock { state.withLock { $0.clock.now } }

    /// Keeps at most `records` journal records (tests truncate it).
    package func limitJournal(to records: Int) {
        state.withLock { $0.clock.setCapacity(records) }
    }

    /// Full rescans done after overflows; for tests and stats.
    package var rescanCount: Int { state.withLock { $0.rescanCount } }

    /// Folders rescanned because their events were folded past the queue's
    /// bound; for tests and stats.
    package var foldedRescanCount: Int { state.withLock { $0.foldedRescans } }

    /// Changes the engine's own watch limit (tests use one below the
    /// kernel's); nil leaves only the kernel's. Folders already refused are
    /// watched when their scope is acquired again.
    func setWatchLimit(_ limit: Int?) {
        watcher.setWatchLimit(limit, owner: owner)
    }

    /// Adds a watch for this engine, waiting for the watcher thread. Never
    /// call it with the state lock held: the watcher thread takes it to
    /// record the watch.
    func addWatch(_ descriptor: FileDescriptor, purpose: WatchPurpose) -> Result<WatchID, Errno> {
        let added = watcher.addWatch(descriptor: descriptor, owner: owner, purpose: purpose)
        // Out of watches: the applier, perhaps asleep with nothing to wait
        // for, learns it has folders to try again (`retryUnwatchedFolders`).
        if case .failure(.noSpace) = added { events.nudge() }
        return added
    }

    /// Removes one of this engine's watches.
    func removeWatch(_ watch: WatchID) {
        watcher.removeWatch(watch, owner: owner)
    }

    /// Called as soon as a watch exists, before its folder is listed (an
    /// event of the watch applied before this call is dropped: the listing
    /// shows its effect).
    private func watchAdded(_ watch: WatchID, folder: UInt32) {
        let replaced = state.withLock { s -> WatchID? in
            var replaced: WatchID?
            if let old = s.folderToWatch[folder], old != watch, s.watchToFolder[old] == folder {
                s.watchToFolder[old] = nil
                s.earlierWatchOwner[old] = nil
                replaced = old
            }
            if let earlier = s.watchToFolder[watch], earlier != folder, s.folderToWatch[earlier] == watch {
                s.earlierWatchOwner[watch] = earlier
            }
            s.watchToFolder[watch] = folder
            s.folderToWatch[folder] = watch
            // Watched: whatever kept it from being is over (here, under the
            // lock the watch takes anyway, not once more after it).
            s.recordWatched(folder)
            return replaced
        }
        // The folder is watched another way now (a system index's feed
        // took it over, or gave it back): the old watch goes.
        if let replaced { watcher.removeWatch(replaced, owner: owner) }
    }

    // MARK: Applying events

    /// Waits for events and applies one batch; false once the engine stops.
    private func applyNext() -> Bool {
        let (waiting, retry) = state.withLock {
            (!$0.dirtyFolders.isEmpty || $0.needsAudit, $0.lacksWatches ? $0.nextWatchRetry : nil)
        }
        var timeout: Duration? = waiting ? .milliseconds(50) : nil
        if let retry {
            let until = max(.zero, retry - ContinuousClock.now)
            timeout = min(timeout ?? until, until)
        }
        guard let first = events.take(timeout: timeout) else { return false }
        if first.isEmpty {
            // Quiet: check every folder is watched (rescanning any that is
            // not), and rescan the roots of folders still unresolved.
            state.withLock { $0.audit() }
            cleanDirtyFolders(force: true)
            retryUnwatchedFolders()
            return true
        }
        // A rename comes as one change with both ends (the backend pairs
        // its halves), so nothing here waits for a partner.
        applyBatch(first)
        return true
    }

    /// A filesystem was mounted or unmounted at `path`: the folder there,
    /// in a root around it that stays on its own filesystem, is another one
    /// now. It is read again before this returns (the mounted one is its
    /// own root's, kept after; what a mount hid is this root's again).
    package func mountChanged(at path: FilePath) {
        let path = path.lexicallyNormalized()
        let parent = path.removingLastComponent()
        guard let name = path.lastComponent.map({ FilePath(root: nil, [$0]).bytes }), parent != path else { return }
        var crawls: [UInt32] = []
        state.withLock { s in
            for id in s.roots.keys {
                guard s.lists(parent, in: id), let folder = s.entry(at: parent, from: id) else { continue }
                s.refresh(name, in: folder.rawValue, crawls: &crawls)
            }
        }
        for folder in Set(crawls) { crawlFolder(folder) }
        publish()
    }

    /// Applies one batch of changes, runs the crawls they call for, then
    /// tells the subscribers.
    func applyBatch(_ batch: [FolderChange]) {
        var crawls: [UInt32] = []
        var rescan = false
        var recover: Set<UInt32> = []
        var folded: Set<UInt32> = []
        state.withLock { s in
            if !s.followerVisibility.isEmpty { s.followerVisibility.removeAll(keepingCapacity: true) }
            for change in batch {
                // A folder whose changes were lost (the queue was past its
                // bound, or a feed's): rescanned below.
                if case .overflow(let watch?) = change {
                    if let folder = s.watchToFolder[watch] { folded.insert(folder) } else { rescan = true }
                    continue
                }
                s.apply(change, crawls: &crawls, rescan: &rescan, recover: &recover)
            }
        }
        var crawled: Set<UInt32> = []
        for folder in crawls where crawled.insert(folder).inserted {
            crawlFolder(folder)
        }
        if !folded.isEmpty && !rescan {
            // Each folded folder once, and none inside another (its rescan
            // covers them).
            let outermost = state.withLock { s -> [UInt32] in
                s.foldedRescans += folded.count
                return s.outermost(folded)
            }
            for folder in outermost { reconcile(folder: folder) }
        }
        if rescan {
            reconcileAll()
            let missing = state.withLock { s in s.roots.filter { $0.value.missing }.map(\.key) }
            for root in missing { recoverRoot(root) }
        }
        for root in recover { recoverRoot(root) }
        cleanDirtyFolders(force: false)
        publish(audit: true)
    }

    /// Re-reads the folders whose contents changed, tells every
    /// subscription what the recorded changes did to its matches, then
    /// wakes the subscribers whose mailbox was empty: after the lock is
    /// released, so no client code runs under it.
    func publish(audit: Bool = false) {
        let limit = watcher.kernelWatchLimit ?? .max
        let (woken, gramsWanted) = state.withLock { s -> ([Subscription], Bool) in
            let touched = s.touchedFolders
            s.touchedFolders.removeAll()
            for folder in touched { s.refreshOwnAttributes(folder) }
            if audit { s.needsAudit = true }
            return (s.dispatch(watchLimit: limit), s.nameGramsNeedWork())
        }
        for subscription in woken { subscription.notify() }
        if gramsWanted { nameGramsWanted.mutateAndBroadcast { $0 = true } }
    }

    /// How often folders refused a watch for lack of watches are tried
    /// again while any is (other processes of the user free watches too,
    /// and this engine learns nothing of it); tests shorten it.
    /// `MDQ_WATCH_RETRY_SECONDS` sets it for a daemon (tests).
    static let watchRetryInterval = Locked<Duration>(
        ProcessEnvironment.variable("MDQ_WATCH_RETRY_SECONDS").flatMap(Double.init).map {
            .milliseconds(Int(max(0.01, min($0, 86_400)) * 1000))
        } ?? .seconds(10))

    /// Folders refused a watch for lack of watches (`ENOSPC`) are tried
    /// again, once `watchRetryInterval` has passed: one watch first (while
    /// the limit still holds, nothing more is done), then every such
    /// subtree is rescanned, watching what it can (a folder refused again
    /// is marked again), and what changed meanwhile is found.
    func retryUnwatchedFolders() {
        let now = ContinuousClock.now
        let lacking = state.withLock { s -> [UInt32] in
            guard s.lacksWatches, now >= s.nextWatchRetry else { return [] }
            s.nextWatchRetry = now + Self.watchRetryInterval.withLock { $0 }
            let folders = Set(
                s.folderProblems.compactMap { folder, problem -> UInt32? in
                    guard case .unwatchable(.noSpace) = problem, s.index.contains(EntryID(folder)) else { return nil }
                    return folder
                })
            if folders.isEmpty { s.lacksWatches = false }
            return s.outermost(folders)
        }
        guard let probe = lacking.first, let (handle, _) = openVerified(probe),
            case .success = addWatch(handle.descriptor, purpose: .folder(probe))
        else { return }
        state.withLock { s in
            s.recordWatched(probe)
            for folder in lacking { s.dirtyFolders.insert(folder) }
        }
        cleanDirtyFolders(force: false)
    }

    /// Rescans dirty folders whose path is current again; with `force`, for
    /// those that are not, the nearest folder above whose path is current
    /// (its listing reads again the names that lead to them), or their root.
    func cleanDirtyFolders(force: Bool) {
        let (ready, roots) = state.withLock { s -> ([UInt32], Set<UInt32>) in
            var ready: Set<UInt32> = []
            var roots: Set<UInt32> = []
            for folder in s.dirtyFolders {
                guard s.index.contains(EntryID(folder)), s.index.kind(of: EntryID(folder)) == .folder else {
                    s.dirtyFolders.remove(folder)
                    continue
                }
                // Not while its root's first crawl or fill runs: a rescan beside it
                // would list the same folders twice at once. It waits.
                if s.roots[s.index.root(of: EntryID(folder)).rawValue]?.isBusy == true { continue }
                if s.pathIsCurrent(folder) {
                    ready.insert(folder)
                    s.dirtyFolders.remove(folder)
                } else if force {
                    // Quiet, and still not current: a name above it is not
                    // what the disk has. A system index's root is a whole
                    // filesystem: only what lies under the stale name is
                    // listed again.
                    s.dirtyFolders.remove(folder)
                    var above = s.index.parent(of: EntryID(folder))
                    while let current = above, !s.index.isRoot(current), !s.pathIsCurrent(current.rawValue) {
                        above = s.index.parent(of: current)
                    }
                    if let current = above, !s.index.isRoot(current) {
                        ready.insert(current.rawValue)
                    } else {
                        roots.insert(s.index.root(of: EntryID(folder)).rawValue)
                    }
                }
            }
            // Each subtree once: none inside another rescanned here.
            let outermost = s.outermost(ready).filter { !roots.contains(s.index.root(of: EntryID($0)).rawValue) }
            return (outermost, roots)
        }
        for folder in ready { reconcile(folder: folder) }
        for root in roots { reconcile(root: root) }
        if force { publish() }
    }
}

/// The changes between the watcher thread and the applier, bounded: past
/// `capacity` changes (an applier that cannot keep up with a storm) the
/// backlog is folded into the set of folders it concerned, and from then on
/// each new change only adds its folders to that set, until the applier
/// takes it: those folders are rescanned, not the whole index (a folder
/// costs one set entry however many changes it had). An overflow of
/// everything (the kernel's own queue, which says nothing of where the
/// events were) still rescans everything. Memory stays bounded; nothing is
/// silently lost.
final class EventQueue: Sendable {
    private struct Contents {
        var changes: [FolderChange] = []
        /// Folders (by watch) whose changes were folded: rescanned instead.
        var folded: Set<WatchID> = []
        /// Everything is to be rescanned (an overflow of all was folded).
        var everything = false
        var stopping = false
        /// `nudge`: the next (or current) `take` returns at once.
        var nudged = false

        var isEmpty: Bool { changes.isEmpty && folded.isEmpty && !everything }

        mutating func fold(_ change: FolderChange) {
            if case .overflow(nil) = change { everything = true }
            folded.formUnion(change.watches)
        }
    }

    private let contents = ConditionLocked(Contents())
    private let capacity: Int

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Wakes the applier as if the queue had timed out (it looks again at
    /// what it waits for: a folder refused a watch is to be retried).
    func nudge() {
        contents.mutateAndBroadcast { $0.nudged = true }
    }

    /// Queues changes; called on the watcher thread.
    func append(_ batch: [FolderChange]) {
        contents.mutateAndBroadcast { queue in
            if !queue.folded.isEmpty || queue.everything || queue.changes.count + batch.count > capacity {
                // Past the bound: each change is now only its folders.
                for change in queue.changes { queue.fold(change) }
                for change in batch { queue.fold(change) }
                queue.changes.removeAll()
            } else {
                queue.changes.append(contentsOf: batch)
            }
        }
    }

    /// Takes every queued change, waiting up to `timeout` (forever when nil)
    /// for one: empty after a timeout, nil once stopped.
    func take(timeout: Duration?) -> [FolderChange]? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        return contents.wait(until: { !$0.isEmpty || $0.stopping || $0.nudged }, deadline: deadline) { queue in
            if queue.stopping && queue.isEmpty { return nil }
            defer {
                queue.changes.removeAll(keepingCapacity: true)
                queue.folded.removeAll()
                queue.everything = false
                queue.nudged = false
            }
            // Folded folders come as overflows of their watch.
            return queue.changes + queue.folded.map { .overflow($0) } + (queue.everything ? [.overflow(nil)] : [])
        }
    }

    /// Puts changes back at the head (a folder's held-back changes, once
    /// its listing is in the index).
    func requeue(_ held: [FolderChange]) {
        contents.mutateAndBroadcast { $0.changes.insert(contentsOf: held, at: 0) }
    }

    func stop() {
        contents.mutateAndBroadcast { $0.stopping = true }
    }
}

extension LiveEngine {
    /// Puts a folder's held-back changes back at the head of the queue.
    func requeue(_ held: [FolderChange]) {
        events.requeue(held)
    }
}
