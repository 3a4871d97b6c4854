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
    /// Query budgets (issue 21): a `MATCHES` pattern that backtracks
    /// exponentially ends as too expensive instead of hanging, and a slow
    /// query in the daemon never holds up another client's.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct QueryBudgetTests {
        /// The pattern backtracks 2^n times on n `a`s with no `b`.
        static let catastrophic = "kMDItemFSName MATCHES '(a+)+b'"

        /// `count` names of `length` `a`s (each with a distinct suffix
        /// digit run the pattern cannot match either) under `folder`.
        static func names(_ temp: TemporaryDirectory, _ folder: String, count: Int, length: Int) throws -> FilePath {
            try temp.files(count, in: folder) { String(repeating: "a", count: length) + "\($0)" }
            return temp.path.appending(folder)
        }

        static func request(_ paths: DaemonPaths) throws -> UnixSocket {
            guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else {
                throw MetadataError.daemon("no daemon")
            }
            return socket
        }

        static func waitUntil(_ what: String, _ condition: () throws -> Bool) throws {
            if try !TestSupport.waitUntil(condition) { Issue.record("never: \(what)") }
        }

        /// The crawl (library) path: a name the pattern backtracks on past
        /// its per-name cap makes the search throw, not answer "no match".
        @Test func aCatastrophicPatternIsTooExpensiveInACrawl() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.names(temp, "tree", count: 3, length: 30)
            let search = OneShotSearch(
                roots: [CrawlRoot(path: tree)], predicate: try MetadataPredicate(Self.catastrophic))
            #expect(throws: MetadataError.self) { try search.run() }
            do {
                try search.run()
            } catch {
                #expect(error.code == .tooExpensive)
                #expect(error.message.contains("raise --budget"))
            }
            // A pattern that finishes is answered as before.
            var cheap = search
            cheap.predicate = try MetadataPredicate("kMDItemFSName MATCHES 'a+[0-9]'")
            #expect(try cheap.run().matchCount == 3)
        }

        /// The protocol: `budget` is taken per request and a query past it
        /// answers `{"error":{"code":"too-expensive",...}}`; the client
        /// library turns that into `MetadataError.tooExpensive`.
        @Test func theDaemonAnswersTooExpensive() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.names(temp, "tree", count: 3, length: 30)
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            let answers = try IndexDaemonTests.exchange(
                paths,
                #"{"id":7,"command":"query","output":"count","budget":5,"predicate":"kMDItemFSName MATCHES '(a+)+b'"}"#
                    + "\n")
            #expect(answers.count == 1)
            #expect(answers.first?["error"]?["code"]?.string == "too-expensive")
            #expect(answers.first?["id"]?.integer == 7)
            let bad = try IndexDaemonTests.exchange(
                paths, #"{"id":8,"command":"query","budget":0,"predicate":"TRUEPREDICATE"}"# + "\n")
            #expect(bad.first?["error"]?["code"]?.string == "bad-request")
            #expect(throws: MetadataError.self) {
                _ = try DaemonClient.connect(paths).query(
                    Array(Self.catastrophic.utf8), scopes: nil, output: .count, budget: 5)
            }
            do {
                _ = try DaemonClient.connect(paths).query(Array(Self.catastrophic.utf8), scopes: nil, output: .count)
            } catch {
                #expect(error.code == .tooExpensive)
            }
            // The daemon still answers a cheap query afterwards.
            let answer = try DaemonClient.connect(paths).query(
                Array("kMDItemFSName BEGINSWITH 'aaa'".utf8), scopes: nil, output: .count)
            #expect(answer.count == 3)
            // The counter drops just after the answer is sent.
            try Self.waitUntil("no query running") { try DaemonClient.connect(paths).status().queries == 0 }
        }

        /// Two clients of one daemon: while A's slow query (names the
        /// pattern backtracks on, each under the per-name cap) runs, B's
        /// count on another scope is answered; A is still running when B
        /// has its answer (the order is asserted, not a time). A's client
        /// gets progress lines; then it goes away and the daemon cancels
        /// its query.
        @Test func aSlowQueryDoesNotHoldUpAnotherClient() throws {
            let temp = try TemporaryDirectory()
            let slow = try Self.names(temp, "slow", count: 4000, length: 19)
            let other = try IndexDaemonTests.tree(temp)
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: slow, rules: ScopeRules()))
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: other, rules: ScopeRules()))
            let a = try Self.request(paths)
            let line =
                #"{"id":1,"command":"query","output":"count","budget":600,"scopes":[{"path":""#
                + slow.string + #""}],"predicate":"kMDItemFSName MATCHES '(a+)+b'"}"# + "\n"
            _ = withBytes(of: Array(line.utf8)) { a.write($0) }
            let status = { try DaemonClient.connect(paths).status() }
            try Self.waitUntil("A's query runs") { try status().queries == 1 }
            let b = try DaemonClient.connect(paths).query(
                Array("kMDItemFSName BEGINSWITH[c] 'report'".utf8),
                scopes: [ScopeRequest(path: other, rules: ScopeRules())], output: .count)
            #expect(b.count == 20)
            // B's counter drops just after its answer is sent: wait for it,
            // then A must be the one query still running.
            var running = try status().queries
            try Self.waitUntil("B's query no longer counted") {
                running = try status().queries
                return running <= 1
            }
            #expect(running == 1, "A still running once B has its answer")
            // One reader for A's socket throughout: a second one would lose
            // the lines the first had buffered.
            var reader = LineReader(socket: a, maximum: 1 << 20, timeout: 60_000)
            if running != 1 {
                if case .line(let reply) = reader.next(idle: 1000) {
                    Issue.record("A answered: \(String(decoding: reply, as: UTF8.self))")
                }
            }
            // A long answer is not silence: A's client reads progress lines.
            if case .line(let bytes) = reader.next(idle: 60_000) {
                let progress = try JSONValue.parse(bytes)
                #expect(progress["id"]?.integer == 1)
                #expect(progress["progress"]?["of"]?.integer ?? 0 > 0, "\(String(decoding: bytes, as: UTF8.self))")
            } else {
                Issue.record("no progress line from a long answer")
            }
            a.shutdown()
            try Self.waitUntil("A's query is cancelled") { try status().cancelledQueries == 1 }
            #expect(try status().queries == 0)
        }

        /// The library: a `MetadataQuery` whose gathering goes past the
        /// budget finishes gathering with no results and the error, in
        /// process and served by the daemon; a live query whose later
        /// change is too expensive is ended with the error too.
        @Test func aMetadataQueryEndsWithTheErrorInsteadOfHanging() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.names(temp, "tree", count: 3, length: 30)
            let quiet = try temp.folder("quiet")
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            for source in [MetadataQuery.Source.inProcess, .daemon(paths)] {
                let query = MetadataQuery(source: source)
                query.predicate = try MetadataPredicate(Self.catastrophic)
                query.searchScopes = [.directory(tree)]
                query.notificationBatchingInterval = 0
                query.budget = 20
                let recorder = QueryRecorder(query)
                query.start()
                #expect(recorder.waitForFinish(), "\(source)")
                try Self.waitUntil("the error is listed") { query.errors.contains { $0.code == .tooExpensive } }
                #expect(query.resultCount == 0)
                query.stop()
            }
            // Gathering is cheap (nothing there); the change is not.
            let live = MetadataQuery()
            live.predicate = try MetadataPredicate(Self.catastrophic)
            live.searchScopes = [.directory(quiet)]
            live.notificationBatchingInterval = 0
            let recorder = QueryRecorder(live)
            live.start()
            #expect(recorder.waitForFinish())
            #expect(live.errors.isEmpty)
            _ = try temp.file("quiet/" + String(repeating: "a", count: 30))
            try Self.waitUntil("the live query ends with the error") {
                live.errors.contains { $0.code == .tooExpensive }
            }
            live.stop()
        }

        /// What one user may spend is the service's to say: a budget past
        /// the ceiling is cut to it (and the error says the ceiling, not
        /// "raise --budget"); past the number of queries at once, or of
        /// connections, a request is refused as busy, and served again
        /// once the others end.
        @Test func theServiceSetsTheLimitsNotTheClient() throws {
            let temp = try TemporaryDirectory()
            // Names the pattern backtracks on, each under the per-name cap:
            // the whole scan takes far longer than the ceiling.
            let slow = try Self.names(temp, "slow", count: 4000, length: 19)
            let capping = IndexDaemonTests.paths(try TemporaryDirectory())
            let first = try IndexDaemon.start(
                paths: capping, crawlThreads: 2,
                limits: ServiceLimits(maxBudget: 1, queriesPerUser: 2, subscriptionsPerUser: 1, connectionsPerUser: 4))
            defer { first.stop() }
            _ = try DaemonClient.connect(capping).addScope(ScopeRequest(path: slow, rules: ScopeRules()))
            let capped = try IndexDaemonTests.exchange(
                capping,
                #"{"id":1,"command":"query","output":"count","budget":1e308,"predicate":"kMDItemFSName MATCHES '(a+)+b'"}"#
                    + "\n")
            #expect(capped.first?["error"]?["code"]?.string == "too-expensive", "\(capped)")
            let message = capped.first?["error"]?["message"]?.string ?? ""
            #expect(message.contains("1 s, the most this daemon allows any query"), "\(message)")
            first.stop()
            let paths = IndexDaemonTests.paths(temp)
            let limits = ServiceLimits(
                maxBudget: 600, queriesPerUser: 2, subscriptionsPerUser: 1, connectionsPerUser: 4)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2, limits: limits)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: slow, rules: ScopeRules()))
            // Two slow queries at once, from two connections: a third is busy.
            let line =
                #"{"id":2,"command":"query","output":"count","predicate":"kMDItemFSName MATCHES '(a+)+b'"}"# + "\n"
            let limitsAt2 = try (0..<2).map { _ in try Self.request(paths) }
            for socket in limitsAt2 { _ = withBytes(of: Array(line.utf8)) { socket.write($0) } }
            try Self.waitUntil("two queries run") { try DaemonClient.connect(paths).status().queries == 2 }
            let refused = try IndexDaemonTests.exchange(
                paths, #"{"id":3,"command":"query","output":"count","predicate":"TRUEPREDICATE"}"# + "\n")
            #expect(refused.first?["error"]?["code"]?.string == "busy", "\(refused)")
            for socket in limitsAt2 { socket.shutdown() }
            // (A status asked while the closed connections still count is refused.)
            try Self.waitUntil("the queries end") { (try? DaemonClient.connect(paths).status().queries) == 0 }
            let served = try DaemonClient.connect(paths).query(
                Array("TRUEPREDICATE".utf8), scopes: nil, output: .count)
            #expect(served.count == 4000)
            // Connections, on a daemon nobody else has spoken to (a closed
            // connection counts until its session notices): three held,
            // each answered, and a fourth refused.
            let quiet = IndexDaemonTests.paths(try TemporaryDirectory())
            let third = try IndexDaemon.start(
                paths: quiet, crawlThreads: 2,
                limits: ServiceLimits(maxBudget: 5, queriesPerUser: 2, subscriptionsPerUser: 1, connectionsPerUser: 3))
            defer { third.stop() }
            var held: [UnixSocket] = []
            for _ in 0..<3 {
                let socket = try Self.request(quiet)
                _ = withBytes(of: Array(#"{"id":1,"command":"hello"}"#.utf8) + [0x0A]) { socket.write($0) }
                var reader = LineReader(socket: socket, maximum: 1 << 20, timeout: 10_000)
                guard case .line(let bytes) = reader.next(idle: 10_000) else {
                    Issue.record("no hello")
                    return
                }
                #expect(try JSONValue.parse(bytes)["protocol"] != nil, "\(String(decoding: bytes, as: UTF8.self))")
                held.append(socket)
            }
            let fourth = try Self.request(quiet)
            var reader = LineReader(socket: fourth, maximum: 1 << 20, timeout: 10_000)
            if case .line(let bytes) = reader.next(idle: 10_000) {
                #expect(try JSONValue.parse(bytes)["error"]?["code"]?.string == "busy")
            } else {
                Issue.record("the fourth connection was not refused")
            }
            _ = held
        }

        /// The order `SliceTurns` grants turns in: `holder` holds the first
        /// (named `first`); then each of `queued` asks, in order, each
        /// waiting before the next asks; then the first turn ends.
        static func turnOrder(holder: UInt32, first: String, queued: [(UInt32, String)]) throws -> [String] {
            let turns = SliceTurns()
            let order = Locked<[String]>([])
            let release = ConditionLocked(false)
            let entered = Locked(false)
            let thread = Thread {
                turns.withTurn(for: holder) {
                    entered.withLock { $0 = true }
                    release.wait(until: { $0 }) { _ in }
                    order.withLock { $0.append(first) }
                }
            }
            thread.start()
            try Self.waitUntil("the first turn is held") { entered.withLock { $0 } }
            var threads: [Thread] = []
            for (user, name) in queued {
                let thread = Thread { turns.withTurn(for: user) { order.withLock { $0.append(name) } } }
                let waiting = turns.waitingCount
                thread.start()
                // Lined up in this order before the next one asks.
                try Self.waitUntil("\(name) waits") { turns.waitingCount == waiting + 1 }
                threads.append(thread)
            }
            release.mutateAndBroadcast { $0 = true }
            try Self.waitUntil("every turn ran") { order.withLock { $0.count } == queued.count + 1 }
            return order.withLock { $0 }
        }

        /// Turns at the engine go round the users: with one user's three
        /// slices queued, a second user's slice runs after the first of
        /// them, not after all three.
        @Test func turnsGoRoundTheUsers() throws {
            let order = try Self.turnOrder(
                holder: 1, first: "a0", queued: [(1, "a1"), (1, "a2"), (1, "a3"), (2, "b1")])
            #expect(order == ["a0", "a1", "b1", "a2", "a3"])
        }

        /// The trigram builder's slices wait while any user's do: a query
        /// asked during the build is answered first, however many builder
        /// slices queued before it; the builder goes on once none waits.
        @Test func theTrigramBuilderWaitsForQueries() throws {
            let order = try Self.turnOrder(
                holder: SliceTurns.indexOwner, first: "build0",
                queued: [(SliceTurns.indexOwner, "build1"), (7, "q1"), (7, "q2"), (8, "r1")])
            #expect(order == ["build0", "q1", "r1", "q2", "build1"])
        }

        /// Which predicates a scan serves in short slices: patterns,
        /// imported attributes, and a thousand cheap terms; not a few.
        @Test func manyTermsAreExpensiveAFewAreNot() throws {
            let few = try MetadataPredicate("kMDItemFSName LIKE '*.png' OR kMDItemFSSize > 10")
            #expect(!CompiledPredicate(few).isExpensive)
            let many = try MetadataPredicate(
                (0..<1000).map { "kMDItemFSName LIKE[cd] '*q*z\($0)*'" }.joined(separator: " OR "))
            #expect(CompiledPredicate(many).isExpensive)
            #expect(CompiledPredicate(try MetadataPredicate(Self.catastrophic)).isExpensive)
        }
    }
}
