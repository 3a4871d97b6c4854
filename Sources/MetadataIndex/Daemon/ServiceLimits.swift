/// What one user may spend of a daemon: the service sets it, not the
/// client. A client's `budget` is cut to `maxBudget`; past the counts, a
/// request is refused as `busy` (the client then searches by itself). With
/// the engine's turns shared round robin between users (`SliceTurns`), one
/// user running as many expensive queries as allowed delays another's
/// query by at most a slice of each.
package struct ServiceLimits: Sendable, Equatable {
    /// Seconds any query may run, whatever budget its client asks.
    package var maxBudget: Double
    /// One-shot queries one user may run at once.
    package var queriesPerUser: Int
    /// Live queries (`subscribe`) one user may hold at once.
    package var subscriptionsPerUser: Int
    /// Connections one user may hold open at once (each costs a thread).
    package var connectionsPerUser: Int

    package init(maxBudget: Double, queriesPerUser: Int, subscriptionsPerUser: Int, connectionsPerUser: Int) {
        self.maxBudget = maxBudget
        self.queriesPerUser = queriesPerUser
        self.subscriptionsPerUser = subscriptionsPerUser
        self.connectionsPerUser = connectionsPerUser
    }

    /// The system index's (`system.conf` may change each): the default
    /// budget as the ceiling, four queries at once (two cores' worth of
    /// work queued twice over), sixteen live queries (as many as folders a
    /// user's daemon may follow), 64 connections.
    package static let system = ServiceLimits(
        maxBudget: QueryLimit.defaultSeconds, queriesPerUser: 4, subscriptionsPerUser: 16, connectionsPerUser: 64)

    /// A user's own daemon, against a runaway client of that user's (a
    /// script that loops, a pattern that never ends): five minutes a
    /// query, sixteen queries at once, and room for the many live queries
    /// and connections of sync tools and editors.
    package static let user = ServiceLimits(
        maxBudget: 300, queriesPerUser: 16, subscriptionsPerUser: 256, connectionsPerUser: 512)
}
