import Foundation
import Glibc
import MDQWire
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

extension LiveSuites {
    /// The index daemon in this process, on private folders of a test's own.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct IndexDaemonTests {
        static func paths(_ temp: TemporaryDirectory) -> DaemonPaths {
            DaemonPaths(runtimeDirectory: temp.path.appending("run"), stateDirectory: temp.path.appending("state"))
        }

        static func tree(_ temp: TemporaryDirectory) throws -> FilePath {
            for i in 0..<60 {
                try temp.file(
                    "tree/d\(i % 5)/\(i % 3 == 0 ? "report" : "note")-\(i).\(i % 2 == 0 ? "png" : "txt")",
                    contents: "\(i)")
            }
            try temp.file("tree/.hidden/x.png")
            try temp.file("tree/node_modules/pkg/y.png")
            return temp.path.appending("tree")
        }

        /// A daemon restarted from its snapshot whose check against the disk
        /// waits (`beforeVerifying`) until the returned gate is set; the
        /// caller sets it and stops the daemon.
        static func daemonHoldingItsCheck(_ paths: DaemonPaths) throws -> (IndexDaemon, ConditionLocked<Bool>) {
            let release = ConditionLocked(false)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2) {
                _ = release.wait(until: { $0 }, deadline: .now + .seconds(60)) { _ in }
            }
            return (daemon, release)
        }

        /// A daemon on `temp`'s folders indexing `tree(temp)` with the
        /// default rules; the caller stops it.
        static func indexingDaemon(_ temp: TemporaryDirectory) throws -> (
            daemon: IndexDaemon, tree: FilePath, paths: DaemonPaths
        ) {
            let tree = try Self.tree(temp)
            let paths = Self.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            do {
                _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            } catch {
                daemon.stop()
                throw error
            }
            return (daemon, tree, paths)
        }

        /// A raw request line and the lines of its answer, read until `done`
        /// or an error.
        static func exchange(_ paths: DaemonPaths, _ line: String) throws -> [JSONValue] {
            guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else {
                throw MetadataError.daemon("no daemon")
            }
            _ = withBytes(of: Array(line.utf8)) { socket.write($0) }
            var reader = LineReader(socket: socket, maximum: 1 << 24, timeout: 10_000)
            var answers: [JSONValue] = []
            while case .line(let bytes) = reader.next(idle: 10_000) {
                let value = try JSONValue.parse(bytes)
                answers.append(value)
                if value["error"] != nil || value["done"] != nil
                    || value["count"] == nil && value["paths"] == nil
                        && value["item"] == nil
                {
                    break
                }
            }
            return answers
        }

        @Test func answersEqualACrawl() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.tree(temp)
            let paths = Self.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            let client = try DaemonClient.connect(paths)
            let scope = ScopeRequest(path: tree, rules: ScopeRules(excludedFolderNames: [Array("node_modules".utf8)]))
            #expect(try client.addScope(scope) > 0)
            #expect(try client.indexedScopes().map(\.scope) == [scope])
            for text in ["kMDItemFSName LIKE '*.png'", "kMDItemFSName BEGINSWITH[c] 'REPORT'", "TRUEPREDICATE"] {
                let predicate = try MetadataPredicate(text)
                let crawl = Set(
                    try freshCrawlBytes(
                        roots: [CrawlRoot(path: tree)], predicate, hidden: false
                    ).filter { !$0.starts(with: Array("\(tree.string)/node_modules/".utf8)) })
                // Every scope the daemon indexes (no scopes given), and named.
                for scopes in [nil, [scope]] as [[ScopeRequest]?] {
                    let counted = try client.query(Array(text.utf8), scopes: scopes, output: .count)
                    #expect(counted.count == crawl.count, "\(text)")
                    let listed = try client.query(Array(text.utf8), scopes: scopes, output: .paths)
                    let paths = Set(listed.paths.split(separator: 0).map(Array.init))
                    #expect(paths == crawl, "\(text)")
                    #expect(listed.count == crawl.count)
                }
                let items = try client.query(Array(text.utf8), scopes: [scope], output: .entries)
                let fresh = try freshItems(roots: [CrawlRoot(path: tree)], predicate)
                for entry in items.entries {
                    let expected = try #require(fresh[entry.pathBytes])
                    #expect(entry.metadata == expected.metadata && entry.kind == expected.kind)
                }
                // The first in an order, with a limit: those and their ties,
                // of which a sort keeps what it would of every item.
                let every = items.entries.map { MetadataItem(daemonEntry: $0, container: nil) }
                for key in ["kMDItemFSSize", "kMDItemFSContentChangeDate"] {
                    for ascending in [true, false] {
                        let order = MetadataSortDescriptor(key: key, ascending: ascending)
                        for limit in [1, 3] {
                            let first = try client.query(
                                Array(text.utf8), scopes: [scope], output: .entries, limit: limit, order: order)
                            let kept = first.entries.map { MetadataItem(daemonEntry: $0, container: nil) }
                            #expect(kept.count >= min(limit, every.count), "\(text) by \(key)")
                            func firsts(_ items: [MetadataItem]) -> [[UInt8]] {
                                items.sorted { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) }
                                    .sorted(by: [order]).prefix(limit).map(\.pathBytes)
                            }
                            #expect(firsts(kept) == firsts(every), "\(text) by \(key), the first \(limit)")
                        }
                    }
                }
            }
            // A scope indexed under stricter rules does not cover hidden items.
            let hidden = ScopeRequest(path: tree, rules: ScopeRules(includeHidden: true))
            let refusal = #expect(throws: MetadataError.self) {
                try client.query(Array("TRUEPREDICATE".utf8), scopes: [hidden], output: .count)
            }
            #expect(refusal?.refusal == .notCovered(gap: refusal?.message.dropFirst("not indexed: ".count).description))
            #expect(refusal?.message.contains("without hidden items") == true, "\(String(describing: refusal))")
            // A syntax error comes back with its position.
            let syntax = #expect(throws: MetadataError.self) {
                try client.query(Array("kMDItemFSName LIKE".utf8), scopes: nil, output: .count)
            }
            #expect(syntax?.code == .querySyntax && syntax?.offset != nil)
        }

        /// `index.add` with `"wait":"names"` answers once names are in:
        /// names answer, a query on sizes is refused with the reason (the
        /// front crawls), `status` says `filling`; once filled, the same
        /// query answers what a crawl finds. Without it, `index.add`
        /// answers once everything is read.
        @Test func aScopeAddedNamesFirstAnswersNamesThenTheRest() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.tree(temp)
            let paths = Self.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            let release = daemon.engine.holdFills()
            defer { release.mutateAndBroadcast { $0 = true } }
            let client = try DaemonClient.connect(paths)
            let scope = ScopeRequest(path: tree, rules: ScopeRules())
            let added = try client.addScope(scope, namesFirst: true)
            #expect(added.filling)
            #expect(try client.status().filling)
            let names = try MetadataPredicate("kMDItemFSName LIKE '*.png'")
            let listed = try client.query(Array("kMDItemFSName LIKE '*.png'".utf8), scopes: [scope], output: .paths)
            #expect(
                Set(listed.paths.split(separator: 0).map(Array.init))
                    == (try freshCrawlBytes(roots: [CrawlRoot(path: tree)], names)))
            try Self.expectSizesDeclinedUntilRead(client, scope, release: release) { try !$0.filling }

            // Waiting for everything (the default): answered filled.
            let other = try temp.folder("other")
            try temp.file("other/a.txt", contents: "abc")
            daemon.engine.fillHook.withLock { $0 = { usleep(50_000) } }
            let whole = try client.addScope(ScopeRequest(path: other, rules: ScopeRules()), namesFirst: false)
            #expect(!whole.filling)
            #expect(
                try client.query(
                    Array("kMDItemFSSize >= 2".utf8), scopes: [ScopeRequest(path: other, rules: ScopeRules())],
                    output: .count
                )
                .count == 1)
        }

        /// A daemon stopped while a names-first fill ran saves files whose
        /// sizes and dates were never read. Restarted from that snapshot,
        /// it answers names at once (stale), declines a query on sizes
        /// with the reason until its check against the disk has read
        /// them, then answers it as a crawl does: never from attributes
        /// it does not have.
        @Test func aSnapshotSavedDuringTheFillNeverAnswersSizesItLacks() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.tree(temp)
            let paths = Self.paths(temp)
            let scope = ScopeRequest(path: tree, rules: ScopeRules())
            do {
                let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
                let release = daemon.engine.holdFills()
                #expect(try DaemonClient.connect(paths).addScope(scope, namesFirst: true).filling)
                daemon.stop()
                release.mutateAndBroadcast { $0 = true }
            }
            let (daemon, release) = try Self.daemonHoldingItsCheck(paths)
            defer {
                release.mutateAndBroadcast { $0 = true }
                daemon.stop()
            }
            let client = try DaemonClient.connect(paths)
            let names = try client.query(Array("kMDItemFSName LIKE '*.png'".utf8), scopes: [scope], output: .count)
            #expect(names.stale)
            #expect(
                names.count
                    == (try freshCrawlBytes(
                        roots: [CrawlRoot(path: tree)], try MetadataPredicate("kMDItemFSName LIKE '*.png'")
                    ).count))
            try Self.expectSizesDeclinedUntilRead(client, scope, release: release) { try !$0.verifying }
        }

        /// A size query on `scope` is declined with the reason while its
        /// files' sizes are unread; once `release` lets them be read and
        /// the daemon's status says `read`, it answers what a crawl finds.
        static func expectSizesDeclinedUntilRead(
            _ client: DaemonClient, _ scope: ScopeRequest, release: ConditionLocked<Bool>,
            read: (DaemonStatus) throws -> Bool
        ) throws {
            let sized = "kMDItemFSSize >= 2"
            let refusal = #expect(throws: MetadataError.self) {
                try client.query(Array(sized.utf8), scopes: [scope], output: .count)
            }
            #expect(refusal?.refusal == .notCovered(gap: ScopeNotCovered.stillFilling + scope.path.string))
            release.mutateAndBroadcast { $0 = true }
            #expect(try waitUntil(timeout: 20) { try read(client.status()) })
            let counted = try client.query(Array(sized.utf8), scopes: [scope], output: .count)
            #expect(
                counted.count
                    == (try freshCrawlBytes(roots: [CrawlRoot(path: scope.path)], try MetadataPredicate(sized)).count))
        }

        @Test func badRequestsGetAnErrorAndCostNothingElse() throws {
            let temp = try TemporaryDirectory()
            let paths = Self.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            for (line, code) in [
                ("not json\n", "bad-request"), ("{\"id\":1}\n", "bad-request"),
                ("{\"id\":2,\"command\":\"fly\"}\n", "unknown-command"),
                ("{\"id\":3,\"command\":\"query\"}\n", "bad-request"),
                (
                    "{\"id\":4,\"command\":\"query\",\"predicate\":\"TRUEPREDICATE\",\"scopes\":[{\"path\":\"relative\"}]}\n",
                    "bad-request"
                ),
                ("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n", "bad-request"),
            ] {
                let answers = try Self.exchange(paths, line)
                #expect(answers.first?["error"]?["code"]?.string == code, "\(line)")
            }
            // Too large: refused once it passes the bound.
            let huge = String(repeating: "x", count: DaemonProtocol.maximumRequest + 10)
            #expect(try Self.exchange(paths, huge).first?["error"]?["code"]?.string == "too-large")
            // The daemon still answers.
            let client = try DaemonClient.connect(paths)
            #expect(try client.hello().protocolVersion == DaemonProtocol.version)
        }

        @Test func aHalfSentRequestTimesOutAlone() throws {
            let temp = try TemporaryDirectory()
            let paths = Self.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2, requestTimeout: 0.5)
            defer { daemon.stop() }
            guard case .success(let stalled) = UnixSocket.connect(to: paths.socket) else {
                Issue.record("no connection")
                return
            }
            _ = withBytes(of: Array("{\"id\":1,\"comm".utf8)) { stalled.write($0) }
            // Others are served meanwhile.
            #expect(try DaemonClient.connect(paths).hello().pid == Int(getpid()))
            var reader = LineReader(socket: stalled, maximum: 1 << 20, timeout: 30_000)
            guard case .line(let line) = reader.next(idle: 30_000) else {
                Issue.record("no answer to a half-sent request")
                return
            }
            #expect(try JSONValue.parse(line)["error"]?["code"]?.string == "timeout")
        }

        @Test func oneDaemonPerUserAndStaleSocketsAreRecovered() throws {
            let temp = try TemporaryDirectory()
            let paths = Self.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            let second = #expect(throws: MetadataError.self) { try IndexDaemon.start(paths: paths) }
            #expect(second?.message.contains("already running") == true)
            daemon.stop()
            // A socket file left behind (a crashed daemon) is replaced.
            #expect(close(open(paths.socket.string, O_CREAT | O_WRONLY, 0o600)) == 0)
            let again = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { again.stop() }
            #expect(try DaemonClient.connect(paths).hello().protocolVersion == 2)
            // Private folders.
            var info = stat()
            #expect(stat(paths.runtimeDirectory.string, &info) == 0 && info.st_mode & 0o077 == 0)
            #expect(stat(paths.socket.string, &info) == 0 && info.st_mode & 0o077 == 0)
        }

        /// A restart answers at once from the snapshot (flagged stale), then
        /// catches up with what changed while it was down.
        @Test func restartResumesScopesFromTheSnapshot() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.tree(temp)
            let paths = Self.paths(temp)
            let scope = ScopeRequest(path: tree, rules: ScopeRules())
            do {
                let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
                _ = try DaemonClient.connect(paths).addScope(scope)
                daemon.stop()
            }
            var info = stat()
            #expect(stat(paths.snapshot.string, &info) == 0 && info.st_mode & 0o077 == 0, "a private snapshot")
            #expect(unlink("\(tree.string)/d0/report-0.png") == 0)
            try temp.file("tree/d1/report-new.png")
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            let client = try DaemonClient.connect(paths)
            let expected = try freshCrawlBytes(
                roots: [CrawlRoot(path: tree)], try MetadataPredicate("kMDItemFSName LIKE '*.png'"))
            let deadline = Date(timeIntervalSinceNow: 20)
            var answer = try client.query(Array("kMDItemFSName LIKE '*.png'".utf8), scopes: nil, output: .paths)
            while Set(answer.paths.split(separator: 0).map(Array.init)) != expected || answer.stale {
                guard Date() < deadline else { break }
                usleep(10_000)
                answer = try client.query(Array("kMDItemFSName LIKE '*.png'".utf8), scopes: nil, output: .paths)
            }
            #expect(Set(answer.paths.split(separator: 0).map(Array.init)) == expected)
            #expect(!answer.stale)
            #expect(try client.status().watches > 0)
        }

        /// While a restart's check against the disk is held back, every
        /// query answers at once from the snapshot, flagged stale, through
        /// the name trigrams the snapshot kept (none rebuilt); once checked,
        /// the answers are the disk's and no longer stale.
        @Test func queriesDuringTheCheckAnswerFromTheSnapshot() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.tree(temp)
            let paths = Self.paths(temp)
            let queries = [
                "kMDItemFSName LIKE '*.png'", "kMDItemFSName LIKE[c] 'REPORT*'", "kMDItemFSSize >= 2",
                "kMDItemFSName == 'note-1.txt'",
            ]
            func answers(_ client: DaemonClient) throws -> [(paths: Set<[UInt8]>, stale: Bool)] {
                try queries.map { query in
                    let answer = try client.query(Array(query.utf8), scopes: nil, output: .paths)
                    return (Set(answer.paths.split(separator: 0).map(Array.init)), answer.stale)
                }
            }
            let saved: [Set<[UInt8]>]
            do {
                let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
                let client = try DaemonClient.connect(paths)
                _ = try client.addScope(ScopeRequest(path: tree, rules: ScopeRules()))
                #expect(try waitUntil(timeout: 20) { try client.status().nameGrams?.complete == true })
                saved = try answers(client).map(\.paths)
                daemon.stop()
            }
            #expect(unlink("\(tree.string)/d0/report-0.png") == 0)
            try temp.file("tree/d1/report-new.png", contents: "new")
            let (daemon, release) = try Self.daemonHoldingItsCheck(paths)
            defer {
                release.mutateAndBroadcast { $0 = true }
                daemon.stop()
            }
            let client = try DaemonClient.connect(paths)
            let status = try client.status()
            #expect(status.verifying)
            #expect(status.nameGrams?.complete == true, "the snapshot's trigrams, not rebuilt")
            let held = try answers(client)
            #expect(held.map(\.paths) == saved, "the snapshot's answers")
            #expect(held.allSatisfy { $0.stale })
            release.mutateAndBroadcast { $0 = true }
            #expect(try waitUntil(timeout: 20) { try !client.status().verifying })
            for (query, answer) in zip(queries, try answers(client)) {
                let expected = try freshCrawlBytes(roots: [CrawlRoot(path: tree)], try MetadataPredicate(query))
                #expect(answer.paths == expected, "\(query)")
                #expect(!answer.stale, "\(query)")
            }
        }

        @Test func aDamagedSnapshotIsDiscardedWithOneWarning() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.tree(temp)
            let paths = Self.paths(temp)
            do {
                let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
                _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
                daemon.stop()
            }
            // Cut in half, as a crash mid-copy would leave a file.
            var bytes = try readWholeFile(paths.snapshot)
            bytes.removeLast(bytes.count / 2)
            #expect(truncate(paths.snapshot.string, off_t(bytes.count)) == 0)
            let lines = Locked<[String]>([])
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2) { line in
                lines.withLock { $0.append(line) }
            }
            defer { daemon.stop() }
            let client = try DaemonClient.connect(paths)
            let deadline = Date(timeIntervalSinceNow: 20)
            while (try? client.query(Array("TRUEPREDICATE".utf8), scopes: nil, output: .count).count) ?? 0 == 0
                && Date() < deadline
            {
                usleep(10_000)
            }
            let warnings = lines.withLock { $0.filter { $0.contains("snapshot discarded") } }
            #expect(warnings.count == 1, "\(lines.withLock { $0 })")
            let count = try client.query(Array("TRUEPREDICATE".utf8), scopes: nil, output: .count).count
            #expect(count == (try freshCrawlBytes(roots: [CrawlRoot(path: tree)], .alwaysTrue).count))
        }

        /// A MetadataQuery served by the daemon: the same notifications, the
        /// updates replay to the disk through a storm, and the process holds
        /// no watch of its own.
        @Test func aQueryServedByTheDaemonFollowsAStorm() throws {
            let temp = try TemporaryDirectory()
            let outside = try temp.folder("outside")
            let (daemon, tree, paths) = try Self.indexingDaemon(temp)
            defer { daemon.stop() }
            let query = MetadataQuery(source: .daemon(paths))
            query.predicate = try MetadataPredicate("kMDItemFSName LIKE '*.txt' OR kMDItemFSSize > 20")
            query.searchScopes = [.directory(tree)]
            query.includesHiddenItems = false
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            let initial = recorder.initialResults
            #expect(!initial.isEmpty)
            var storm = Storm(scope: tree.string, outside: outside.string, seed: 9)
            storm.run(operations: 1500)
            var differences: [String] = []
            let converged = recorder.wait(timeout: 30) {
                guard let fresh = try? freshItems(roots: [CrawlRoot(path: tree)], query.predicate!) else {
                    return false
                }
                differences = attributeDifferences(query.results, fresh)
                return differences.isEmpty
            }
            #expect(converged, "\(differences.prefix(5))")
            query.deliveryQueue.sync {}
            let (problems, _) = replay(recorder.deliveredUpdates, on: initial)
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            #expect(query.errors.isEmpty)
            query.stop()
        }

        /// Name searches answered from the trigram lists give what a crawl
        /// gives, through a storm of creates, renames and removals (the
        /// lists kept live, stale postings and reused slots included).
        @Test func trigramAnswersFollowAStorm() throws {
            let temp = try TemporaryDirectory()
            let outside = try temp.folder("outside")
            // Enough other names that the searches below are selective.
            for i in 0..<3000 { try temp.file("tree/filler/f\(i / 300)/filler-\(i).dat") }
            let (daemon, tree, paths) = try Self.indexingDaemon(temp)
            defer { daemon.stop() }
            #expect(waitUntil(timeout: 30) { daemon.engine.nameGramStatus?.complete == true })
            let client = try DaemonClient.connect(paths)
            let texts = [
                "kMDItemFSName CONTAINS[cd] 'report'", "kMDItemFSName LIKE[c] '*CAF*'",
                "kMDItemFSName ENDSWITH '.png'", "kMDItemDisplayName ==[cd] 'cafe'",
                "kMDItemFSName LIKE 'report*' OR kMDItemFSName LIKE[cd] '*CAFÉ.MD'",
                "kMDItemFSName CONTAINS[c] 'note-1' AND kMDItemFSSize < 10",
                // Decided by extension codes (the glob `mdq '*.png'` makes).
                "kMDItemFSName LIKE[cd] '*.png'", "kMDItemFSName ENDSWITH[c] '.MD' OR kMDItemFSName LIKE[cd] '*.pdf'",
                "kMDItemFSName LIKE[cd] '*.txt' AND kMDItemFSName BEGINSWITH[c] 'A'",
            ]
            func differences() throws -> [String] {
                var out: [String] = []
                for text in texts {
                    let predicate = try MetadataPredicate(text)
                    let crawl = Set(try freshCrawlBytes(roots: [CrawlRoot(path: tree)], predicate, hidden: false))
                    let listed = try client.query(Array(text.utf8), scopes: nil, output: .paths)
                    let answered = Set(listed.paths.split(separator: 0).map(Array.init))
                    if answered != crawl { out.append("\(text): \(answered.count) answered, \(crawl.count) crawled") }
                }
                return out
            }
            let initial = try differences()
            #expect(initial.isEmpty, "\(initial)")
            for (round, seed) in [21, 22, 23].enumerated() {
                var storm = Storm(scope: tree.string, outside: outside.string, seed: UInt64(seed))
                storm.run(operations: 800)
                var last: [String] = []
                let converged = waitUntil(timeout: 30) {
                    last = (try? differences()) ?? ["query failed"]
                    return last.isEmpty
                }
                #expect(converged, "round \(round): \(last)")
            }
            // The searches above did read the lists (a planner that always
            // scanned would pass them too).
            let planned = daemon.engine.state.withLock { s in
                texts.filter { text in
                    guard let grams = s.index.nameGrams, let predicate = try? MetadataPredicate(text) else {
                        return false
                    }
                    return NameGramPlan(CompiledPredicate(predicate), grams: grams, slots: s.index.slotCount) != nil
                }.count
            }
            #expect(planned >= texts.count - 2, "\(planned) of \(texts.count) searches used the lists")
            let decided = daemon.engine.state.withLock { s in
                texts.filter { text in
                    guard let grams = s.index.nameGrams, let predicate = try? MetadataPredicate(text),
                        let plan = NameGramPlan(CompiledPredicate(predicate), grams: grams, slots: s.index.slotCount)
                    else { return false }
                    return plan.candidates(grams).extensions != nil
                }.count
            }
            #expect(decided >= 2, "\(decided) searches decided by extension codes")
        }

        /// The first in an order by a name, a kind, a size or a date, over
        /// many slices: entries after the last kept are skipped before
        /// their paths are read, and the answer is still the first and every
        /// tie of all the matches (sizes, dates and kinds with many ties,
        /// folders with no size, names ordered as Finder orders them).
        @Test(arguments: [UInt64(5), 6])
        func theFirstInAnOrderAreChosenOverManySlices(seed: UInt64) throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            var random = SeededGenerator(seed: seed)
            for i in 0..<400 {
                let folder = try temp.folder("tree/d\(i % 23)")
                let path = folder.appending("f\(i).txt").string
                FileManager.default.createFile(
                    atPath: path, contents: Data(count: Int.random(in: 0...12, using: &random)))
                var times = [
                    timespec(tv_sec: 1_700_000_000 + Int.random(in: 0...15, using: &random), tv_nsec: 0),
                    timespec(tv_sec: 1_700_000_000 + Int.random(in: 0...15, using: &random), tv_nsec: 0),
                ]
                #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            }
            let paths = Self.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            let client = try DaemonClient.connect(paths)
            let scope = ScopeRequest(path: tree, rules: ScopeRules())
            #expect(try client.addScope(scope) > 0)
            daemon.engine.streamSliceSlots.withLock { $0 = 32 }
            // What the caller passes over is counted, not answered, and
            // its path is read only when asked for.
            var asked = 0
            var pathsRead = 0
            let passed = try daemon.engine.answer(
                scopes: [scope], predicate: .alwaysTrue, output: .entries,
                admits: { _, _, name, path in
                    asked += 1
                    guard name.count > 0 else { return true }
                    if asked.isMultiple(of: 2) { pathsRead += path().isEmpty ? 0 : 1 }
                    return false
                })
            guard case .success(let skipped) = passed else {
                Issue.record("the index does not cover the tree")
                return
            }
            #expect(skipped.entries.isEmpty && skipped.count == asked && asked > 400, "\(asked) asked")
            #expect(pathsRead == asked / 2)
            for text in ["TRUEPREDICATE", "kMDItemFSName LIKE 'f1*'"] {
                let every = try client.query(Array(text.utf8), scopes: [scope], output: .entries).entries.map {
                    MetadataItem(daemonEntry: $0, container: nil)
                }
                for key in ["kMDItemFSSize", "kMDItemFSContentChangeDate", "kMDItemFSName", "kMDItemKind"] {
                    for ascending in [true, false] {
                        let order = MetadataSortDescriptor(key: key, ascending: ascending)
                        let sorted = every.sorted(by: [order])
                        for limit in [1, 4, 30] {
                            let first = try client.query(
                                Array(text.utf8), scopes: [scope], output: .entries, limit: limit, order: order)
                            #expect(first.count == every.count, "every match is counted")
                            let kept = Set(first.entries.map(\.pathBytes))
                            // The definition: the first `limit` and every
                            // match tied with the last of them.
                            let expected = Set(
                                every.filter { order.compare($0, sorted[limit - 1]) != .orderedDescending }.map(
                                    \.pathBytes))
                            let (extra, missing) = (kept.subtracting(expected).count, expected.subtracting(kept).count)
                            #expect(
                                extra == 0 && missing == 0,
                                "seed \(seed), \(text) by \(key) \(ascending), \(limit): \(extra) extra, \(missing) missing"
                            )
                            // Ties ordered by path: exactly the first by
                            // the key, then the path.
                            let byPath = try client.query(
                                Array(text.utf8), scopes: [scope], output: .entries, limit: limit, order: order,
                                thenByPath: true)
                            let firstByPath = every.sorted { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) }
                                .sorted(by: [order]).prefix(limit).map(\.pathBytes)
                            #expect(
                                byPath.entries.map(\.pathBytes).sorted { $0.lexicographicallyPrecedes($1) }
                                    == firstByPath.sorted { $0.lexicographicallyPrecedes($1) },
                                "seed \(seed), \(text) by \(key) \(ascending) then path, \(limit)")
                        }
                    }
                }
            }
        }

        /// A paths answer comes in parts, one per slice scanned, and the
        /// parts make the answer: every path once, as many as the count,
        /// each a path of the tree. Under a storm the counts still add up,
        /// and once the storm is over the answer is the crawl's.
        @Test func pathsAreStreamedInPartsThatMakeOneAnswer() throws {
            let temp = try TemporaryDirectory()
            let outside = try temp.folder("outside")
            let (daemon, tree, paths) = try Self.indexingDaemon(temp)
            defer { daemon.stop() }
            daemon.engine.streamSliceSlots.withLock { $0 = 16 }
            let request = #"{"id":5,"command":"query","predicate":"TRUEPREDICATE","output":"paths"}"# + "\n"
            /// The parts of one answer: (paths, count) each, and the total.
            func ask() throws -> (parts: [([[UInt8]], Int)], total: Int) {
                guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else {
                    throw MetadataError.daemon("no daemon")
                }
                _ = withBytes(of: Array(request.utf8)) { socket.write($0) }
                var reader = LineReader(socket: socket, maximum: 1 << 24, timeout: 10_000)
                var parts: [([[UInt8]], Int)] = []
                while case .line(let bytes) = reader.next(idle: 10_000) {
                    let value = try JSONValue.parse(bytes)
                    if let length = value["bytes"]?.integer {
                        guard let payload = reader.read(exactly: Int(length)) else {
                            throw MetadataError.daemon("a part ended early")
                        }
                        let split = payload.split(separator: 0).map(Array.init)
                        parts.append((split, Int(value["paths"]?.integer ?? -1)))
                    } else if value["done"] != nil {
                        return (parts, Int(value["count"]?.integer ?? -1))
                    } else {
                        Issue.record("unexpected line \(String(decoding: bytes, as: UTF8.self))")
                    }
                }
                throw MetadataError.daemon("the answer ended early")
            }
            /// Under a storm a path may come twice (a file deleted behind the
            /// cursor and made again ahead of it: two entries); quiet, never.
            func check(_ answer: (parts: [([[UInt8]], Int)], total: Int), quiet: Bool = true) -> [[UInt8]] {
                let all = answer.parts.flatMap(\.0)
                if quiet { #expect(Set(all).count == all.count, "a path sent twice") }
                #expect(answer.parts.allSatisfy { $0.0.count == $0.1 }, "a part's count is not its paths")
                #expect(all.count == answer.total)
                #expect(all.allSatisfy { $0.starts(with: Array((tree.string + "/").utf8)) })
                return all
            }
            let quiet = try ask()
            #expect(quiet.parts.count > 3, "\(quiet.parts.count) parts")
            let crawl = try freshCrawlBytes(roots: [CrawlRoot(path: tree)], .alwaysTrue, hidden: false)
            #expect(Set(check(quiet)) == Set(crawl))
            // Queries while a storm runs.
            let stormDone = Locked(false)
            let scope = tree.string
            let outsidePath = outside.string
            WorkerThreads.detach(name: "storm") {
                var storm = Storm(scope: scope, outside: outsidePath, seed: 31)
                storm.run(operations: 1500)
                stormDone.withLock { $0 = true }
            }
            var during = 0
            while !stormDone.withLock({ $0 }) {
                _ = check(try ask(), quiet: false)
                during += 1
            }
            #expect(during > 0)
            // The storm's last changes may still be applied while the first
            // answers after it are scanned: a path may come twice until then.
            var last: Set<[UInt8]> = []
            let converged = waitUntil(timeout: 30) {
                guard let answer = try? ask(),
                    let fresh = try? freshCrawlBytes(roots: [CrawlRoot(path: tree)], .alwaysTrue, hidden: false)
                else { return false }
                last = Set(check(answer, quiet: false))
                return last == Set(fresh)
            }
            #expect(converged)
            // Quiet now: every path once.
            #expect(Set(check(try ask())) == last)
        }

        /// A subscriber that reads nothing never grows the daemon's memory
        /// past its outbox: it is told to resynchronise, and one that then
        /// reads catches up.
        @Test func aSlowSubscriberIsToldToResynchronise() throws {
            let temp = try TemporaryDirectory()
            let (daemon, tree, paths) = try Self.indexingDaemon(temp)
            defer { daemon.stop() }
            guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else {
                Issue.record("no connection")
                return
            }
            let request =
                "{\"id\":7,\"command\":\"subscribe\",\"protocol\":2,\"interval\":0,\"capacity\":4096,\"predicate\":\"TRUEPREDICATE\",\"scopes\":[{\"path\":\"\(tree.string)\"}]}\n"
            _ = withBytes(of: Array(request.utf8)) { socket.write($0) }
            // Churn while not reading: far more than 4 KiB of updates.
            for round in 0..<20 {
                for i in 0..<50 { try temp.file("tree/churn/\(round)-\(i).txt", contents: "x") }
            }
            // Now read: a fresh copy of the results after `resynchronize`,
            // then ordinary updates, together the disk's state.
            var reader = LineReader(socket: socket, maximum: 1 << 24, timeout: 10_000)
            var events: [String] = []
            var seen: [Int64: [UInt8]] = [:]
            var fresh = false
            let expected = try freshCrawlBytes(roots: [CrawlRoot(path: tree)], .alwaysTrue)
            let deadline = Date(timeIntervalSinceNow: 20)
            while Date() < deadline && !(fresh && Set(seen.values) == expected) {
                guard case .line(let line) = reader.next(idle: 2_000), let value = try? JSONValue.parse(line) else {
                    break
                }
                guard let event = value["event"]?.string else { continue }
                events.append(event)
                switch event {
                case "resynchronize": seen = [:]
                case "result":
                    if let item = value["item"] { seen[item["id"]!.integer!] = item.bytesField("path") }
                case "didFinishGathering": fresh = fresh || value["fresh"]?.bool == true
                case "didUpdate":
                    for item in value["removed"]?.array ?? [] { seen[item["id"]!.integer!] = nil }
                    for item in (value["changed"]?.array ?? []) + (value["added"]?.array ?? []) {
                        seen[item["id"]!.integer!] = item.bytesField("path")
                    }
                default: break
                }
            }
            #expect(events.contains("resynchronize"))
            #expect(fresh)
            #expect(Set(seen.values) == expected)
            socket.shutdown()
        }

        /// A subscription ended with `unsubscribe` (after a line it
        /// refused) leaves the connection serving the next request.
        @Test func aConnectionServesAfterUnsubscribe() throws {
            let temp = try TemporaryDirectory()
            let (daemon, tree, paths) = try Self.indexingDaemon(temp)
            defer { daemon.stop() }
            guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else {
                Issue.record("no connection")
                return
            }
            let lines = [
                "{\"id\":1,\"command\":\"subscribe\",\"protocol\":2,\"predicate\":\"TRUEPREDICATE\",\"scopes\":[{\"path\":\"\(tree.string)\"}]}",
                "{\"id\":2,\"command\":\"hello\"}", "{\"id\":3,\"command\":\"unsubscribe\"}",
            ]
            for line in lines { _ = withBytes(of: Array((line + "\n").utf8)) { socket.write($0) } }
            var reader = LineReader(socket: socket, maximum: 1 << 24, timeout: 10_000)
            var ended = false
            while !ended, case .line(let bytes) = reader.next(idle: 10_000) {
                ended = (try? JSONValue.parse(bytes))?["event"]?.string == "ended"
            }
            #expect(ended)
            _ = withBytes(of: Array("{\"id\":4,\"command\":\"hello\"}\n".utf8)) { socket.write($0) }
            guard case .line(let bytes) = reader.next(idle: 10_000) else {
                Issue.record("no answer after unsubscribe")
                return
            }
            #expect(try JSONValue.parse(bytes)["id"]?.integer == 4)
        }

        /// A client killed mid-stream ends its subscription; the daemon
        /// goes on serving.
        @Test func aClientGoneMidStreamCostsNothing() throws {
            let temp = try TemporaryDirectory()
            let (daemon, tree, paths) = try Self.indexingDaemon(temp)
            defer { daemon.stop() }
            for _ in 0..<5 {
                guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else { continue }
                let request =
                    "{\"id\":1,\"command\":\"subscribe\",\"protocol\":2,\"predicate\":\"TRUEPREDICATE\",\"scopes\":[{\"path\":\"\(tree.string)\"}]}\n"
                _ = withBytes(of: Array(request.utf8)) { socket.write($0) }
                var buffer = [UInt8](repeating: 0, count: 100)
                _ = buffer.withUnsafeMutableBytes { socket.read(into: $0, timeout: 5000) }
                socket.shutdown()
            }
            try temp.file("tree/after.txt")
            let client = try DaemonClient.connect(paths)
            let deadline = Date(timeIntervalSinceNow: 10)
            while try client.query(Array("kMDItemFSName == 'after.txt'".utf8), scopes: nil, output: .count).count == 0
                && Date() < deadline
            {
                usleep(5_000)
            }
            #expect(
                try client.query(Array("kMDItemFSName == 'after.txt'".utf8), scopes: nil, output: .count).count == 1)
            // Each killed client's session ends when its thread sees the
            // connection closed: soon, not at once.
            #expect(
                waitUntil(timeout: 10) { daemon.state.withLock { $0.connections } <= 1 },
                "the killed clients' sessions ended: \(daemon.state.withLock { $0.connections }) connections left")
        }

        /// A hundred clients at once, each answered correctly.
        @Test func manyClientsAtOnce() throws {
            let temp = try TemporaryDirectory()
            let (daemon, tree, paths) = try Self.indexingDaemon(temp)
            defer { daemon.stop() }
            let expected = try freshCrawlBytes(
                roots: [CrawlRoot(path: tree)], try MetadataPredicate("kMDItemFSName LIKE '*.png'")
            ).count
            let counts = Locked<[Int]>([])
            DispatchQueue.concurrentPerform(iterations: 100) { _ in
                let count = try? DaemonClient.connect(paths).query(
                    Array("kMDItemFSName LIKE '*.png'".utf8), scopes: nil, output: .count
                ).count
                counts.withLock { $0.append(count ?? -1) }
            }
            #expect(counts.withLock { $0 } == Array(repeating: expected, count: 100))
        }
    }
}
