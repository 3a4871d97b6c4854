import Foundation
package import MDQCore
package import MDQSystem

/// A host of the shared index, as `mdq hosts` lists it.
package struct SharedHost: Sendable, Equatable {
    package var id: Int
    package var name: String
    /// `new`, `live`, `catching up`, `reloading`, `offline`; a host whose
    /// publisher has not been heard of for a minute is `offline` whatever
    /// it last said.
    package var state: String
    package var entries: Int
    package var sequence: Int64
    package var generation: Int64
    /// When its publisher last wrote, as the database says it.
    package var lastContact: String?
    /// Seconds since then.
    package var secondsSinceContact: Double?
    package var lastError: String?
    package var domain: String

    /// How long a publisher may be silent before its host is called offline
    /// (an idle publisher writes every 10 seconds).
    package static let silence = 60.0

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
}

/// Searches the shared index: the hosts asked for, what the user may see
/// on each, the predicate translated (`PredicateSQL`) and checked again on
/// each row by mdq's own matcher.
package final class SharedReader {
    package let connection: PostgresConnection

    package init(connection: PostgresConnection) throws(SharedIndexError) {
        self.connection = connection
        guard let state = try SharedSchema.state(of: connection) else {
            throw SharedIndexError("the database holds no shared index ('mdq shared init URL' creates it)")
        }
        if let problem = SharedSchema.compatibility(with: state, publishing: false) {
            throw SharedIndexError(problem)
        }
    }

    /// Every host, by name.
    package func hosts() throws(SharedIndexError) -> [SharedHost] {
        try connection.execute(
            """
            SELECT host_id, name, CASE WHEN state = 'live' AND last_contact < now() - make_interval(secs => $1::float8)
                                       THEN 'offline' ELSE replace(state, '-', ' ') END AS state,
                   entries, last_seq, generation, last_contact::text,
                   extract(epoch FROM now() - last_contact)::float8 AS since, last_error, domain
            FROM mdq.host ORDER BY name
            """, [String(SharedHost.silence)]
        ).rows.compactMap { row in
            guard let id = row[0].flatMap(Int.init), let name = row[1], let state = row[2] else { return nil }
            return SharedHost(
                id: id, name: name, state: state, entries: row[3].flatMap(Int.init) ?? 0,
                sequence: row[4].flatMap(Int64.init) ?? 0, generation: row[5].flatMap(Int64.init) ?? 0,
                lastContact: row[6], secondsSinceContact: row[7].flatMap(Double.init), lastError: row[8],
                domain: row[9] ?? "default")
        }
    }

    /// Who a user is on each host: the user of the same name in the host's
    /// identity domain, else nobody in particular (what "other" may do).
    /// Root on one host is not root on another: a user whose number there
    /// is 0 is judged as "other" too.
    package func viewers(for user: String, hosts: [SharedHost]) throws(SharedIndexError) -> [Int: Viewer] {
        let rows = try connection.execute(
            "SELECT domain, uid, gids::text FROM mdq.identity WHERE user_name = $1", [user]
        ).rows
        var byDomain: [String: Viewer] = [:]
        for row in rows {
            guard let domain = row[0], let uid = row[1].flatMap(UInt32.init), uid != 0 else { continue }
            let groups: [UInt32] = PostgresArray.integers(row[2] ?? "")
            byDomain[domain] = Viewer(user: uid, groups: Set(groups))
        }
        var result: [Int: Viewer] = [:]
        for host in hosts { result[host.id] = byDomain[host.domain] ?? Self.stranger }
        return result
    }

    /// A user the host does not know: no number of its users, no group.
    package static let stranger = Viewer(user: UInt32.max, groups: [])

    /// The (host, list class) pairs whose folders' contents each host's
    /// viewer may not list, as `host << 32 | class`: of every class the
    /// hosts have published, those with a rule the viewer fails (a rule
    /// needing other than read and search, which mdq does not publish, is
    /// failed). Read in the search's own snapshot, so every folder the
    /// search meets has a class read here.
    func deniedClasses(_ viewers: [Int: Viewer]) throws(SharedIndexError) -> [Int64] {
        let hosts = PostgresArray.numbers(viewers.keys)
        var granted: [Int: [Int32: Bool]] = [:]
        for row in try connection.execute(
            "SELECT host_id, class_id, mode, owner, \"group\", acl FROM mdq.access_class WHERE host_id = ANY($1::int[])",
            [hosts]
        ).rows {
            guard let host = row[0].flatMap(Int.init), let id = row[1].flatMap(Int32.init), let viewer = viewers[host]
            else { continue }
            let access = AccessRow.access(mode: row[2], owner: row[3], group: row[4], acl: row[5])
            granted[host, default: [:]][id] = access.map(viewer.mayWalk) ?? false
        }
        var denied: Set<Int64> = []
        for row in try connection.execute(
            "SELECT host_id, list_class, access_class, need FROM mdq.list_rule WHERE host_id = ANY($1::int[])", [hosts]
        ).rows {
            guard let host = row[0].flatMap(Int.init), let list = row[1].flatMap(Int64.init),
                let access = row[2].flatMap(Int32.init), let need = row[3].flatMap(UInt16.init)
            else { continue }
            if need != UInt16(ClassBook.walk) || granted[host]?[access] != true {
                denied.insert(Int64(host) << 32 | list)
            }
        }
        return denied.sorted()
    }

    /// What a search across hosts asks.
    package struct Search: Sendable {
        package var predicate: MetadataPredicate
        /// Host names; nil for every host.
        package var hosts: [String]?
        /// Folders (`host`, absolute path) to search in; none for all.
        package var scopes: [(host: String, path: [UInt8])] = []
        /// The user whose view is searched; nil for every entry (the
        /// database administrator's view).
        package var user: String?
        package var limit: Int?
        /// Seconds the database may spend.
        package var budget: Double?

        package init(predicate: MetadataPredicate) {
            self.predicate = predicate
        }
    }

    /// Why a search cannot be made across hosts.
    package enum Refusal: Error, Equatable {
        /// An attribute hosts do not publish.
        case unpublished(String)
        /// Nothing in the predicate narrows the search (every row would
        /// be read), and neither a limit nor a budget bounds it.
        case unbounded
        case unknownHost(String)
    }

    /// A search made SQL: the rows' source and condition, and what reads them.
    private struct Prepared {
        var body: String
        /// For counts without a scope: the entries alone, those in folders
        /// the user may not list left out by an anti-join on the few such
        /// folders (found by their classes' index).
        var countBody: String
        var parameters: [String?]
        var translated: PredicateSQL
        var hosts: [Int: SharedHost]
    }

    /// - Returns: nil when no host is left to search.
    private func prepare(_ search: Search) throws -> Prepared? {
        let translated: PredicateSQL
        do {
            translated = try PredicateSQL(search.predicate, firstParameter: 3)
        } catch {
            throw Refusal.unpublished(error.attribute)
        }
        let scoped = !search.scopes.isEmpty && search.scopes.allSatisfy { $0.path != Array("/".utf8) }
        guard translated.narrows || scoped || search.limit != nil || search.budget != nil else {
            throw Refusal.unbounded
        }
        let all = try hosts()
        var chosen = all
        if let names = search.hosts {
            for name in names where !all.contains(where: { $0.name == name }) { throw Refusal.unknownHost(name) }
            chosen = all.filter { names.contains($0.name) }
        }
        for scope in search.scopes where !all.contains(where: { $0.name == scope.host }) {
            throw Refusal.unknownHost(scope.host)
        }
        if !search.scopes.isEmpty { chosen = chosen.filter { host in search.scopes.contains { $0.host == host.name } } }
        guard !chosen.isEmpty else { return nil }
        let byID = Dictionary(uniqueKeysWithValues: chosen.map { ($0.id, $0) })
        var parameters: [String?] = [PostgresArray.numbers(chosen.map(\.id)), "{}"]
        // What the user may not list is left out (usually few classes, so
        // the planner sees that most rows stay).
        var filter = "cardinality($2::bigint[]) = 0"
        var denied: [Int64] = []
        if let user = search.user {
            denied = try deniedClasses(try viewers(for: user, hosts: chosen))
            parameters[1] = PostgresArray.numbers(denied)
        }
        parameters += translated.parameters
        if !denied.isEmpty {
            parameters.append(PostgresArray.numbers(Set(denied.map { $0 & 0xFFFF_FFFF })))
            filter =
                "NOT (f.list_class = ANY($\(parameters.count)::int[]) "
                + "AND ((f.host_id::bigint << 32) | f.list_class) = ANY($2::bigint[]))"
        }
        var scopeConditions: [String] = []
        for scope in search.scopes {
            guard let host = chosen.first(where: { $0.name == scope.host })?.id else { continue }
            guard let path = String(validating: scope.path, as: UTF8.self) else {
                // Matched by its text, a path that is not UTF-8 would find
                // the wrong folder: it finds none rather than all.
                scopeConditions.append("FALSE")
                continue
            }
            let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
            parameters.append(trimmed == "/" ? "/%" : Self.likeEscaped(trimmed) + "/%")
            let pattern = "$\(parameters.count)"
            parameters.append(trimmed)
            scopeConditions.append(
                "(e.host_id = \(host) AND (f.path = $\(parameters.count) OR f.path LIKE \(pattern)))")
        }
        let scopeSQL = scopeConditions.isEmpty ? "TRUE" : "(" + scopeConditions.joined(separator: " OR ") + ")"
        let body = """
            FROM mdq.entry e JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
            WHERE e.deleted_seq IS NULL AND f.deleted_seq IS NULL AND e.host_id = ANY($1::smallint[])
              AND \(filter) AND \(scopeSQL) AND \(translated.condition)
            """
        // Without a scope, a count asks of each entry only whether its
        // folder is there and may be listed (a semi-join): an entry whose
        // folder has not been published yet, or is gone, is not counted,
        // as a search would not list it.
        let countBody =
            scopeConditions.isEmpty
            ? """
            FROM mdq.entry e
            WHERE e.deleted_seq IS NULL AND e.host_id = ANY($1::smallint[]) AND \(translated.condition)
              AND EXISTS (SELECT 1 FROM mdq.folder f WHERE f.host_id = e.host_id AND f.folder_id = e.parent_id
                          AND f.deleted_seq IS NULL AND \(filter))
            """ : body
        return Prepared(
            body: body, countBody: countBody, parameters: parameters, translated: translated, hosts: byID)
    }

    /// Runs `body` in one read-only snapshot (the hosts, the classes and
    /// the rows all as of one moment), whose statements stop after the
    /// search's budget.
    private func bounded<T>(_ search: Search, _ body: () throws -> T) throws -> T {
        _ = try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        do {
            if let budget = search.budget {
                // At most a day: a larger budget is as good as none.
                let milliseconds = Int(min(max(budget, 0.001), 86_400) * 1000)
                _ = try connection.execute("SET LOCAL statement_timeout = \(milliseconds)")
            }
            let value = try body()
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
        let evaluator = PredicateEvaluator(CompiledPredicate(search.predicate))
        var count = 0
        try bounded(search) { () throws in
            guard let prepared = try prepare(search) else { return }
            seen?(Array(prepared.hosts.values))
            // The first rows first: an exact query stops at its limit in
            // the database, another is planned for a start.
            var limit = ""
            if let wanted = search.limit {
                if prepared.translated.exact {
                    limit = "LIMIT \(wanted)"
                } else {
                    _ = try connection.execute("SET LOCAL cursor_tuple_fraction = 0.01")
                }
            }
            _ = try connection.execute(
                """
                DECLARE mdq_search NO SCROLL CURSOR FOR
                SELECT e.host_id, f.path, f.raw_path, e.name, e.raw_name, e.kind, e.size,
                       (extract(epoch FROM e.mtime) * 1000000)::bigint, (extract(epoch FROM e.btime) * 1000000)::bigint,
                       e.inode, e.content_type, e.entry_id
                \(prepared.body) \(limit)
                """, prepared.parameters)
            fetching: while true {
                let rows = try connection.execute("FETCH 2000 FROM mdq_search").rows
                for row in rows {
                    guard let entry = Self.entry(row, hosts: prepared.hosts) else { continue }
                    // Checked again by the host's own rules.
                    guard prepared.translated.exact || evaluator.matches(SharedSubject(entry)) else { continue }
                    count += 1
                    if !each(entry) { break fetching }
                    if let limit = search.limit, count >= limit { break fetching }
                }
                if rows.count < 2000 { break }
            }
            _ = try connection.execute("CLOSE mdq_search")
        }
        return count
    }

    /// How many entries match: counted by the database when the
    /// translation is exact, else each candidate checked here.
    package func count(_ search: Search) throws -> Int {
        // Not exact: each candidate is checked here.
        if let translated = try? PredicateSQL(search.predicate), !translated.exact { return try self.search(search) }
        let counted = try bounded(search) { () throws -> String? in
            guard let prepared = try prepare(search) else { return "0" }
            return try connection.execute("SELECT count(*) AS n \(prepared.countBody)", prepared.parameters).first("n")
        }
        let total = counted.flatMap(Int.init) ?? 0
        return search.limit.map { min($0, total) } ?? total
    }

    static func likeEscaped(_ text: String) -> String {
        var result = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { result.append("\\") }
            result.append(character)
        }
        return result
    }

    private static func entry(_ row: [String?], hosts: [Int: SharedHost]) -> SharedEntry? {
        guard let hostID = row[0].flatMap(Int.init), let host = hosts[hostID], let folderText = row[1],
            let nameText = row[3], let kind = row[5].flatMap(UInt8.init).flatMap(EntryKind.init(rawValue:))
        else { return nil }
        let folder = row[2].flatMap(bytea) ?? Array(folderText.utf8)
        let name = row[4].flatMap(bytea) ?? Array(nameText.utf8)
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
        return SharedEntry(
            host: host.name, hostID: hostID, identity: row[11].flatMap(Int64.init).map { UInt64(bitPattern: $0) } ?? 0,
            pathBytes: path, kind: kind, metadata: metadata, contentType: row[10], stale: host.isStale)
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
    func metadata() -> EntryMetadata? { entry.metadata }
    func ubiquity() -> MetadataItem.Ubiquity? { nil }
    func hasUnresolvedConflicts() -> Bool { false }
    func conflictOriginalPath() -> [UInt8]? { nil }
    func imported() -> ImportedValues? { nil }
}
