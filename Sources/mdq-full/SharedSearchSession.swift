import ArgumentParser
import Foundation
import MDQDaemon
import MDQEngine
import MDQShared
import MDQWire
import MetadataIndex
import SystemPackage

/// Where users of this host find the shared index across hosts
/// (`$MDQ_SHARED`, else `SHARED` in the system index's configuration), and
/// why it refuses a search.
enum SharedIndexSettings {
    /// Why a user with no database credential of their own cannot search
    /// across hosts, `missing` saying that none is configured for them:
    /// when this host's system index, which searches for such users, ran
    /// since the machine started (its lock file is in its runtime folder)
    /// and is not running now, that is the trouble (status 1), not the
    /// configuration.
    static func withoutCredential(_ missing: any Error) -> any Error {
        guard let missing = missing as? MetadataError, missing.code == .invalidArgument,
            (try? DaemonClient.connectSystem()) == nil,
            FileStatus.of(pathBytes: DaemonPaths.system.lock.bytes).map({ $0.kind == .file }) == .success(true)
        else { return missing }
        return MetadataError.daemon(
            "this host's system index is not running (mdq system start): it searches across hosts for users with "
                + "no database credential of their own (one of your own: $MDQ_SHARED)")
    }

    /// A search across hosts stopped by the database at its budget
    /// (`statement_timeout`, set from --budget).
    static func overBudget(_ budget: Double?) -> MetadataError {
        MetadataError(
            code: .tooExpensive,
            message: "query too expensive: the search across hosts took more than its budget "
                + "(\(budget.map { "\($0)" } ?? "?") s); narrow the query, or give it more with --budget")
    }

    /// Refuses what a search across hosts cannot do as a local search
    /// does it, rather than do it otherwise: filters of the local crawl
    /// (`--type`, `--exclude`, `--xdev`), and columns, sorts and groups by
    /// an attribute hosts do not publish.
    static func checkOptions(scope: ScopeOptions, output: OutputOptions) throws {
        var local: [String] = []
        if !output.type.isEmpty { local.append("--type") }
        if !scope.excludedFolders.isEmpty { local.append("--exclude") }
        if scope.stayOnFileSystem { local.append("--xdev") }
        if scope.includesPseudoFileSystems { local.append("--pseudo-filesystems") }
        if let first = local.first {
            throw ValidationError(
                "\(first) is not taken by a search across hosts (--host, --all-hosts, --onlyin NAME:/path): it "
                    + "filters a local search")
        }
        let keys = output.attributes + output.sortDescriptors.map(\.key) + [output.group].compactMap { $0 }
        if let unpublished = keys.first(where: { key in
            MetadataAttribute(key: key).map { !PredicateSQL.publishes($0) } ?? false
        }) {
            throw MetadataError.invalidArgument(
                "\(unpublished) is not published to the shared index (hosts publish names, kinds, sizes, dates, "
                    + "types, owners and what importers read, not a file's text): show it on its own host")
        }
    }

    /// Runs a call on the shared index, saying why it refuses the search
    /// (as `MetadataError`s with the status a local search would have).
    /// - Parameter source: the query as typed, for a caret under the part
    ///   a refusal is about.
    static func explaining<T>(
        _ predicate: MetadataPredicate, source: [UInt8]? = nil, budget: Double?, live: Bool = false,
        _ body: () throws -> T
    ) throws -> T {
        do {
            return try body()
        } catch let refusal as SharedReader.Refusal {
            switch refusal {
            case .unpublished(let attribute):
                throw MetadataError.invalidArgument(
                    "\(attribute) is not published to the shared index (hosts publish names, kinds, sizes, dates, "
                        + "types, owners and what importers read): search it on its own host"
                ).pointing(at: [Array(attribute.utf8)], in: source)
            case .unanswerable(let attribute, let reason):
                throw MetadataError.invalidArgument(reason).pointing(at: [Array(attribute.utf8)], in: source)
            case .unbounded(let culprit):
                var error = MetadataError.invalidArgument(
                    "the shared index cannot narrow this search (\(predicate)): \(SharedReader.narrowedBy), so every "
                        + "entry of the hosts searched would be "
                        + (live
                            ? "read; add --budget SECONDS, or a narrower test"
                            : "read; add --limit N or --budget SECONDS, or a narrower test"))
                if let culprit {
                    // The value as typed (a glob's stars may be the
                    // command's own), else the attribute's name.
                    var candidates: [[UInt8]] = []
                    if let literal = culprit.literal {
                        candidates.append(literal)
                        let trimmed = Array(
                            literal.drop { $0 == UInt8(ascii: "*") }.reversed().drop { $0 == UInt8(ascii: "*") }
                                .reversed())
                        if !trimmed.isEmpty { candidates.append(trimmed) }
                    }
                    candidates.append(Array(culprit.attribute.utf8))
                    error = error.pointing(at: candidates, in: source)
                }
                throw error
            case .unknownHost(let name, let known):
                throw MetadataError.invalidArgument(SharedReader.unknownHost(name, known: known))
            case .scope(let host, let path, let problem):
                throw problem.error(host: host, path: path)
            case .tooManyResults:
                throw MetadataError(code: .tooExpensive, message: "query too expensive: \(refusal)")
            case .tooManyFolders:
                throw MetadataError.invalidArgument(refusal.description)
            }
        } catch let error as SharedIndexError where error.sqlState == "57014" {
            // query_canceled: the statement timeout set from --budget.
            throw overBudget(budget)
        } catch let error as SharedIndexError {
            throw MetadataError.daemon(error.said)
        }
    }

    /// Refuses folders of hosts whose path is not UTF-8 for the system
    /// index: they go as bytes in the database's scopes, not in the
    /// protocol's strings.
    static func refuseNonUTF8(_ folders: [(host: String, path: [UInt8])]) throws(MetadataError) {
        guard folders.allSatisfy({ String(validating: $0.path, as: UTF8.self) != nil }) else {
            throw MetadataError.invalidArgument(
                "a folder whose path is not UTF-8 is searched with a database credential of your own "
                    + "($MDQ_SHARED); the system index takes UTF-8 paths")
        }
    }

    static func connect() throws -> SharedReader {
        do {
            return try SharedReader(connection: PostgresConnection(url: SharedIndexLocation.url()))
        } catch let error as SharedIndexError {
            throw MetadataError.daemon(error.said)
        }
    }
}

/// `mdq --host NAME QUERY`, `mdq --all-hosts QUERY`, `--onlyin NAME:/path`:
/// this host's entries from its system index (fresh), every other host's
/// from the shared index (as of its last batch), each user shown what the
/// host would let a user of the same name see.
struct SharedSearchSession {
    let predicate: MetadataPredicate
    let scope: ScopeOptions
    let output: OutputOptions
    var budget: Double?
    /// The query as typed, for carets.
    var source: [UInt8]?
    /// `--onlyin NAME:/path` folders, each path as its bytes were given.
    var remoteFolders: [(host: String, path: [UInt8])] = []

    typealias Result = HostSearch.Result

    func run() throws {
        ProcessEnvironment.ignoreBrokenPipe()
        var search = HostSearch(predicate: predicate, user: SharedReader.Search.localUser)
        search.hostNames = scope.hostNames
        search.folders = remoteFolders
        search.ownName = SystemConfiguration.sharedHostName
        search.limit = output.limit
        search.sortsAfter = !output.sort.isEmpty
        search.order = output.sortDescriptors.first
        search.budget = budget
        // What importers read that the output shows, sorts or groups by.
        let attributes = OneShotSession.importedColumns(output)
        search.attributes = attributes
        let counting = output.count && output.group == nil
        // This host answers from its system index, when it runs.
        var own: HostSearch.OwnAnswer?
        // This host is the name its system index publishes as (which
        // `--host-name` may have given), else what the configuration says.
        let system = try? DaemonClient.connectSystem().status()
        if let name = system?.publishing?.hostName { search.ownName = name }
        if search.ownName != nil, system != nil {
            let name = search.ownName ?? ""
            own = { @Sendable [predicate, budget] folders, counting, limit, first in
                try Self.searchOwnHost(
                    predicate, named: name, folders: folders, counting: counting, limit: limit, first: first,
                    budget: budget, attributes: attributes)
            }
        }
        // This host alone, with a credential of the user's own, is its
        // index's to answer: the database is not asked (and may be away).
        // Without one, the system index answers it (as it answers every
        // search for a user with none).
        var readers: [SharedReader] = []
        if !(search.onlyOwn && own != nil && SharedIndexLocation.usersOwn != nil) {
            do {
                readers = [try SharedReader(connection: PostgresConnection(url: SharedIndexLocation.url()))]
            } catch let error as SharedIndexError
                where error.unreachable && SharedIndexLocation.usersOwn != nil && own != nil && search.asksOwn
            {
                // The user's own credential, and the database does not
                // answer: this host's part is searched, said so.
                search.databaseAway = error.message
            } catch {
                let error = (error as? SharedIndexError).map { MetadataError.daemon($0.said) } ?? error
                // No database credential of the user's (`SHARED` of the
                // system's configuration, which the user's role may not
                // reach, or none): the system index searches for its users
                // when it searches the shared index. The user's own
                // ($MDQ_SHARED) that does not let them in is said: answered
                // from elsewhere, they would never learn it, and each form
                // of the search could come from another database.
                guard SharedIndexLocation.usersOwn == nil, try runBySystemIndex() else {
                    throw SharedIndexSettings.withoutCredential(error)
                }
                return
            }
        }
        try Self.checkOwnFolders(remoteFolders, ownName: search.ownName)
        let answer = try SharedIndexSettings.explaining(predicate, source: source, budget: budget) {
            try search.run(readers: readers, counting: counting, own: own, warn: Diagnostics.warn)
        }
        if counting {
            StandardOutput.print(String(answer.count))
            return
        }
        print(answer.results, ownName: search.ownName ?? "")
    }

    /// The search asked of the system index (`search-hosts`, each result
    /// with its attributes), printed here as the command prints its own.
    ///
    /// - Returns: false when no system index searches across hosts here.
    private func runBySystemIndex() throws -> Bool {
        guard let client = try? DaemonClient.connectSystem(), let status = try? client.status(),
            let features = (try? client.hello())?.features, features.contains("search-hosts-items")
        else { return false }
        try SharedIndexSettings.refuseNonUTF8(remoteFolders)
        let counting = output.count && output.group == nil
        // Values of what importers read, and searches by them, from a
        // daemon that gives them.
        let attributes = counting ? [] : OneShotSession.importedColumns(output)
        let imported = SharedReader.Search.importedAttributes(of: predicate, shown: attributes)
        if !imported.isEmpty && !features.contains("search-hosts-attributes") {
            throw DaemonProtocol.olderAcrossHosts(imported)
        }
        // Sorted here: the limit goes with the order, to a daemon that
        // takes one (each host's first in it), else every match comes. A
        // count is not sorted: it is cut.
        let order = features.contains("search-hosts-order") ? output.sortDescriptors.first : nil
        let limit = counting || output.sort.isEmpty || order != nil ? output.limit : nil
        // Refused here as the command refuses it (its caret, its status),
        // when another host is searched.
        let ownName = status.publishing?.hostName ?? SystemConfiguration.sharedHostName
        try Self.checkOwnFolders(remoteFolders, ownName: ownName)
        if scope.hostNames.map({ names in names.contains { $0 != ownName } }) ?? true {
            var check = SharedReader.Search(predicate: predicate)
            // A limit bounds a sorted search when the database orders it.
            check.limit =
                output.sort.isEmpty || order.map({ HostSearch.ordersInDatabase($0, predicate) }) == true
                ? output.limit : nil
            check.budget = budget
            // The other hosts' part, as the system index asks it of the
            // shared index (this host's is its index's).
            check.hosts = scope.hostNames?.filter { $0 != ownName }
            check.scopes = remoteFolders.filter { $0.host != ownName }
            try SharedIndexSettings.explaining(predicate, source: source, budget: budget) {
                _ = try SharedReader.translate(check)
            }
        }
        let pastCap = MetadataError(
            code: .tooExpensive,
            message: "query too expensive: more than \(SharedSearchService.mostLines) results, the most the "
                + "system index gives a user; narrow the search"
                + (output.limit == nil ? " or add --limit" : "")
                + (order != nil
                    ? " (a sort by a name, or of a search the database cannot answer exactly, reads "
                        + "every match)" : "")
                + " (with a database credential of your own, $MDQ_SHARED, mdq prints them all)")
        // The front asked this very search and was told it passes the cap
        // (it sets the variable just before it runs this program with the
        // same arguments): not read again to be told the same.
        // Read once: nothing this program runs inherits it.
        let told = ProcessEnvironment.variable(SearchRouter.pastCapVariable) != nil
        unsetenv(SearchRouter.pastCapVariable)
        // What the system index refuses past its cap: no limit, a limit
        // above it, or a sort it cannot bound.
        let capped = limit.map { $0 > SharedSearchService.mostLines } ?? true || order != nil
        if told, !counting, capped {
            throw pastCap
        }
        let asked = Swift.Result { () throws(MetadataError) in
            try client.searchAcrossHosts(
                Array(predicate.description.utf8), hosts: scope.hostNames, folders: remoteFolders, ownHost: ownName,
                counting: counting, items: !counting, limit: limit, budget: budget, order: counting ? nil : order,
                attributes: attributes)
        }
        // It does not search across hosts (no SEARCH).
        if case .failure(let error) = asked, error.refusal != nil { return false }
        if case .failure(let error) = asked, error.code == .tooExpensive, capped,
            error.message.contains(SearchRouter.pastCapReason)
        {
            throw pastCap
        }
        let answer = try asked.get()
        for warning in answer.warnings { Diagnostics.warn(warning) }
        if counting {
            StandardOutput.print(String(answer.count))
            return true
        }
        let results = answer.items.enumerated().map { i, item in
            var found = MetadataItem(serial: UInt64(i), pathBytes: item.path, kind: item.kind, metadata: item.metadata)
            found.importedValues = item.imported
            return Result(host: item.host, item: found, stale: item.stale)
        }
        print(results, ownName: ownName ?? "")
        return true
    }

    /// This host's folders among `folders` (`--onlyin NAME:/path`), each
    /// checked as a local search checks its scopes: opened as a folder by
    /// this user, or said as a local search says it, named `NAME:/path`
    /// (the kernel here judges them: a folder the user may not list is
    /// refused, not searched for nothing).
    static func checkOwnFolders(_ folders: [(host: String, path: [UInt8])], ownName: String?) throws(MetadataError) {
        guard let ownName else { return }
        if let refused = DaemonFeed.check(folders.filter { $0.host == ownName }.map(\.path), named: ownName) {
            throw refused
        }
    }

    /// This host's matches, from its system index (the user's view of it);
    /// its `/` is all of it, and a folder the index does not hold is said
    /// as another host's is, `NAME:/path` (`name`).
    private static func searchOwnHost(
        _ predicate: MetadataPredicate, named name: String, folders: [[UInt8]], counting: Bool, limit: Int?,
        first: (order: MetadataSortDescriptor, count: Int)?, budget: Double?, attributes: Set<MetadataAttribute> = []
    ) throws -> (count: Int, results: [Result]) {
        let client = try DaemonClient.connectSystem()
        // Its first in an order, from a daemon that takes one (an older
        // one would cut the results before they are sorted): not the
        // hundred thousand items of a broad search.
        var limit = limit
        var order: MetadataSortDescriptor?
        if let first, !counting, (try? client.hello())?.features.contains("query-order") == true {
            (order, limit) = (first.order, first.count)
        }
        let scopes = folders.contains(Array("/".utf8)) ? [] : DaemonFeed.folderScopes(client.ownFolders(folders))
        let asked = Swift.Result { () throws(MetadataError) -> DaemonClient.Answer in
            try client.query(
                Array(predicate.description.utf8), scopes: scopes.isEmpty ? nil : scopes,
                rules: scopes.isEmpty ? ScopeRules(includeHidden: true) : nil, output: counting ? .count : .entries,
                limit: limit, budget: budget, attributes: counting ? [] : attributes, order: order)
        }
        // A system index that does not import what is inside files: the
        // other hosts are answered, said so.
        if case .failure(let error) = asked, case .notCovered = error.refusal, !predicate.importedAttributes.isEmpty,
            error.message.contains(DaemonProtocol.noContent)
        {
            throw HostSearch.OwnNotSearched.withoutContent(name)
        }
        if case .failure(let error) = asked, error.refusal != nil, !scopes.isEmpty {
            let path = DaemonClient.folder(refusedBy: error, among: scopes)
            throw MetadataError.hostScope("unindexed", path: FilePath.onHost(name, path))
        }
        let answer = try asked.get()
        if counting { return (answer.count, []) }
        return (
            answer.count,
            answer.entries.enumerated().map { i, entry in
                var item = MetadataItem(
                    serial: UInt64(i), pathBytes: entry.pathBytes, kind: entry.kind, metadata: entry.metadata)
                item.importedValues = entry.imported
                return Result(host: nil, item: item, stale: answer.stale)
            }
        )
    }

    /// Prints the results as a local search does: paths (other hosts'
    /// as `NAME:/path`), `--attr` columns, JSON with `host` and `stale`,
    /// sorted, limited, grouped.
    private func print(_ results: [Result], ownName: String) {
        // This host first, then the others by name; each in path order.
        var results = results
        if !output.sortDescriptors.isEmpty {
            let order = Dictionary(
                uniqueKeysWithValues: results.map(\.item).sorted(by: output.sortDescriptors).enumerated().map {
                    ($1.id, $0)
                })
            results.sort { order[$0.item.id]! < order[$1.item.id]! }
        }
        if let limit = output.limit { results = Array(results.prefix(limit)) }
        var out: [UInt8] = []
        if let group = output.group {
            OneShotSession.appendGroups(results.map(\.item), by: group, inItemOrder: !output.sort.isEmpty, to: &out)
            StandardOutput.flush(&out)
            return
        }
        let json = output.json
        let attributes = output.attributes
        let terminator: UInt8 = output.nullTerminated ? 0 : 0x0A
        let ownName = Array(ownName.utf8)
        for result in results {
            let host = result.host.map { Array($0.utf8) }
            if json {
                AttributeText.appendJSON(result.item, attributes: attributes, host: host, to: &out)
                out.removeLast()  // the closing brace
                out += Array(",\"host\":".utf8)
                JSONLine.appendString((host ?? ownName)[...], to: &out)
                out += Array(",\"stale\":\(result.stale)}\n".utf8)
            } else {
                if let host { out += host + [UInt8(ascii: ":")] }
                AttributeText.appendLine(result.item, attributes: attributes, host: host, to: &out)
                out.append(terminator)
            }
            if out.count >= 1 << 16 { StandardOutput.flush(&out) }
        }
        StandardOutput.flush(&out)
    }
}

/// `mdq --live --host NAME QUERY`: a live query over hosts
/// (`SearchScope.hosts`, `.allHosts`, `.host(_:folder:)`), printed as a
/// local live query is (`LivePrinter`: text, `--json` with each item's
/// `host`, `--count`, `--sort`, `--attr`), another host's paths as
/// `NAME:/path`. This host, when asked for and its system index runs,
/// comes from its system index (`DaemonFeed.ownHost`: fresh to the
/// millisecond), its paths printed as they are (as a one-shot search
/// prints them); the others from the shared index, read with the user's
/// credential, or, without one, followed by the system index for them
/// (`subscribe-hosts`). A search the shared index refuses, a host it does
/// not know, or a database it cannot reach ends the command at once; once
/// live, a host offline or the database lost is a warning, and the
/// results stay.
struct SharedLiveSession {
    let predicate: MetadataPredicate
    let scope: ScopeOptions
    let output: OutputOptions
    var budget: Double?
    /// The query as typed, for carets.
    var source: [UInt8]?
    /// `--onlyin NAME:/path` folders, each path as its bytes were given.
    var remoteFolders: [(host: String, path: [UInt8])] = []

    func run() throws -> Never {
        var scopes: [SearchScope] =
            scope.hostNames.map { names in
                names.filter { name in !remoteFolders.contains { $0.host == name } }.map { .hosts([$0]) }
            } ?? [.allHosts]
        scopes += remoteFolders.map { .host($0.host, folder: FilePath.fromBytes($0.path)) }
        let own = DaemonFeed.ownHostName()
        // This host's entries from its system index, printed as its paths
        // (a one-shot search prints them so).
        var answersOwn = own != nil && DaemonFeed.answers()
        // What the shared index would refuse, said before going live: the
        // search the query will make (`SharedSource`), this host left out
        // where its system index answers for it.
        var search = SharedReader.Search(predicate: predicate)
        search.hosts = scope.hostNames
        search.scopes = scopes.compactMap { scope in scope.hostFolder.map { (scope.hosts![0], $0.bytes) } }
        search.budget = budget
        // Its folders judged for this user, as the query's searches are.
        search.user = SharedReader.Search.localUser
        if let own, search.searchesWhole(own), answersOwn {
            search.excludedHosts = [own]
        }
        // Folders of this host come from its system index too: checked
        // here as a local search checks its scopes (and as the one-shot
        // form checks them), the shared index not asked of them.
        let ownFolders = remoteFolders.filter { $0.host == own }.map(\.path)
        if let own, ownFolders.contains(Array("/".utf8)) {
            // Its `/` is all of it: the host searched whole.
            if answersOwn {
                search.scopes.removeAll { $0.host == own }
                search.excludedHosts = [own]
            }
        } else if let own, !ownFolders.isEmpty, search.covers(own), (try? DaemonClient.connectSystem()) != nil {
            _ = try DaemonFeed.ownScopes(ownFolders, named: own).get()
            search.scopes.removeAll { $0.host == own }
            search.excludedHosts = [own]
            answersOwn = true
        }
        let location = Swift.Result { () throws(MetadataError) in try SharedIndexLocation.url() }
        switch location {
        case _ where search.readsNoHost:
            // Nothing left for the shared index: this host alone, whole or
            // by its folders.
            break
        case .failure(let missing):
            try checkBySystemIndex(search, missing: missing)
        case .success(let url):
            // Read with the user's own credential. The connection closes
            // with the reader. A database away is no refusal: the search
            // starts with this host's results and says so, and is checked
            // at the database's first answer.
            let reader: SharedReader
            do {
                reader = try SharedReader(connection: PostgresConnection(url: url))
            } catch  where error.unreachable {
                break
            } catch {
                throw MetadataError.daemon(error.said)
            }
            do {
                try reader.check(search)
            } catch SharedReader.Refusal.unknownHost(let name, _) where name == own {
                throw MetadataError.invalidArgument(
                    "\(name) is this host: its system index is not running (mdq system start) and it publishes nothing")
            } catch {
                try SharedIndexSettings.explaining(predicate, source: source, budget: budget, live: true) {
                    throw error
                }
            }
        }
        ProcessEnvironment.ignoreBrokenPipe()
        let mode: LivePrinter.Mode =
            output.count ? .count : output.json ? .json : .lines(terminator: output.nullTerminated ? 0 : 0x0A)
        var session = LiveSession(
            predicate: predicate, source: .inProcess, scopeRequests: nil, container: nil, interval: output.interval,
            printer: LivePrinter(
                mode: mode, attributes: output.attributes, acrossHosts: true, ownHost: answersOwn ? own : nil,
                ordersFirstResults: output.sortDescriptors.isEmpty, showProgress: Diagnostics.showsProgress))
        session.searchScopes = scopes
        session.sortDescriptors = output.sortDescriptors
        // Values of what importers read that the lines show.
        session.fetchedAttributes = OneShotSession.importedColumns(output).map(\.rawValue).sorted()
        session.budget = budget
        session.run()
    }

    /// For a user with no database credential of their own (`missing`
    /// says where none was found): refused as the system index would
    /// refuse following `search` for them (the search as the shared index
    /// takes it, with its caret; then the hosts by the system index), or
    /// why it cannot follow it at all.
    private func checkBySystemIndex(_ search: SharedReader.Search, missing: MetadataError) throws {
        let noCredential = MetadataError.invalidArgument(
            missing.message + "; a live search across hosts reads it with a credential of your own, or "
                + "through the system index when it searches the shared index (SEARCH in system.conf)")
        guard let client = try? DaemonClient.connectSystem(),
            (try? client.hello())?.features.contains("subscribe-hosts") == true
        else { throw SharedIndexSettings.withoutCredential(noCredential) }
        try SharedIndexSettings.refuseNonUTF8(search.scopes)
        try SharedIndexSettings.explaining(predicate, source: source, budget: budget, live: true) {
            _ = try SharedReader.translate(search)
        }
        let checked = Swift.Result { () throws(MetadataError) in
            try client.checkLiveSearchAcrossHosts(
                Array(predicate.description.utf8), hosts: search.hosts, folders: search.scopes,
                excluded: search.excludedHosts, budget: budget)
        }
        // It does not search across hosts.
        if case .failure(let error) = checked, error.refusal != nil { throw noCredential }
        try checked.get()
    }
}

extension MetadataError {
    /// This error with a caret under the first of `candidates` found in
    /// `source` (the query as typed); unchanged when none is.
    /// A value is looked for first between quotes, then anywhere.
    func pointing(at candidates: [[UInt8]], in source: [UInt8]?) -> MetadataError {
        guard let source else { return self }
        func find(_ text: [UInt8]) -> Int? {
            guard !text.isEmpty, text.count <= source.count else { return nil }
            return (0...(source.count - text.count)).first { source[$0..<($0 + text.count)].elementsEqual(text) }
        }
        for candidate in candidates where !candidate.isEmpty {
            let quoted = [UInt8(ascii: "'"), UInt8(ascii: "\"")].lazy.compactMap { find([$0] + candidate + [$0]) }.first
            guard let offset = quoted.map({ $0 + 1 }) ?? find(candidate) else { continue }
            var error = self
            error.offset = offset
            error.source = source
            return error
        }
        return self
    }
}
