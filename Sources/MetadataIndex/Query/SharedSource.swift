import Foundation
import MDQCore
import MDQEngine
import MDQLive
import MDQShared
import MDQSystem

/// A live query over hosts of the shared index across hosts
/// (`SearchScope.hosts`, `.allHosts`, `.host(_:folder:)`): a thread per
/// subscription runs a
/// `SharedLiveQuery` and posts its results and updates to the
/// subscription's mailbox, as the engine does. Items have the path
/// `NAME:/path`; a host offline, or the database unreachable, is a
/// problem (`errors`), and the results stay.
///
/// This host, when asked for and its system index runs, is answered by
/// its system index (`OwnHostFeed`: fresh to the millisecond, and there
/// while the database is not), the others by the shared index.
package final class SharedSource: QuerySource {
    /// Host names; empty for every host.
    let hosts: [String]
    /// Folders (host, absolute path) to search in; none for all. Hosts
    /// with no folder here are then left out, as `mdq --onlyin NAME:/path`
    /// does (`SharedReader.Search.covers`).
    let folders: [(host: String, path: [UInt8])]
    /// The shared index; nil for where users find it (`SharedIndexLocation`).
    let url: String?
    /// This host's name in the shared index and its system index's
    /// folders; nil for the configured name and the standard folders.
    let own: (name: String?, paths: DaemonPaths)?
    /// Subscriptions still wanted, by their id.
    private let running = Locked<Set<UInt64>>([])
    /// Subscriptions whose query fell behind: their follower posts a fresh
    /// snapshot on its next turn.
    private let behind = Locked<Set<UInt64>>([])

    package init(
        hosts: [String], folders: [(host: String, path: [UInt8])] = [], url: String? = nil,
        own: (name: String?, paths: DaemonPaths)? = nil
    ) {
        self.hosts = hosts
        self.folders = folders
        self.url = url
        self.own = own
    }

    var watchCount: Int { 0 }

    package func subscribe(
        scopes: [ScopeRequest], predicate: MetadataPredicate, container: UbiquityContainer?, budget: Double?,
        capacity: Int, progress: (@Sendable (Int) -> Void)?, fetching: Set<MetadataAttribute>, viewer: Viewer?,
        wake: @escaping @Sendable () -> Void
    ) -> (Subscription, [MetadataError]) {
        let id = UInt64.random(in: 1...UInt64.max)
        let subscription = Subscription(id: id, capacity: capacity, wake: wake)
        running.withLock { _ = $0.insert(id) }
        var search = SharedReader.Search(predicate: predicate)
        search.hosts = hosts.isEmpty ? nil : hosts
        search.scopes = folders
        search.user = SharedReader.Search.localUser
        search.budget = budget
        let running = running
        let behind = behind
        let ownName = self.own?.name ?? SystemConfiguration.sharedHostName
        let systemPaths = self.own?.paths ?? .system
        let asked = search
        let url = self.url
        WorkerThreads.detach(name: "mdq-shared-live") {
            var wanted = asked
            // This host, unless only some of its folders are asked for
            // (those come from the shared index).
            let own = ownName.flatMap { name -> OwnHostFeed? in
                guard asked.searchesWhole(name) else { return nil }
                return OwnHostFeed(
                    name: name, paths: systemPaths, predicate: predicate, budget: budget, capacity: capacity)
            }
            if let own { wanted.excludedHosts = [own.name] }
            defer { own?.close() }
            Self.follow(
                wanted, url: url, own: own, into: subscription, while: { running.withLock { $0.contains(id) } },
                fellBehind: { behind.withLock { $0.remove(id) != nil } }, wake: wake)
        }
        return (subscription, [])
    }

    package func unsubscribe(_ subscription: Subscription) {
        running.withLock { _ = $0.remove(subscription.id) }
        subscription.close()
    }

    func resynchronize(_ subscription: Subscription) {
        // The follower posts a fresh snapshot on its next turn.
        _ = behind.withLock { $0.insert(subscription.id) }
    }

    /// Gathers, then follows, until the subscription ends; the database
    /// lost is a problem, and the query gathers again once it is back.
    private static func follow(
        _ search: SharedReader.Search, url: String?, own: OwnHostFeed?, into subscription: Subscription,
        while wanted: () -> Bool, fellBehind: () -> Bool,
        wake: @Sendable () -> Void
    ) {
        var identities: [SharedLiveQuery.Key: UInt64] = [:]
        var next: UInt64 = 1
        func snapshot(_ entry: SharedEntry) -> EntrySnapshot {
            let key = SharedLiveQuery.Key(host: entry.hostID, identity: entry.identity)
            let id =
                identities[key]
                ?? {
                    defer { next += 1 }; identities[key] = next; return next
                }()
            return EntrySnapshot(
                entry: id, pathBytes: Array((entry.host + ":").utf8) + entry.pathBytes, kind: entry.kind,
                metadata: entry.metadata, hasUnresolvedConflicts: false, conflictOriginalPathBytes: nil)
        }
        var problems: [EngineProblem] = []
        // The shared index's own, apart from this host's.
        var sharedProblems: [EngineProblem] = []
        func report(_ now: [EngineProblem]) {
            sharedProblems = now
            let all = now + (own?.problems ?? [])
            guard all != problems else { return }
            problems = all
            if subscription.post(.problems(all)) { wake() }
        }
        /// This host's changes since the last call, posted.
        func forwardOwn() {
            guard let own else { return }
            let changes = own.drain()
            if !changes.isEmpty,
                subscription.post(.changes(added: changes.added, changed: changes.changed, removed: changes.removed))
            {
                wake()
            }
            if changes.problemsChanged { report(sharedProblems) }
        }
        // This host's first answer, whatever the database does.
        own?.waitForGathering(timeout: search.budget ?? 60, while: wanted)
        var first = true
        while wanted() {
            do {
                let url = try url ?? SharedIndexLocation.url()
                let live = try SharedLiveQuery(
                    reader: SharedReader(connection: PostgresConnection(url: url)), search: search)
                let gathered = try live.gather().map(snapshot)
                if subscription.post(.snapshot(gathered + (own?.current() ?? []), isFresh: !first)) { wake() }
                first = false
                report([])
                while wanted() {
                    if fellBehind() {
                        // Everything as it is now, in place of what was dropped.
                        let now = live.results.values.map(snapshot) + (own?.current() ?? [])
                        if subscription.post(.snapshot(now, isFresh: true)) { wake() }
                    }
                    let update = try live.next(timeout: 0.5, interrupt: own?.descriptor)
                    forwardOwn()
                    guard let update else { continue }
                    report(live.offline.sorted { $0.key < $1.key }.map { .sharedIndex($0.value) })
                    let removed = update.removed.compactMap {
                        identities.removeValue(forKey: SharedLiveQuery.Key(host: $0.hostID, identity: $0.identity))
                    }
                    let message = SubscriptionMessage.changes(
                        added: update.added.map(snapshot), changed: update.changed.map(snapshot), removed: removed)
                    if !update.added.isEmpty || !update.changed.isEmpty || !removed.isEmpty,
                        subscription.post(message)
                    {
                        wake()
                    }
                }
            } catch {
                let reason =
                    (error as? SharedIndexError)?.message ?? (error as? MetadataError)?.message
                    ?? "\(error)"
                if first {
                    // Never gathered: the query ends gathering with this
                    // host's answer alone.
                    _ = subscription.post(.snapshot(own?.current() ?? [], isFresh: false))
                    first = false
                }
                report([.sharedIndex("the shared index: \(reason)")])
                wake()
                // A query the database refuses is not retried; this host's
                // answer goes on.
                let refused = error is SharedReader.Refusal
                var slept = 0.0
                while (refused || slept < 2) && wanted() {
                    if let own {
                        own.wait(milliseconds: 100)
                        forwardOwn()
                    } else if refused {
                        return
                    } else {
                        usleep(100_000)
                    }
                    slept += 0.1
                }
            }
        }
    }
}
