public import Foundation
import SystemPackage

extension Notification.Name {
    /// Posted by `start()` before it returns.
    public static let metadataQueryDidStartGathering = Notification.Name("NSMetadataQueryDidStartGatheringNotification")
    /// Posted while the first crawl runs, at most once per batching interval.
    public static let metadataQueryGatheringProgress = Notification.Name("NSMetadataQueryGatheringProgressNotification")
    /// Posted once, when every scope is crawled and watched.
    public static let metadataQueryDidFinishGathering = Notification.Name(
        "NSMetadataQueryDidFinishGatheringNotification")
    /// Posted when the results change; `userInfo` holds the added, changed
    /// and removed items under `MetadataQuery.addedItemsKey` etc.
    public static let metadataQueryDidUpdate = Notification.Name("NSMetadataQueryDidUpdateNotification")
}

/// A live metadata query: `NSMetadataQuery` for Linux.
///
/// Set `predicate` and `searchScopes`, call `start()`. The query posts, in
/// this order and through `NotificationCenter.default` with the query as
/// object: did start gathering (before `start()` returns), gathering
/// progress while the first crawl runs, did finish gathering once, then a
/// did update with the added, changed and removed items each time the
/// results change. `stop()` ends all notifications at once.
///
/// Unlike on Apple platforms no run loop is needed: without an
/// `operationQueue`, notifications come in order on an internal serial
/// queue. `results` is an immutable snapshot and does not touch the
/// disable counter (Apple's proxy array disables updates while it lives).
/// The same events are available as an `AsyncSequence` through `events`.
///
/// Queries in one process share one index and one set of inotify watches.
public final class MetadataQuery: @unchecked Sendable {
    // MARK: Keys and events

    /// `userInfo` key of the added items (`[MetadataItem]`).
    public static let addedItemsKey = "kMDQueryUpdateAddedItems"
    /// `userInfo` key of the changed items.
    public static let changedItemsKey = "kMDQueryUpdateChangedItems"
    /// `userInfo` key of the removed items (as they last were).
    public static let removedItemsKey = "kMDQueryUpdateRemovedItems"
    /// At most this many items (added + changed + removed) per update.
    public static let maximumChangesPerUpdate = 50_000

    /// One update: the items added, changed and removed since the last one.
    public struct Update: Sendable, Equatable {
        public var added: [MetadataItem]
        public var changed: [MetadataItem]
        public var removed: [MetadataItem]
    }

    /// The query's notifications, for Swift concurrency code.
    public enum Event: Sendable, Equatable {
        case didStartGathering
        /// Entries gathered so far.
        case gatheringProgress(gathered: Int)
        /// Gathering is done; results are complete.
        case didFinishGathering(resultCount: Int)
        case didUpdate(Update)
    }

    // MARK: Configuration

    /// What to match. Changing it on a running query restarts it.
    public var predicate: MetadataPredicate? {
        get { stateLock.withLock { configuration.predicate } }
        set { reconfigure { $0.predicate = newValue } }
    }

    /// Where to look. Changing it on a running query restarts it.
    ///
    /// Ubiquitous scopes (which need `container`) and local ones (folders,
    /// the home folder) may be mixed: Apple documents no rule against it and
    /// a sync tool often wants its container and a local folder in one
    /// query. Every file is reported once, whichever scopes cover it, and
    /// only items inside the container (or its registered external document
    /// folders) get the ubiquitous item keys.
    public var searchScopes: [SearchScope] {
        get { stateLock.withLock { configuration.scopes } }
        set { reconfigure { $0.scopes = newValue } }
    }

    /// The container the ubiquitous scopes refer to.
    public var container: UbiquityContainer? {
        get { stateLock.withLock { configuration.container } }
        set { reconfigure { $0.container = newValue } }
    }

    /// How results are ordered; stable (discovery order) without descriptors.
    public var sortDescriptors: [MetadataSortDescriptor] {
        get { stateLock.withLock { configuration.sortDescriptors } }
        set { reconfigure { $0.sortDescriptors = newValue } }
    }

    /// Include entries whose names start with `.` and what is inside hidden folders.
    public var includesHiddenItems: Bool {
        get { stateLock.withLock { configuration.includeHidden } }
        set { reconfigure { $0.includeHidden = newValue } }
    }

    /// Folder names whose contents are left out, at any depth (`node_modules`,
    /// `.git`); the folders themselves are still results. Changing them on a
    /// running query restarts it.
    public var excludedFolderNames: Set<String> {
        get {
            stateLock.withLock { Set(configuration.excludedFolderNames.map { String(decoding: $0, as: UTF8.self) }) }
        }
        set { reconfigure { $0.excludedFolderNames = Set(newValue.map { Array($0.utf8) }) } }
    }

    /// Seconds over which changes are merged into one update; 0 delivers as
    /// soon as possible. Default 1.
    public var notificationBatchingInterval: TimeInterval {
        get { stateLock.withLock { configuration.interval } }
        set { stateLock.withLock { configuration.interval = max(0, newValue) } }
    }

    /// Where notifications are delivered; nil for the query's own serial queue.
    public var operationQueue: OperationQueue? {
        get { stateLock.withLock { configuration.operationQueue } }
        set { stateLock.withLock { configuration.operationQueue = newValue } }
    }

    // MARK: State

    struct Configuration {
        var predicate: MetadataPredicate?
        var scopes: [SearchScope] = []
        var container: UbiquityContainer?
        var sortDescriptors: [MetadataSortDescriptor] = []
        var groupingAttributes: [String] = []
        var valueListAttributes: [String] = []
        var includeHidden = false
        var excludedFolderNames: Set<[UInt8]> = []
        var interval: TimeInterval = 1.0
        var operationQueue: OperationQueue?
    }

    enum Phase { case idle, gathering, live, stopped }

    enum Pending {
        case added(MetadataItem)
        case changed(MetadataItem)
        case removed(MetadataItem)
    }

    // Guarded by `stateLock` (never held while calling out).
    let stateLock = NSLock()
    var configuration = Configuration()
    var phase = Phase.idle
    var generation = 0
    var disableCount = 0
    var visible: [MetadataItem] = []
    /// Result index by serial, rebuilt on first use after a change (so an
    /// update costs nothing for clients that never ask).
    var positions: [UInt64: Int]? = [:]
    /// Bumped whenever `visible` changes; caches derived from the results
    /// compare it.
    var resultsVersion = 0
    /// `valueLists` as last computed, and the `resultsVersion` it is for.
    var cachedValueLists: (version: Int, lists: [String: [MetadataQueryAttributeValueTuple]])?
    /// The container's external document folders, read when the query starts.
    var externalFolders: [FilePath] = []
    /// Current membership, updated on every index batch (even while updates are disabled).
    var live: [UInt32: MetadataItem] = [:]
    var pending: [UInt64: Pending] = [:]
    var pendingOrder: [UInt64] = []
    var deliveryScheduled = false
    var nextSerial: UInt64 = 1
    var anchors: [LiveIndex.Anchor] = []
    var observer: UInt64?
    var engine: LiveIndex?
    var compiled: CompiledPredicate?
    var lastProgressPost = Date.distantPast
    var scopeErrors: [MetadataError] = []
    var continuations: [UUID: AsyncStream<Event>.Continuation] = [:]

    /// Held while a notification is posted, so `stop()` from another thread
    /// waits for it and nothing is posted after `stop()` returns.
    let deliveryLock = NSRecursiveLock()
    let deliveryQueue = DispatchQueue(label: "mdq.query.delivery")
    let engineProvider: @Sendable () throws(MetadataError) -> LiveIndex

    /// A query on the process's shared engine.
    public convenience init() {
        self.init(engineProvider: { () throws(MetadataError) in try LiveIndex.shared() })
    }

    init(engineProvider: @escaping @Sendable () throws(MetadataError) -> LiveIndex) {
        self.engineProvider = engineProvider
    }

    deinit {
        if let observer, let engine { engine.lock.withLock { engine.removeObserver(observer) } }
        if let engine { for anchor in anchors { engine.release(anchor) } }
    }

    /// Whether `start()` succeeded and `stop()` has not been called since.
    public var isStarted: Bool { stateLock.withLock { phase == .gathering || phase == .live } }
    /// Whether the first crawl is still running.
    public var isGathering: Bool { stateLock.withLock { phase == .gathering } }
    /// Whether `stop()` was called (and `start()` not called again).
    public var isStopped: Bool { stateLock.withLock { phase == .stopped } }

    /// Scopes that could not be searched in the last gathering (missing or
    /// unreadable folders), and watches that failed (the watch limit): when
    /// not empty, results may be incomplete.
    public var errors: [MetadataError] {
        var result = stateLock.withLock { scopeErrors }
        if let engine {
            let failures = engine.lock.withLock { engine.watchFailures }
            if !failures.isEmpty {
                let limit =
                    (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_watches", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
                let needed = engine.watchCount + failures.count
                result.append(
                    MetadataError(
                        code: .watcherUnavailable,
                        message: "results are incomplete: \(failures.count) folders are not watched "
                            + "(inotify watch limit \(limit) in /proc/sys/fs/inotify/max_user_watches; "
                            + "these scopes need about \(needed)); raise it, e.g. "
                            + "sudo sysctl fs.inotify.max_user_watches=\(max(needed * 2, 524_288)), and restart the query",
                        path: failures.first?.path, underlying: failures.first?.error))
            }
        }
        return result
    }

    // MARK: Results

    /// The number of results.
    public var resultCount: Int { stateLock.withLock { visible.count } }

    /// The result at `index`.
    public func result(at index: Int) -> MetadataItem { stateLock.withLock { visible[index] } }

    /// The position of a result, or nil.
    ///
    /// - Complexity: O(1).
    public func index(ofResult item: MetadataItem) -> Int? {
        stateLock.withLock {
            if positions == nil {
                positions = Dictionary(
                    uniqueKeysWithValues: visible.enumerated().map { ($0.element.serial, $0.offset) })
            }
            return positions?[item.serial]
        }
    }

    /// An immutable snapshot of the results.
    public var results: [MetadataItem] { stateLock.withLock { visible } }

    /// Calls `body` with each result and its index; set `stop` to end early.
    public func enumerateResults(_ body: (MetadataItem, Int, inout Bool) -> Void) {
        let snapshot = results
        var stop = false
        for (index, item) in snapshot.enumerated() {
            body(item, index, &stop)
            if stop { return }
        }
    }

    /// An attribute of the result at `index`.
    public func value(ofAttribute key: String, forResultAt index: Int) -> Any? {
        result(at: index).value(forAttribute: key)
    }

    /// The query's events, for `for await`. Each call gives a new sequence
    /// that receives the events from then on; it ends when the query stops.
    public var events: AsyncStream<Event> {
        AsyncStream { continuation in
            let id = UUID()
            let stopped = stateLock.withLock { () -> Bool in
                if phase == .stopped { return true }
                continuations[id] = continuation
                return false
            }
            if stopped { continuation.finish() }
            continuation.onTermination = { [weak self] _ in
                self?.stateLock.withLock { _ = self?.continuations.removeValue(forKey: id) }
            }
        }
    }

    // MARK: Update control

    /// Pauses updates: results stay as they are; changes queue up, merged
    /// per file. Calls nest.
    public func disableUpdates() {
        stateLock.withLock { disableCount += 1 }
    }

    /// Resumes updates after the last matching `disableUpdates()`; queued
    /// changes arrive as one update. An extra call is ignored.
    public func enableUpdates() {
        let resume = stateLock.withLock { () -> Bool in
            guard disableCount > 0 else { return false }
            disableCount -= 1
            return disableCount == 0 && !pendingOrder.isEmpty
        }
        if resume { scheduleDelivery(now: true) }
    }

    /// Applies a configuration change; a running query restarts.
    func reconfigure(_ change: (inout Configuration) -> Void) {
        let running = stateLock.withLock { () -> Bool in
            change(&configuration)
            return phase == .gathering || phase == .live
        }
        if running {
            stop()
            _ = start()
        }
    }
}
