import Foundation
package import MDQCore
package import MDQSystem
import MDQWire
import SystemPackage

/// A host of the shared index, as `mdq hosts` lists it.
package struct SharedHost: Sendable, Equatable {
    package var id: Int
    package var name: String
    /// `new`, `live`, `catching up`, `reloading`, `offline`. A host whose
    /// publisher is gone (its session no longer holds the host's lock,
    /// `publisherLock`) and has not written for `reconnectGrace` is
    /// `offline` whatever it last said, as is a live host whose publisher
    /// has not been heard of for a minute (a session the server has not
    /// yet seen die: a machine cut off keeps it until TCP keepalive ends
    /// it).
    package var state: String
    package var entries: Int
    package var sequence: Int64
    package var generation: Int64
    /// When its publisher last wrote, as the database says it (ISO 8601,
    /// UTC, to the second).
    package var lastContact: String?
    /// Seconds since then.
    package var secondsSinceContact: Double?
    package var lastError: String?
    package var domain: String
    /// Its tombstones at or below this sequence are gone: a reader whose
    /// cursor is below it cannot learn what was removed since, and
    /// searches the host again.
    package var purgedSequence: Int64 = 0
    /// Moved when the users of its identity domain changed: results
    /// judged for a user are judged again.
    package var identitySequence: Int64 = 0
    /// Seconds its rows are behind its index: how long ago the oldest
    /// change not yet published was made, 0 when none was at its
    /// publisher's last write; nil when not known (offline, or a publisher
    /// older than schema version 5).
    package var lag: Double?
    /// Whether it publishes its files' words (its system index imports
    /// what is inside files, `CONTENT`): only its files are found by
    /// `kMDItemTextContent` across hosts.
    package var publishesWords = false
    /// Whether its rows hold the attributes its importers read (schema
    /// version 12): a host that publishes words whose publisher is older,
    /// or is publishing it whole for the first time since, has files
    /// whose attributes are not there yet.
    package var publishesAttributes = false

    /// How long a publisher may be silent before its host is called offline
    /// (an idle publisher writes every 10 seconds).
    package static let silence = 60.0

    /// The first key of the advisory lock a publisher holds for as long as
    /// it publishes a host (the second is the host's number): one
    /// publisher per host, and readers know a host whose publisher died
    /// mid-reload or mid-catch-up is offline, not still at it.
    package static let publisherLock = 730160

    /// How long a publisher whose session is gone may take to connect
    /// again before its host is called offline (one that fails a batch
    /// connects again at once).
    package static let reconnectGrace = 10.0

    package var isStale: Bool { state != "live" }
}

/// An entry of another host, found in the shared index.
package struct SharedEntry: Sendable, Equatable {
    package var host: String
    package var hostID: Int
    /// Its id on its host (`entry_id`): stable across renames.
    package var identity: UInt64
    package var pathBytes: [UInt8]
    package var kind: EntryKind
    package var metadata: EntryMetadata
    package var contentType: String?
    /// Its host is not live: the entry is as of the host's last contact.
    package var stale: Bool
    /// The attributes its host's importers read from inside the file,
    /// when the search needed them (to check its predicate, or asked for
    /// them) and the user may read the file; nil otherwise.
    package var imported: ImportedValues? = nil
}

/// Searches the shared index: the hosts asked for, what the user may see
/// on each, the predicate translated (`PredicateSQL`) and checked again on
/// each row by mdq's own matcher.
package final class SharedReader {
    package let connection: PostgresConnection
    /// It searches for other users (`init(connection:forOthers:)`): each
    /// search checks again that its role may (a grant taken back while
    /// its connection is kept would judge every user as the role).
    private let forOthers: Bool

    /// - Parameter forOthers: the reader searches for other users (the
    ///   system index's, `SEARCH`), which only a role that may read the
    ///   tables does (`mdq shared grant --trusted`): any other is judged
    ///   as itself whatever user it names, so every user would be shown
    ///   what that role may see. Such a role is refused.
    package init(connection: PostgresConnection, forOthers: Bool = false) throws(SharedIndexError) {
        self.connection = connection
        self.forOthers = forOthers
        let state: SharedSchema.State?
        do {
            state = try SharedSchema.state(of: connection)
        } catch  where error.sqlState == "42501" {
            throw Self.notGranted(connection.user, forOthers: forOthers)
        }
        guard let state else {
            throw SharedIndexError("the database holds no shared index ('mdq shared init URL' creates it)")
        }
        if let problem = SharedSchema.compatibility(with: state, publishing: false) {
            throw SharedIndexError(problem)
        }
        if forOthers {
            let row = try connection.execute(
                "SELECT has_table_privilege(session_user, 'mdq.entry', 'SELECT') AS trusted, session_user AS role")
            let role = row.first("role") ?? "?"
            guard row.first("trusted") == "t" else { throw Self.searchesOnlyAsItself(role) }
        }
    }

    /// Every host, by name.
    package func hosts() throws(SharedIndexError) -> [SharedHost] {
        try hosts(after: nil)
    }

    /// Every host, read in the same round trip as `statements` (a
    /// transaction's start) when given.
    private func hosts(after statements: String?) throws(SharedIndexError) -> [SharedHost] {
        try read(after: statements).hosts
    }

    /// A role granted nothing (or whose grant was taken back), in words
    /// that say what to do, not the server's (a line of SQL and a caret).
    /// The system index's role searches for others: `--trusted`.
    static func notGranted(_ role: String, forOthers: Bool) -> SharedIndexError {
        SharedIndexError(
            "role \(role) may not search the shared index: its administrator grants it with "
                + "'mdq shared grant \(forOthers ? "--trusted " : "")URL \(role)'", sqlState: "42501")
    }

    /// The refusal of a role the system index would search for its users
    /// through, that may search only as itself.
    static func searchesOnlyAsItself(_ role: String) -> SharedIndexError {
        SharedIndexError(
            "the shared index: role \(role) may search only as itself, not for other users (each would be shown "
                + "what \(role) may see): grant it 'mdq shared grant --trusted URL \(role)'; searches across hosts "
                + "for this host's users are refused until then", sqlState: "42501")
    }

    /// Every host, and (with the first) the connection's role and whether
    /// it may search for others; nil with no host.
    private func read(after statements: String?) throws(SharedIndexError) -> (
        hosts: [SharedHost], role: (name: String, trusted: Bool)?
    ) {
        // The silence as a literal: a query without parameters may follow
        // other statements in one message.
        let query = """
            SELECT host_id, name,
                   CASE WHEN state IN ('live', 'catching-up', 'reloading')
                             AND last_contact < now() - make_interval(secs => \(SharedHost.reconnectGrace)::float8)
                             AND NOT EXISTS (
                                 SELECT 1 FROM pg_catalog.pg_locks l
                                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                                   AND l.database = (SELECT oid FROM pg_catalog.pg_database
                                                     WHERE datname = current_database())
                                   AND l.classid = \(SharedHost.publisherLock)::oid AND l.objid = host_id::int::oid)
                        THEN 'offline'
                        WHEN state = 'live' AND last_contact < now() - make_interval(secs => \(SharedHost.silence)::float8)
                        THEN 'offline' ELSE replace(state, '-', ' ') END AS state,
                   entries, last_seq, generation,
                   to_char(last_contact AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_contact,
                   extract(epoch FROM now() - last_contact)::float8 AS since, last_error, domain, purged_seq,
                   identity_seq,
                   -- Known from publishers that write it (version 5 on).
                   CASE WHEN substring(publisher_version FROM '^mdq schema ([0-9]+)$')::int >= 5
                        THEN coalesce(extract(epoch FROM now() - behind_since)::float8, 0) END AS lag,
                   has_table_privilege(session_user, 'mdq.entry', 'SELECT') AS trusted, session_user AS role,
                   publishes_content,
                   publishes_content AND row_version >= 12
                       AND substring(publisher_version FROM '^mdq schema ([0-9]+)$')::int >= 12 AS attributes
            FROM mdq.host ORDER BY name
            """
        let rows: [[String?]]
        do {
            rows = try connection.execute(statements.map { $0 + "; " + query } ?? query).rows
        } catch  where error.sqlState == "42501" {
            // Its grant taken back since it connected.
            throw Self.notGranted(connection.user, forOthers: forOthers)
        }
        let role = rows.first.flatMap { row in row[14].map { (name: $0, trusted: row[13] == "t") } }
        let hosts = rows.compactMap { row -> SharedHost? in
            guard let id = row[0].flatMap(Int.init), let name = row[1], let state = row[2] else { return nil }
            return SharedHost(
                id: id, name: name, state: state, entries: row[3].flatMap(Int.init) ?? 0,
                sequence: row[4].flatMap(Int64.init) ?? 0, generation: row[5].flatMap(Int64.init) ?? 0,
                lastContact: row[6], secondsSinceContact: row[7].flatMap(Double.init), lastError: row[8],
                domain: row[9] ?? "default", purgedSequence: row[10].flatMap(Int64.init) ?? 0,
                identitySequence: row[11].flatMap(Int64.init) ?? 0,
                lag: state == "offline" ? nil : row[12].flatMap(Double.init).map { max(0, $0) },
                publishesWords: row[15] == "t", publishesAttributes: row[16] == "t")
        }
        return (hosts, role)
    }

    /// What a search across hosts asks.
    package struct Search: Sendable {
        package var predicate: MetadataPredicate
        /// Host names; nil for every host.
        package var hosts: [String]?
        /// Hosts left out (this host, answered by its system index).
        package var excludedHosts: [String] = []
        /// Folders (`host`, absolute path) to search in; none for all.
        package var scopes: [(host: String, path: [UInt8])] = []
        /// The user whose view is searched; nil for every entry (the
        /// database administrator's view).
        package var user: String?

        /// The user running this process, as searches across hosts judge
        /// it: by name; one with no name here is a stranger everywhere (no
        /// host has a user named "").
        package static var localUser: String { LocalUsers.currentName ?? "" }
        package var limit: Int?
        /// With a limit: each host's first `limit` rows in this order (its
        /// column, ascending), ties with the last included, for the caller
        /// to sort and cut; all the rows when the translation is not
        /// exact.
        package var order: (column: SQLCondition.Column, ascending: Bool)?
        /// Seconds the database may spend.
        package var budget: Double?
        /// Imported attributes whose values the caller wants with each
        /// result (`SharedEntry.imported`); those the predicate tests come
        /// anyway.
        package var attributes: Set<MetadataAttribute> = []
        /// Whether its folders are checked first, each refused as its host
        /// would refuse it (`Refusal.scope`); a live search that searches a
        /// host again does not (a folder gone since leaves no results, and
        /// the search goes on).
        package var checksFolders = true

        package init(predicate: MetadataPredicate) {
            self.predicate = predicate
        }

        /// The imported attributes a search across hosts reads from the
        /// files' published attributes: those `predicate` tests (never
        /// decided by the database alone: each is checked on the values)
        /// and those `shown`, less the text (published as words).
        package static func importedAttributes(
            of predicate: MetadataPredicate, shown: Set<MetadataAttribute>
        ) -> Set<MetadataAttribute> {
            predicate.importedAttributes.union(shown).subtracting([.textContent])
        }

        /// Whether each file's imported attributes come with it.
        package var needsAttributes: Bool { !Self.importedAttributes(of: predicate, shown: attributes).isEmpty }

        /// Whether the host named `name` is one this search reads: among
        /// its hosts (every host, when nil), not left out; whole, unless
        /// folders of it are among its scopes (`--host b --onlyin a:/x`
        /// reads b whole and a's folder, as a one-shot search does).
        package func covers(_ name: String) -> Bool {
            (hosts?.contains(name) ?? true) && !excludedHosts.contains(name)
        }

        /// Whether it asks the shared index for nothing: every host it
        /// names left out (this host, answered by its system index), and
        /// no folder of another.
        package var readsNoHost: Bool {
            scopes.isEmpty && hosts.map { $0.allSatisfy(excludedHosts.contains) } == true
        }

        /// Whether it reads only folders of the hosts it covers (every
        /// host it names has a folder among its scopes, none of them `/`):
        /// those bound it, as a limit would.
        var readsFoldersAlone: Bool {
            guard let hosts, !scopes.isEmpty, scopes.allSatisfy({ $0.path != Array("/".utf8) }) else { return false }
            return hosts.allSatisfy { name in excludedHosts.contains(name) || scopes.contains { $0.host == name } }
        }

        /// Whether the host `name` is searched whole (no folder of it
        /// asked for): this host is then answered by its system index, its
        /// folders by the shared index.
        package func searchesWhole(_ name: String) -> Bool {
            covers(name) && !scopes.contains { $0.host == name }
        }
    }

    /// What narrows a search in the shared index, for the refusal of one
    /// nothing narrows.
    package static let narrowedBy =
        "it narrows by three characters in a row of a name or display name test (==, LIKE, BEGINSWITH, CONTAINS, "
        + "ENDSWITH, words), "
        + "an extension, a type, a size, a date or an attribute importers read (its files that have it), not by a "
        + "regular expression (MATCHES), a path or a kind"

    /// What a search of a host the shared index does not know is told.
    package static func unknownHost(_ name: String, known: [String]) -> String {
        let names = known.joined(separator: ", ")
        return "no host \(name) in the shared index (hosts: \(names.isEmpty ? "none" : names); mdq hosts lists them)"
    }

    /// Why a search cannot be made across hosts.
    package enum Refusal: Error, Equatable, CustomStringConvertible {
        /// An attribute hosts do not publish.
        case unpublished(String)
        /// A test of a published attribute the shared index cannot answer
        /// exactly (a file's words: only a word or a word's start), and
        /// why.
        case unanswerable(attribute: String, reason: String)
        /// Nothing in the predicate narrows the search (every row would
        /// be read), and neither a limit nor a budget bounds it; the test
        /// to blame, when there is one.
        case unbounded(PredicateSQL.Culprit?)
        /// A host the shared index does not know, and those it knows.
        case unknownHost(String, known: [String])
        /// A folder of the search (`host`, `path`) that its host would not
        /// let the user search, and why.
        case scope(host: String, path: [UInt8], ScopeProblem)
        /// A live search whose results would pass what its reader keeps
        /// (`SharedLiveQuery.mostResults`).
        case tooManyResults(Int)
        /// More folders of hosts than one search takes
        /// (`DaemonCommand.mostHostFolders`, as `mdq.scope_errors` takes
        /// them): how many it names.
        case tooManyFolders(Int)

        /// The reason in words (the command adds the query and a caret).
        package var description: String {
            switch self {
            case .unpublished(let attribute):
                "\(attribute) is not published to the shared index (hosts publish names, kinds, sizes, dates, "
                    + "types, owners and what importers read)"
            case .unanswerable(_, let reason):
                reason
            case .unbounded:
                "the shared index cannot narrow this search: \(SharedReader.narrowedBy), so every entry of the hosts "
                    + "searched would be read"
            case .unknownHost(let name, let known): SharedReader.unknownHost(name, known: known)
            case .scope(let host, let path, let problem):
                "\(host):\(String(decoding: path, as: UTF8.self)): \(problem)"
            case .tooManyResults(let most):
                "more than \(most) results, the most the system index keeps for a live search across hosts; narrow "
                    + "the search (with a database credential of your own, $MDQ_SHARED, it keeps them all)"
            case .tooManyFolders(let count):
                "a search across hosts names at most \(DaemonCommand.mostHostFolders) folders of hosts "
                    + "(--onlyin NAME:/path; beside them, each host searched whole counts as one); this one names "
                    + "\(count)"
            }
        }
    }

    /// Why a folder of a search cannot be searched, as its host would
    /// say it to the user (`mdq.scope_errors`).
    package enum ScopeProblem: String, Sendable, CustomStringConvertible {
        /// The nearest folder above it may be listed, and has no entry of
        /// that name.
        case missing = "ENOENT"
        /// That entry is not a folder.
        case notFolder = "ENOTDIR"
        /// That entry is a symbolic link (whose target the index does not
        /// know).
        case symlink
        /// The user may not list it, or the nearest folder above it the
        /// index holds (what is below is not told).
        case denied = "EACCES"
        case tooLong = "ENAMETOOLONG"
        /// The host does not index what is in it (a pruned folder, none of
        /// its filesystems, or a top folder the user may not list).
        case unindexed

        package var description: String {
            switch self {
            case .missing: "no such folder"
            case .notFolder: "not a folder"
            case .symlink: "a symbolic link"
            case .denied: "permission denied"
            case .tooLong: "path too long"
            case .unindexed: "its host does not index what is in this folder"
            }
        }

        /// The error a search of the folder `path` of `host` gives: a
        /// local search's words, the folder as `NAME:/path`.
        package func error(host: String, path: [UInt8]) -> MetadataError {
            .hostScope(rawValue, path: FilePath.onHost(host, path))
        }
    }

    /// A search's arguments to the schema's search functions.
    private struct Prepared {
        /// The hosts' numbers, a `smallint[]`.
        var hosts: String
        /// `[[host, path], ...]`, a path null finding nothing.
        var scopes: String
        var translated: PredicateSQL
        var chosen: [Int: SharedHost]
    }

    /// Refuses `search` as running it would (`Refusal`, `SharedIndexError`),
    /// without running it: what a live query says before it starts.
    package func check(_ search: Search) throws {
        // In a search's bounds, 30 s when it gives none: the check reads
        // the folders of the database.
        var bounds = search
        bounds.budget = search.budget ?? 30
        try bounded(bounds) { hosts throws in _ = try prepare(search, hosts: hosts) }
    }

    /// The search translated, or why the shared index refuses it (an
    /// attribute never published; nothing to narrow it by, and neither a
    /// limit nor a budget), asking the database nothing.
    package static func translate(_ search: Search) throws(Refusal) -> PredicateSQL {
        guard search.scopes.count <= DaemonCommand.mostHostFolders else {
            throw Refusal.tooManyFolders(search.scopes.count)
        }
        let translated: PredicateSQL
        do {
            translated = try PredicateSQL(search.predicate)
        } catch {
            if let reason = error.reason { throw Refusal.unanswerable(attribute: error.attribute, reason: reason) }
            throw Refusal.unpublished(error.attribute)
        }
        guard translated.narrows || search.readsFoldersAlone || search.limit != nil || search.budget != nil else {
            throw Refusal.unbounded(translated.unnarrowed)
        }
        return translated
    }

    /// - Returns: nil when no host is left to search.
    private func prepare(_ search: Search, hosts all: [SharedHost]) throws -> Prepared? {
        let translated = try Self.translate(search)
        // This host may be answered elsewhere (its system index) and
        // publish nothing.
        for name in (search.hosts ?? []) + search.scopes.map(\.host)
        where !all.contains(where: { $0.name == name }) && !search.excludedHosts.contains(name) {
            throw Refusal.unknownHost(name, known: all.map(\.name))
        }
        let chosen = all.filter { search.covers($0.name) }
        guard !chosen.isEmpty else { return nil }
        // Each folder as its host would judge it for the user (a host
        // searched whole is its folder `/`).
        let folders = search.scopes.filter { scope in
            scope.path != Array("/".utf8) && chosen.contains { $0.name == scope.host }
        }
        if search.checksFolders, !folders.isEmpty {
            let found = try connection.execute(
                """
                SELECT u.ordinality AS at, u.problem FROM unnest(mdq.scope_errors($1::jsonb, $2))
                    WITH ORDINALITY AS u(problem, ordinality)
                WHERE u.problem IS NOT NULL ORDER BY u.ordinality LIMIT 1
                """, [Self.scopes(folders, hosts: chosen), search.user])
            if let at = found.first("at").flatMap(Int.init), folders.indices.contains(at - 1),
                var problem = found.first("problem").flatMap(ScopeProblem.init)
            {
                let folder = folders[at - 1]
                // Not there because its first name longer than a
                // filesystem takes (NAME_MAX) is the first one missing: as
                // the host's kernel says it (the folder above it is there,
                // and the user may look in it).
                if problem == .missing, let long = folder.path.split(separator: 0x2F).first(where: { $0.count > 255 }) {
                    let above = Array(folder.path[..<(long.startIndex - 1)])
                    let there = try connection.execute(
                        "SELECT (mdq.scope_errors($1::jsonb, $2))[1] IS NULL AS there",
                        [
                            Self.scopes([(folder.host, above.isEmpty ? Array("/".utf8) : above)], hosts: chosen),
                            search.user,
                        ])
                    if there.first("there") == "t" { problem = .tooLong }
                }
                throw Refusal.scope(host: folder.host, path: folder.path, problem)
            }
        }
        // Among folders of other hosts, a host with none is read whole:
        // its folder `/`.
        var scopes = search.scopes
        if !scopes.isEmpty {
            for host in chosen where !scopes.contains(where: { $0.host == host.name }) {
                scopes.append((host.name, Array("/".utf8)))
            }
        }
        return Prepared(
            hosts: PostgresArray.numbers(chosen.map(\.id)), scopes: Self.scopes(scopes, hosts: chosen),
            translated: translated, chosen: Dictionary(uniqueKeysWithValues: chosen.map { ($0.id, $0) }))
    }

    /// The scopes on these hosts as the search functions read them.
    private static func scopes(_ scopes: [(host: String, path: [UInt8])], hosts: [SharedHost]) -> String {
        var out = JSONWriter()
        out.raw("[")
        for scope in scopes {
            guard let host = hosts.first(where: { $0.name == scope.host })?.id else { continue }
            if out.bytes.count > 1 { out.raw(",") }
            out.raw("[")
            out.integer(host)
            out.raw(",")
            // A path that is not UTF-8 goes as its bytes (its text would
            // find the folder of U+FFFD there too).
            if String(validating: scope.path, as: UTF8.self) != nil {
                out.string(scope.path)
            } else {
                let digits = Array("0123456789abcdef".utf8)
                out.raw("null,")
                out.string(scope.path.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
            }
            out.raw("]")
        }
        out.raw("]")
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// Runs `body` in one read-only snapshot (the hosts, the classes and
    /// the rows all as of one moment), whose statements stop after the
    /// search's budget; `body` is given the hosts as of the snapshot.
    private func bounded<T>(_ search: Search, _ body: (_ hosts: [SharedHost]) throws -> T) throws -> T {
        // One round trip: the transaction, its bound and the hosts.
        var begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        if let budget = search.budget {
            // At most a day: a larger budget is as good as none.
            begin += "; SET LOCAL statement_timeout = \(Int(min(max(budget, 0.001), 86_400) * 1000))"
        }
        do {
            let (hosts, role) = try read(after: begin)
            // A role that may search only as itself, with no host, searches
            // nothing: said at the first host.
            if forOthers, let role, !role.trusted { throw Self.searchesOnlyAsItself(role.name) }
            let value = try body(hosts)
            // Which closes its cursors too.
            _ = try connection.execute("COMMIT")
            return value
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The matches, each host's rows as they were at its last batch, in
    /// no particular order; `each` returns false to stop.
    ///
    /// - Returns: how many were found.
    /// - Throws: `Refusal`, or `SharedIndexError`.
    @discardableResult
    package func search(
        _ search: Search, each: (SharedEntry) -> Bool = { _ in true },
        hosts seen: ((_ hosts: [SharedHost]) -> Void)? = nil
    ) throws -> Int {
        var count = 0
        try bounded(search) { hosts throws in
            guard let prepared = try prepare(search, hosts: hosts) else { return }
            // What the condition does not decide exactly, checked on each
            // row.
            let evaluator = PredicateEvaluator(CompiledPredicate(prepared.translated.recheck))
            seen?(Array(prepared.chosen.values))
            // The first rows first: an exact query stops at its limit in
            // the database, another is planned for a start. In an order,
            // each host's first rows (and their ties) all come; another
            // query's rows all come, each checked here.
            var limit: String?
            var sort: String?
            var stopsAtLimit = search.limit != nil
            if let wanted = search.limit {
                if let order = search.order {
                    stopsAtLimit = false
                    if prepared.translated.exact {
                        limit = String(wanted)
                        var json = JSONWriter()
                        json.raw("[")
                        json.string(order.column.rawValue)
                        json.raw(",")
                        json.string(order.ascending ? "asc" : "desc")
                        json.raw("]")
                        sort = String(decoding: json.bytes, as: UTF8.self)
                    }
                } else if prepared.translated.exact {
                    limit = String(wanted)
                } else {
                    _ = try connection.execute("SET LOCAL cursor_tuple_fraction = 0.01")
                }
            }
            _ = try connection.execute(
                "SELECT mdq.search($1::smallint[], $2::jsonb, $3::jsonb, $4, $5::bigint, $6::jsonb)",
                [prepared.hosts, prepared.translated.condition.json, prepared.scopes, search.user, limit, sort])
            let attributes = search.needsAttributes
            try fetch("mdq_search", hosts: prepared.chosen, attributes: attributes, user: search.user) { entry, _ in
                // Checked again by the host's own rules.
                guard prepared.translated.exact || evaluator.matches(SharedSubject(entry)) else { return true }
                count += 1
                if !each(entry) { return false }
                if stopsAtLimit, let limit = search.limit, count >= limit { return false }
                return true
            }
        }
        return count
    }

    /// What changed on one host since a live query's cursor.
    package enum Changes {
        /// The host as of the snapshot the changes were read in, and each
        /// entry changed since (or below a folder that did), with whether
        /// it is gone from the search's view (removed, or no longer
        /// listable by the user or in the scopes; then it has only its id).
        case since(SharedHost, [(entry: SharedEntry, gone: Bool)])
        /// The host was reloaded (a new generation), its tombstones since
        /// the cursor were purged, or its users changed: search it again.
        case searchAgain
        /// The host is no longer in the shared index.
        case forgotten
    }

    /// The entries of host `id` changed after its sequence `since`, in one
    /// snapshot with its row, as the search's user may see them; the
    /// predicate is left to the caller (each row is checked by mdq's own
    /// matcher). Only the rows `keep` takes are kept as they are read (a
    /// rename high in a tree changes every entry below it: those that
    /// neither match nor were results need not wait in memory).
    ///
    /// - Parameter matched: given, which of the entries read (not gone)
    ///   the search's condition holds for, asked in the same snapshot: what
    ///   only the database can test (a file's words), for `search` whose
    ///   condition is `translated`.
    package func changes(
        _ search: Search, host id: Int, since: Int64, generation: Int64, identities: Int64,
        keep: (_ entry: SharedEntry, _ gone: Bool) throws -> Bool = { _, _ in true },
        matched: (translated: PredicateSQL, found: (Set<UInt64>) -> Void)? = nil
    ) throws -> Changes {
        try bounded(search) { hosts throws -> Changes in
            guard let host = hosts.first(where: { $0.id == id }) else { return .forgotten }
            guard host.generation == generation, since >= host.purgedSequence, host.identitySequence == identities
            else { return .searchAgain }
            var found: [(entry: SharedEntry, gone: Bool)] = []
            guard host.sequence != since else { return .since(host, found) }
            _ = try connection.execute(
                "SELECT mdq.changes($1::smallint, $2::bigint, $3::jsonb, $4)",
                [String(id), String(since), Self.scopes(search.scopes, hosts: [host]), search.user])
            let attributes = search.needsAttributes
            try fetch("mdq_changes", hosts: [id: host], attributes: attributes, user: search.user) { entry, gone in
                if try keep(entry, gone) { found.append((entry, gone)) }
                return true
            }
            if let matched {
                var matching: Set<UInt64> = []
                let ids = found.filter { !$0.gone }.map(\.entry.identity)
                var start = 0
                while start < ids.count {
                    let end = min(ids.count, start + 10_000)
                    let condition = SQLCondition.and([matched.translated.condition, .entries(Array(ids[start..<end]))])
                    _ = try connection.execute(
                        "SELECT mdq.search($1::smallint[], $2::jsonb, $3::jsonb, $4)",
                        [
                            PostgresArray.numbers([Int64(id)]), condition.json,
                            Self.scopes(search.scopes, hosts: [host]),
                            search.user,
                        ])
                    try fetch("mdq_search", hosts: [id: host]) { entry, _ in
                        matching.insert(entry.identity)
                        return true
                    }
                    _ = try connection.execute("CLOSE mdq_search")
                    start = end
                }
                matched.found(matching)
            }
            return .since(host, found)
        }
    }

    /// How many entries match: counted by the database when the
    /// translation is exact, else each candidate checked here.
    package func count(_ search: Search) throws -> Int {
        // Not exact: each candidate is checked here.
        if let translated = try? PredicateSQL(search.predicate), !translated.exact { return try self.search(search) }
        let counted = try bounded(search) { hosts throws -> String? in
            guard let prepared = try prepare(search, hosts: hosts) else { return "0" }
            return try connection.execute(
                "SELECT mdq.count($1::smallint[], $2::jsonb, $3::jsonb, $4) AS n",
                [prepared.hosts, prepared.translated.condition.json, prepared.scopes, search.user]
            ).first("n")
        }
        let total = counted.flatMap(Int.init) ?? 0
        return search.limit.map { min($0, total) } ?? total
    }

    /// Reads the cursor `name` 2,000 rows at a time, each row to `each`
    /// (with whether it is gone, for changes) until it returns false; the
    /// transaction's end closes it. With `attributes`, each file comes with
    /// its imported attributes, as `user` may read them.
    private func fetch(
        _ name: String, hosts: [Int: SharedHost], attributes: Bool = false, user: String? = nil,
        each: (SharedEntry, _ gone: Bool) throws -> Bool
    ) throws {
        fetching: while true {
            let rows = try connection.execute("FETCH 2000 FROM \(name)").rows
            // A change's row says whether it is gone before its access.
            let changes = name == "mdq_changes"
            var entries: [(SharedEntry, gone: Bool)] = []
            for row in rows {
                let gone = changes && row.count > 12 && row[12] == "t"
                guard let entry = Self.entry(row, hosts: hosts, gone: gone, access: changes ? 13 : 12) else {
                    continue
                }
                entries.append((entry, gone))
            }
            if attributes { try attachAttributes(to: &entries, user: user) }
            for (entry, gone) in entries where try !each(entry, gone) { break fetching }
            if rows.count < 2000 { break }
        }
    }

    /// Gives each file of `entries` (not gone) the attributes its host
    /// published for it, those of files `user` may read (`mdq.attributes`),
    /// one call per host.
    private func attachAttributes(to entries: inout [(SharedEntry, gone: Bool)], user: String?) throws {
        var byHost: [Int: [Int]] = [:]
        for (i, (entry, gone)) in entries.enumerated() where !gone && entry.kind != .folder {
            byHost[entry.hostID, default: []].append(i)
        }
        for (host, indexes) in byHost.sorted(by: { $0.key < $1.key }) {
            let ids = indexes.map { Int64(bitPattern: entries[$0].0.identity) }
            var found: [UInt64: ImportedValues] = [:]
            for row in try connection.execute(
                "SELECT entry_id, attrs::text FROM mdq.attributes($1::smallint, $2::bigint[], $3)",
                [String(host), PostgresArray.numbers(ids), user]
            ).rows {
                guard let id = row[0].flatMap(Int64.init), let text = row[1],
                    let json = try? JSONValue.parse(Array(text.utf8)), let values = ImportedValues(json: json)
                else { continue }
                found[UInt64(bitPattern: id)] = values
            }
            for i in indexes { entries[i].0.imported = found[entries[i].0.identity] }
        }
    }

    /// A row of `mdq.search` or `mdq.changes`; a gone row (`mdq.changes`)
    /// has its id alone (its kind, path and metadata are left empty). Its
    /// mode, owner and group are the columns from `access` on (version 9;
    /// none in a row without them).
    private static func entry(_ row: [String?], hosts: [Int: SharedHost], gone: Bool, access: Int) -> SharedEntry? {
        guard let hostID = row[0].flatMap(Int.init), let host = hosts[hostID] else { return nil }
        let identity = row[11].flatMap(Int64.init).map { UInt64(bitPattern: $0) } ?? 0
        if gone {
            return SharedEntry(
                host: host.name, hostID: hostID, identity: identity, pathBytes: [], kind: .file,
                metadata: EntryMetadata(kind: .file, inode: 0), contentType: nil, stale: host.isStale)
        }
        guard let kind = row[5].flatMap(UInt8.init).flatMap(EntryKind.init(rawValue:)),
            let folder = row[2].flatMap(bytea) ?? row[1].map({ Array($0.utf8) }),
            let name = row[4].flatMap(bytea) ?? row[3].map({ Array($0.utf8) })
        else { return nil }
        var path = folder
        if path.last != UInt8(ascii: "/") { path.append(UInt8(ascii: "/")) }
        path += name
        var metadata = EntryMetadata(kind: kind, inode: row[9].flatMap(Int64.init).map { UInt64(bitPattern: $0) } ?? 0)
        if kind == .folder {
            metadata.size = 0
        } else {
            metadata.size = row[6].flatMap(Int64.init).map { UInt64(max(0, $0)) }
        }
        metadata.modificationTime = row[7].flatMap(Int64.init).map { Timestamp(nanosecondsSinceEpoch: $0 * 1000) }
        metadata.birthTime = row[8].flatMap(Int64.init).map { Timestamp(nanosecondsSinceEpoch: $0 * 1000) }
        if row.count >= access + 3 {
            metadata.access = AccessRow.access(
                mode: row[access], owner: row[access + 1], group: row[access + 2], acl: nil)
        }
        return SharedEntry(
            host: host.name, hostID: hostID, identity: identity, pathBytes: path, kind: kind, metadata: metadata,
            contentType: row[10], stale: host.isStale)
    }

    /// `\x…` (bytea's text form) as bytes.
    static func bytea(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count >= 2, digits[0] == UInt8(ascii: "\\"), digits[1] == UInt8(ascii: "x"),
            digits.count % 2 == 0
        else { return nil }
        func value(_ d: UInt8) -> UInt8? {
            switch d {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        var i = 2
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            bytes.append(high << 4 | low)
            i += 2
        }
        return bytes
    }
}

/// A row of the shared index as mdq's matcher reads an entry.
struct SharedSubject: PredicateSubject {
    let entry: SharedEntry

    init(_ entry: SharedEntry) {
        self.entry = entry
    }

    var kind: EntryKind { entry.kind }

    func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R {
        let start = (entry.pathBytes.lastIndex(of: UInt8(ascii: "/")) ?? -1) + 1
        return entry.pathBytes[start...].withUnsafeBytes { body($0, $0.allSatisfy { $0 < 0x80 }) }
    }

    func appendPath(to bytes: inout [UInt8]) { bytes += entry.pathBytes }
    /// Its URL names its host (`file://NAME/path`).
    func appendURLPath(to bytes: inout [UInt8]) { bytes += Array((entry.host + ":").utf8) + entry.pathBytes }
    func metadata() -> EntryMetadata? { entry.metadata }
    func ubiquity() -> MetadataItem.Ubiquity? { nil }
    func hasUnresolvedConflicts() -> Bool { false }
    func conflictOriginalPath() -> [UInt8]? { nil }
    func imported() -> ImportedValues? { entry.imported }
}
