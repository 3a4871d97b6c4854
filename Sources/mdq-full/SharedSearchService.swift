import MDQCore
import MDQDaemon
import MDQLive
import MDQShared
import MDQSystem
import MDQWire
import MetadataIndex

/// The system index's searches across hosts for its users (`SEARCH`): the
/// search `mdq --host` makes itself (`HostSearch`), over connections to the
/// shared index kept open between searches, judged for the user asking.
final class SharedSearchService: HostSearching {
    let url: String
    let ownName: String?
    /// Connections not in use, and how many are open in all.
    private let pool = Locked<(idle: [SharedReader], open: Int)>(([], 0))
    /// At most this many kept between searches.
    static let keptConnections = 4
    /// At most this many open at once, whatever the users ask: past it a
    /// search is left to the full command (which connects as the user),
    /// so the system index never takes the database's connections from
    /// the publishers.
    static let mostConnections = 8
    /// Connections one search shares the other hosts among: each searches
    /// its hosts at once with the others (a rare word over nine hosts of a
    /// million entries: 33 ms on one connection, 23 on two; see
    /// Documentation/measurements.md).
    static let connectionsPerSearch = 2
    /// The most lines one answer gives: a search that finds more is left
    /// to the full command (which prints as it reads), so a user cannot
    /// make the system index hold their millions of paths.
    static let mostLines = 100_000

    /// The most live searches across hosts it runs for its users at once
    /// (`subscribe-hosts`), and for one user: each holds a connection of
    /// its own (it listens there), apart from the searches'
    /// `mostConnections`.
    static let mostLiveSearches = 16
    static let mostLiveSearchesPerUser = 4
    /// The live searches running, in all and by user (by number).
    private let liveSearches = Locked<(all: Int, byUser: [UInt32: Int])>((0, [:]))

    init(url: String, ownName: String?) {
        self.url = url
        self.ownName = ownName
    }

    func answer(_ request: HostSearchRequest, own: @escaping HostSearchRequest.Own) throws -> HostSearchReply {
        try answer(request, own: own, again: false)
    }

    /// - Parameter again: whether this is the second attempt: a kept
    ///   connection the server ended while it sat idle (a restart) may
    ///   still look open when taken (the session's end not yet on its
    ///   socket), and fail at its first statement; the search is then
    ///   made once more, on connections made anew.
    private func answer(_ request: HostSearchRequest, own: @escaping HostSearchRequest.Own, again: Bool) throws
        -> HostSearchReply
    {
        var search = HostSearch(predicate: request.predicate, user: request.user)
        search.hostNames = request.hosts
        search.folders = request.folders
        search.ownName = ownName
        // This host alone is its index's to answer: the database is not
        // asked (and may be away).
        var readers: [SharedReader] = []
        do {
            readers =
                search.onlyOwn
                ? []
                : try take(max(1, min(request.hosts?.count ?? Self.connectionsPerSearch, Self.connectionsPerSearch)))
        } catch let error as SharedIndexError where error.unreachable && search.asksOwn {
            // The database away: this host's part, and the user told so.
            search.databaseAway = error.message
        } catch let error as SharedIndexError {
            throw MetadataError.daemon(error.said)
        }
        search.budget = request.budget
        search.attributes = request.attributes
        // A limit bounds a sorted search when the database orders it.
        search.asked = (
            request.order.map { HostSearch.ordersInDatabase($0, request.predicate) } == false ? nil : request.limit,
            request.askedBudget
        )
        // Without a limit (or a larger one), one more than an answer may
        // hold: a search that reaches it is the full command's.
        let uncapped = (request.limit ?? Int.max) > Self.mostLines
        if let order = request.order, !request.counting {
            // Sorted by the client: each host's first in that order when
            // the database can order by it, else every match (capped).
            search.sortsAfter = true
            search.order = order
            search.limit = request.limit
            search.mostResults = Self.mostLines + 1
        } else if !request.counting {
            search.limit = min(request.limit ?? Int.max, Self.mostLines + 1)
            if uncapped { search.mostResults = Self.mostLines + 1 }
        } else {
            search.limit = request.limit
        }
        var reply = HostSearchReply()
        let answer: HostSearch.Answer
        // The budget bounds the whole search, not each statement alone
        // (each of a search's fetches would have it again): past it, what
        // the connections run is cancelled, and the client, which waits
        // for the budget and a margin, is answered before it gives up.
        let watchdog = request.budget.map { seconds in
            let cancellers = readers.compactMap { $0.connection.canceller() }
            return Watchdog(seconds: seconds) { for canceller in cancellers { canceller.cancel() } }
        }
        do {
            answer = try search.run(
                readers: readers, counting: request.counting,
                own: { [ownName] folders, counting, limit, first in
                    let (count, items): (Int, [MetadataItem])
                    do {
                        (count, items) = try own(folders, counting, limit, first)
                    } catch is HostSearchRequest.OwnWithoutContent {
                        throw HostSearch.OwnNotSearched.withoutContent(ownName ?? "this host")
                    }
                    return (count, items.map { HostSearch.Result(host: nil, item: $0, stale: false) })
                }, warn: { reply.warnings.append($0) })
        } catch {
            watchdog?.finish()
            // A connection may be what failed, or be left in a transaction:
            // none is kept.
            close(readers)
            if !again, error is SharedIndexError, readers.contains(where: { $0.connection.isLost }) {
                return try self.answer(request, own: own, again: true)
            }
            switch error {
            case let error as SharedIndexError where error.sqlState == "57014":
                // The budget, as the command says it.
                throw SharedIndexSettings.overBudget(request.budget)
            case let error as SharedIndexError: throw MetadataError.daemon(error.said)
            case SharedReader.Refusal.scope(let host, let path, let problem):
                throw problem.error(host: host, path: path)
            case let refusal as SharedReader.Refusal: throw MetadataError.invalidArgument(refusal.description)
            default: throw error
            }
        }
        // A cancel on its way could end a later search's statement.
        if watchdog?.finish() == true { close(readers) } else { give(readers) }
        if request.counting {
            reply.count = answer.count
            return reply
        }
        // Sorted by the client, which cuts them once sorted: of the parts'
        // first, the first of all (and their ties).
        let sortedByClient = request.order != nil
        var results = answer.results
        if let order = request.order, let limit = request.limit, !answer.isCut {
            results = HostSearch.first(limit, of: results, by: order)
        }
        guard !(uncapped || sortedByClient) || (!answer.isCut && results.count <= Self.mostLines) else {
            throw MetadataError.tooExpensive("more than \(Self.mostLines) results: \(SearchRouter.pastCapReason)")
        }
        for result in results.prefix(sortedByClient ? Int.max : request.limit ?? Int.max) {
            if request.items {
                reply.items.append(
                    HostSearchReply.Item(
                        host: result.host, path: result.item.pathBytes, kind: result.item.kind,
                        metadata: result.item.metadata, stale: result.stale,
                        imported: request.attributes.isEmpty ? nil : result.item.importedValues))
                reply.count += 1
                continue
            }
            if let host = result.host { reply.paths += Array(host.utf8) + [UInt8(ascii: ":")] }
            reply.paths += result.item.pathBytes
            reply.paths.append(0)
            reply.count += 1
        }
        return reply
    }

    /// Why searches would fail now (the database away, a role that may
    /// not search for others), or nil; a connection made to know it is
    /// kept for them.
    func trouble() -> String? {
        do {
            give(try take(1))
            return nil
        } catch {
            return (error as? SharedIndexError)?.said ?? (error as? MetadataError)?.message ?? "\(error)"
        }
    }

    func hosts() throws -> [[UInt8]] {
        let readers: [SharedReader]
        do {
            readers = try take(1)
        } catch let error as SharedIndexError {
            throw MetadataError.daemon(error.said)
        }
        let hosts: [SharedHost]
        do {
            hosts = try readers[0].hosts()
        } catch {
            close(readers)
            throw MetadataError.daemon(error.said)
        }
        give(readers)
        return hosts.map(\.json)
    }

    func follow(
        _ request: HostSearchRequest, capacity: Int, checkOnly: Bool, wake: @escaping @Sendable () -> Void,
        refused: @escaping @Sendable (_ reason: String) -> Void
    ) throws -> (any HostFollowing)? {
        // A place first: a user past their share asks nothing of the
        // database.
        let user = request.user
        let requester = request.requester
        if !checkOnly {
            let refusal = liveSearches.withLock { live -> String? in
                if live.all >= Self.mostLiveSearches {
                    return "the system index runs \(Self.mostLiveSearches) live searches across hosts already"
                }
                if live.byUser[requester, default: 0] >= Self.mostLiveSearchesPerUser {
                    return "the system index runs \(Self.mostLiveSearchesPerUser) live searches across hosts for "
                        + "each user, and \(user.isEmpty ? "user \(requester)" : user) has them"
                }
                live.all += 1
                live.byUser[requester, default: 0] += 1
                return nil
            }
            if let refusal {
                throw MetadataError.daemon(refusal + "; a database credential of your own ($MDQ_SHARED) runs more")
            }
        }
        let liveSearches = liveSearches
        let release: @Sendable () -> Void = {
            liveSearches.withLock { live in
                live.all -= 1
                live.byUser[requester, default: 1] -= 1
                if live.byUser[requester] == 0 { live.byUser[requester] = nil }
            }
        }
        var search = SharedReader.Search(predicate: request.predicate)
        search.hosts = request.hosts
        search.scopes = request.folders
        search.excludedHosts = request.excludedHosts
        search.user = user
        // Refused as the user bounded it, as with their own credential.
        search.budget = request.askedBudget
        var readers: [SharedReader] = []
        do {
            readers = try take(1)
            try readers[0].check(search)
            give(readers)
        } catch let error as SharedIndexError where error.unreachable {
            // The database away: the search is checked when it is back (and
            // refused then, as a problem: its follower checks it at the
            // database's first answer); meanwhile this host's part runs and
            // the user is told the shared index is away.
            close(readers)
        } catch {
            if !checkOnly { release() }
            // The connection goes back, or (a failure of its own) closes.
            if error is SharedReader.Refusal { give(readers) } else { close(readers) }
            switch error {
            case let refusal as SharedReader.Refusal:
                if case .unknownHost(let name, let known) = refusal {
                    throw MetadataError.invalidArgument(SharedReader.unknownHost(name, known: known))
                }
                if case .scope(let host, let path, let problem) = refusal {
                    throw problem.error(host: host, path: path)
                }
                throw MetadataError.invalidArgument(refusal.description)
            case let error as SharedIndexError:
                throw MetadataError.daemon(error.said)
            default:
                throw error
            }
        }
        if checkOnly { return nil }
        // Its statements bounded as a query's here (what the user asks, 30 s
        // when nothing, at most MAX_QUERY_SECONDS); the place is given back
        // once its thread is done with the database.
        let source = SharedSource(
            serving: user, hosts: request.hosts ?? [], folders: request.folders, excluded: request.excludedHosts,
            url: url, mostResults: Self.mostLines
        ) { refusal in
            release()
            if let refusal { refused(refusal) }
        }
        let (subscription, _) = source.subscribe(
            scopes: [], predicate: request.predicate, container: nil, budget: request.budget, capacity: capacity,
            progress: nil, fetching: request.attributes, viewer: nil, wake: wake)
        return LiveSearch(source: source, subscription: subscription)
    }

    /// A live search across hosts run for a user.
    private final class LiveSearch: HostFollowing {
        let source: SharedSource
        let subscription: Subscription

        init(source: SharedSource, subscription: Subscription) {
            self.source = source
            self.subscription = subscription
        }

        func resynchronize() {
            source.resynchronize(subscription)
        }

        func end() {
            source.unsubscribe(subscription)
        }
    }

    /// `count` connections: idle ones first, then new ones, never more
    /// than `mostConnections` open.
    private func take(_ count: Int) throws -> [SharedReader] {
        let (reused, wanted) = try pool.withLock { pool throws -> ([SharedReader], Int) in
            // Those the server closed meanwhile (stopped, restarted) go.
            let open = pool.idle.filter { $0.connection.isOpenWhileIdle }
            pool.open -= pool.idle.count - open.count
            pool.idle = open
            let reused = (0..<min(count, pool.idle.count)).map { _ in pool.idle.removeLast() }
            let wanted = count - reused.count
            guard pool.open + wanted <= Self.mostConnections else {
                pool.idle += reused
                throw MetadataError.daemon(
                    "the system index's \(Self.mostConnections) connections to the shared index are all in use")
            }
            pool.open += wanted
            return (reused, wanted)
        }
        var readers = reused
        do throws(SharedIndexError) {
            // Each judged for the user it names: a role that may search
            // only as itself is refused (each user would be shown its view).
            for _ in 0..<wanted {
                let connection: PostgresConnection
                do {
                    connection = try PostgresConnection(url: url)
                } catch {
                    throw said(error)
                }
                readers.append(try SharedReader(connection: connection, forOthers: true))
            }
        } catch {
            pool.withLock { $0.open -= wanted - (readers.count - reused.count) }
            close(readers)
            throw error
        }
        return readers
    }

    /// The last reason a connection failed, as logged (each logged once).
    private let lastFailure = Locked<String?>(nil)

    /// A connection's failure as users are told it: libpq's reason may
    /// name root's files and role (a password file, a role refused), so
    /// the log has it and users a plain word.
    private func said(_ error: SharedIndexError) -> SharedIndexError {
        let reason = error.said
        if lastFailure.withLock({ last in
            defer { last = reason }; return last != reason
        }) {
            Diagnostics.log("searches across hosts: \(reason)")
        }
        var plain = SharedIndexError(SharedIndexError.systemIndexCannotConnect)
        plain.unreachable = error.unreachable
        return plain
    }

    /// Keeps connections for the next searches, up to `keptConnections`;
    /// the others close as they are let go.
    private func give(_ readers: [SharedReader]) {
        pool.withLock { pool in
            for reader in readers {
                if pool.idle.count < Self.keptConnections { pool.idle.append(reader) } else { pool.open -= 1 }
            }
        }
    }

    /// Lets connections go (they close).
    private func close(_ readers: [SharedReader]) {
        pool.withLock { $0.open -= readers.count }
    }
}
