package import MDQCore
package import MDQLive
package import MDQSystem

/// Searches across hosts that the system index answers for its users
/// (`mdq --host NAME`, `--all-hosts`), over connections to the shared index
/// it keeps open (`SEARCH` in system.conf): no connection made per search,
/// and the credential of a trusted role that only root holds, so users need
/// none. The command running the system index sets it
/// (`IndexDaemon.hostSearch`); the search itself is the shared index's.
package protocol HostSearching: Sendable {
    /// The answer for `request`; `own` answers this host's part from the
    /// index.
    ///
    /// - Throws: `MetadataError` with what the user is to be told (the
    ///   client then asks the full command, which says it the usual way).
    func answer(_ request: HostSearchRequest, own: @escaping HostSearchRequest.Own) throws -> HostSearchReply

    /// Every host of the shared index, each as a JSON object (`mdq hosts
    /// --json`).
    ///
    /// - Throws: `MetadataError` with what the user is to be told.
    func hosts() throws -> [[UInt8]]

    /// A live search of other hosts for the user asking
    /// (`subscribe-hosts`): its results, changes and problems posted to a
    /// mailbox of `capacity` entries, as an engine's subscription, with
    /// `wake` called when there is something; refused first as a search
    /// would be (a host unknown, a search the shared index cannot narrow),
    /// and past the live searches the system index keeps. With `checkOnly`,
    /// refused or nil, and nothing runs. `refused` is called, once, if the
    /// search ends by itself (past its results or its budget; why).
    ///
    /// - Throws: `MetadataError` with what the user is to be told.
    func follow(
        _ request: HostSearchRequest, capacity: Int, checkOnly: Bool, wake: @escaping @Sendable () -> Void,
        refused: @escaping @Sendable (_ reason: String) -> Void
    ) throws -> (any HostFollowing)?
}

/// A live search across hosts that the system index runs for a user
/// (`HostSearching.follow`).
package protocol HostFollowing: Sendable {
    /// The mailbox its results, changes and problems are posted to.
    var subscription: Subscription { get }
    /// The client fell behind: a fresh snapshot comes.
    func resynchronize()
    /// Ends it: its connection to the shared index closes.
    func end()
}

package struct HostSearchRequest: Sendable {
    /// Thrown by `Own` when this host's index does not hold what the
    /// predicate tests (what is inside files, without `CONTENT`): the other
    /// hosts are answered, and the user is told.
    package struct OwnWithoutContent: Error {
        package init() {}
    }

    package var predicate: MetadataPredicate
    /// Host names; nil for every host.
    package var hosts: [String]?
    /// Folders of hosts (`--onlyin NAME:/path`); the hosts asked for
    /// without one are searched whole.
    package var folders: [(host: String, path: [UInt8])] = []
    /// Each result with its attributes (`items`), not its path alone.
    package var items = false
    /// With `items`: imported attributes whose values each result brings
    /// (`attributes` of the request), as the user may read its file.
    package var attributes: Set<MetadataAttribute> = []
    /// The user asking, by name (as every host judges users).
    package var user: String
    /// The user asking, by number here: what the system index counts a
    /// user's live searches by (users without a name are each their own).
    package var requester: UInt32 = 0
    package var counting: Bool
    package var limit: Int?
    /// The order the client sorts the results by (its first): with a
    /// limit, each host's first in it are enough when the shared index
    /// can order by it.
    package var order: MetadataSortDescriptor?
    /// Seconds the database may spend.
    package var budget: Double?
    /// Hosts left out: for a live search, the client's own host, which
    /// its system index answers it for.
    package var excludedHosts: [String] = []
    /// The budget the user gave, if any: a search the shared index cannot
    /// narrow is refused unless the user bounded it.
    package var askedBudget: Double?

    /// This host's part, from its index: in the folders given (none: all
    /// of it), its count, and unless counting its matches (at most
    /// `limit`).
    package typealias Own =
        @Sendable (
            _ folders: [[UInt8]], _ counting: Bool, _ limit: Int?,
            _ first: (order: MetadataSortDescriptor, count: Int)?
        ) throws -> (count: Int, items: [MetadataItem])

    package init(predicate: MetadataPredicate, user: String, counting: Bool) {
        self.predicate = predicate
        self.user = user
        self.counting = counting
    }
}

package struct HostSearchReply: Sendable {
    /// The lines, or the count when counting.
    package var count = 0
    /// The lines as `mdq` prints them, each ended by a NUL: another host's
    /// as `NAME:/path`, this host's as its path; this host's first, then
    /// the others by name, each by path.
    package var paths: [UInt8] = []
    /// What the user is told first (hosts not live).
    package var warnings: [String] = []
    /// The results with their attributes, for `items`: this host's (its
    /// host nil) first, then the others by name, each by path.
    package var items: [Item] = []

    package struct Item: Sendable {
        package var host: String?
        package var path: [UInt8]
        package var kind: EntryKind
        package var metadata: EntryMetadata
        /// Its host is not live: its entries are as of its last contact.
        package var stale: Bool
        /// The imported attributes asked for, when the user may read the
        /// file and its host imported them.
        package var imported: ImportedValues?

        package init(
            host: String?, path: [UInt8], kind: EntryKind, metadata: EntryMetadata, stale: Bool,
            imported: ImportedValues? = nil
        ) {
            self.host = host
            self.path = path
            self.kind = kind
            self.metadata = metadata
            self.stale = stale
            self.imported = imported
        }
    }

    package init() {}
}
