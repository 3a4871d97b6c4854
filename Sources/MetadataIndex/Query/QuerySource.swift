import MDQCore
import MDQEngine
import MDQLive
import MDQSystem

/// What a live query runs against: the process's own engine, or the
/// user's index daemon. Both speak in subscriptions whose mailboxes hold
/// the same messages, so the query's bookkeeping is the same.
protocol QuerySource: Sendable {
    /// Subscribes to the matches of `predicate` in `scopes` (see
    /// `LiveEngine.subscribe`).
    func subscribe(
        scopes: [ScopeRequest], predicate: MetadataPredicate, container: UbiquityContainer?, budget: Double?,
        capacity: Int, progress: (@Sendable (Int) -> Void)?, fetching: Set<MetadataAttribute>, viewer: Viewer?,
        wake: @escaping @Sendable () -> Void
    ) -> (Subscription, [MetadataError])

    func unsubscribe(_ subscription: Subscription)

    /// Queues a fresh snapshot for a subscriber told to resynchronise.
    func resynchronize(_ subscription: Subscription)

    /// The watches the source holds (for the watch-limit message).
    var watchCount: Int { get }
}

extension LiveEngine: QuerySource {}
