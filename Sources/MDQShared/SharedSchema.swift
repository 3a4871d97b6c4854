/// The shared index's schema in a PostgreSQL database, owned by mdq:
/// created by `mdq shared init`, moved forward by `mdq shared migrate`,
/// described as a public contract in `Documentation/shared-index.md`.
///
/// Versions are whole numbers. Each migration moves the schema one version
/// forward in a transaction of its own, under an advisory lock (two
/// migrations at once wait for each other). `mdq.meta` keeps the version
/// and the lowest versions a publisher and a reader must know: a migration
/// that only adds (a column, an index, a table) leaves them, so older
/// publishers and readers go on during a rolling upgrade; one that changes
/// what is there raises them, and `compatibility` says an older program
/// may no longer publish or read, with the reason.
package enum SharedSchema {
    /// One step forward.
    package struct Migration {
        package var version: Int
        package var summary: String
        /// The lowest schema versions a publisher and a reader must know
        /// once this migration ran.
        package var minimumPublisher: Int
        package var minimumReader: Int
        package var sql: String
    }

    /// Every migration, in order; the last one's version is this mdq's.
    package static let migrations: [Migration] = [
        Migration(
            version: 1, summary: "hosts, folders, entries, content and access rules, partitioned per host",
            minimumPublisher: 1, minimumReader: 1, sql: version1),
        Migration(
            version: 2, summary: "publishers' clocks and counts, 32-bit user ids, reloads swapped in",
            minimumPublisher: 2, minimumReader: 2, sql: version2),
        Migration(
            version: 3,
            summary: "searches by the schema's functions (for trusted and untrusted readers), changes since "
                + "a cursor, tombstones purged",
            minimumPublisher: 2, minimumReader: 3, sql: version3),
        Migration(
            version: 4,
            summary: "searches joined host by host, counts without a folder per entry, short trigram pending lists",
            minimumPublisher: 4, minimumReader: 3, sql: version4),
        Migration(
            version: 5,
            summary: "name tests read the trigrams of their words, without the pads of separators; hosts' lag",
            minimumPublisher: 4, minimumReader: 3, sql: version5),
        Migration(
            version: 6,
            summary: "smaller entry rows and indexes: columns by width, content types by number, a name's "
                + "folding only when it differs, no host number in a partition's indexes",
            minimumPublisher: 6, minimumReader: 3, sql: version6),
        Migration(
            version: 7,
            summary: "a search's folders checked as their host would check them for the user (mdq.scope_errors)",
            minimumPublisher: 6, minimumReader: 3, sql: version7),
        Migration(
            version: 8,
            summary: "a search's folder above the folders a host indexes from is searched (mdq.scope_errors)",
            minimumPublisher: 6, minimumReader: 3, sql: version8),
        Migration(
            version: 9,
            summary: "every entry's owner, group and mode (its access class), reloaded by each host's publisher",
            minimumPublisher: 9, minimumReader: 3, sql: version9),
        Migration(
            version: 10,
            summary: "the words of files, for hosts that import them, searched as each viewer may read the files",
            minimumPublisher: 9, minimumReader: 3, sql: version10),
        Migration(
            version: 11,
            summary: "the same answers for less of the database's time: viewers' classes judged once, counts "
                + "not planned partition by partition",
            minimumPublisher: 9, minimumReader: 3, sql: version11),
        Migration(
            version: 12,
            summary: "the attributes importers read from inside files, for hosts that import them, searched and "
                + "shown as each viewer may read the files",
            minimumPublisher: 9, minimumReader: 3, sql: version12),
    ]

    /// The schema version this mdq creates, publishes and reads.
    package static var current: Int { migrations.last!.version }

    /// The schema version whose columns this mdq's publisher writes in
    /// each row: a host whose rows hold an older one's
    /// (`mdq.host.row_version`) is published whole once. Moved only by a
    /// migration that gives rows something new to hold.
    package static let rowVersion = 12
    /// The oldest version whose rows are whole for a host that imports
    /// nothing from inside its files (version 12 gave content rows the
    /// files' attributes).
    package static let rowVersionWithoutContent = 9

    /// The folding of `entry.fold` (NFD, case and diacritics, as mdq's
    /// `[cd]`): a change of it makes every host publish again.
    package static let foldVersion = 1

    /// Names of host partitions are made of the host's number; the names
    /// users give hosts are checked by this pattern too.
    package static let hostNamePattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$"

    /// What the database holds, read from `mdq.meta`.
    package struct State: Equatable {
        package var version: Int
        package var foldVersion: Int
        package var minimumPublisher: Int
        package var minimumReader: Int
        package var hosts: Int
    }

    /// The schema's state, or nil when the database has no mdq schema.
    package static func state(of connection: PostgresConnection) throws(SharedIndexError) -> State? {
        // A query of the catalog, not to_regclass: its cache may not have
        // seen yet a schema another session just committed.
        let exists = try connection.execute(
            """
            SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                           WHERE n.nspname = 'mdq' AND c.relname = 'meta') AS present
            """)
        guard exists.first("present") == "t" else { return nil }
        let meta = try connection.execute(
            """
            SELECT schema_version, fold_version, min_publisher, min_reader,
                   (SELECT count(*) FROM mdq.host) AS hosts
            FROM mdq.meta
            """)
        guard let version = meta.first("schema_version").flatMap(Int.init),
            let fold = meta.first("fold_version").flatMap(Int.init),
            let publisher = meta.first("min_publisher").flatMap(Int.init),
            let reader = meta.first("min_reader").flatMap(Int.init),
            let hosts = meta.first("hosts").flatMap(Int.init)
        else { throw SharedIndexError("mdq.meta is empty or unreadable: not a schema mdq made") }
        return State(
            version: version, foldVersion: fold, minimumPublisher: publisher, minimumReader: reader, hosts: hosts)
    }

    /// Why this mdq may not publish into (or read) a schema in `state`,
    /// or nil when it may.
    package static func compatibility(with state: State, publishing: Bool) -> String? {
        let needed = publishing ? state.minimumPublisher : state.minimumReader
        guard current >= needed else {
            return
                "the shared index's schema (version \(state.version)) needs \(publishing ? "publishers" : "readers") "
                + "that know version \(needed); this mdq knows \(current): upgrade mdq"
        }
        guard state.version >= current else {
            return
                "the shared index's schema is version \(state.version), older than this mdq's (\(current)): "
                + "'mdq shared migrate' moves it forward (the programs already using it go on)"
        }
        return nil
    }

    /// What `migrate` did.
    package struct Outcome: Equatable {
        package var from: Int?
        package var to: Int
        package var applied: [Int]

        package init(from: Int?, to: Int, applied: [Int]) {
            self.from = from
            self.to = to
            self.applied = applied
        }
    }

    /// Creates the schema, or moves it forward to `current`: every
    /// migration not yet run, each in its own transaction.
    ///
    /// - Throws: `SharedIndexError` when the server is older than
    ///   PostgreSQL 15, the database's encoding or locale would lose names
    ///   (see `localeProblem`), the schema is newer than this mdq, or a
    ///   statement fails (nothing of that migration is kept).
    @discardableResult
    package static func migrate(_ connection: PostgresConnection, upTo target: Int = current) throws(SharedIndexError)
        -> Outcome
    {
        guard connection.serverVersion >= 150_000 else {
            throw SharedIndexError(
                "the shared index needs PostgreSQL 15 or later; this server is \(connection.serverVersion / 10_000)")
        }
        let before = try state(of: connection)?.version
        if let before, before > current {
            throw SharedIndexError(
                "the shared index's schema is version \(before), newer than this mdq knows (\(current)): "
                    + "upgrade mdq")
        }
        // Its objects keep one owner: the search functions run as the one
        // who made them, and read the tables as that role.
        if before != nil, before != current {
            let owner = try connection.execute(
                """
                SELECT pg_get_userbyid(nspowner) AS owner, nspowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) AS mine
                FROM pg_namespace WHERE nspname = 'mdq'
                """)
            if owner.first("mine") != "t" {
                throw SharedIndexError(
                    "the shared index's schema belongs to the role \(owner.first("owner") ?? "?"), not to "
                        + "this connection's: migrate it as \(owner.first("owner") ?? "its owner") (what a migration "
                        + "makes must be that role's, whose functions read it)")
            }
        }
        var applied: [Int] = []
        for migration in migrations where migration.version <= target {
            let ran: Bool = try connection.transaction { () throws(SharedIndexError) in
                // One migration at a time, whoever runs it.
                _ = try connection.execute("SELECT pg_advisory_xact_lock(7301600001)")
                let now = try state(of: connection)?.version ?? 0
                guard now < migration.version else { return false }
                guard now == migration.version - 1 else {
                    throw SharedIndexError(
                        "the schema is at version \(now); migration \(migration.version) follows \(migration.version - 1)"
                    )
                }
                if now == 0 {
                    _ = try connection.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                    if let problem = try localeProblem(connection) { throw SharedIndexError(problem) }
                }
                _ = try connection.execute(migration.sql)
                if now == 0 {
                    _ = try connection.execute(
                        """
                        INSERT INTO mdq.meta (schema_version, fold_version, min_publisher, min_reader)
                        VALUES ($1, $2, $3, $4)
                        """,
                        [
                            String(migration.version), String(foldVersion), String(migration.minimumPublisher),
                            String(migration.minimumReader),
                        ])
                } else {
                    _ = try connection.execute(
                        """
                        UPDATE mdq.meta SET schema_version = $1, min_publisher = $2, min_reader = $3,
                               migrated = now()
                        """,
                        [
                            String(migration.version), String(migration.minimumPublisher),
                            String(migration.minimumReader),
                        ])
                }
                return true
            }
            if ran { applied.append(migration.version) }
        }
        let after = try state(of: connection)?.version ?? 0
        return Outcome(from: before, to: after, applied: applied)
    }

    /// Why this database cannot hold the shared index, or nil.
    ///
    /// Names are searched by their trigrams, and pg_trgm takes a trigram
    /// only from characters the database's `LC_CTYPE` calls letters or
    /// digits: under `C` or `POSIX`, no character outside ASCII is one, so
    /// a Chinese, Greek or accented name would have no trigram and never
    /// be found. The test is pg_trgm's own answer for such names.
    package static func localeProblem(_ connection: PostgresConnection) throws(SharedIndexError) -> String? {
        // The encoding first, in a query of ASCII only: a database that
        // cannot hold the names below could not read the next query.
        let database = try connection.execute(
            """
            SELECT current_database() AS name, pg_encoding_to_char(encoding) AS encoding, datctype AS ctype
            FROM pg_database WHERE datname = current_database()
            """)
        let name = database.first("name") ?? "?"
        let ctype = database.first("ctype") ?? "?"
        guard database.first("encoding") == "UTF8" else {
            return
                "the database \(name) is encoded in \(database.first("encoding") ?? "?"), not UTF8: names "
                + "outside its character set could not be stored; create it with ENCODING 'UTF8' and a UTF-8 "
                + "locale (CREATE DATABASE \(name) ENCODING 'UTF8' LOCALE 'C.UTF-8' TEMPLATE template0)"
        }
        let trigrams = try connection.execute(
            "SELECT cardinality(show_trgm('文件名')) > 0 AND cardinality(show_trgm('Ελλάδα')) > 0 AS letters")
        guard trigrams.first("letters") == "t" else {
            return
                "the database \(name) classifies characters with the locale '\(ctype)', which sees no letter "
                + "outside ASCII: no Chinese, Greek or accented name could be found by its trigrams; create it "
                + "with a UTF-8 locale (CREATE DATABASE \(name) ENCODING 'UTF8' LOCALE 'C.UTF-8' "
                + "TEMPLATE template0)"
        }
        return nil
    }
}

extension SharedSchema {
    /// What a role may do with the shared index (`mdq shared grant`).
    package enum Access: String, Sendable, CaseIterable {
        /// Call the search functions only, judged as the user of the
        /// role's name: a user's own credential, on a machine that may not
        /// be trusted.
        case search
        /// Read every table too, and search for whichever user it names:
        /// hosts that trust each other's system index, administrators.
        case trusted
        /// Publish one host: register it (as this role's), read and write
        /// its partitions, its row's state, its classes and its users, and
        /// reload it; search as itself. Nothing of another host: a
        /// publishing machine's root reads no more than its own rows.
        case publish
    }

    /// Gives `role` what `access` says (and what the lesser ones say).
    ///
    /// - Throws: `SharedIndexError` when the role does not exist, or the
    ///   caller may not grant.
    package static func grant(_ connection: PostgresConnection, role: String, access: Access) throws(SharedIndexError) {
        // The columns granted are this version's: a newer schema's would
        // be left out, and its readers and publishers refused.
        if let state = try state(of: connection), state.version != current {
            throw SharedIndexError(
                state.version > current
                    ? "the shared index's schema is version \(state.version), newer than this mdq knows "
                        + "(\(current)): grant with the newer mdq"
                    : "the shared index's schema is version \(state.version), older than this mdq's (\(current)): "
                        + "'mdq shared migrate' first")
        }
        let quoted = try quotedRole(connection, role)
        try connection.transaction { () throws(SharedIndexError) in
            // The hosts' state, not their machine ids.
            _ = try connection.execute(
                """
                GRANT USAGE ON SCHEMA mdq TO \(quoted);
                GRANT SELECT ON mdq.meta TO \(quoted);
                GRANT SELECT (host_id, name, domain, generation, last_seq, state, entries, folders, last_error,
                              registered, last_contact, purged_seq, identity_seq, behind_since, publisher_version,
                              publishes_content, row_version)
                    ON mdq.host TO \(quoted);
                GRANT EXECUTE ON FUNCTION \(searchFunctions.joined(separator: ", ")) TO \(quoted)
                """)
            if access == .trusted {
                _ = try connection.execute("GRANT SELECT ON ALL TABLES IN SCHEMA mdq TO \(quoted)")
            }
            if access == .publish {
                // Row-level security shows it its own host's rows alone.
                _ = try connection.execute(
                    """
                    GRANT SELECT ON mdq.host TO \(quoted);
                    GRANT SELECT, INSERT ON mdq.access_class, mdq.list_rule TO \(quoted);
                    GRANT SELECT ON mdq.identity TO \(quoted);
                    GRANT INSERT, UPDATE, DELETE ON mdq.identity TO \(quoted);
                    GRANT UPDATE (last_seq, clock, state, entries, folders, last_error, last_contact,
                                  publisher_version, purged_seq, identity_seq, behind_since, row_version,
                                  publishes_content)
                        ON mdq.host TO \(quoted);
                    GRANT EXECUTE ON FUNCTION \(publishFunctions.joined(separator: ", ")) TO \(quoted)
                    """)
                // Its host's partitions again (a revoke took them).
                for row in try connection.execute(
                    "SELECT host_id FROM mdq.host WHERE publisher_role = $1", [role]
                ).rows {
                    guard let id = row[0].flatMap(Int.init) else { continue }
                    _ = try connection.execute(
                        "GRANT SELECT, INSERT, UPDATE, DELETE ON mdq.entry_\(id), mdq.folder_\(id), mdq.content_\(id) "
                            + "TO \(quoted)")
                }
            }
        }
    }

    /// Takes back what `grant` gave `role`, its host's partitions
    /// included (the host stays, and its owner may publish it).
    package static func revoke(_ connection: PostgresConnection, role: String) throws(SharedIndexError) {
        let quoted = try quotedRole(connection, role)
        try connection.transaction { () throws(SharedIndexError) in
            // Those of this version the schema has (an older schema, not
            // yet migrated, lacks the newer ones).
            var functions: [String] = []
            for name in searchFunctions + publishFunctions
            where try connection.execute("SELECT to_regprocedure($1) IS NOT NULL AS present", [name]).first("present")
                == "t"
            {
                functions.append(name)
            }
            _ = try connection.execute(
                """
                REVOKE ALL ON ALL TABLES IN SCHEMA mdq FROM \(quoted);
                REVOKE EXECUTE ON FUNCTION \(functions.joined(separator: ", ")) FROM \(quoted);
                REVOKE USAGE ON SCHEMA mdq FROM \(quoted)
                """)
        }
    }

    /// The functions a searcher may call.
    static let searchFunctions = [
        "mdq.search(smallint[], jsonb, jsonb, text, bigint, jsonb)", "mdq.count(smallint[], jsonb, jsonb, text)",
        "mdq.changes(smallint, bigint, jsonb, text)", "mdq.scope_errors(jsonb, text)",
        "mdq.attributes(smallint, bigint[], text)",
    ]

    /// The functions a publisher calls besides.
    static let publishFunctions = [
        "mdq.add_host(text, text, text)", "mdq.reload_begin(smallint)", "mdq.reload_index(smallint)",
        "mdq.reload_swap(smallint, bigint, text, bigint, bigint)", "mdq.register_types(text[])",
    ]

    /// `role` as an SQL identifier, once the server says it exists.
    private static func quotedRole(_ connection: PostgresConnection, _ role: String) throws(SharedIndexError) -> String
    {
        let row = try connection.execute(
            "SELECT quote_ident($1) AS quoted, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) AS present", [role])
        guard row.first("present") == "t", let quoted = row.first("quoted") else {
            throw SharedIndexError(
                "no role \(role) in the database server (CREATE ROLE \(role) LOGIN creates one; its name is the "
                    + "user it searches as)")
        }
        return quoted
    }
}
