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
/// its system index (`DaemonFeed.ownHost`: fresh to the millisecond, and
/// there while the database is not), the others by the shared index: read
/// with the user's own credential (`SharedIndexLocation`), or, for a user
/// with none, followed by the system index for them (`DaemonFeed.otherHosts`).
///
/// The system index itself runs one for a user (`subscribe-hosts`,
/// `init(serving:...)`): the other hosts for that user, bounded in what it
/// keeps.
package final class SharedSource: QuerySource {
    /// Host names; empty for every host.
    let hosts: [String]
    /// Folders (host, absolute path) to search in; a host with none here
    /// is searched whole, as `mdq --host b --onlyin a:/x` searches b
    /// (`SharedReader.Search.covers`).
    let folders: [(host: String, path: [UInt8])]
    /// The shared index; nil for where users find it (`SharedIndexLocation`).
    let url: String?
    /// This host's name in the shared index and its system index's
    /// folders; nil for the configured name and the standard folders.
    let own: (name: String?, paths: DaemonPaths)?
    /// For the system index following a search for a user: that user, the
    /// hosts left out (the client's own), the most results kept, and what
    /// runs once the search's thread ends (its connection closed), with
    /// why when the search ended by itself (refused: past its results or
    /// its budget).
    let served: (user: String, excluded: [String], mostResults: Int, ended: @Sendable (_ refusal: String?) -> Void)?
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
        served = nil
    }

    /// The system index's live search of other hosts for `user`
    /// (`subscribe-hosts`), `excluded` hosts left out: the user is judged
    /// by name, as on every host; the search ends, said as a problem, past
    /// `mostResults` results or past its budget. `ended` runs when the
    /// search's thread is done with the database: unsubscribed (nil), or
    /// ended by itself (why).
    package init(
        serving user: String, hosts: [String], folders: [(host: String, path: [UInt8])], excluded: [String],
        url: String, mostResults: Int, ended: @escaping @Sendable (_ refusal: String?) -> Void
    ) {
        self.hosts = hosts
        self.folders = folders
        self.url = url
        own = nil
        served = (user, excluded, mostResults, ended)
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
        search.user = served?.user ?? SharedReader.Search.localUser
        search.excludedHosts = served?.excluded ?? []
        search.budget = budget
        // Values of what importers read, as the query's items give them.
        search.attributes = fetching.filter { $0 != .textContent }
        let running = running
        let behind = behind
        let ownName = served != nil ? nil : self.own?.name ?? DaemonFeed.ownHostName()
        let systemPaths = self.own?.paths ?? .system
        let asked = search
        let url = self.url
        let mostResults = served?.mostResults
        let ended = served?.ended
        let started = WorkerThreads.start(name: "mdq-shared-live") {
            var refusal: String?
            defer { ended?(refusal) }
            var wanted = asked
            let isWanted = { running.withLock { $0.contains(id) } }
            let fellBehind = { behind.withLock { $0.remove(id) != nil } }
            // This host, whole or the folders of it asked for, from its
            // system index: a folder this user may not search is said as a
            // local search's scope is. With no system index, the shared
            // index answers for it.
            var ownRefused: [EngineProblem] = []
            let own = ownName.flatMap { name -> DaemonFeed? in
                guard asked.covers(name) else { return nil }
                let folders = asked.scopes.filter { $0.host == name }.map(\.path)
                var scopes: [ScopeRequest]?
                if !folders.isEmpty {
                    switch DaemonFeed.ownScopes(folders, named: name, paths: systemPaths) {
                    case .success(let found): scopes = found
                    case .failure(let error) where error.path != nil:
                        ownRefused = [.hostsRefused(error)]
                        return nil
                    case .failure: return nil
                    }
                }
                return DaemonFeed.ownHost(
                    name: name, paths: systemPaths, scopes: scopes, predicate: predicate, budget: budget,
                    capacity: capacity, fetching: asked.attributes)
            }
            if let name = ownName, own != nil || !ownRefused.isEmpty {
                wanted.excludedHosts = [name]
                wanted.scopes.removeAll { $0.host == name }
            }
            defer { own?.close() }
            // Nothing asked of the shared index: this host alone, whole or
            // by its folders.
            if own != nil || !ownRefused.isEmpty, wanted.readsNoHost {
                Self.follow(
                    .success(nil), own: own, refused: ownRefused, budget: budget, into: subscription,
                    while: isWanted, fellBehind: fellBehind, wake: wake)
                return
            }
            // A user with no credential of their own: the system index
            // follows the other hosts for them.
            if url == nil, ended == nil, (try? SharedIndexLocation.url()) == nil {
                let others = Swift.Result { () throws(MetadataError) in
                    try DaemonFeed.otherHosts(
                        HostsSubscription(
                            hosts: wanted.hosts, folders: wanted.scopes, excluded: wanted.excludedHosts),
                        paths: systemPaths, predicate: predicate, budget: budget, capacity: capacity,
                        fetching: asked.attributes)
                }
                if case .success(nil) = others {
                    // Not offered: the shared index is read here, and says
                    // why not.
                } else {
                    Self.follow(
                        others, own: own, refused: ownRefused, budget: budget, into: subscription, while: isWanted,
                        fellBehind: fellBehind, wake: wake)
                    return
                }
            }
            refusal = Self.follow(
                wanted, url: url, own: own, ownRefused: ownRefused, mostResults: mostResults, into: subscription,
                while: isWanted, fellBehind: fellBehind, wake: wake)
        }
        if started == nil {
            // No thread to follow it: said, and its place given back.
            _ = subscription.post(.snapshot([], isFresh: false))
            _ = subscription.post(.problems([.sharedIndex("cannot start a thread to follow the shared index")]))
            wake()
            ended?("cannot start a thread to follow the shared index")
        }
        return (subscription, [])
    }

    package func unsubscribe(_ subscription: Subscription) {
        running.withLock { _ = $0.remove(subscription.id) }
        subscription.close()
    }

    package func resynchronize(_ subscription: Subscription) {
        // The follower posts a fresh snapshot on its next turn.
        _ = behind.withLock { $0.insert(subscription.id) }
    }

    /// Follows the other hosts through the system index (`others`: its
    /// feed, or why it refused the search) and this host through its own
    /// feed, until the subscription ends: the first answer once each feed
    /// gave its own, then their changes and problems as they come;
    /// `refused`, folders of this host refused, said throughout.
    private static func follow(
        _ others: Swift.Result<DaemonFeed?, MetadataError>, own: DaemonFeed?, refused ownRefused: [EngineProblem],
        budget: Double?, into subscription: Subscription, while wanted: () -> Bool, fellBehind: () -> Bool,
        wake: @Sendable () -> Void
    ) {
        let hosts = (try? others.get()) ?? nil
        defer { hosts?.close() }
        // A search the system index refuses stays refused; this host's
        // answer goes on.
        var refused = ownRefused
        if case .failure(let error) = others { refused.append(.hostsRefused(error)) }
        let feeds = [own, hosts].compactMap { $0 }
        for feed in feeds { feed.waitForGathering(timeout: budget ?? 60, while: wanted) }
        var problems: [EngineProblem] = []
        func report() {
            let now = refused + feeds.flatMap(\.problems)
            guard now != problems else { return }
            problems = now
            if subscription.post(.problems(now)) { wake() }
        }
        // The problems first: a host offline from the start is said
        // before its results.
        report()
        if subscription.post(.snapshot(feeds.flatMap { $0.current() }, isFresh: false)) { wake() }
        while wanted() {
            var descriptors = feeds.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            _ = poll(&descriptors, nfds_t(descriptors.count), 500)
            if fellBehind() {
                // Everything as it is now, in place of what was dropped,
                // and the problems again (dropped with it).
                if subscription.post(.snapshot(feeds.flatMap { $0.current() }, isFresh: true)) { wake() }
                problems = []
            }
            for feed in feeds {
                let changes = feed.drain()
                if !changes.isEmpty,
                    subscription.post(
                        .changes(added: changes.added, changed: changes.changed, removed: changes.removed))
                {
                    wake()
                }
            }
            report()
        }
    }

    /// Gathers, then follows, until the subscription ends; the database
    /// lost is a problem, and the query gathers again once it is back;
    /// `ownRefused`, folders of this host refused, said throughout.
    /// Returns why when it ended by itself: a search refused, or past its
    /// results or budget, with no host of its own to follow.
    @discardableResult
    private static func follow(
        _ search: SharedReader.Search, url: String?, own: DaemonFeed?, ownRefused: [EngineProblem] = [],
        mostResults: Int?,
        into subscription: Subscription,
        while wanted: () -> Bool, fellBehind: () -> Bool,
        wake: @Sendable () -> Void
    ) -> String? {
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
                metadata: entry.metadata, hasUnresolvedConflicts: false, conflictOriginalPathBytes: nil,
                imported: search.attributes.isEmpty ? nil : entry.imported?.restricted(to: search.attributes))
        }
        var problems: [EngineProblem] = []
        // The shared index's own, apart from this host's.
        var sharedProblems: [EngineProblem] = []
        func report(_ now: [EngineProblem]) {
            sharedProblems = now
            let all = ownRefused + now + (own?.problems ?? [])
            guard all != problems else { return }
            problems = all
            if subscription.post(.problems(all)) { wake() }
        }
        /// The hosts offline, by name, as last read: kept while the
        /// database is away (they are not back for that).
        var offlineNow: [EngineProblem] = []
        func offline(_ live: SharedLiveQuery) -> [EngineProblem] {
            offlineNow = live.offline.sorted { $0.key < $1.key }.map { .hostOffline(host: $0.key, message: $0.value) }
            return offlineNow
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
        // Whether the database has answered once: its folders are checked
        // at its first answer (the start, or once it is back).
        var answered = false
        while wanted() {
            do {
                let url = try url ?? SharedIndexLocation.url()
                // Its folders are refused at the first answer alone:
                // gathered again after a reconnect, a folder gone since
                // leaves no results, as a host searched again does.
                var gathering = search
                gathering.checksFolders = !answered
                // Run by the system index for one of its users (a bound on
                // its results): its role must search for others.
                let live = try SharedLiveQuery(
                    reader: SharedReader(connection: PostgresConnection(url: url), forOthers: mostResults != nil),
                    search: gathering)
                live.mostResults = mostResults
                let gathered = try live.gather().map(snapshot)
                answered = true
                // Hosts offline from the start are said before their
                // results, which are stale already.
                report(offline(live))
                if subscription.post(.snapshot(gathered + (own?.current() ?? []), isFresh: !first)) { wake() }
                first = false
                while wanted() {
                    if fellBehind() {
                        // Everything as it is now, in place of what was
                        // dropped, and the problems again (dropped with it).
                        let now = live.results.values.map(snapshot) + (own?.current() ?? [])
                        if subscription.post(.snapshot(now, isFresh: true)) { wake() }
                        problems = []
                        report(offline(live))
                    }
                    let update = try live.next(timeout: 0.5, interrupt: own?.descriptor)
                    forwardOwn()
                    guard let update else { continue }
                    report(offline(live))
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
                // Past its budget, a search the system index runs for a
                // user ends: asked again, it would run as long again.
                let overBudget = mostResults != nil && (error as? SharedIndexError)?.sqlState == "57014"
                // Run by the system index for a user, a connection's failure
                // is said plainly: libpq's reason may name root's files.
                let connecting = (error as? SharedIndexError)?.connecting == true
                let reason =
                    overBudget
                    ? "the search ran past its budget of \(TextFormat.seconds(search.budget ?? 0)); narrow it"
                    : mostResults != nil && connecting
                        ? SharedIndexError.systemIndexCannotConnect
                        : (error as? SharedIndexError)?.message ?? (error as? MetadataError)?.message ?? "\(error)"
                // A query the database refuses is not retried; this host's
                // answer goes on.
                let refused = error is SharedReader.Refusal || overBudget
                // Run by the system index for a user, a refusal ends the
                // stream with why, once: not also said as a problem first.
                if refused, own == nil, mostResults != nil { return reason }
                if first {
                    // Never gathered: the query ends gathering with this
                    // host's answer alone.
                    _ = subscription.post(.snapshot(own?.current() ?? [], isFresh: false))
                    first = false
                }
                if case .scope(let host, let path, let problem)? = error as? SharedReader.Refusal {
                    report(offlineNow + [.hostsRefused(problem.error(host: host, path: path))])
                } else {
                    report(offlineNow + [.sharedIndex(SharedIndexError.said(reason))])
                }
                wake()
                var slept = 0.0
                while (refused || slept < 2) && wanted() {
                    if let own {
                        own.wait(milliseconds: 100)
                        forwardOwn()
                    } else if refused {
                        return reason
                    } else {
                        usleep(100_000)
                    }
                    slept += 0.1
                }
            }
        }
        return nil
    }
}

extension EngineProblem {
    /// A search across hosts refused (`error`): a folder its host would
    /// not let the user search, as a local search's scope error; else the
    /// shared index's refusal.
    static func hostsRefused(_ error: MetadataError) -> EngineProblem {
        if let problem = error.hostScope, let path = error.path { return .hostFolder(path, problem: problem) }
        return .sharedIndex(SharedIndexError.said(error.message))
    }
}
