import Foundation
import MDQCore
import MDQShared
import MDQSystem
import TestSupport
import Testing

/// The shared index's schema in a private PostgreSQL cluster: made once,
/// moved forward, refused where names would be lost.
@Suite(.enabled(if: PostgresCluster.isInstalled, "PostgreSQL 15 is not installed (Scripts/bootstrap installs it)"))
struct SharedSchemaTests {
    let cluster: PostgresCluster

    init() throws {
        cluster = try #require(PostgresCluster.shared, "the private PostgreSQL cluster did not start")
    }

    @Test func migratingCreatesTheSchemaOnceAndThenDoesNothing() throws {
        let database = try cluster.createDatabase()
        let connection = try PostgresConnection(url: cluster.url(database))
        #expect(try SharedSchema.state(of: connection) == nil)
        let first = try SharedSchema.migrate(connection)
        #expect(
            first == SharedSchema.Outcome(from: nil, to: SharedSchema.current, applied: Array(1...SharedSchema.current))
        )
        let state = try #require(try SharedSchema.state(of: connection))
        #expect(state.version == SharedSchema.current)
        #expect(state.foldVersion == SharedSchema.foldVersion)
        #expect(state.hosts == 0)
        let again = try SharedSchema.migrate(connection)
        #expect(again == SharedSchema.Outcome(from: SharedSchema.current, to: SharedSchema.current, applied: []))
        // What the schema is for: a name outside ASCII found by its trigrams.
        let host = try #require(try connection.execute("SELECT mdq.add_host('nas', 'machine-1') AS id").first("id"))
        _ = try connection.execute(
            """
            INSERT INTO mdq.entry (host_id, entry_id, parent_id, kind, name, fold, seq)
            VALUES ($1, 1, 0, 1, '会议记录.txt', '会议记录.txt', 1), ($1, 2, 0, 1, 'Ελλάδα.png', 'ελλαδα.png', 2)
            """, [host])
        for (fragment, name) in [("会议记", "会议记录.txt"), ("λλαδ", "Ελλάδα.png")] {
            let query = "SELECT name FROM mdq.entry WHERE fold LIKE '%\(fragment)%' AND deleted_seq IS NULL"
            #expect(try connection.execute(query).rows == [[name]])
        }
        // The host's partition has the trigram index, and pg_trgm made
        // trigrams of those names (a C-locale database makes none).
        let indexes = try connection.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'entry_' || $1 AND indexdef LIKE '%gin_trgm_ops%'",
            [host])
        #expect(indexes.rows.count == 1)
        #expect(try connection.execute("SELECT cardinality(show_trgm('会议记录')) AS n").first("n") != "0")
        #expect(try SharedSchema.state(of: connection)?.hosts == 1)
    }

    /// Two programs migrating one database at once: the schema is made
    /// once, and both end with it whole (an advisory lock orders them).
    @Test func migrationsStartedTogetherMakeTheSchemaOnce() throws {
        for _ in 0..<5 {
            let database = try cluster.createDatabase()
            let url = cluster.url(database)
            let results = LockedResults()
            DispatchQueue.concurrentPerform(iterations: 3) { _ in
                do {
                    let connection = try PostgresConnection(url: url)
                    results.append(.success(try SharedSchema.migrate(connection).applied))
                } catch {
                    results.append(.failure(error))
                }
            }
            let applied = try results.values.map { try $0.get() }
            // Each migration ran once, whichever program ran it (one may
            // make version 1 while another waits, then make version 2).
            #expect(applied.flatMap { $0 }.sorted() == Array(1...SharedSchema.current), "\(applied)")
            let connection = try PostgresConnection(url: url)
            #expect(try SharedSchema.state(of: connection)?.version == SharedSchema.current)
        }
    }

    /// Under the C locale pg_trgm takes no trigram from a character
    /// outside ASCII: refused with the reason, and nothing is left behind.
    @Test(arguments: [
        ("ENCODING 'UTF8' LOCALE 'C' TEMPLATE template0", "sees no letter outside ASCII"),
        ("ENCODING 'UTF8' LOCALE 'POSIX' TEMPLATE template0", "sees no letter outside ASCII"),
        ("ENCODING 'SQL_ASCII' LOCALE 'C' TEMPLATE template0", "encoded in SQL_ASCII"),
    ])
    func aDatabaseThatWouldLoseNamesIsRefused(options: String, reason: String) throws {
        let database = try cluster.createDatabase(options: options)
        let connection = try PostgresConnection(url: cluster.url(database))
        let error = #expect(throws: SharedIndexError.self) { try SharedSchema.migrate(connection) }
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("CREATE DATABASE") == true)
        #expect(try SharedSchema.state(of: connection) == nil)
        #expect(
            try connection.execute("SELECT count(*) AS n FROM pg_extension WHERE extname = 'pg_trgm'").first("n") == "0"
        )
    }

    @Test func aSchemaNewerThanThisMdqIsLeftAlone() throws {
        let database = try cluster.createDatabase()
        let connection = try PostgresConnection(url: cluster.url(database))
        try SharedSchema.migrate(connection)
        _ = try connection.execute("UPDATE mdq.meta SET schema_version = 99")
        let error = #expect(throws: SharedIndexError.self) { try SharedSchema.migrate(connection) }
        #expect(error?.message.contains("version 99, newer than this mdq knows") == true, "\(error?.message ?? "")")
        #expect(try SharedSchema.state(of: connection)?.version == 99)
        // Nor are roles granted this version's columns of it.
        try cluster.createRole("newer-schema-reader")
        let refused = #expect(throws: SharedIndexError.self) {
            try SharedSchema.grant(connection, role: "newer-schema-reader", access: .search)
        }
        #expect(refused?.message.contains("grant with the newer mdq") == true, "\(refused?.message ?? "")")
    }

    /// A host is one name and one machine: a second registration of
    /// either (a cloned machine, a name taken) is refused by the database;
    /// removing a host drops its partitions.
    @Test func hostsAreOneNameAndOneMachineWithPartitionsOfTheirOwn() throws {
        let database = try cluster.createDatabase()
        let connection = try PostgresConnection(url: cluster.url(database))
        try SharedSchema.migrate(connection)
        let id = try #require(try connection.execute("SELECT mdq.add_host('node17', 'm-17') AS id").first("id"))
        let partitions =
            "SELECT count(*) AS n FROM pg_class WHERE relname IN ('entry_\(id)', 'folder_\(id)', 'content_\(id)')"
        #expect(try connection.execute(partitions).first("n") == "3")
        for (name, machine) in [("clone", "m-17"), ("node17", "m-other")] {
            let error = #expect(throws: SharedIndexError.self) {
                try connection.execute("SELECT mdq.add_host($1, $2)", [name, machine])
            }
            #expect(error?.sqlState == "23505", "\(error?.message ?? "")")
        }
        let badName = #expect(throws: SharedIndexError.self) {
            try connection.execute("SELECT mdq.add_host($1, 'm-x')", ["../etc"])
        }
        #expect(badName?.sqlState == "23514")
        #expect(try connection.execute("SELECT mdq.remove_host('node17') AS removed").first("removed") == "t")
        #expect(try connection.execute(partitions).first("n") == "0")
        #expect(try connection.execute("SELECT mdq.remove_host('node17') AS removed").first("removed") == "f")
    }

    /// Names are stored as text when they are UTF-8, and their exact bytes
    /// beside when they are not; a newline, a quote, a 4,096-byte path and
    /// every byte from 1 to 255 come back as they went in.
    @Test func parametersAndResultsKeepEveryCharacter() throws {
        let database = try cluster.createDatabase()
        let connection = try PostgresConnection(url: cluster.url(database))
        let samples = [
            "line\nbreak", "it's \"quoted\"", String(repeating: "ä/", count: 1_365) + "x", "tab\there", "é\u{301}",
        ]
        for sample in samples {
            #expect(try connection.execute("SELECT $1::text AS value", [sample]).first("value") == sample)
        }
        let bytes = (1...255).map { String(format: "%02x", $0) }.joined()
        #expect(
            try connection.execute("SELECT encode(decode($1, 'hex'), 'hex') AS value", [bytes]).first("value") == bytes)
        #expect(try connection.execute("SELECT $1::text AS value", [nil]).rows == [[nil]])
    }

    /// The words of the longest text an import keeps (1 MiB), every word
    /// distinct, are complete, and PostgreSQL takes them as one `tsvector`
    /// in which the last is found: a file's words are not cut short.
    @Test func theWordsOfTheLongestTextAreCompleteAndStored() throws {
        // Long words, so a separator is a byte in sixty.
        let stem = String(repeating: "word", count: 14)
        var text: [UInt8] = []
        var i = 0
        while text.count < 1 << 20 {
            text += Array("\(stem)\(i) ".utf8)
            i += 1
        }
        text.removeLast(text.count - (1 << 20))
        if text.last == UInt8(ascii: " ") { text[text.count - 1] = UInt8(ascii: "z") }
        let (words, complete) = TextWords.words(of: text)
        #expect(complete)
        #expect(words.reduce(0) { $0 + $1.count } > 1_030_000)
        let database = try cluster.createDatabase()
        let connection = try PostgresConnection(url: cluster.url(database))
        _ = try connection.execute("CREATE TABLE t (words tsvector)")
        _ = try connection.copy("COPY t (words) FROM STDIN (FORMAT binary)") { row in
            row.row(fields: 1)
            row.tsvector(words)
            return false
        }
        let last = String(decoding: words.max { $0.lexicographicallyPrecedes($1) }!, as: UTF8.self)
        let stored = try connection.execute(
            "SELECT length(words) AS n, words @@ quote_literal($1)::tsquery AS found FROM t", [last])
        #expect(stored.first("n") == String(words.count))
        #expect(stored.first("found") == "t", "\(last)")
    }

    /// A URL libpq cannot parse is refused without quoting it: the part
    /// it could not read may be the password.
    @Test func aMalformedURLIsNotRepeated() throws {
        let error = #expect(throws: SharedIndexError.self) {
            try PostgresConnection(url: "postgresql://mdq:s3cr%zzet@localhost/mdq")
        }
        #expect(error?.message.contains("malformed") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("s3cr") == false)
    }

    @Test func anUnreachableDatabaseIsNamedWithLibpqsReason() throws {
        let error = #expect(throws: SharedIndexError.self) {
            try PostgresConnection(
                url: "postgresql:///nowhere?host=/nonexistent-folder&user=postgres&connect_timeout=2")
        }
        #expect(error?.message.hasPrefix("cannot connect to the shared index: ") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("/nonexistent-folder") == true)
        // Nothing there: trouble that passes.
        #expect(error?.unreachable == true)
        let missing = #expect(throws: SharedIndexError.self) {
            try PostgresConnection(url: cluster.url("no_such_database"))
        }
        #expect(missing?.message.contains("no_such_database") == true, "\(missing?.message ?? "")")
        // A server that answered and turned the login away: said until
        // mended, not taken for a database away.
        #expect(missing?.unreachable == false)
        let stranger = #expect(throws: SharedIndexError.self) {
            try PostgresConnection(url: cluster.url(cluster.url("postgres"), user: "no_such_role_here"))
        }
        #expect(stranger?.unreachable == false, "\(stranger?.message ?? "")")
    }

    /// A kept connection whose session the server ended (stopped,
    /// restarted, terminated) is known closed before it is used again, so
    /// the next search connects anew rather than failing.
    @Test func aConnectionTheServerEndedIsKnownClosedBeforeItIsUsed() throws {
        let kept = try PostgresConnection(url: cluster.url("postgres"))
        #expect(kept.isOpenWhileIdle)
        let pid = try #require(try kept.execute("SELECT pg_backend_pid() AS pid").first("pid"))
        #expect(kept.isOpenWhileIdle)
        let admin = try PostgresConnection(url: cluster.url("postgres"))
        _ = try admin.execute("SELECT pg_terminate_backend($1::int)", [pid])
        #expect(waitUntil(timeout: 10) { !kept.isOpenWhileIdle })
        let error = #expect(throws: SharedIndexError.self) { try kept.execute("SELECT 1") }
        #expect(error?.unreachable == true, "\(error?.message ?? "")")
        // Said on one line, as every warning is (libpq gives three).
        #expect(error?.message.contains("\n") == false, "\(error?.message ?? "")")
        #expect(admin.isOpenWhileIdle)
        // A server's error with the statement's line under it, the same.
        let refused = #expect(throws: SharedIndexError.self) { try admin.execute("SELECT nothing FROM nowhere") }
        #expect(
            refused?.message.contains("\n") == false && refused?.message.contains("nowhere") == true,
            "\(refused?.message ?? "")")
    }

    /// A search's budget bounds it whole: a watchdog past it cancels what
    /// the connection runs, from another thread, and the statement fails
    /// as one past its `statement_timeout` does (57014); a watchdog
    /// finished first never fires, and says so.
    @Test func aWatchdogCancelsWhatTheConnectionRunsPastItsTime() throws {
        let connection = try PostgresConnection(url: cluster.url("postgres"))
        let canceller = try #require(connection.canceller())
        let watchdog = Watchdog(seconds: 0.2) { canceller.cancel() }
        let error = #expect(throws: SharedIndexError.self) {
            try connection.execute("SELECT pg_sleep(120)")
        }
        #expect(error?.sqlState == "57014", "\(error?.message ?? "")")
        #expect(watchdog.finish())
        // Cancelled, it runs nothing more (a search's next fetch too).
        let after = #expect(throws: SharedIndexError.self) { try connection.execute("SELECT 1") }
        #expect(after?.sqlState == "57014")
        // A cancel between two statements (the server does nothing with
        // it) still ends the search: the next one is refused.
        let idle = try PostgresConnection(url: cluster.url("postgres"))
        #expect(try idle.execute("SELECT 1 AS one").first("one") == "1")
        try #require(idle.canceller()).cancel()
        let next = #expect(throws: SharedIndexError.self) { try idle.execute("SELECT 2") }
        #expect(next?.sqlState == "57014")
        // Finished first, a watchdog never fires, and says so.
        let other = try PostgresConnection(url: cluster.url("postgres"))
        let otherCanceller = try #require(other.canceller())
        let quiet = Watchdog(seconds: 0.2) { otherCanceller.cancel() }
        #expect(try other.execute("SELECT pg_sleep(0.01), 2 AS two").first("two") == "2")
        #expect(!quiet.finish())
        #expect(try other.execute("SELECT pg_sleep(0.4), 3 AS three").first("three") == "3")
    }
}

/// Results gathered from several threads.
private final class LockedResults: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Result<[Int], any Error>] = []

    func append(_ result: Result<[Int], any Error>) { lock.withLock { stored.append(result) } }
    var values: [Result<[Int], any Error>] { lock.withLock { stored } }
}
