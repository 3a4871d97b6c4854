import Foundation
import MDQCore
import MDQLive
import MDQShared
import MDQSystem

/// A live query over hosts of the shared index across hosts
/// (`SearchScope.hosts`, `.allHosts`): a thread per subscription runs a
/// `SharedLiveQuery` and posts its results and updates to the
/// subscription's mailbox, as the engine does. Items of other hosts have
/// the path `NAME:/path`; a host offline, or the database unreachable, is
/// a problem (`errors`), and the results stay.
final class SharedSource: QuerySource {
    /// Host names; empty for every host.
    let hosts: [String]
    /// Subscriptions still wanted, by their id.
    private let running = Locked<Set<UInt64>>([])

    init(hosts: [String]) {
        self.hosts = hosts
    }

    var watchCount: Int { 0 }

    func subscribe(
        scopes: [ScopeRequest], predicate: MetadataPredicate, container: UbiquityContainer?, budget: Double?,
        capacity: Int, progress: (@Sendable (Int) -> Void)?, fetching: Set<MetadataAttribute>, viewer: Viewer?,
        wake: @escaping @Sendable () -> Void
    ) -> (Subscription, [MetadataError]) {
        let id = UInt64.random(in: 1...UInt64.max)
        let subscription = Subscription(id: id, capacity: capacity, wake: wake)
        running.withLock { _ = $0.insert(id) }
        var search = SharedReader.Search(predicate: predicate)
        search.hosts = hosts.isEmpty ? nil : hosts
        // A user with no name is a stranger on every host.
        search.user = LocalUsers.currentName ?? ""
        search.budget = budget
        let running = running
        let wanted = search
        WorkerThreads.detach(name: "mdq-shared-live") {
            Self.follow(wanted, into: subscription, while: { running.withLock { $0.contains(id) } }, wake: wake)
        }
        return (subscription, [])
    }

    func unsubscribe(_ subscription: Subscription) {
        running.withLock { _ = $0.remove(subscription.id) }
        subscription.close()
    }

    func resynchronize(_ subscription: Subscription) {
        // The follower posts a fresh snapshot on its next turn.
        subscription.post(.resynchronize)
    }

    /// Gathers, then follows, until the subscription ends; the database
    /// lost is a problem, and the query gathers again once it is back.
    private static func follow(
        _ search: SharedReader.Search, into subscription: Subscription, while wanted: () -> Bool,
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
        func report(_ now: [EngineProblem]) {
            guard now != problems else { return }
            problems = now
            if subscription.post(.problems(now)) { wake() }
        }
        var first = true
        while wanted() {
            do {
                let url = try SharedIndexLocation.url()
                let live = try SharedLiveQuery(
                    reader: SharedReader(connection: PostgresConnection(url: url)), search: search)
                let gathered = try live.gather().map(snapshot)
                if subscription.post(.snapshot(gathered, isFresh: !first)) { wake() }
                first = false
                report([])
                var offline: [String: String] = [:]
                while wanted() {
                    guard let update = try live.next(timeout: 0.5) else { continue }
                    for problem in update.problems {
                        // "NAME is offline since …" or "NAME is back".
                        let name = String(problem.prefix { $0 != " " })
                        offline[name] = problem.hasSuffix(" is back") ? nil : problem
                    }
                    report(offline.keys.sorted().map { .sharedIndex(offline[$0]!) })
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
                    // Never gathered: the query ends gathering with nothing.
                    _ = subscription.post(.snapshot([], isFresh: false))
                    first = false
                }
                report([.sharedIndex("the shared index: \(reason)")])
                wake()
                // A query the database refuses is not retried.
                if error is SharedReader.Refusal { return }
                var slept = 0.0
                while slept < 2 && wanted() {
                    usleep(100_000)
                    slept += 0.1
                }
            }
        }
    }
}
