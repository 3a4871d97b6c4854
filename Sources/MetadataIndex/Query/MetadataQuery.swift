public import Foundation
import MDQCore
import MDQDaemon
import MDQEngine
import MDQImport
import MDQLive
public import MDQSystem
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
    /// mdq's own: posted once for each problem that keeps the results from
    /// being complete or live (a folder that cannot be read, the inotify
    /// watch limit, a scope folder that is gone), when it is found;
    /// `userInfo[MetadataQuery.problemKey]` is the `MetadataError`. The
    /// current ones are always in `errors`.
    public static let metadataQueryDidReportProblem = Notification.Name("MDQQueryDidReportProblemNotification")
    /// mdq's own: posted once when a problem reported earlier no longer
    /// holds (a host of a search across hosts back, a scope folder
    /// returned, the daemon reachable again); `userInfo[MetadataQuery.problemKey]`
    /// is the `MetadataError` as it was reported.
    public static let metadataQueryDidResolveProblem = Notification.Name("MDQQueryDidResolveProblemNotification")
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
/// Queries in one process share one engine: one index and one set of
/// inotify watches.
public final class MetadataQuery: Sendable {
    // MARK: Keys and events

    /// `userInfo` key of the added items (`[MetadataItem]`).
    public static let addedItemsKey = "kMDQueryUpdateAddedItems"
    /// `userInfo` key of the changed items.
    public static let changedItemsKey = "kMDQueryUpdateChangedItems"
    /// `userInfo` key of the removed items (as the client last saw them).
    public static let removedItemsKey = "kMDQueryUpdateRemovedItems"
    /// mdq's own `userInfo` key: the whole `Update`, with the previous paths
    /// of renamed and moved items.
    public static let updateKey = "MDQQueryUpdate"
    /// `userInfo` key of a problem notification's `MetadataError`.
    public static let problemKey = "MDQQueryProblem"
    /// At most this many items (added + changed + removed) per update.
    public static let maximumChangesPerUpdate = 50_000

    /// One update: the items added, changed and removed since the last one.
    ///
    /// Items are identified by `id` for the life of the query. Within an
    /// update, `added` and `changed` come in path order (a folder before
    /// what is inside it) and `removed` in reverse path order (what is
    /// inside a folder before the folder), the same in every run; no path
    /// is both removed and added. A file replaced by a rename onto its path
    /// (an atomic save) is a change of the item that was there.
    public typealias Update = ResultUpdate

    /// The query's notifications, for Swift concurrency code.
    public enum Event: Sendable, Equatable {
        case didStartGathering
        /// Entries gathered so far.
        case gatheringProgress(gathered: Int)
        /// Gathering is done; results are complete.
        case didFinishGathering(resultCount: Int)
        case didUpdate(Update)
        /// A problem keeps the results from being complete or live (see
        /// `errors`); reported once, when found.
        case problem(MetadataError)
        /// A problem reported earlier no longer holds.
        case problemResolved(MetadataError)
    }

    // MARK: Configuration

    /// What to match. Changing it on a running query restarts it.
    public var predicate: MetadataPredicate? {
        get { state.withLock { $0.configuration.predicate } }
        set { reconfigure { $0.predicate = newValue } }
    }

    /// Where to look. Changing it on a running query restarts it.
    ///
    /// Ubiquitous scopes (of `container`) and local ones (folders,
    /// the home folder) may be mixed: Apple documents no rule against it and
    /// a sync tool often wants its container and a local folder in one
    /// query. Every file is reported once, whichever scopes cover it, and
    /// only items inside the container (or its registered external document
    /// folders) get the ubiquitous item keys.
    public var searchScopes: [SearchScope] {
        get { state.withLock { $0.configuration.scopes } }
        set { reconfigure { $0.scopes = newValue } }
    }

    /// The container the ubiquitous scopes refer to; nil (the default)
    /// means the default container (`UbiquityContainer.defaultContainer()`,
    /// looked up at each start), as a nil identifier does for Apple's
    /// `URLForUbiquityContainerIdentifier:`. When there is none, `errors`
    /// says why. Changing it on a running query restarts it.
    public var container: UbiquityContainer? {
        get { state.withLock { $0.configuration.container } }
        set { reconfigure { $0.container = newValue } }
    }

    /// How results are ordered; stable (discovery order) without descriptors.
    public var sortDescriptors: [MetadataSortDescriptor] {
        get { state.withLock { $0.configuration.sortDescriptors } }
        set { reconfigure { $0.sortDescriptors = newValue } }
    }

    /// Attributes read from inside files (`MetadataAttribute.isImported`:
    /// `kMDItemTitle`, `kMDItemPixelWidth`, `kMDItemTextContent`…) whose
    /// values the results carry for `MetadataItem.value(forAttribute:)`,
    /// besides those the predicate names (but `kMDItemTextContent`) and
    /// those results are sorted, grouped or counted by. Values come from the
    /// index daemon's import store: a file not imported yet has none, and
    /// is reported `changed` when its import lands. Changing them on a
    /// running query restarts it.
    public var fetchedAttributes: [String] {
        get { state.withLock { $0.configuration.fetchedAttributes } }
        set { reconfigure { $0.fetchedAttributes = newValue } }
    }

    /// Whether entries whose names start with `.`, and what is inside hidden
    /// folders, are results. Changing it on a running query restarts it.
    ///
    /// nil (the default) does what Apple's query does: the ubiquitous scopes
    /// report them (Apple documents those scopes as "all files" of the
    /// container, and sync clients keep marker files such as `.encrypt`
    /// there), the folder and home scopes leave them out, as Spotlight does.
    /// true or false decides for every scope.
    public var includesHiddenItems: Bool? {
        get { state.withLock { $0.configuration.includeHidden } }
        set { reconfigure { $0.includeHidden = newValue } }
    }

    /// Folder names whose contents are left out, at any depth (`node_modules`,
    /// `.git`): neither crawled nor watched, so they cost no watches and no
    /// memory; the folders themselves are still results. Changing them on a
    /// running query restarts it.
    public var excludedFolderNames: Set<String> {
        get {
            state.withLock { Set($0.configuration.excludedFolderNames.map { String(decoding: $0, as: UTF8.self) }) }
        }
        set { reconfigure { $0.excludedFolderNames = Set(newValue.map { Array($0.utf8) }) } }
    }

    /// Seconds over which changes are merged into one update; 0 delivers as
    /// soon as possible (each step of an atomic save may then arrive in an
    /// update of its own). Default 1.
    public var notificationBatchingInterval: TimeInterval {
        get { state.withLock { $0.configuration.interval } }
        set { state.withLock { $0.configuration.interval = max(0, newValue) } }
    }

    /// Seconds the query may spend gathering (its scan of the index) and on
    /// each batch of changes; nil for `QueryLimit.defaultSeconds` (30). Past
    /// it, or when a `MATCHES` pattern backtracks too far on one name,
    /// gathering ends with no results and `errors` holds a `.tooExpensive`
    /// error (also posted as a problem); the query takes no more changes.
    public var budget: Double? {
        get { state.withLock { $0.configuration.budget } }
        set { state.withLock { $0.configuration.budget = newValue.map { max(0, $0) } } }
    }

    /// Scopes given exactly (folder and rules), instead of `searchScopes`
    /// and the hidden and exclusion settings: what a command line resolved.
    /// Changing them on a running query restarts it.
    package var scopeRequests: [ScopeRequest]? {
        get { state.withLock { $0.configuration.scopeRequests } }
        set { reconfigure { $0.scopeRequests = newValue } }
    }

    /// Where notifications are delivered; nil for the query's own serial queue.
    public var operationQueue: OperationQueue? {
        get { state.withLock { $0.configuration.operationQueue?.queue } }
        set { state.withLock { $0.configuration.operationQueue = newValue.map(QueueBox.init) } }
    }

    // MARK: State

    struct Configuration {
        var predicate: MetadataPredicate?
        var scopes: [SearchScope] = []
        var container: UbiquityContainer?
        var sortDescriptors: [MetadataSortDescriptor] = []
        var groupingAttributes: [String] = []
        var valueListAttributes: [String] = []
        var fetchedAttributes: [String] = []
        var includeHidden: Bool?
        var excludedFolderNames: Set<[UInt8]> = []
        var interval: TimeInterval = 1.0
        var budget: Double?
        var operationQueue: QueueBox?
        /// Scopes given exactly (the daemon serving a remote subscriber),
        /// instead of `scopes` and the rules above.
        var scopeRequests: [ScopeRequest]?
        /// The user the system index serves the query to (`Viewer`).
        var viewer: Viewer?

        /// The imported attributes the items carry: those the predicate
        /// names (but the text, which only a test needs), those results are
        /// sorted, grouped or counted by, and `fetchedAttributes`.
        var fetching: Set<MetadataAttribute> {
            var keys = Set(predicate?.importedAttributes ?? [])
            keys.remove(.textContent)
            for key in sortDescriptors.map(\.key) + groupingAttributes + valueListAttributes + fetchedAttributes {
                if let attribute = MetadataAttribute(key: key), attribute.isImported { keys.insert(attribute) }
            }
            return keys
        }
    }

    /// An `OperationQueue`, which is thread-safe but not marked `Sendable`.
    struct QueueBox: @unchecked Sendable {
        let queue: OperationQueue
    }

    enum Phase { case idle, gathering, live, stopped }

    /// Everything mutable about a query, behind `state`'s lock. Lock order:
    /// the query never calls the engine while holding it.
    struct State {
        var configuration = Configuration()
        var phase = Phase.idle
        /// Bumped by every start and stop, so late work of an old run is dropped.
        var generation = 0
        var disableCount = 0
        var results = ResultSet(factory: ItemFactory(container: nil), descriptors: [])
        var engine: (any QuerySource)?
        var subscription: Subscription?
        /// Scopes that could not be searched in this run.
        var scopeErrors: [MetadataError] = []
        /// The engine's current problems in this query's scopes.
        var problems: [EngineProblem] = []
        /// Problems already reported by notification, by `reportKey`,
        /// each as it was reported (what its resolution says).
        var reported: [EngineProblem: EngineProblem] = [:]
        var deliveryScheduled = false
        var lastProgressPost: ContinuousClock.Instant?
        var streams: [ObjectIdentifier: WeakEventBuffer] = [:]
        /// Called with every event as it is posted, on the posting queue
        /// (the daemon forwarding a remote subscription).
        var eventHandler: (@Sendable (Event) -> Void)?
    }

    let state = Locked(State())
    /// Where notifications are posted when there is no operation queue, and
    /// where engine messages are taken.
    let deliveryQueue = DispatchQueue(label: "mdq.query.delivery")
    let gate = PostingGate()
    let engineProvider: @Sendable () throws(MetadataError) -> any QuerySource
    /// Where the notifications are posted: `NotificationCenter.default`, or
    /// a private center for a wrapper that posts them again under its own
    /// object (MetadataCompat's `NSMetadataQuery`), so observers of the
    /// default center see each notification once.
    package let notificationCenter: NotificationCenter

    /// A query on the process's shared engine.
    public convenience init() {
        self.init(engineProvider: { () throws(MetadataError) in try LiveEngine.shared() })
    }

    /// Where a query runs.
    public enum Source: Sendable, Hashable {
        /// This process's engine (shared by its queries).
        case inProcess
        /// The user's index daemon (`mdq daemon`), reached through `paths`:
        /// no crawl and no watch in this process, the same notifications
        /// and controls. When the daemon does not run or does not index
        /// the scopes, the system index (`mdq system`) answers if it
        /// indexes them, with only what this user may see. When neither
        /// can be reached, or the one answering goes away, `errors` says
        /// so and the query reconnects when it can (to the user's daemon
        /// first).
        case daemon(DaemonPaths)
    }

    /// A query on `source`.
    public convenience init(source: Source) {
        switch source {
        case .inProcess: self.init()
        case .daemon(let paths): self.init(engineProvider: { DaemonSource(paths: paths, fallback: .system) })
        }
    }

    init(
        engineProvider: @escaping @Sendable () throws(MetadataError) -> any QuerySource,
        notificationCenter: NotificationCenter = .default
    ) {
        self.engineProvider = engineProvider
        self.notificationCenter = notificationCenter
    }

    /// A query on this process's engine that posts its notifications to
    /// `notificationCenter` instead of the default center.
    package convenience init(notificationCenter: NotificationCenter) {
        self.init(
            engineProvider: { () throws(MetadataError) in try LiveEngine.shared() },
            notificationCenter: notificationCenter)
    }

    deinit {
        let (engine, subscription) = state.withLock { ($0.engine, $0.subscription) }
        if let engine, let subscription { engine.unsubscribe(subscription) }
    }

    /// Whether `start()` succeeded and `stop()` has not been called since.
    public var isStarted: Bool { state.withLock { $0.phase == .gathering || $0.phase == .live } }
    /// Whether the first crawl is still running.
    public var isGathering: Bool { state.withLock { $0.phase == .gathering } }
    /// Whether `stop()` was called (and `start()` not called again).
    public var isStopped: Bool { state.withLock { $0.phase == .stopped } }

    /// What keeps the results from being complete or live: scopes that could
    /// not be searched in the last gathering (missing or unreadable
    /// folders), folders inside the scopes that cannot be read or watched
    /// (the inotify watch limit), scope folders that are gone. Empty when
    /// the results are complete and live.
    public var errors: [MetadataError] {
        let (scopeErrors, problems, engine) = state.withLock { ($0.scopeErrors, $0.problems, $0.engine) }
        let watching = engine?.watchCount ?? 0
        return scopeErrors + problems.map { $0.error(watching: watching) }
    }

    // MARK: Results

    /// The number of results.
    public var resultCount: Int { state.withLock { $0.results.visible.count } }

    /// The result at `index`.
    public func result(at index: Int) -> MetadataItem { state.withLock { $0.results.visible[index] } }

    /// The position of a result, or nil.
    ///
    /// - Complexity: O(1) (after an O(n) rebuild following an update that
    ///   moved results).
    public func index(ofResult item: MetadataItem) -> Int? {
        state.withLock { $0.results.position(of: item.id) }
    }

    /// An immutable snapshot of the results.
    public var results: [MetadataItem] { state.withLock { $0.results.visible } }

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

    // MARK: Update control

    /// Pauses updates: results stay as they are; changes queue up, merged
    /// per file. Calls nest.
    public func disableUpdates() {
        state.withLock { $0.disableCount += 1 }
    }

    /// Resumes updates after the last matching `disableUpdates()`; queued
    /// changes arrive as one update. An extra call is ignored.
    public func enableUpdates() {
        let resume = state.withLock { s -> Bool in
            guard s.disableCount > 0 else { return false }
            s.disableCount -= 1
            return s.disableCount == 0 && s.results.hasPendingChanges
        }
        if resume { scheduleDelivery(now: true) }
    }

    /// Applies a configuration change; a running query restarts.
    func reconfigure(_ change: (inout Configuration) -> Void) {
        let running = state.withLock { s -> Bool in
            change(&s.configuration)
            return s.phase == .gathering || s.phase == .live
        }
        if running {
            stop()
            _ = start()
        }
    }
}
