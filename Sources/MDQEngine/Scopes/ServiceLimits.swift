import MDQCore
import MDQSystem

/// What one user may spend of a daemon, and all users together: the
/// service sets it, not the client. A client's `budget` is cut to `maxBudget`; past the counts, a
/// request is refused as `busy` (the client then searches by itself). With
/// the engine's turns going to the user served longest ago (`SliceTurns`), one
/// user running as many expensive queries as allowed delays another's
/// query by about one slice.
package struct ServiceLimits: Sendable, Equatable {
    /// Seconds any query may run, whatever budget its client asks.
    package var maxBudget: Double
    /// One-shot queries one user may run at once.
    package var queriesPerUser: Int
    /// Live queries (`subscribe`) one user may hold at once.
    package var subscriptionsPerUser: Int
    /// Connections one user may hold open at once (each costs a thread).
    package var connectionsPerUser: Int
    /// Folders one user may follow at once (`follow`, a user's daemon
    /// following the system index), and all together.
    package var followersPerUser = 16
    package var followersInAll = 256
    /// What all users together may hold: so many users (or a user's
    /// subordinate ids, counted as that user's: `SubordinateUsers`) cannot
    /// add up to more than the machine has.
    package var queriesInAll: Int
    package var subscriptionsInAll: Int
    package var connectionsInAll: Int

    package init(
        maxBudget: Double, queriesPerUser: Int, subscriptionsPerUser: Int, connectionsPerUser: Int,
        queriesInAll: Int? = nil, subscriptionsInAll: Int? = nil, connectionsInAll: Int? = nil
    ) {
        self.maxBudget = maxBudget
        self.queriesPerUser = queriesPerUser
        self.subscriptionsPerUser = subscriptionsPerUser
        self.connectionsPerUser = connectionsPerUser
        self.queriesInAll = queriesInAll ?? 8 * queriesPerUser
        self.subscriptionsInAll = subscriptionsInAll ?? 32 * subscriptionsPerUser
        self.connectionsInAll = connectionsInAll ?? 16 * connectionsPerUser
    }

    /// The system index's (`system.conf` may change each): the default
    /// budget as the ceiling, four queries at once (two cores' worth of
    /// work queued twice over), sixteen live queries (as many as folders a
    /// user's daemon may follow), 64 connections.
    package static let system = ServiceLimits(
        maxBudget: QueryLimit.defaultSeconds, queriesPerUser: 4, subscriptionsPerUser: 16, connectionsPerUser: 64,
        queriesInAll: 32, subscriptionsInAll: 512, connectionsInAll: 1024)

    /// A user's own daemon, against a runaway client of that user's (a
    /// script that loops, a pattern that never ends): five minutes a
    /// query, sixteen queries at once, and room for the many live queries
    /// and connections of sync tools and editors.
    package static let user = ServiceLimits(
        maxBudget: 300, queriesPerUser: 16, subscriptionsPerUser: 256, connectionsPerUser: 512, queriesInAll: 16,
        subscriptionsInAll: 256, connectionsInAll: 512)
}
