package import MDQCore
package import MDQSystem

/// One search across hosts, as `mdq --host NAME` and `--all-hosts` make
/// it, wherever it runs (the command, or the system index answering its
/// users over a connection it keeps): this host's entries from its system
/// index (`own`, fresh to the millisecond), every other host's from the
/// shared index, each user shown what that host would let a user of the
/// same name see.
package struct HostSearch {
    package var predicate: MetadataPredicate
    /// Host names asked for; nil for every host, this one included.
    package var hostNames: [String]?
    /// Folders (`host`, absolute path) asked for; none for whole hosts.
    package var folders: [(host: String, path: [UInt8])] = []
    /// This host's name in the shared index, if it has one.
    package var ownName: String?
    /// Whose view is searched (by name).
    package var user: String
    /// At most this many results, or this count; when the results are
    /// sorted afterwards, every match, or each part's first `limit` in
    /// `order` (`ordersInDatabase`).
    package var limit: Int?
    package var sortsAfter = false
    /// The first order the results are sorted by afterwards: when the
    /// database orders by it (a size or a modification date) and answers
    /// the predicate exactly, each host gives its first `limit` in it
    /// (ties with the last included), not every match.
    package var order: MetadataSortDescriptor?
    /// Seconds the database may spend.
    package var budget: Double?
    /// Imported attributes whose values each result of another host
    /// brings (`--attr kMDItemTitle`), as the user may read its file.
    package var attributes: Set<MetadataAttribute> = []
    /// What the user gave (`--limit`, `--budget`), when the search runs
    /// with wider bounds of its own (the system index's cap and default
    /// budget): a search the shared index cannot narrow is refused on
    /// these, as the command refuses it.
    package var asked: (limit: Int?, budget: Double?)?
    /// The most results gathered from the other hosts, all connections
    /// together: past it the answer says it is cut (`Answer.isCut`).
    package var mostResults: Int?

    package init(predicate: MetadataPredicate, user: String) {
        self.predicate = predicate
        self.user = user
    }

    /// One result: its host (nil for this host), the item, and whether its
    /// host is not live.
    package struct Result: Sendable {
        package var host: String?
        package var item: MetadataItem
        package var stale: Bool

        package init(host: String?, item: MetadataItem, stale: Bool) {
            self.host = host
            self.item = item
            self.stale = stale
        }
    }

    package struct Answer {
        package var count = 0
        /// This host's first, then the others' by host name; each by path.
        package var results: [Result] = []
        /// More than `mostResults` were found: the results are not all.
        package var isCut = false
    }

    /// This host's part, from its system index: the folders of it asked
    /// for (none: all of it), whether only the count is needed, the most
    /// results wanted, and, for a search sorted afterwards, the order whose
    /// first `count` (and their ties) are enough (all the results do too).
    package typealias OwnAnswer =
        @Sendable (
            _ folders: [[UInt8]], _ counting: Bool, _ limit: Int?,
            _ first: (order: MetadataSortDescriptor, count: Int)?
        ) throws -> (count: Int, results: [Result])

    /// This host's part cannot be searched: its index does not hold what
    /// the predicate tests (what is inside files, without `CONTENT`). The
    /// other hosts are answered, and the user is told `reason`.
    package struct OwnNotSearched: Error {
        package var reason: String

        package init(_ reason: String) {
            self.reason = reason
        }

        /// Why this host's files were not searched for what is inside them.
        package static func withoutContent(_ name: String) -> OwnNotSearched {
            OwnNotSearched(
                "\(name) (this host) was not searched: its system index does not import what is inside files "
                    + "(CONTENT in /etc/mdq/system.conf)")
        }
    }

    /// Whether a search for `predicate` sorted by `descriptor` reads each
    /// host's first `limit` in that order, and is bounded by its limit:
    /// when the database orders by it from an index (a size, a
    /// modification date) and answers the predicate exactly (else every
    /// candidate is read, to be checked here).
    package static func ordersInDatabase(_ descriptor: MetadataSortDescriptor, _ predicate: MetadataPredicate) -> Bool {
        column(ordering: descriptor, predicate) != nil
    }

    private static func column(ordering descriptor: MetadataSortDescriptor, _ predicate: MetadataPredicate)
        -> SQLCondition.Column?
    {
        guard let column = MetadataAttribute(key: descriptor.key).flatMap(PredicateSQL.sortColumn),
            column != .btime, (try? PredicateSQL(predicate))?.exact == true
        else { return nil }
        return column
    }

    /// Why the database cannot be reached, when it cannot: this host's
    /// part alone is searched (its index answers it), and the user is told
    /// the others were not; a search of no part of this host fails with it.
    package var databaseAway: String?

    /// Whether the search asks for this host, whole or some of its folders.
    package var asksOwn: Bool {
        guard let ownName else { return false }
        return hostNames.map { $0.contains(ownName) } ?? true || folders.contains { $0.host == ownName }
    }

    /// Whether the search asks this host alone (by name, its folders
    /// alone): its system index answers it whole.
    package var onlyOwn: Bool {
        guard let ownName, let hostNames, !hostNames.isEmpty else { return false }
        return hostNames.allSatisfy { $0 == ownName } && folders.allSatisfy { $0.host == ownName }
    }

    /// Runs the search.
    ///
    /// - Parameter own: answers this host's part; nil when its system index
    ///   does not run (its entries then come from the shared index, if it
    ///   publishes).
    /// - Throws: `MetadataError.invalidArgument` for a host the shared
    ///   index does not know; `SharedReader.Refusal`, `SharedIndexError`
    ///   as the reader throws them.
    package func run(
        reader: SharedReader, counting: Bool, own: OwnAnswer?, warn: (String) -> Void
    ) throws -> Answer {
        try run(readers: [reader], counting: counting, own: own, warn: warn)
    }

    /// Runs the search with several connections: the other hosts are
    /// shared among them, each connection searching its hosts at once with
    /// the others (a host's rows all from one snapshot), so a search costs
    /// the database's slowest share, not the sum of every host's.
    ///
    /// - Parameters:
    ///   - readers: none when the search asks this host alone (`onlyOwn`),
    ///     which its index answers: the database is not asked, and may be
    ///     away.
    ///   - warn: told what the user is to know before the answer (hosts
    ///     not live, this host's entries from the shared index), as soon as
    ///     it is known.
    package func run(
        readers: [SharedReader], counting: Bool, own: OwnAnswer?, warn: (String) -> Void
    ) throws -> Answer {
        if let away = databaseAway {
            // This host's part alone, said so.
            guard let ownName, own != nil, asksOwn else { throw SharedIndexError(away) }
            warn("only \(ownName) was searched: \(SharedIndexError.said(away))")
            var ownPart = self
            ownPart.databaseAway = nil
            ownPart.hostNames = [ownName]
            ownPart.folders = folders.filter { $0.host == ownName }
            return try ownPart.run(readers: [], counting: counting, own: own, warn: warn)
        }
        precondition(!readers.isEmpty || (onlyOwn && own != nil))
        var answer = Answer()
        let hosts = try readers.first?.hosts() ?? []
        var requested: [String] = []
        for name in hostNames ?? hosts.map(\.name) where !requested.contains(name) { requested.append(name) }
        if hostNames == nil, let ownName, !requested.contains(ownName) { requested.append(ownName) }
        for name in requested where name != ownName && !hosts.contains(where: { $0.name == name }) {
            throw MetadataError.invalidArgument(SharedReader.unknownHost(name, known: hosts.map(\.name)))
        }
        var searchesOwn = ownName.map { requested.contains($0) } ?? false
        if searchesOwn, own == nil, let ownName {
            searchesOwn = false
            if hosts.contains(where: { $0.name == ownName }) {
                warn("this host's system index is not running: its entries (\(ownName)) come from the shared index")
            } else {
                requested.removeAll { $0 == ownName }
                if hostNames?.contains(ownName) == true {
                    throw MetadataError.invalidArgument(
                        "\(ownName) is this host: its system index is not running (mdq system start) and it "
                            + "publishes nothing")
                }
            }
        }
        let localName = searchesOwn ? ownName : nil
        // Folders of some hosts, and others whole (`--host b --onlyin
        // a:/x`, `--all-hosts --onlyin a:/x`): each host asked for is
        // searched, whole unless folders of it are given, as a live search
        // does it. A host whole is its folder `/` in the shared index.
        var folders = self.folders
        if !folders.isEmpty {
            for name in requested where name != localName && !folders.contains(where: { $0.host == name }) {
                folders.append((name, Array("/".utf8)))
            }
        }
        var search = SharedReader.Search(predicate: predicate)
        search.hosts = requested.filter { $0 != localName }
        search.scopes = folders.filter { $0.host != localName }
        search.user = user
        search.budget = budget
        search.attributes = attributes.filter { $0 != .textContent }
        search.limit = sortsAfter ? nil : limit
        // Sorted afterwards by a size or a date: each host's first in that
        // order are enough.
        let ordered = order.flatMap { descriptor in
            Self.column(ordering: descriptor, predicate).map { (descriptor, $0) }
        }
        if sortsAfter, let limit, let (descriptor, column) = ordered {
            search.limit = limit
            search.order = (column, descriptor.ascending)
        }
        for stale in hosts.filter({ search.hosts?.contains($0.name) == true && $0.isStale }) {
            warn(
                "\(stale.name) is \(stale.state)\(stale.lastContact.map { " since \($0)" } ?? ""): "
                    + "its entries are as of then")
        }
        // Hosts that import what is inside files but whose rows do not
        // hold those attributes yet: searched as if their files had none.
        if search.needsAttributes {
            for host in hosts
            where search.hosts?.contains(host.name) == true
                && host.publishesWords && !host.publishesAttributes
            {
                warn(
                    "\(host.name) has not published what its importers read yet (its mdq is older than this one's, "
                        + "or it is publishing it for the first time): its files are searched as if they had none")
            }
        }
        // A search the shared index refuses is refused before this host's
        // part starts: a whole index searched for nothing.
        let others = search.hosts ?? []
        if !others.isEmpty {
            var bounded = search
            if let asked { (bounded.limit, bounded.budget) = asked }
            _ = try SharedReader.translate(bounded)
        }
        // More results than the most an answer holds, here or elsewhere.
        let cut = Locked(false)
        // This host's index and the database answer at once, on threads
        // of their own: a dispatch queue's few workers (one per core)
        // could make a connection wait for this host's search to end
        // before it sent its query.
        let ownPart = Locked<Swift.Result<(count: Int, results: [Result]), any Error>?>(nil)
        var ownThread: WorkerThreads.Handle?
        if let own, searchesOwn, let localName {
            let ownFolders = folders.filter { $0.host == localName }.map(\.path)
            // Sorted afterwards: all its matches, at most the most results
            // (one more, and the answer is cut), of which its first in the
            // order when the others give theirs.
            let cap = sortsAfter ? mostResults : nil
            let limit = sortsAfter ? cap : search.limit
            let first = search.order == nil ? nil : ordered.map { (order: $0.0, count: self.limit ?? 0) }
            let body: @Sendable () -> Void = {
                let result = Swift.Result {
                    var answer = try own(ownFolders, counting, limit, first)
                    if let cap, answer.results.count >= cap { cut.withLock { $0 = true } }
                    if let (descriptor, count) = first {
                        answer.results = Self.first(count, of: answer.results, by: descriptor)
                    }
                    return answer
                }
                ownPart.withLock { $0 = result }
            }
            ownThread = WorkerThreads.start(name: "mdq-host-own", detached: false, body)
            if ownThread == nil { body() }
        }
        func ownAnswer() throws -> (count: Int, results: [Result]) {
            ownThread?.join()
            ownThread = nil
            do {
                return try ownPart.withLock { $0 }?.get() ?? (0, [])
            } catch let skipped as OwnNotSearched {
                warn(skipped.reason)
                return (0, [])
            }
        }
        // The other hosts dealt among the connections, one share each.
        let shares = min(readers.count, others.count)
        let searches: [SharedReader.Search] = (0..<shares).map { k in
            var share = search
            share.hosts = others.enumerated().filter { $0.offset % shares == k }.map(\.element)
            return share
        }
        let parts = Locked<[Swift.Result<(count: Int, results: [Result]), any Error>?]>(
            Array(repeating: nil, count: shares))
        // Results gathered by every connection together, against
        // `mostResults`.
        let gathered = Locked(0)
        let most = mostResults ?? Int.max
        // Each connection is used by its own thread alone.
        let connections = UncheckedSendable(readers)
        let attributes = search.attributes
        // No other host: no thread, nothing for the database.
        WorkerThreads.run(count: shares, name: "mdq-host-search") { k in
            let reader = connections.value[k]
            let result = Swift.Result { () throws -> (count: Int, results: [Result]) in
                if counting { return (try reader.count(searches[k]), []) }
                var results: [Result] = []
                var serial = UInt64(k + 1) << 40
                _ = try reader.search(searches[k]) { entry in
                    serial += 1
                    var item = MetadataItem(
                        serial: serial, pathBytes: entry.pathBytes, kind: entry.kind, metadata: entry.metadata)
                    if !attributes.isEmpty { item.importedValues = entry.imported?.restricted(to: attributes) }
                    results.append(Result(host: entry.host, item: item, stale: entry.stale))
                    let total = gathered.withLock { total in
                        total += 1
                        return total
                    }
                    guard total <= most else {
                        cut.withLock { $0 = true }
                        return false
                    }
                    return true
                }
                return (0, results)
            }
            parts.withLock { $0[k] = result }
        }
        for part in parts.withLock({ $0 }) {
            guard let part else { continue }
            let (count, results): (Int, [Result])
            do {
                (count, results) = try part.get()
            } catch {
                // Nothing of the search outlives it.
                _ = try? ownAnswer()
                throw error
            }
            answer.count += count
            answer.results += results
        }
        if counting {
            answer.count += try ownAnswer().count
            if let limit { answer.count = min(limit, answer.count) }
            return answer
        }
        answer.isCut = cut.withLock { $0 }
        answer.results += try ownAnswer().results
        // This host first, then the others by name; each in path order.
        // Their positions are sorted, then the results moved once: moved
        // by the sort, a hundred thousand results cost a second.
        let results = answer.results
        let order = results.indices.sorted { a, b in
            let (first, second) = (results[a].host ?? "", results[b].host ?? "")
            return first != second
                ? first < second : results[a].item.pathBytes.lexicographicallyPrecedes(results[b].item.pathBytes)
        }
        answer.results = order.map { results[$0] }
        answer.count = answer.results.count
        return answer
    }

    /// The first `count` results in `descriptor`'s order, and every result
    /// tied with the last of them, in their order before: whichever of
    /// them a sort by more than this order keeps is among these.
    package static func first(_ count: Int, of results: [Result], by descriptor: MetadataSortDescriptor) -> [Result] {
        results.map(\.item).positionsOfFirst(count, by: descriptor).map { results[$0] }
    }

}
