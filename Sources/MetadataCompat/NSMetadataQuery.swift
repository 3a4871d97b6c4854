public import Foundation
public import MetadataIndex
import SystemPackage

/// A live metadata query with Apple's API: `NSMetadataQuery` for code
/// written for Apple platforms, a thin layer over `MetadataIndex`'s
/// `MetadataQuery`.
///
/// Configure `predicate` (an `NSPredicate(format:...)`), `searchScopes`
/// (scope constants, file `URL`s, paths) and optionally `sortDescriptors`,
/// then `start()`. Notifications go through `NotificationCenter.default`
/// with Apple's names (`.NSMetadataQueryDidStartGathering`,
/// `.NSMetadataQueryGatheringProgress`, `.NSMetadataQueryDidFinishGathering`,
/// `.NSMetadataQueryDidUpdate`), this query as the object, and for updates
/// the `NSMetadataItem`s under `NSMetadataQueryUpdateAddedItemsKey`,
/// `...ChangedItemsKey` and `...RemovedItemsKey`.
///
/// Where notifications are posted follows Apple: on `operationQueue` when
/// one is set; else, for a query started on the main thread or the main
/// queue (main-actor code), on the main queue (Apple posts on the run loop
/// of the thread that started the query, and code written for it expects
/// the main thread); else on the query's own serial queue, which needs no
/// run loop. On the main queue they arrive while the main queue runs
/// (`RunLoop.main`, `dispatchMain()`, an `async` `main`, a UI toolkit), as
/// on Apple platforms.
///
/// The ubiquitous scopes search `container`, or when it is nil the default
/// container (`UbiquityContainer.defaultContainer()`). A setting mdq cannot
/// carry out (a malformed predicate format, a block predicate, a scope
/// that is neither a constant nor a folder, a key-path sort descriptor)
/// makes `start()` return false, and `errors` says why: where Apple's
/// would raise an exception, this one reports.
///
/// Thread safety: like Apple's, a query may be configured from one thread
/// at a time; reading results is safe from any thread (they do not change
/// while updates are disabled).
open class NSMetadataQuery: NSObject, @unchecked Sendable {
    // `@unchecked`: mutable state lives in `state` (a `Locked` value),
    // `query` is `Sendable`, the rest is immutable after `init`.
    //
    // Lock order: `state`, then the `MetadataQuery`'s own lock (results are
    // read from it under `state`, so a restart cannot interleave with the
    // wrapping of its items). `state` is never held while calling the
    // `MetadataQuery`'s start, stop or setters (they wait for its posting
    // gate, and its posting thread takes `state` to relay), nor while
    // calling the delegate.

    /// The query doing the work; it posts to `relay`, from where its
    /// notifications are posted again with this object and its items.
    let query: MetadataQuery
    private let relay: NotificationCenter
    private var relayObserver: (any NSObjectProtocol)?
    let state = Locked(State())

    /// Everything mutable, behind `state`'s lock.
    struct State {
        var predicate: NSPredicate?
        var searchScopes: [Any] = []
        var sortDescriptors: [NSSortDescriptor] = []
        var groupingAttributes: [String]?
        var operationQueue: OperationQueue?
        weak var delegate: (any NSMetadataQueryDelegate)?
        /// Why settings cannot be carried out, by setting.
        var problems: [Setting: MetadataError] = [:]
        /// The current run; its items are in `items`.
        var run = QueryRun()
        /// The result objects of the current run, by result identity.
        var items: [UInt64: NSMetadataItem] = [:]
        /// The delegate's replacements for them.
        var replacements: [UInt64: Any] = [:]
    }

    /// The settings that can be refused.
    enum Setting: Int, Comparable {
        case predicate, searchScopes, sortDescriptors

        static func < (lhs: Setting, rhs: Setting) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// A query with no predicate and no scopes, on this process's engine.
    public override init() {
        let relay = NotificationCenter()
        self.relay = relay
        query = MetadataQuery(notificationCenter: relay)
        super.init()
        relayObserver = relay.addObserver(forName: nil, object: query, queue: nil) { [weak self] note in
            self?.forward(note)
        }
    }

    deinit {
        if let relayObserver { relay.removeObserver(relayObserver) }
    }

    // MARK: Configuration

    /// What to match: an `NSPredicate(format:...)`, `NSPredicate(value:)`,
    /// or an `NSCompoundPredicate` of those. Changing it on a running query
    /// restarts it.
    ///
    /// A predicate that cannot be used (a malformed format, a block
    /// predicate) makes `start()` return false (a running query stops) and
    /// is listed in `errors`.
    open var predicate: NSPredicate? {
        get { state.withLock { $0.predicate } }
        set {
            let converted = Result { () throws(MetadataError) in try newValue?.metadataPredicate }
            state.withLock { s in
                s.predicate = newValue
                s.problems[.predicate] = converted.failure
            }
            query.predicate = (try? converted.get()) ?? nil
        }
    }

    /// Where to look: scope constants (`NSMetadataQueryUbiquitousDocumentsScope`,
    /// `...UbiquitousDataScope`, `...AccessibleUbiquitousExternalDocumentsScope`,
    /// `...UserHomeScope`, and CoreServices' `kMDQueryScopeHome`), file
    /// `URL`s of folders, and absolute paths (`~/` is the home folder).
    /// Changing them on a running query restarts it.
    ///
    /// Any other value makes `start()` return false and is listed in
    /// `errors`.
    open var searchScopes: [Any] {
        get { state.withLock { $0.searchScopes } }
        set {
            let converted = Self.scopes(newValue)
            state.withLock { s in
                s.searchScopes = newValue
                s.problems[.searchScopes] = converted.failure
            }
            query.searchScopes = (try? converted.get()) ?? []
        }
    }

    /// How results are ordered: descriptors made with
    /// `NSSortDescriptor(key:ascending:)` (text in Finder's order, missing
    /// values first); unsorted results keep discovery order. Changing them
    /// on a running query restarts it.
    ///
    /// A key-path descriptor makes `start()` return false and is listed in
    /// `errors`.
    open var sortDescriptors: [NSSortDescriptor] {
        get { state.withLock { $0.sortDescriptors } }
        set {
            var converted: [MetadataSortDescriptor] = []
            var problem: MetadataError?
            for descriptor in newValue {
                if let metadata = (descriptor as? MetadataKeySortDescriptor)?.metadataDescriptor {
                    converted.append(metadata)
                } else {
                    problem = .unsupported(
                        "a metadata query sorts by attribute keys only: use NSSortDescriptor(key:ascending:)")
                }
            }
            state.withLock { s in
                s.sortDescriptors = newValue
                s.problems[.sortDescriptors] = problem
            }
            query.sortDescriptors = converted
        }
    }

    /// The attributes to group `groupedResults` by, outermost first; nil
    /// for none. Changing them on a running query restarts it.
    open var groupingAttributes: [String]? {
        get { state.withLock { $0.groupingAttributes } }
        set {
            state.withLock { $0.groupingAttributes = newValue }
            query.groupingAttributes = newValue ?? []
        }
    }

    /// The attributes whose values `valueLists` counts. Changing them on a
    /// running query restarts it.
    open var valueListAttributes: [String] {
        get { query.valueListAttributes }
        set { query.valueListAttributes = newValue }
    }

    /// Seconds over which changes are merged into one did-update; 0
    /// delivers as soon as possible. Default 1.
    open var notificationBatchingInterval: TimeInterval {
        get { query.notificationBatchingInterval }
        set { query.notificationBatchingInterval = newValue }
    }

    /// Where notifications are posted; nil for the default (see the type's
    /// discussion: the main queue for a query started on the main queue).
    open var operationQueue: OperationQueue? {
        get { state.withLock { $0.operationQueue } }
        set {
            state.withLock { $0.operationQueue = newValue }
            query.operationQueue = newValue
        }
    }

    /// The object asked for replacement results and values; held weakly.
    open var delegate: (any NSMetadataQueryDelegate)? {
        get { state.withLock { $0.delegate } }
        set {
            state.withLock { s in
                s.delegate = newValue
                s.replacements = [:]
            }
        }
    }

    /// The container the ubiquitous scopes search; nil (the default) uses
    /// the default container (`UbiquityContainer.defaultContainer()`), as a
    /// nil identifier does for `url(forUbiquityContainerIdentifier:)`.
    /// mdq's own: Apple's query searches the app's containers. Changing it
    /// on a running query restarts it.
    public var container: UbiquityContainer? {
        get { query.container }
        set { query.container = newValue }
    }

    // MARK: Lifecycle

    /// Starts gathering: posts did start gathering before it returns, then
    /// gathering progress, did finish gathering once, and did update as the
    /// results change.
    ///
    /// - Returns: false when the query has no predicate, is already
    ///   running, or has a setting it cannot carry out (see `errors`).
    @discardableResult
    open func start() -> Bool {
        let (refused, queue) = state.withLock { ($0.problems.isEmpty == false, $0.operationQueue) }
        guard !refused else { return false }
        // Apple posts on the run loop of the thread that started the query.
        query.operationQueue = queue ?? (MainQueue.isCurrent ? OperationQueue.main : nil)
        return query.start()
    }

    /// Stops the query: no notification is posted after this returns (one
    /// already handed to an observer's queue may still run there); the
    /// results stay readable. `start()` begins anew.
    open func stop() {
        query.stop()
    }

    /// Whether `start()` succeeded and `stop()` has not been called since.
    open var isStarted: Bool { query.isStarted }
    /// Whether the first gathering is still running.
    open var isGathering: Bool { query.isGathering }
    /// Whether `stop()` was called (and `start()` not called again).
    open var isStopped: Bool { query.isStopped }

    /// Pauses updates: the results (and their items' attributes) stay as
    /// they are; changes queue up, merged per file. Calls nest.
    open func disableUpdates() {
        query.disableUpdates()
    }

    /// Resumes updates after the last matching `disableUpdates()`; the
    /// queued changes arrive as one did-update. An extra call is ignored.
    open func enableUpdates() {
        query.enableUpdates()
    }

    /// What keeps the query from running or its results from being complete
    /// and live: settings it cannot carry out (why `start()` returned
    /// false), then `MetadataQuery.errors` (scopes that could not be
    /// searched, such as a missing container, folders that cannot be read
    /// or watched). mdq's own: Apple's query has no such list.
    public var errors: [MetadataError] {
        let problems = state.withLock { $0.problems.sorted { $0.key < $1.key }.map(\.value) }
        return problems + query.errors
    }

    // MARK: Results

    /// The number of results.
    open var resultCount: Int { query.resultCount }

    /// The result object at `idx`: an `NSMetadataItem`, or the delegate's
    /// replacement for it.
    ///
    /// - Parameter idx: an index below `resultCount`.
    /// - Returns: the result object.
    open func result(at idx: Int) -> Any {
        let item = state.withLock { s in Self.object(for: query.result(at: idx), in: &s) }
        return present([item])[0]
    }

    /// The results, in order: `NSMetadataItem`s, or the delegate's
    /// replacements.
    ///
    /// A snapshot: unlike Apple's proxy array it does not change afterwards
    /// and does not disable updates while it lives; call `disableUpdates()`
    /// around reading it with `resultCount` and `result(at:)`, as with
    /// Apple's.
    ///
    /// - Complexity: O(n).
    open var results: [Any] {
        present(state.withLock { s in query.results.map { Self.object(for: $0, in: &s) } })
    }

    /// The position of a result object (an `NSMetadataItem` of this query's
    /// current run, or the object the delegate replaced one with).
    ///
    /// - Parameter result: a result object.
    /// - Returns: its index, or `NSNotFound` when it is not a current result
    ///   (removed, from an earlier run or another query, or a value the
    ///   delegate returned, which has no identity to find).
    ///
    /// - Complexity: O(1), or O(r) in the delegate's replacements for a
    ///   replacement object.
    open func index(ofResult result: Any) -> Int {
        let position = state.withLock { s -> Int? in
            var item = result as? NSMetadataItem
            if item == nil, type(of: result) is AnyClass {
                let object = result as AnyObject
                item = s.replacements.first { ($0.value as AnyObject) === object }.flatMap { s.items[$0.key] }
            }
            guard let item, item.run === s.run, let snapshot = item.metadataItem else { return nil }
            return query.index(ofResult: snapshot)
        }
        return position ?? NSNotFound
    }

    /// The value of an attribute of the result at `idx`, as
    /// `NSMetadataItem.value(forAttribute:)` gives it (or the delegate's
    /// replacement value).
    ///
    /// - Parameters:
    ///   - attrName: an attribute key.
    ///   - idx: an index below `resultCount`.
    /// - Returns: the value, or nil when the result has none.
    open func value(ofAttribute attrName: String, forResultAt idx: Int) -> Any? {
        let item = state.withLock { s in Self.object(for: query.result(at: idx), in: &s) }
        return item.value(forAttribute: attrName).map { replacementValue(attrName, $0) }
    }

    // MARK: Scopes

    /// The search scopes for Apple's scope values.
    private static func scopes(_ values: [Any]) -> Result<[SearchScope], MetadataError> {
        var scopes: [SearchScope] = []
        for value in values {
            if let url = value as? URL, url.isFileURL {
                scopes.append(.directory(FilePath(url.path)))
            } else if let text = value as? String, let scope = scope(named: text) {
                scopes.append(scope)
            } else {
                return .failure(
                    .unsupported(
                        "a search scope must be a scope constant (NSMetadataQueryUbiquitousDocumentsScope, ...), "
                            + "a file URL or an absolute path, not \(value)"))
            }
        }
        return .success(scopes)
    }

    /// The scope a string names: a scope constant, CoreServices' home
    /// scope, an absolute path or a path from the home folder (`~/...`).
    private static func scope(named text: String) -> SearchScope? {
        switch text {
        case NSMetadataQueryUbiquitousDocumentsScope: return .ubiquitousDocuments
        case NSMetadataQueryUbiquitousDataScope: return .ubiquitousData
        case NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope: return .accessibleExternalDocuments
        case NSMetadataQueryUserHomeScope, "kMDQueryScopeHome": return .userHome
        case NSMetadataQueryIndexedNetworkScope: return .allHosts
        default:
            if text.hasPrefix("/") { return .directory(FilePath(text)) }
            if text == "~" || text.hasPrefix("~/") {
                return .directory(FilePath(NSString(string: text).expandingTildeInPath))
            }
            return nil
        }
    }
}

extension Result {
    /// The error of a failure; nil for a success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
