import Foundation
import Glibc
import MDQShared
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQSystem

/// The schema's search functions (version 3): the permission check the
/// database makes is the kernel's as mdq makes it; a role that may only
/// call them can neither read the tables nor pass SQL; a live query
/// follows a host by its changes alone, and searches it again only when
/// its tombstones were purged; the migration to version 3 keeps every
/// column a version 2 publisher writes.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: PostgresCluster.isInstalled, "PostgreSQL 15 is not installed (Scripts/bootstrap installs it)"))
struct SharedSearchFunctionTests {
    let cluster: PostgresCluster

    init() throws {
        cluster = try #require(PostgresCluster.shared, "the private PostgreSQL cluster did not start")
    }

    func sharedIndex() throws -> String {
        let url = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: url))
        return url
    }

    /// `mdq.may` (read, then search) decides as `Viewer.mayWalk` for 4,000
    /// seeded folders and users: modes with every bit, owners, groups,
    /// ACLs of every tag in the kernel's order (with and without a mask,
    /// an empty mask, unreadable ones), root.
    @Test func theDatabasesPermissionCheckIsTheKernels() throws {
        let url = try sharedIndex()
        let connection = try PostgresConnection(url: url)
        var random = SeededGenerator(seed: 71)
        let users: [UInt32] = [0, 1000, 1001, 1002, UInt32.max]
        let groups: [UInt32] = [100, 101, 102]
        func perms() -> UInt16 { UInt16.random(in: 0...7, using: &random) }
        var cases: [(EntryAccess, Viewer)] = []
        for _ in 0..<4000 {
            var access = EntryAccess(
                mode: UInt16.random(in: 0...0o7777, using: &random), owner: users.randomElement(using: &random)!,
                group: groups.randomElement(using: &random)!)
            switch Int.random(in: 0..<5, using: &random) {
            case 0:
                access.acl = [EntryAccess.ACLEntry(tag: EntryAccess.ACLEntry.unreadableTag, permissions: 0, id: 0)]
            case 1, 2:
                typealias Entry = EntryAccess.ACLEntry
                var acl = [Entry(tag: Entry.ownerTag, permissions: perms(), id: 0)]
                for user in users.shuffled(using: &random).prefix(Int.random(in: 0...2, using: &random)) {
                    acl.append(Entry(tag: Entry.userTag, permissions: perms(), id: user))
                }
                acl.append(Entry(tag: Entry.owningGroupTag, permissions: perms(), id: 0))
                for group in groups.shuffled(using: &random).prefix(Int.random(in: 0...2, using: &random)) {
                    acl.append(Entry(tag: Entry.groupTag, permissions: perms(), id: group))
                }
                if Bool.random(using: &random) { acl.append(Entry(tag: Entry.maskTag, permissions: perms(), id: 0)) }
                acl.append(Entry(tag: Entry.otherTag, permissions: perms(), id: 0))
                access.acl = acl
            default:
                break
            }
            let viewer = Viewer(
                user: users.randomElement(using: &random)!,
                groups: Set(groups.filter { _ in Bool.random(using: &random) }))
            cases.append((access, viewer))
        }
        var rows: [String] = []
        for (k, (access, viewer)) in cases.enumerated() {
            let columns = AccessRow.columns(access)
            let acl = columns[3].map { "'\($0)'::jsonb" } ?? "NULL::jsonb"
            rows.append(
                "(\(k), \(columns[0]!), \(columns[1]!), \(columns[2]!), \(acl), \(viewer.user), "
                    + "'{\(viewer.groups.map(String.init).joined(separator: ","))}'::bigint[])")
        }
        let answers = try connection.execute(
            """
            SELECT k, mdq.may(4, mode, owner, grp, acl, uid, gids) AND mdq.may(1, mode, owner, grp, acl, uid, gids)
            FROM (VALUES \(rows.joined(separator: ","))) AS v(k, mode, owner, grp, acl, uid, gids) ORDER BY k
            """
        ).rows
        #expect(answers.count == cases.count)
        var differ: [String] = []
        for row in answers {
            let (access, viewer) = cases[Int(row[0]!)!]
            if (row[1] == "t") != viewer.mayWalk(access) {
                differ.append("\(access) as \(viewer.user) in \(viewer.groups.sorted()): database says \(row[1]!)")
            }
        }
        #expect(differ.isEmpty, "\(differ.count) differ: \(differ.prefix(3))")
    }

    /// A role granted only the search functions reads no table, cannot
    /// name another user, and a condition is data, never SQL: an unknown
    /// column or test is refused, and quotes in a value are matched.
    @Test func aSearcherReachesOnlyTheFunctionsAndPassesNoSQL() throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let root = try temp.folder("tree").string
        close(open(root + "/quote'; DROP TABLE mdq.host; --.txt", O_WRONLY | O_CREAT, 0o644))
        close(open(root + "/plain.txt", O_WRONLY | O_CREAT, 0o644))
        // A folder "searcher" (a stranger to the host) may not list.
        mkdir(root + "/closed", 0o700)
        close(open(root + "/closed/hidden-ledger.xlsx", O_WRONLY | O_CREAT, 0o644))
        let published = try PublishedTree(root, url: url)
        defer { published.close() }
        try cluster.createRole("searcher")
        let admin = try PostgresConnection(url: url)
        try SharedSchema.grant(admin, role: "searcher", access: .search)
        let own = try PostgresConnection(url: cluster.url(url, user: "searcher"))
        for table in ["mdq.entry", "mdq.folder", "mdq.identity", "mdq.access_class", "mdq.entry_1"] {
            #expect(throws: SharedIndexError.self, "\(table) is not readable") {
                try own.execute("SELECT count(*) FROM \(table)")
            }
        }
        // The helpers run as the caller: they reach no table either.
        #expect(throws: SharedIndexError.self) { try own.execute("SELECT mdq.denied_classes('root', '{1}')") }
        for condition in [
            #"["like","fold; DROP TABLE mdq.host","%a%"]"#, #"["drop","fold","x"]"#, #"{"like":"fold"}"#,
            #"["number>","size","1; DROP TABLE mdq.host"]"#, #"["and",["bogus","fold","x"],["=","fold","y"]]"#,
            #"["or",["not",["bogus"]],["=","fold","y"]]"#,
        ] {
            #expect(throws: SharedIndexError.self, "\(condition)") {
                try own.execute("SELECT mdq.count('{1}', $1::jsonb)", [condition])
            }
        }
        #expect(throws: SharedIndexError.self, "a scope without a host") {
            try own.execute(#"SELECT mdq.count('{1}', 'true'::jsonb, '[[null,"/"]]')"#)
        }
        // Its folders are judged as itself too, whatever user it names:
        // nothing below the closed folder is told, not even what is there.
        let folders = [
            root, root + "/closed", root + "/closed/nothing", root + "/closed/hidden-ledger.xlsx",
            root + "/nothing", root + "/plain.txt",
        ].map { "[1,\"\($0)\"]" }.joined(separator: ",")
        func scopeErrors(_ connection: PostgresConnection, _ viewer: String?) throws -> String? {
            try connection.execute("SELECT mdq.scope_errors($1::jsonb, $2)::text AS e", ["[\(folders)]", viewer])
                .first("e")
        }
        #expect(try scopeErrors(own, "root") == "{NULL,EACCES,EACCES,EACCES,ENOENT,ENOTDIR}")
        #expect(try scopeErrors(admin, nil) == "{NULL,NULL,ENOENT,ENOTDIR,ENOENT,ENOTDIR}")
        // A slash at the end, a symbolic link (its target unknown to the
        // index), a folder whose path is not UTF-8 (by its bytes) and what
        // is not in it, a path longer than the kernel takes.
        #expect(symlink(root, root + "/link") == 0)
        let bad = Array((root + "/dir").utf8) + [0xFF] + Array("bad".utf8)
        #expect((bad + [0]).withUnsafeBytes { mkdir($0.baseAddress!.assumingMemoryBound(to: CChar.self), 0o755) } == 0)
        try SharedPublisherTests.expectPublished(root, url, "the link and the folder of bytes")
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        let more = [
            "[1,\"\(root)/\"]", "[1,\"\(root)/link\"]", "[1,null,\"\(hex(bad))\"]",
            "[1,null,\"\(hex(bad + Array("/nothing".utf8)))\"]", "[1,\"/\(String(repeating: "x", count: 4100))\"]",
        ].joined(separator: ",")
        for connection in [own, admin] {
            #expect(
                try connection.execute("SELECT mdq.scope_errors($1::jsonb)::text AS e", ["[\(more)]"]).first("e")
                    == "{NULL,symlink,NULL,ENOENT,ENAMETOOLONG}")
        }
        // The folder the host indexes from, closed to the stranger: said
        // not indexed, as what is above it (that it is there would tell a
        // name in a folder the stranger may not list); its owner's view
        // unchanged.
        #expect(chmod(root, 0o700) == 0)
        #expect(
            waitUntil(timeout: 20, interval: 0.02) {
                (try? scopeErrors(own, "root")) == "{unindexed,unindexed,unindexed,unindexed,unindexed,unindexed}"
            }, "\(String(describing: try? scopeErrors(own, "root")))")
        #expect(try scopeErrors(admin, nil) == "{NULL,NULL,ENOENT,ENOTDIR,ENOENT,ENOTDIR}")
        #expect(chmod(root, 0o755) == 0)
        #expect(
            waitUntil(timeout: 20, interval: 0.02) {
                (try? scopeErrors(own, "root")) == "{NULL,EACCES,EACCES,EACCES,ENOENT,ENOTDIR}"
            }, "\(String(describing: try? scopeErrors(own, "root")))")
        for scopes in [#"[[null,"/"]]"#, #"[[1,"relative"]]"#, #"{"a":1}"#, #"[[1,null,"zz"]]"#] {
            #expect(throws: SharedIndexError.self, "\(scopes)") {
                try own.execute("SELECT mdq.scope_errors($1::jsonb)", [scopes])
            }
        }
        // Changes since the start: what it may not see is gone, and says
        // nothing of itself but its id.
        _ = try own.execute("BEGIN")
        _ = try own.execute("SELECT mdq.changes(1::smallint, 0, '[]', 'root')")
        let changed = try own.execute("FETCH ALL FROM mdq_changes").rows
        _ = try own.execute("COMMIT")
        // `gone` follows the id; the access class's columns follow it.
        let gone = changed.filter { $0[12] == "t" }
        #expect(!gone.isEmpty, "the closed folder's file is gone for a stranger")
        for row in gone {
            #expect(
                row[1...10].allSatisfy { $0 == nil } && row[13...].allSatisfy { $0 == nil },
                "a gone row carries its id alone: \(row)")
        }
        #expect(changed.filter { $0[12] == "f" }.allSatisfy { $0[3] != "hidden-ledger.xlsx" })
        let quoted = try own.execute(
            "SELECT mdq.count('{1}', $1::jsonb) AS n", [SQLCondition.like(.fold, "%quote'; drop table%").json])
        #expect(quoted.first("n") == "1")
        #expect(try admin.execute("SELECT count(*) AS n FROM mdq.host").first("n") == "1")
        // Without the grant, not even the functions.
        try SharedSchema.revoke(admin, role: "searcher")
        #expect(throws: SharedIndexError.self) {
            try PostgresConnection(url: cluster.url(url, user: "searcher")).execute(
                "SELECT mdq.count('{1}', 'true'::jsonb)")
        }
    }

    /// A folder above those a host indexes from (`--onlyin nas:/srv`,
    /// where nas indexes `/srv/data`) is searched as those below it that
    /// the viewer may list, by name and count alike; one with none below
    /// it (a name that merely begins the same, `%` and `_` taken as
    /// themselves) stays not indexed, as does one whose roots below it
    /// the viewer may not list (that they are there is not told).
    @Test func aFolderAboveWhatAHostIndexesIsSearchedBelow() throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let above = try temp.folder("up_%x").string
        #expect(chmod(above, 0o755) == 0)
        let root = above + "/tree"
        mkdir(root, 0o755)
        for name in ["report-1.txt", "report-2.txt"] { close(open(root + "/" + name, O_WRONLY | O_CREAT, 0o644)) }
        let published = try PublishedTree(root, url: url)
        defer { published.close() }
        try cluster.createRole("stranger")
        let admin = try PostgresConnection(url: url)
        try SharedSchema.grant(admin, role: "stranger", access: .search)
        let own = try PostgresConnection(url: cluster.url(url, user: "stranger"))
        let base = temp.path.string
        let paths = [above, above + "/", base, "/", base + "/upa%x", base + "/up_%", above + "/tre", above + "/tree2"]
        let scopes = "[" + paths.map { "[1,\"\($0)\"]" }.joined(separator: ",") + "]"
        func scopeErrors(_ connection: PostgresConnection) throws -> String? {
            try connection.execute("SELECT mdq.scope_errors($1::jsonb)::text AS e", [scopes]).first("e")
        }
        let searched = "{NULL,NULL,NULL,NULL,unindexed,unindexed,unindexed,unindexed}"
        #expect(try scopeErrors(admin) == searched)
        #expect(try scopeErrors(own) == searched)
        // What is searched is what lies below: the host's root and all in it.
        func count(_ connection: PostgresConnection, _ folder: String) throws -> String? {
            try connection.execute(
                "SELECT mdq.count('{1}', $1::jsonb, $2::jsonb) AS n",
                [SQLCondition.like(.fold, "report%").json, "[[1,\"\(folder)\"]]"]
            ).first("n")
        }
        for connection in [admin, own] {
            #expect(try count(connection, above) == "2")
            #expect(try count(connection, "/") == "2")
            #expect(try count(connection, base + "/upa%x") == "0")
        }
        // Its root closed to the stranger: not indexed for them, as the
        // root itself is; the owner's view unchanged.
        #expect(chmod(root, 0o700) == 0)
        #expect(
            waitUntil(timeout: 20, interval: 0.02) {
                (try? scopeErrors(own))
                    == "{unindexed,unindexed,unindexed,unindexed,unindexed,unindexed,unindexed,unindexed}"
            }, "\(String(describing: try? scopeErrors(own)))")
        #expect(try scopeErrors(admin) == searched)
        #expect(try count(own, above) == "0")
        // Only the schema's owner calls the walk it keeps.
        do {
            _ = try own.execute("SELECT mdq.scope_errors_by_walk('[]'::jsonb, NULL)")
            Issue.record("a searcher called the walk")
        } catch {
            #expect(error.sqlState == "42501", "\(error)")
        }
    }

    /// A folder whose contents its host prunes has no folder row (nothing
    /// lies in it), whether it was there at the first publish or came
    /// later: a search's folder in or below it is said not indexed, not
    /// missing.
    @Test func aPrunedFolderIsSaidNotIndexed() throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        let root = try temp.folder("tree").string
        for folder in ["keep", "cache", "cache/sub"] { mkdir(root + "/" + folder, 0o755) }
        for file in ["keep/a.txt", "cache/b.txt"] { close(open(root + "/" + file, O_WRONLY | O_CREAT, 0o644)) }
        let tree = try IndexedTree(
            root, rules: ScopeRules(includeHidden: true, prunedFolderNames: [Array("cache".utf8)]))
        defer { tree.close() }
        let publisher = SharedPublisher(configuration: SharedPublisherTests.configuration(url), engine: tree.engine)
        publisher.start()
        defer { publisher.stop() }
        let admin = try PostgresConnection(url: url)
        func folders() throws -> [String] {
            try admin.execute("SELECT path FROM mdq.folder WHERE deleted_seq IS NULL ORDER BY path").rows.compactMap {
                $0[0]
            }
        }
        func scopeErrors(_ paths: [String]) throws -> String? {
            let scopes = paths.map { "[1,\"\(root)\($0)\"]" }.joined(separator: ",")
            return try admin.execute("SELECT mdq.scope_errors($1::jsonb)::text AS e", ["[\(scopes)]"]).first("e")
        }
        #expect(
            waitUntil(timeout: 20) { (try? folders()) == [root, root + "/keep"] },
            "\(String(describing: try? folders()))")
        #expect(
            try scopeErrors(["/keep", "/cache", "/cache/sub", "/cache/nothing"])
                == "{NULL,unindexed,unindexed,unindexed}")
        // One that comes later, published a batch at a time.
        mkdir(root + "/keep/cache", 0o755)
        #expect(
            waitUntil(timeout: 20) { (try? scopeErrors(["/keep/cache"])) == "{unindexed}" },
            "\(String(describing: try? scopeErrors(["/keep/cache"]))) \(String(describing: try? folders()))")
        #expect(try folders() == [root, root + "/keep"])
    }

    /// A live query that keeps at most so many results (the system
    /// index's for its users) ends, refused, when its gather or a change
    /// would pass them: it never holds more.
    @Test func aLiveQueryEndsPastTheResultsItKeeps() throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        let root = try temp.folder("tree").string
        for name in ["a.txt", "b.txt", "c.txt", "d.png"] {
            FileManager.default.createFile(atPath: root + "/" + name, contents: Data())
        }
        let published = try PublishedTree(root, url: url)
        defer { published.close() }
        let search = SharedReader.Search(predicate: try MetadataPredicate("kMDItemFSName LIKE[c] '*.txt'"))
        func query(keeping most: Int, _ search: SharedReader.Search = search) throws -> SharedLiveQuery {
            let live = try SharedLiveQuery(
                reader: SharedReader(connection: PostgresConnection(url: url)), search: search)
            live.mostResults = most
            return live
        }
        /// What `live` ends with as the host publishes, within 30 s.
        func ending(_ live: SharedLiveQuery) -> (any Error)? {
            var ended: (any Error)?
            _ = waitUntil(timeout: 30) {
                do {
                    _ = try live.next(timeout: 0.05)
                } catch {
                    ended = error
                }
                return ended != nil
            }
            return ended
        }
        #expect(throws: SharedReader.Refusal.tooManyResults(2)) { _ = try query(keeping: 2).gather() }
        let live = try query(keeping: 3)
        #expect(try live.gather().count == 3)
        FileManager.default.createFile(atPath: root + "/e.txt", contents: Data())
        let refusal = ending(live)
        #expect(refusal as? SharedReader.Refusal == .tooManyResults(3), "\(String(describing: refusal))")
        #expect(live.results.count <= 4)
        // Matches that come in one batch are bounded as they are read,
        // before any is a result: none is kept. (Made while the publisher
        // is stopped, so they are published together.)
        var broad = search
        broad.predicate = try MetadataPredicate("kMDItemFSName LIKE[c] 'new-*'")
        let empty = try query(keeping: 2, broad)
        #expect(try empty.gather().isEmpty)
        published.publisher.stop()
        for name in ["new-1.txt", "new-2.txt", "new-3.txt", "new-4.txt"] {
            FileManager.default.createFile(atPath: root + "/" + name, contents: Data())
        }
        let indexed = waitUntil(timeout: 20) {
            let answer = try? published.tree.engine.answer(
                scopes: [published.tree.scope], predicate: broad.predicate, output: .count)
            if case .success(let counted)? = answer { return counted.count == 4 }
            return false
        }
        #expect(indexed)
        let again = SharedPublisher(
            configuration: SharedPublisherTests.configuration(url), engine: published.tree.engine)
        again.start()
        defer { again.stop() }
        let bounded = ending(empty)
        #expect(bounded as? SharedReader.Refusal == .tooManyResults(2), "\(String(describing: bounded))")
        #expect(empty.results.isEmpty, "\(empty.results.count) kept")
    }

    /// A live query across hosts follows a storm by each host's changes
    /// since its cursor, never searching it again: after each round its
    /// results are a fresh crawl's matches (for a user a chmod hides a
    /// folder from, and shows again), and its updates replay to them.
    /// Once the host purged tombstones the query had not read, it searches
    /// the host again, once, and is right again.
    @Test(arguments: [UInt64(81), 82])
    func aLiveQueryFollowsAHostByItsChanges(seed: UInt64) throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let root = try temp.folder("tree").string
        var storm = Storm(scope: root, outside: try temp.folder("outside").string, seed: seed)
        storm.run(operations: 120)
        let published = try PublishedTree(root, url: url, "seed \(seed), first publish")
        defer { published.close() }
        let predicate = try MetadataPredicate("kMDItemFSName LIKE[c] '*.txt' OR kMDItemFSSize > 30")
        var search = SharedReader.Search(predicate: predicate)
        // A user the host does not know: what "other" may see.
        search.user = "stranger"
        search.budget = 30
        let live = try SharedLiveQuery(reader: SharedReader(connection: PostgresConnection(url: url)), search: search)
        var replayed: [SharedLiveQuery.Key: [UInt8]] = [:]
        for entry in try live.gather() {
            replayed[SharedLiveQuery.Key(host: entry.hostID, identity: entry.identity)] = entry.pathBytes
        }
        func follow() throws {
            guard let update = try live.next(timeout: 0.05) else { return }
            for entry in update.removed {
                #expect(replayed.removeValue(forKey: .init(host: entry.hostID, identity: entry.identity)) != nil)
            }
            for entry in update.added {
                let key = SharedLiveQuery.Key(host: entry.hostID, identity: entry.identity)
                #expect(replayed[key] == nil, "added twice: \(String(decoding: entry.pathBytes, as: UTF8.self))")
                replayed[key] = entry.pathBytes
            }
            for entry in update.changed {
                let key = SharedLiveQuery.Key(host: entry.hostID, identity: entry.identity)
                #expect(replayed[key] != nil, "changed before added")
                replayed[key] = entry.pathBytes
            }
        }
        func expectFollowed(_ context: String) throws {
            let expected = try Set(
                freshCrawlBytes(roots: [CrawlRoot(path: FilePath(root))], predicate, hidden: true).filter {
                    visibleToOthers(String(decoding: $0, as: UTF8.self))
                })
            var shown: Set<[UInt8]> = []
            let same = try waitUntil(timeout: 30, interval: 0.01) {
                try follow()
                shown = Set(live.results.values.map(\.pathBytes))
                return shown == expected
            }
            #expect(
                same,
                "seed \(seed), \(context): extra \(shown.subtracting(expected).map { String(decoding: $0, as: UTF8.self) }.prefix(3)), missing \(expected.subtracting(shown).map { String(decoding: $0, as: UTF8.self) }.prefix(3))"
            )
            #expect(Set(replayed.values) == shown, "seed \(seed), \(context): the updates replay to the results")
        }
        var random = SeededGenerator(seed: seed)
        for round in 0..<4 {
            storm.run(operations: 60)
            // A folder closed to others, or opened again.
            if let folder = try? FileManager.default.contentsOfDirectory(atPath: root).filter({
                var status = stat()
                return lstat(root + "/" + $0, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
            }).randomElement(using: &random) {
                chmod(root + "/" + folder, round % 2 == 0 ? 0o700 : 0o755)
            }
            try expectFollowed("round \(round)")
        }
        #expect(live.searchedAgain == 0, "seed \(seed): followed by changes alone")
        // Away longer than tombstones are kept (a publisher that keeps
        // them a fifth of a second): removals it did not read are gone,
        // so it searches the host again, once.
        published.publisher.stop()
        storm.run(operations: 60)
        var brief = SharedPublisherTests.configuration(url)
        brief.tombstoneLifetime = 0.2
        let purging = SharedPublisher(configuration: brief, engine: published.tree.engine)
        purging.start()
        defer { purging.stop() }
        try SharedPublisherTests.expectPublished(root, url, "seed \(seed), after the storm")
        let connection = try PostgresConnection(url: url)
        func sequence(_ column: String) -> Int64 {
            (try? connection.execute("SELECT \(column) FROM mdq.host").first(column)).flatMap { $0.flatMap(Int64.init) }
                ?? 0
        }
        let last = sequence("last_seq")
        #expect(waitUntil(timeout: 20) { sequence("purged_seq") >= last }, "the publisher purged its tombstones")
        try expectFollowed("after the purge")
        #expect(live.searchedAgain == 1, "seed \(seed): searched again once the tombstones it needed were gone")
    }

    /// Counts and searches with a limit over several hosts (schema 4:
    /// counts without a folder per entry, a limited search asking each
    /// host apart) agree with the matches each host's crawl finds, as each
    /// user may see them, through storms with folders closed to others and
    /// removed (tombstones).
    @Test(arguments: [UInt64(91), 92])
    func countsAndLimitedSearchesAcrossHostsAgreeWithTheMatches(seed: UInt64) throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        var random = SeededGenerator(seed: seed)
        var hosts: [(name: String, root: String, storm: Storm, tree: IndexedTree, publisher: SharedPublisher)] = []
        for (k, name) in ["alpha", "beta", "gamma"].enumerated() {
            let root = try temp.folder(name).string
            var storm = Storm(
                scope: root, outside: try temp.folder(name + "-outside").string, seed: seed * 10 + UInt64(k))
            storm.run(operations: 150)
            let tree = try IndexedTree(root)
            let publisher = SharedPublisher(
                configuration: SharedPublisherTests.configuration(url, host: name, machine: "machine-\(name)"),
                engine: tree.engine)
            publisher.start()
            hosts.append((name, root, storm, tree, publisher))
        }
        defer {
            for host in hosts {
                host.publisher.stop()
                host.tree.close()
            }
        }
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        let predicates = try [
            "kMDItemFSName LIKE[cd] '*.txt'", "kMDItemFSName LIKE[c] '*.TXT'", "kMDItemFSSize > 20",
            "kMDItemFSName LIKE[cd] '*.txt' OR kMDItemFSSize > 40",
            // The owner, group and mode of each entry's access class
            // (the storm chmods and chowns).
            "kMDItemFSName LIKE[cd] '*.txt' AND kMDItemFSOwnerUserID == 65534",
            "kMDItemFSSize > 20 AND kMDQItemFSPOSIXPermissions == 420",
            "kMDItemFSName LIKE[cd] '*' AND kMDItemFSOwnerGroupID IN {0, 65534}",
            "kMDItemFSName LIKE[cd] '*.txt' AND NOT kMDItemFSOwnerUserID == 0",
            "kMDItemFSSize > 20 OR kMDQItemFSPOSIXPermissions < 448",
        ].map { try MetadataPredicate($0) }
        func check(_ context: String) throws {
            // Quiet: every host's rows are its crawl's.
            for host in hosts {
                let crawled = try SharedPublisherTests.crawled(host.root)
                #expect(
                    waitUntil(timeout: 30, interval: 0.02) {
                        (try? SharedPublisherTests.shared(url, host: host.name)) == crawled
                    }, "seed \(seed), \(context): \(host.name) published")
            }
            for predicate in predicates {
                let expected = try hosts.flatMap { host in
                    try freshCrawlBytes(roots: [CrawlRoot(path: FilePath(host.root))], predicate, hidden: true)
                        .map { (host.name, String(decoding: $0, as: UTF8.self)) }
                }
                for user in [nil, "stranger", "root"] as [String?] {
                    let seen = Set(
                        expected.filter { user == nil || visibleToOthers($0.1) }.map { "\($0.0):\($0.1)" })
                    var search = SharedReader.Search(predicate: predicate)
                    search.user = user
                    search.budget = 30
                    var found: Set<String> = []
                    try reader.search(search) { entry in
                        found.insert("\(entry.host):\(String(decoding: entry.pathBytes, as: UTF8.self))")
                        return true
                    }
                    let what = "seed \(seed), \(context), \(predicate), \(user ?? "everyone")"
                    #expect(
                        found == seen,
                        "\(what): extra \(found.subtracting(seen).prefix(3)), missing \(seen.subtracting(found).prefix(3))"
                    )
                    #expect(try reader.count(search) == seen.count, "\(what): counted")
                    // Host after host (at most 2,000), or each host's first rows at once.
                    for limit in [1, 3, 1000, 2001] {
                        search.limit = limit
                        var first: Set<String> = []
                        try reader.search(search) { entry in
                            first.insert("\(entry.host):\(String(decoding: entry.pathBytes, as: UTF8.self))")
                            return true
                        }
                        #expect(first.count == min(limit, seen.count), "\(what): the first \(limit)")
                        #expect(first.isSubset(of: seen), "\(what): the first \(limit) match")
                        #expect(try reader.count(search) == min(limit, seen.count), "\(what): counted to \(limit)")
                    }
                    // Sorted by a size or a date: each host's first in that
                    // order, ties with the last included, hold the first of
                    // all the matches (sorted as mdq sorts, then cut).
                    search.limit = nil
                    var every: [SharedEntry] = []
                    try reader.search(search) { entry in
                        every.append(entry)
                        return true
                    }
                    func firsts(_ entries: [SharedEntry], _ descriptor: MetadataSortDescriptor, _ limit: Int)
                        -> [String]
                    {
                        // In the order results are printed before a sort.
                        let items = entries.sorted {
                            $0.host != $1.host
                                ? $0.host < $1.host : $0.pathBytes.lexicographicallyPrecedes($1.pathBytes)
                        }.map { MetadataItem(serial: 0, pathBytes: $0.pathBytes, kind: $0.kind, metadata: $0.metadata) }
                        return items.sorted(by: [descriptor]).prefix(limit).map {
                            String(decoding: $0.pathBytes, as: UTF8.self)
                        }
                    }
                    for (key, column) in [
                        ("kMDItemFSSize", SQLCondition.Column.size), ("kMDItemFSContentChangeDate", .mtime),
                        ("kMDItemFSCreationDate", .btime),
                    ] {
                        for ascending in [true, false] {
                            for limit in [1, 3] {
                                var ordered = search
                                ordered.limit = limit
                                ordered.order = (column, ascending)
                                var first: [SharedEntry] = []
                                try reader.search(ordered) { entry in
                                    first.append(entry)
                                    return true
                                }
                                let descriptor = MetadataSortDescriptor(key: key, ascending: ascending)
                                #expect(
                                    firsts(first, descriptor, limit) == firsts(every, descriptor, limit),
                                    "\(what): the first \(limit) by \(key) \(ascending ? "ascending" : "descending")")
                            }
                        }
                    }
                    // One host asked, with a limit.
                    search.hosts = ["beta"]
                    search.limit = 2
                    var beta: Set<String> = []
                    try reader.search(search) { entry in
                        beta.insert("\(entry.host):\(String(decoding: entry.pathBytes, as: UTF8.self))")
                        return true
                    }
                    let betas = seen.filter { $0.hasPrefix("beta:") }
                    #expect(beta.count == min(2, betas.count) && beta.isSubset(of: betas), "\(what): beta's first 2")
                }
            }
        }
        try check("first publish")
        for round in 0..<3 {
            for k in hosts.indices {
                hosts[k].storm.run(operations: 80)
                // A folder closed to others, or opened again.
                let root = hosts[k].root
                if let folder = try? FileManager.default.contentsOfDirectory(atPath: root).filter({
                    var status = stat()
                    return lstat(root + "/" + $0, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
                }).randomElement(using: &random) {
                    chmod(root + "/" + folder, Bool.random(using: &random) ? 0o700 : 0o755)
                }
            }
            try check("round \(round)")
        }
    }

    /// Whether "other" may reach `path`: read and search on every folder
    /// above it, from `/`.
    func visibleToOthers(_ path: String) -> Bool {
        var folder = FilePath(path)
        while folder.removeLastComponent(), !folder.isEmpty {
            var status = stat()
            guard stat(folder.string, &status) == 0 else { return false }
            if status.st_mode & 0o005 != 0o005 { return false }
            if folder.string == "/" { break }
        }
        return true
    }

    /// A host published by a role of its own (`grant --publish`) is
    /// published whole, reloads included, through storms; the role can
    /// write nothing of another host (its partitions, its row, its
    /// classes, its users, its reloads), cannot register a second host or
    /// take another's identity domain, and cannot remove hosts.
    @Test func aPublishingRoleWritesItsOwnHostAndNothingElse() throws {
        let url = try sharedIndex()
        try cluster.createRole("host_alpha")
        let admin = try PostgresConnection(url: url)
        try SharedSchema.grant(admin, role: "host_alpha", access: .publish)
        var trees: [(root: String, tree: IndexedTree, storm: Storm)] = []
        var kept: [Any] = []
        for name in ["alpha", "beta"] {
            let temp = try TemporaryDirectory()
            let root = try temp.folder("tree").string
            var storm = Storm(scope: root, outside: try temp.folder("outside").string, seed: 91)
            storm.run(operations: 80)
            let tree = try IndexedTree(root)
            // alpha by its own role, beta by the schema's owner.
            let publisher = SharedPublisher(
                configuration: SharedPublisherTests.configuration(
                    name == "alpha" ? cluster.url(url, user: "host_alpha") : url, host: name, machine: "machine-\(name)"
                ),
                engine: tree.engine)
            publisher.start()
            kept += [temp, publisher]
            trees.append((root, tree, storm))
        }
        defer {
            for case let publisher as SharedPublisher in kept { publisher.stop() }
            for tree in trees { tree.tree.close() }
        }
        func expectPublished(_ index: Int, _ context: String) throws {
            let (root, _, _) = trees[index]
            let name = index == 0 ? "alpha" : "beta"
            let crawled = try SharedPublisherTests.crawled(root)
            var shared: Set<SharedPublisherTests.Row> = []
            let same = waitUntil(timeout: 30, interval: 0.02) {
                shared = (try? SharedPublisherTests.shared(url, host: name)) ?? []
                return shared == crawled
            }
            #expect(same, "\(name), \(context): \(crawled.count) crawled, \(shared.count) shared")
        }
        try expectPublished(0, "first publish")
        try expectPublished(1, "first publish")
        trees[0].storm.run(operations: 80)
        try expectPublished(0, "after a storm")
        let hosts = try admin.execute("SELECT name, host_id, publisher_role, domain FROM mdq.host ORDER BY name").rows
        #expect(hosts.map { $0[2] } == ["host_alpha", nil], "alpha is host_alpha's, beta the owner's")
        let beta = try #require(hosts.last?[1])
        let betaState = try admin.execute("SELECT last_seq, generation FROM mdq.host WHERE name = 'beta'").rows
        let betaUsers = try admin.execute("SELECT count(*) AS n FROM mdq.identity WHERE domain = 'beta'").first("n")
        let alpha = try PostgresConnection(url: cluster.url(url, user: "host_alpha"))
        for statement in [
            "UPDATE mdq.entry_\(beta) SET size = 0", "DELETE FROM mdq.folder_\(beta)",
            "INSERT INTO mdq.access_class (host_id, class_id, mode, owner, \"group\") VALUES (\(beta), 999, 511, 0, 0)",
            "INSERT INTO mdq.list_rule (host_id, list_class, access_class, need) VALUES (\(beta), 999, 1, 5)",
            "INSERT INTO mdq.identity (domain, user_name, uid, gids) VALUES ('beta', 'mallory', 0, '{}')",
            "UPDATE mdq.host SET name = 'gamma' WHERE name = 'alpha'",
            "UPDATE mdq.host SET publisher_role = 'host_alpha' WHERE name = 'beta'",
            "SELECT mdq.reload_begin(\(beta)::smallint)",
            "SELECT mdq.reload_swap(\(beta)::smallint, 0, NULL, 0, 0)",
            "SELECT mdq.remove_host('beta')",
            "SELECT mdq.add_host('gamma', 'machine-gamma', 'beta')",
        ] {
            #expect(throws: SharedIndexError.self, "\(statement)") { try alpha.execute(statement) }
        }
        // It reads its own host's rows, no other's.
        for table in ["mdq.entry", "mdq.folder", "mdq.entry_\(beta)", "mdq.folder_\(beta)"] {
            #expect(throws: SharedIndexError.self, "\(table)") { try alpha.execute("SELECT count(*) FROM \(table)") }
        }
        for (table, key) in [("access_class", "host_id"), ("list_rule", "host_id")] {
            #expect(
                try alpha.execute("SELECT count(*) AS n FROM mdq.\(table) WHERE \(key) = \(beta)").first("n") == "0")
        }
        #expect(try alpha.execute("SELECT count(*) AS n FROM mdq.identity WHERE domain = 'beta'").first("n") == "0")
        #expect(try alpha.execute("SELECT count(*) AS n FROM mdq.identity WHERE domain = 'alpha'").first("n") != "0")
        // What row-level security leaves out is not an error: nothing.
        _ = try alpha.execute("UPDATE mdq.host SET last_seq = 0, state = 'offline' WHERE name = 'beta'")
        _ = try alpha.execute("DELETE FROM mdq.identity WHERE domain = 'beta'")
        #expect(try admin.execute("SELECT last_seq, generation FROM mdq.host WHERE name = 'beta'").rows == betaState)
        #expect(
            try admin.execute("SELECT count(*) AS n FROM mdq.identity WHERE domain = 'beta'").first("n") == betaUsers)
        try expectPublished(1, "after host_alpha's attempts")
        #expect(try admin.execute("SELECT count(*) AS n FROM mdq.host").first("n") == "2")
        // Its domain is its own: the owner adds no host into it.
        #expect(throws: SharedIndexError.self) {
            try admin.execute("SELECT mdq.add_host('delta', 'machine-delta', 'alpha')")
        }
        // A name a role registered first is that role's: the owner's
        // publisher of a machine claiming it is refused, and writes nothing.
        try cluster.createRole("host_gamma")
        try SharedSchema.grant(admin, role: "host_gamma", access: .publish)
        _ = try PostgresConnection(url: cluster.url(url, user: "host_gamma")).execute(
            "SELECT mdq.add_host('gamma', 'machine-gamma')")
        let claimant = SharedPublisher(
            configuration: SharedPublisherTests.configuration(url, host: "gamma", machine: "machine-gamma"),
            engine: trees[1].tree.engine)
        claimant.start()
        defer { claimant.stop() }
        #expect(
            waitUntil(timeout: 10) {
                claimant.status.withLock { $0.lastError?.contains("published by the database role host_gamma") == true }
            }, "\(claimant.status.withLock { $0 })")
        #expect(
            try admin.execute(
                "SELECT count(*) AS n FROM mdq.entry WHERE host_id = (SELECT host_id FROM mdq.host WHERE name = 'gamma')"
            ).first("n") == "0")
        // Revoked, then granted again: it publishes again.
        for case let publisher as SharedPublisher in kept { publisher.stop() }
        try SharedSchema.revoke(admin, role: "host_alpha")
        try SharedSchema.grant(admin, role: "host_alpha", access: .publish)
        let again = SharedPublisher(
            configuration: SharedPublisherTests.configuration(
                cluster.url(url, user: "host_alpha"), host: "alpha", machine: "machine-alpha"),
            engine: trees[0].tree.engine)
        again.start()
        defer { again.stop() }
        trees[0].storm.run(operations: 40)
        try expectPublished(0, "granted again")
    }

    /// A live query judges its results again when the users of a host
    /// change (a user's number or groups, as the host's publisher writes
    /// them), and takes in a host registered after it started.
    @Test func aLiveQueryFollowsUsersAndNewHosts() throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let root = try temp.folder("tree").string
        mkdir(root + "/open", 0o755)
        mkdir(root + "/closed", 0o700)
        #expect(chown(root + "/closed", 41234, 41234) == 0)
        close(open(root + "/open/a.txt", O_WRONLY | O_CREAT, 0o644))
        close(open(root + "/closed/b.txt", O_WRONLY | O_CREAT, 0o644))
        let tree = try IndexedTree(root)
        defer { tree.close() }
        let configuration = SharedPublisherTests.configuration(url)
        var publisher = SharedPublisher(configuration: configuration, engine: tree.engine)
        publisher.start()
        try SharedPublisherTests.expectPublished(root, url, "first publish")
        // "keeper" owns the closed folder, for now (the publisher removes
        // a name its host does not have when it next writes its users).
        let admin = try PostgresConnection(url: url)
        _ = try admin.execute("INSERT INTO mdq.identity VALUES ('alpha', 'keeper', 41234, '{41234}')")
        var search = SharedReader.Search(predicate: try MetadataPredicate("kMDItemFSName LIKE '*.txt'"))
        search.user = "keeper"
        let live = try SharedLiveQuery(reader: SharedReader(connection: PostgresConnection(url: url)), search: search)
        func names() -> Set<String> {
            Set(
                live.results.values.map {
                    String(decoding: $0.pathBytes.split(separator: UInt8(ascii: "/")).last!, as: UTF8.self)
                })
        }
        _ = try live.gather()
        #expect(names() == ["a.txt", "b.txt"])
        // The publisher starts again and writes the host's users: keeper
        // is gone, a stranger now.
        publisher.stop()
        publisher = SharedPublisher(configuration: configuration, engine: tree.engine)
        publisher.start()
        defer { publisher.stop() }
        #expect(
            try waitUntil(timeout: 20) {
                _ = try live.next(timeout: 0.05)
                return names() == ["a.txt"]
            }, "\(names())")
        // A second host, registered after the query started.
        let other = try temp.folder("other").string
        close(open(other + "/c.txt", O_WRONLY | O_CREAT, 0o644))
        let second = try IndexedTree(other)
        defer { second.close() }
        let beta = SharedPublisher(
            configuration: SharedPublisherTests.configuration(url, host: "beta", machine: "machine-beta"),
            engine: second.engine)
        beta.start()
        defer { beta.stop() }
        #expect(
            try waitUntil(timeout: 20) {
                _ = try live.next(timeout: 0.05)
                return names() == ["a.txt", "c.txt"]
            }, "\(names())")
        // Offline (its publisher gone, silent an hour), then removed: its
        // results go, and so does its problem.
        beta.stop()
        _ = try admin.execute(
            "UPDATE mdq.host SET state = 'offline', last_contact = now() - interval '1 hour' WHERE name = 'beta'")
        #expect(
            try waitUntil(timeout: 20) {
                _ = try live.next(timeout: 0.05)
                return live.offline["beta"] != nil
            }, "\(live.offline)")
        #expect(names() == ["a.txt", "c.txt"], "an offline host's results stay")
        _ = try admin.execute("SELECT mdq.remove_host('beta')")
        #expect(
            try waitUntil(timeout: 20) {
                _ = try live.next(timeout: 0.05)
                return names() == ["a.txt"] && live.offline.isEmpty
            }, "\(names()) \(live.offline)")
    }

    /// Version 3 only adds: every column of version 2 is there with its
    /// type, and publishers of version 2 may go on (its minimum publisher
    /// stays 2), while readers must know version 3.
    @Test func theMigrationToVersion3KeepsWhatVersion2PublishersWrite() throws {
        let url = cluster.url(try cluster.createDatabase())
        let connection = try PostgresConnection(url: url)
        try SharedSchema.migrate(connection, upTo: 2)
        func columns() throws -> [[String?]] {
            try connection.execute(
                """
                SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
                WHERE table_schema = 'mdq' AND table_name NOT LIKE '%\\_%' ORDER BY 1, 2
                """
            ).rows
        }
        _ = try connection.execute("SELECT mdq.add_host('alpha', 'machine-alpha')")
        let before = try columns()
        try SharedSchema.migrate(connection, upTo: 5)
        let after = try columns()
        #expect(
            Set(before.map { $0.map { $0 ?? "" }.joined(separator: " ") }).isSubset(
                of: Set(after.map { $0.map { $0 ?? "" }.joined(separator: " ") })))
        let state = try #require(try SharedSchema.state(of: connection))
        // Version 4's counts need publishers that know it; readers of 3
        // go on.
        #expect(state.version == 5)
        #expect(state.minimumPublisher == 4)
        #expect(state.minimumReader == 3)
    }

    /// The migration to version 6 rewrites the entries in their new
    /// layout: every search, count and change answers as before, for a
    /// trusted reader and a searcher alike; the roles granted before read
    /// and publish as before (registering types through the function
    /// alone), only the schema's owner migrates, and a name that is its
    /// own folding keeps no second copy.
    @Test func theMigrationToVersion6KeepsEveryAnswerAndGrant() throws {
        let url = cluster.url(try cluster.createDatabase())
        let connection = try PostgresConnection(url: url)
        try SharedSchema.migrate(connection, upTo: 5)
        let alpha = try #require(
            try connection.execute("SELECT mdq.add_host('alpha', 'machine-alpha') AS id").first("id"))
        let beta = try #require(try connection.execute("SELECT mdq.add_host('beta', 'machine-beta') AS id").first("id"))
        try cluster.createRole("trusted5")
        try cluster.createRole("publisher5")
        try cluster.createRole("searcher5")
        // What version 5's `mdq shared grant` gave.
        _ = try connection.execute(
            """
            GRANT USAGE ON SCHEMA mdq TO trusted5, publisher5, searcher5;
            GRANT SELECT ON ALL TABLES IN SCHEMA mdq TO trusted5;
            GRANT EXECUTE ON FUNCTION mdq.search(smallint[], jsonb, jsonb, text, bigint),
                mdq.count(smallint[], jsonb, jsonb, text), mdq.changes(smallint, bigint, jsonb, text)
                TO trusted5, searcher5;
            GRANT SELECT ON mdq.host TO publisher5;
            GRANT SELECT, INSERT ON mdq.access_class, mdq.list_rule TO publisher5;
            GRANT SELECT, INSERT, UPDATE, DELETE ON mdq.entry_\(alpha), mdq.folder_\(alpha) TO publisher5;
            UPDATE mdq.host SET publisher_role = 'publisher5' WHERE host_id = \(alpha);
            """)
        // Rows as a publisher of version 5 wrote them, on both hosts: a
        // name that is its own folding, one that is not, one that is not
        // UTF-8, a type mdq does not know, no type, a removed entry.
        for host in [alpha, beta] {
            _ = try connection.execute(
                """
                INSERT INTO mdq.folder (host_id, folder_id, parent_id, path, list_class, seq)
                VALUES (\(host), 1, NULL, '/srv', 0, 1), (\(host), 2, 1, '/srv/Reports', 0, 2);
                INSERT INTO mdq.entry (host_id, entry_id, parent_id, kind, name, raw_name, fold, ext, size, mtime,
                                       btime, content_type, inode, seq, deleted_seq)
                VALUES (\(host), 10, 2, 1, 'q3-report.txt', NULL, 'q3-report.txt', 'txt', 120,
                        '2026-01-02 03:04:05.123456+00', '2025-12-31 00:00:00+00', 'public.plain-text', 77, 3, NULL),
                       (\(host), 11, 2, 1, 'Über Report.PNG', NULL, 'uber report.png', 'png', 4096,
                        '1969-07-20 20:17:40+00', NULL, 'public.png', 78, 4, NULL),
                       (\(host), 12, 1, 1, 'caf\u{FFFD}.odd', '\\x636166e92e6f6464', 'caf\u{FFFD}.odd', 'odd', 1,
                        NULL, NULL, 'com.example.odd', 79, 5, NULL),
                       (\(host), 13, 1, 2, 'Reports', NULL, 'reports', '', NULL, NULL, NULL, NULL, 80, 6, NULL),
                       (\(host), 14, 2, 1, 'old-report.txt', NULL, 'old-report.txt', 'txt', 5, NULL, NULL,
                        'public.plain-text', 81, 7, 8);
                """)
        }
        let hosts = "{\(alpha),\(beta)}"
        let conditions = [
            "true", SQLCondition.like(.fold, "%report%").json,
            #"["in","content_type",["public.png","com.example.odd"]]"#,
            #"["not",["=","content_type","public.plain-text"]]"#, #"["=","ext","txt"]"#,
            #"["and",["like","fold","%rep%"],["number>","size","100"]]"#,
        ]
        func answers(_ user: String?) throws -> [String] {
            let own = try PostgresConnection(url: user.map { cluster.url(url, user: $0) } ?? url)
            var lines: [String] = []
            for condition in conditions {
                try own.transaction { () throws(SharedIndexError) in
                    _ = try own.execute("SELECT mdq.search($1::smallint[], $2::jsonb)", [hosts, condition])
                    // The columns version 5 gave (version 9 adds the access
                    // class's after them, NULL for rows written before).
                    let rows = try own.execute("FETCH ALL FROM mdq_search").rows.map { $0.prefix(12) }
                    lines += rows.map { "\(condition) \($0.map { $0 ?? "NULL" }.joined(separator: "|"))" }.sorted()
                    _ = try own.execute("SELECT mdq.changes($1::smallint, 0)", [alpha])
                    lines += try own.execute("FETCH ALL FROM mdq_changes").rows.map {
                        "changes \($0.prefix(13).map { $0 ?? "NULL" }.joined(separator: "|"))"
                    }.sorted()
                }
                let count = try own.execute("SELECT mdq.count($1::smallint[], $2::jsonb) AS n", [hosts, condition])
                lines.append("\(condition) count \(count.first("n") ?? "?")")
                // The first rows: as many, among the matches.
                try own.transaction { () throws(SharedIndexError) in
                    _ = try own.execute(
                        "SELECT mdq.search($1::smallint[], $2::jsonb, '[]', NULL, 3)", [hosts, condition])
                    let rows = try own.execute("FETCH ALL FROM mdq_search").rows.map { $0.prefix(12) }
                    let all = lines.filter { $0.hasPrefix("\(condition) ") }
                    let found = rows.filter { row in
                        all.contains("\(condition) \(row.map { $0 ?? "NULL" }.joined(separator: "|"))")
                    }
                    lines.append("\(condition) first \(rows.count), \(found.count) among the matches")
                }
            }
            return lines
        }
        let before = try answers(nil)
        let searcherBefore = try answers("searcher5")
        // Only the schema's owner migrates it (what a migration makes is
        // read by the owner's functions).
        #expect(throws: SharedIndexError.self) {
            try SharedSchema.migrate(PostgresConnection(url: cluster.url(url, user: "trusted5")))
        }
        #expect(before.contains { $0.contains("Über Report.PNG") && $0.contains("public.png") })
        #expect(before.contains { $0.contains("com.example.odd") })
        try SharedSchema.migrate(connection)
        let state = try #require(try SharedSchema.state(of: connection))
        // Readers of version 3 go on; version 9's access classes need
        // publishers that know it.
        #expect(state.version == SharedSchema.current && state.minimumPublisher == 9 && state.minimumReader == 3)
        #expect(try answers(nil) == before)
        #expect(try answers("trusted5") == before)
        #expect(try answers("searcher5") == searcherBefore)
        // Whoever could search may check a search's folders (version 7).
        #expect(
            try PostgresConnection(url: cluster.url(url, user: "searcher5")).execute(
                #"SELECT mdq.scope_errors('[[1,"/nowhere"]]')::text AS e"#
            ).first("e") != nil)
        // The walk version 8 keeps behind it is the schema owner's alone:
        // the grant version 7 gave is taken back.
        do {
            _ = try PostgresConnection(url: cluster.url(url, user: "searcher5")).execute(
                #"SELECT mdq.scope_errors_by_walk('[]', NULL)"#)
            Issue.record("a searcher called the walk")
        } catch {
            #expect(error.sqlState == "42501", "\(error)")
        }
        // The old layout is gone; a name that is its own folding keeps none.
        #expect(
            try connection.execute("SELECT count(*) AS n FROM pg_class WHERE relname LIKE 'entry%v5%'").first("n")
                == "0")
        #expect(
            try connection.execute("SELECT count(*) AS n FROM mdq.entry WHERE fold IS NULL").first("n") == "6")
        // The roles granted before: the trusted reads the tables, the
        // publisher writes its host and registers types, not the other's.
        let trusted = try PostgresConnection(url: cluster.url(url, user: "trusted5"))
        #expect(try trusted.execute("SELECT count(*) AS n FROM mdq.entry").first("n") == "10")
        #expect(try trusted.execute("SELECT count(*) AS n FROM mdq.content_type").first("n") != "0")
        let publisher = try PostgresConnection(url: cluster.url(url, user: "publisher5"))
        // Types are registered through the function alone, and only new
        // ones draw a number.
        let registered = try publisher.execute(
            "SELECT type_id FROM mdq.register_types('{com.example.new,public.png}') ORDER BY 1")
        #expect(registered.rows.count == 2)
        let highest = try connection.execute("SELECT max(type_id) AS n FROM mdq.content_type").first("n")
        _ = try publisher.execute("SELECT mdq.register_types('{com.example.new,public.png}')")
        #expect(try connection.execute("SELECT max(type_id) AS n FROM mdq.content_type").first("n") == highest)
        for refused in [
            "INSERT INTO mdq.content_type (identifier) VALUES ('com.example.direct')",
            "SELECT mdq.register_types(ARRAY['bad type; drop'])",
            "SELECT mdq.register_types(ARRAY(SELECT 'x.' || g FROM generate_series(1, 1001) g))",
        ] {
            #expect(throws: SharedIndexError.self, "\(refused)") { try publisher.execute(refused) }
        }
        _ = try publisher.execute(
            """
            INSERT INTO mdq.entry_\(alpha) (host_id, entry_id, parent_id, kind, name, type_id, seq)
            VALUES (\(alpha), 20, 1, 1, 'new.txt',
                    (SELECT type_id FROM mdq.register_types('{com.example.new}')), 9)
            """)
        #expect(throws: SharedIndexError.self) {
            try publisher.execute(
                "INSERT INTO mdq.entry_\(beta) (host_id, entry_id, parent_id, kind, name, seq) VALUES (\(beta), 20, 1, 1, 'x', 9)"
            )
        }
    }

    /// Roles granted under version 4 (the hosts' state column by column)
    /// read the hosts, the lag included, after the migration to 5, and a
    /// publishing role writes its lag.
    @Test func rolesGrantedBeforeVersion5ReadTheLag() throws {
        let url = cluster.url(try cluster.createDatabase())
        let connection = try PostgresConnection(url: url)
        try SharedSchema.migrate(connection, upTo: 4)
        _ = try connection.execute("SELECT mdq.add_host('alpha', 'machine-alpha')")
        try cluster.createRole("reader4")
        try cluster.createRole("publisher4")
        // What version 4's `mdq shared grant` gave.
        _ = try connection.execute(
            """
            GRANT USAGE ON SCHEMA mdq TO reader4, publisher4;
            GRANT SELECT ON mdq.meta TO reader4;
            GRANT SELECT (host_id, name, domain, generation, last_seq, state, entries, folders, last_error,
                          registered, last_contact, purged_seq, identity_seq) ON mdq.host TO reader4;
            GRANT SELECT ON mdq.host TO publisher4;
            GRANT UPDATE (last_seq, clock, state, entries, folders, last_error, last_contact,
                          publisher_version, purged_seq, identity_seq) ON mdq.host TO publisher4;
            UPDATE mdq.host SET publisher_role = 'publisher4'
            """)
        try SharedSchema.migrate(connection)
        let reader = try SharedReader(connection: PostgresConnection(url: cluster.url(url, user: "reader4")))
        #expect(try reader.hosts().map(\.name) == ["alpha"])
        let publisher = try PostgresConnection(url: cluster.url(url, user: "publisher4"))
        // As every publisher holds it while it publishes.
        _ = try publisher.execute("SELECT pg_advisory_lock(\(SharedHost.publisherLock), host_id) FROM mdq.host")
        // A publisher of version 4 writes no lag: not known.
        _ = try publisher.execute("UPDATE mdq.host SET publisher_version = 'mdq schema 4', state = 'live'")
        #expect(try reader.hosts().first?.lag == nil)
        _ = try publisher.execute(
            "UPDATE mdq.host SET publisher_version = 'mdq schema 5', behind_since = now() - interval '5 seconds'")
        let lag = try #require(try reader.hosts().first?.lag)
        #expect(lag >= 5 && lag < 60, "\(lag)")
        _ = try publisher.execute("UPDATE mdq.host SET behind_since = NULL")
        #expect(try reader.hosts().first?.lag == 0)
    }

    /// A host whose publisher is gone is offline whatever it last said:
    /// one that died mid-reload or mid-catch-up is not shown reloading or
    /// catching up for ever, nor a live one as live for a minute. Its
    /// publisher is there while a session of this database holds its lock
    /// (the same keys held in another database are another host's).
    @Test func aHostWhosePublisherIsGoneIsOffline() throws {
        let url = try sharedIndex()
        let admin = try PostgresConnection(url: url)
        _ = try admin.execute("SELECT mdq.add_host('alpha', 'machine-alpha')")
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        // Another database's session holding the same keys.
        let id = try #require(try admin.execute("SELECT host_id FROM mdq.host").first("host_id"))
        let elsewhere = try PostgresConnection(url: cluster.url(try cluster.createDatabase()))
        _ = try elsewhere.execute("SELECT pg_advisory_lock(\(SharedHost.publisherLock), $1::int)", [id])
        func state() throws -> String? { try reader.hosts().first?.state }
        #expect(try state() == "new")
        for said in ["reloading", "catching-up", "live"] {
            // Its last write a while ago (a reload's index builds, an idle
            // publisher's ten seconds).
            _ = try admin.execute(
                "UPDATE mdq.host SET state = $1, last_contact = now() - interval '11 seconds'", [said])
            var publisher: PostgresConnection? = try PostgresConnection(url: url)
            _ = try publisher?.execute("SELECT pg_advisory_lock(\(SharedHost.publisherLock), host_id) FROM mdq.host")
            #expect(try state() == said.replacingOccurrences(of: "-", with: " "), "\(said), its publisher there")
            publisher = nil
            #expect(
                waitUntil(timeout: 20, interval: 0.02) { (try? state()) == "offline" },
                "\(said), its publisher gone: \(String(describing: try? state()))")
            // One that wrote just now is connecting again: not offline yet.
            _ = try admin.execute("UPDATE mdq.host SET last_contact = now()")
            #expect(try state() == said.replacingOccurrences(of: "-", with: " "), "\(said), reconnecting")
        }
        // Silent for longer than a publisher ever is, its session there.
        let publisher = try PostgresConnection(url: url)
        _ = try publisher.execute("SELECT pg_advisory_lock(\(SharedHost.publisherLock), host_id) FROM mdq.host")
        _ = try admin.execute("UPDATE mdq.host SET state = 'live', last_contact = now() - interval '61 seconds'")
        #expect(try state() == "offline")
        _ = try admin.execute("UPDATE mdq.host SET last_contact = now()")
        #expect(try state() == "live")
        withExtendedLifetime(elsewhere) {}
    }

    /// A search across hosts the shared index refuses is refused before
    /// this host's part starts (which would read its whole index for
    /// nothing); a search of this host alone asks no connection anything.
    @Test func aRefusedSearchAcrossHostsLeavesThisHostsIndexAlone() throws {
        let url = try sharedIndex()
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let root = try temp.folder("tree").string
        close(open(root + "/report.txt", O_WRONLY | O_CREAT, 0o644))
        let published = try PublishedTree(root, url: url)
        defer { published.close() }
        let readers = try (0..<2).map { _ in try SharedReader(connection: PostgresConnection(url: url)) }
        let asked = Locked(0)
        let own: HostSearch.OwnAnswer = { _, _, _, _ in
            asked.withLock { $0 += 1 }
            return (1, [])
        }
        var search = HostSearch(predicate: .alwaysTrue, user: "nobody")
        search.ownName = "here"
        #expect(throws: SharedReader.Refusal.self) {
            try search.run(readers: readers, counting: true, own: own, warn: { _ in })
        }
        #expect(asked.withLock { $0 } == 0, "this host searched for a refused search")
        // Bounded, it runs, this host's part too.
        search.limit = 5
        #expect(try search.run(readers: readers, counting: true, own: own, warn: { _ in }).count >= 2)
        #expect(asked.withLock { $0 } == 1)
        // This host alone: its part, nothing else.
        search.hostNames = ["here"]
        search.limit = nil
        #expect(try search.run(readers: readers, counting: true, own: own, warn: { _ in }).count == 1)
        #expect(asked.withLock { $0 } == 2)
    }
}
