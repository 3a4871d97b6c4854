import Foundation
import Synchronization
import SystemPackage

/// The live engine: one index and one set of inotify watches per process,
/// shared by every query whose scopes overlap, kept equal to the disk.
///
/// Folders are watched before they are listed (the crawler's `willList`
/// seam). While a folder is being listed its events are held back and
/// applied after the listing is in the index, so a deletion that races the
/// listing is never undone by it. Events are applied on a dedicated thread;
/// after each batch, observers (queries) receive the set of added, changed
/// and removed entries.
///
/// All state is guarded by `lock`; `index` may be read by observers while
/// they are called (they run under the lock).
final class LiveIndex: @unchecked Sendable {
    /// A top-level root of the engine's index: one crawled folder tree.
    struct TopRoot {
        var crawlRoot: CrawlRoot
        var includeHidden: Bool
        var device: DeviceNumber
        var inode: UInt64
        /// Anchors (query scopes) that use this root.
        var users: Int
        /// The folder itself is gone; a watch on its nearest existing
        /// ancestor waits for it to return.
        var missing = false
        var recoveryWatch: Int32?
    }

    /// A watch that failed (the watch limit, usually): the engine's view of
    /// that folder is not live.
    struct WatchFailure: Sendable, Hashable {
        var path: FilePath
        var error: Errno
    }

    let lock = NSLock()
    let index = FileIndex()
    let watcher: InotifyWatcher
    /// This engine's id with the watcher.
    private(set) var owner = 0
    let crawlThreads: Int

    // Guarded by `lock`.
    var watchToFolder: [Int32: UInt32] = [:]
    var folderToWatch: [UInt32: Int32] = [:]
    var listing: Set<UInt32> = []
    var deferred: [UInt32: [InotifyEvent]] = [:]
    var topRoots: [UInt32: TopRoot] = [:]
    var recoveryWatches: [Int32: UInt32] = [:]
    var observers: [UInt64: (IndexChanges) -> Void] = [:]
    var nextObserverID: UInt64 = 1
    var changes = IndexChanges()
    /// Changes are recorded only while events (not a first gather) are applied.
    var recordingChanges = false
    var watchFailures: Set<WatchFailure> = []
    /// MOVED_FROM events waiting for their MOVED_TO: cookie to entry.
    var pendingMoves: [UInt32: UInt32] = [:]
    /// The entries in `pendingMoves`.
    var entriesInFlight: Set<UInt32> = []
    /// Folders whose path in the index was stale when an event needed it
    /// (a rename of an ancestor not applied yet): rescanned once their path
    /// is current again, or their root rescanned when the engine is idle.
    var dirtyFolders: Set<UInt32> = []
    /// Full rescans done (after overflows); for tests and stats.
    var rescanCount = 0
    /// Changes were applied since the last audit.
    var needsAudit = false
    /// Folders the watch limit (or a permission) kept unwatched; the audit
    /// does not retry them.
    var unwatchable: Set<UInt32> = []
    /// Folders found unwatched by audits; for tests and stats.
    var auditFindings = 0

    // The event queue between the watcher thread and the applier thread.
    private let queueCondition = NSCondition()
    private var queuedEvents: [InotifyEvent] = []
    private var stopping = false
    private var applierThread: Thread?

    /// The process's engine.
    static func shared() throws(MetadataError) -> LiveIndex {
        try sharedEngine.withLock { (engine) throws(MetadataError) -> LiveIndex in
            if let engine { return engine }
            let made = try LiveIndex()
            engine = made
            return made
        }
    }

    private static let sharedEngine = Locked<LiveIndex?>(nil)

    /// A private engine (tests inject a watch limit here). It shares the
    /// process's one inotify watcher but has its own index.
    init(watchLimit: Int? = nil, crawlThreads: Int? = nil) throws(MetadataError) {
        self.crawlThreads = crawlThreads ?? max(2, ProcessLimits.processorCount)
        watcher = try InotifyWatcher.shared()
        let box = WeakBox(nil)
        owner = watcher.register(
            watchLimit: watchLimit,
            onWatchAdded: { watch, context in
                // Contexts above 32 bits are root-recovery watches on an
                // ancestor; `recoverRoot` records those itself.
                if context >> 32 == 0 { box.engine?.watchAdded(watch, folder: UInt32(context)) }
            },
            onEvents: { events in box.engine?.enqueue(events) })
        box.engine = self
        let thread = Thread { [unowned self] in self.applyLoop() }
        thread.name = "mdq-applier"
        thread.start()
        applierThread = thread
    }

    /// Weak back-reference for the watcher's callbacks.
    private final class WeakBox: @unchecked Sendable {
        // Set once right after init, before any callback can fire.
        weak var engine: LiveIndex?
        init(_ engine: LiveIndex?) { self.engine = engine }
    }

    /// This engine's live watches.
    var watchCount: Int { watcher.watchCount(owner: owner) }

    /// Changes the engine's own watch limit (tests use one below the
    /// kernel's); nil leaves only the kernel's. Folders already refused are
    /// watched when their query is restarted.
    func setWatchLimit(_ limit: Int?) {
        watcher.setWatchLimit(limit, owner: owner)
    }

    /// Adds a watch for this engine.
    func addWatch(_ descriptor: FileDescriptor, context: UInt64) -> Result<Int32, Errno> {
        watcher.addWatch(descriptor: descriptor, owner: owner, context: context)
    }

    /// Removes one of this engine's watches.
    func removeWatch(_ watch: Int32) {
        watcher.removeWatch(watch, owner: owner)
    }

    /// Stops the applier and gives back the watches; for private engines in tests.
    func shutdown() {
        watcher.unregister(owner)
        queueCondition.lock()
        stopping = true
        queueCondition.broadcast()
        queueCondition.unlock()
    }

    // MARK: Observers

    /// Registers a callback run under the lock after each batch of changes.
    func addObserver(_ body: @escaping (IndexChanges) -> Void) -> UInt64 {
        let id = nextObserverID
        nextObserverID += 1
        observers[id] = body
        return id
    }

    func removeObserver(_ id: UInt64) {
        observers[id] = nil
    }

    // MARK: Watches

    /// Called on the watcher thread as soon as a watch exists, before any of
    /// its events are delivered.
    private func watchAdded(_ watch: Int32, folder: UInt32) {
        lock.lock()
        defer { lock.unlock() }
        if let old = folderToWatch[folder], old != watch, watchToFolder[old] == folder {
            watchToFolder[old] = nil
        }
        watchToFolder[watch] = folder
        folderToWatch[folder] = watch
    }

    /// Drops the watches of every folder in a subtree that is leaving the
    /// index (deleted, or moved out of scope).
    func dropWatches(under id: UInt32) {
        if !watchFailures.isEmpty {
            // A folder that could not be watched and is gone no longer makes
            // the results incomplete.
            let gone = FilePath.fromBytes(pathBytes(of: id))
            watchFailures = watchFailures.filter { !$0.path.starts(with: gone) }
        }
        var folders = [id]
        if index.kind(of: EntryID(id)) == .folder {
            folders += index.descendants(of: EntryID(id)).map(\.rawValue)
        }
        for folder in folders {
            if let watch = folderToWatch.removeValue(forKey: folder) {
                if watchToFolder[watch] == folder { watchToFolder[watch] = nil }
                removeWatch(watch)
            }
            listing.remove(folder)
            deferred[folder] = nil
            unwatchable.remove(folder)
        }
    }

    // MARK: The event queue

    private func enqueue(_ events: [InotifyEvent]) {
        queueCondition.lock()
        queuedEvents.append(contentsOf: events)
        queueCondition.signal()
        queueCondition.unlock()
    }

    /// Takes queued events, waiting up to `timeout` (forever when nil).
    func takeEvents(timeout: Duration?) -> [InotifyEvent]? {
        queueCondition.lock()
        defer { queueCondition.unlock() }
        if let timeout {
            let deadline = Date(
                timeIntervalSinceNow: Double(timeout.components.attoseconds) / 1e18
                    + Double(timeout.components.seconds))
            while queuedEvents.isEmpty && !stopping {
                if !queueCondition.wait(until: deadline) { break }
            }
        } else {
            while queuedEvents.isEmpty && !stopping { queueCondition.wait() }
        }
        if stopping && queuedEvents.isEmpty { return nil }
        if queuedEvents.isEmpty { return [] }
        defer { queuedEvents.removeAll(keepingCapacity: true) }
        return queuedEvents
    }

    private func applyLoop() {
        while true {
            let waiting = lock.withLock { !dirtyFolders.isEmpty || needsAudit }
            guard let events = takeEvents(timeout: waiting ? .milliseconds(50) : nil) else {
                if stoppingNow { return }
                continue
            }
            if events.isEmpty {
                // Quiet: check every folder is watched (rescanning any that
                // is not), and rescan the roots of folders still unresolved.
                audit()
                cleanDirtyFolders(force: true)
                continue
            }
            // A rename's MOVED_FROM and MOVED_TO can land in different
            // batches (the watcher hands events over as it reads them): an
            // unpaired MOVED_FROM waits a moment for its partner, so the
            // rename is reported as a change rather than a removal and an
            // addition. A move out of the scopes has no partner and pays
            // the wait once.
            var batch = events
            var waits = 0
            while waits < 2 && Self.hasUnpairedMoveFrom(batch),
                let more = takeEvents(timeout: .milliseconds(5)), !more.isEmpty
            {
                batch += more
                waits += 1
            }
            applyBatch(batch)
        }
    }

    /// Whether a MOVED_FROM in `events` has no MOVED_TO with its cookie.
    static func hasUnpairedMoveFrom(_ events: [InotifyEvent]) -> Bool {
        var unpaired: Set<UInt32> = []
        for event in events {
            if event.mask.contains(.movedFrom) { unpaired.insert(event.cookie) }
            if event.mask.contains(.movedTo) { unpaired.remove(event.cookie) }
        }
        return !unpaired.isEmpty
    }

    /// Finds folders of the index with no watch (which should not exist:
    /// their changes would go unseen) and marks them for a rescan. O(entries),
    /// run once each time the engine goes quiet after changes.
    private func audit() {
        lock.withLock {
            guard needsAudit else { return }
            needsAudit = false
            index.forEachEntry { id in
                let raw = id.rawValue
                guard index.kind(of: id) == .folder, folderToWatch[raw] == nil, !listing.contains(raw),
                    !unwatchable.contains(raw)
                else { return }
                if index.isRoot(id) && (topRoots[raw]?.missing ?? true) { return }
                if !index.isRoot(id) && topRoots[index.root(of: id).rawValue]?.missing ?? true { return }
                dirtyFolders.insert(raw)
                auditFindings += 1
            }
        }
        cleanDirtyFolders(force: false)
    }

    private var stoppingNow: Bool {
        queueCondition.lock()
        defer { queueCondition.unlock() }
        return stopping
    }

    /// Puts events back at the head of the queue (a folder's held-back
    /// events, once its listing is in the index).
    func requeue(_ events: [InotifyEvent]) {
        queueCondition.lock()
        queuedEvents.insert(contentsOf: events, at: 0)
        queueCondition.signal()
        queueCondition.unlock()
    }
}
