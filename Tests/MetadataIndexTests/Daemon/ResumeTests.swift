import Foundation
import Glibc
import MDQWire
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQEngine
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

extension LiveSuites {
    /// The clock: every answer says how far the daemon's history went, and
    /// a subscription resumed `since` such a clock is told only what
    /// changed after it (protocol 2).
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct ResumeTests {
        /// One subscription over the protocol, read as a client keeping its
        /// results by id would.
        final class Subscriber {
            let socket: UnixSocket
            var reader: LineReader
            /// The results as the client holds them: id to path.
            var items: [Int64: [UInt8]] = [:]
            var clock: String?
            var fresh: Bool?
            var gathered = false
            /// Ids sent in updates (and `result` lines after gathering).
            var updated: [Int64] = []
            var added: [Int64] = []
            var changed: [Int64] = []
            var removed: [Int64] = []
            var bytes = 0
            var error: JSONValue?

            init(_ paths: DaemonPaths, scope: FilePath, since: String? = nil, protocol version: Int = 2) throws {
                guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else {
                    throw MetadataError.daemon("no daemon")
                }
                self.socket = socket
                var request = JSONWriter()
                request.raw("{\"id\":1,\"command\":\"subscribe\",\"protocol\":")
                request.integer(version)
                request.raw(",\"interval\":0,\"predicate\":\"TRUEPREDICATE\",\"scopes\":[{\"path\":")
                request.string(scope.string)
                request.raw(",\"hidden\":true}]")
                if let since {
                    request.raw(",\"since\":")
                    request.string(since)
                }
                request.raw("}\n")
                _ = withBytes(of: request.bytes) { socket.write($0) }
                reader = LineReader(socket: socket, maximum: 1 << 26, timeout: 10_000)
            }

            deinit { socket.shutdown() }

            /// Reads one line; false when none came in time.
            @discardableResult
            func read(idle: Int32 = 10_000) -> Bool {
                guard case .line(let line) = reader.next(idle: idle), let value = try? JSONValue.parse(line) else {
                    return false
                }
                bytes += line.count + 1
                if value["error"] != nil { error = value["error"] }
                switch value["event"]?.string {
                case "result":
                    if let item = value["item"], let id = item["id"]?.integer { items[id] = item.bytesField("path") }
                case "resynchronize":
                    items = [:]
                case "didFinishGathering":
                    gathered = true
                    fresh = value["fresh"]?.bool
                    clock = value["clock"]?.string
                case "didUpdate":
                    for item in value["removed"]?.array ?? [] {
                        guard let id = item["id"]?.integer else { continue }
                        items[id] = nil
                        removed.append(id)
                    }
                    for (key, list) in [("changed", \Subscriber.changed), ("added", \Subscriber.added)] {
                        for item in value[key]?.array ?? [] {
                            guard let id = item["id"]?.integer else { continue }
                            items[id] = item.bytesField("path")
                            self[keyPath: list].append(id)
                        }
                    }
                    clock = value["clock"]?.string ?? clock
                default:
                    break
                }
                return true
            }

            /// Reads until gathering is done.
            func gather() {
                while !gathered && error == nil && read() {}
            }

            /// Reads until the results are `expected` (paths), or nothing
            /// comes for a while.
            func read(until expected: Set<[UInt8]>, timeout: Double = 20) -> Bool {
                let deadline = Date(timeIntervalSinceNow: timeout)
                while Set(items.values) != expected || items.count != expected.count {
                    guard Date() < deadline else { return false }
                    read(idle: 200)
                }
                return true
            }
        }

        static func expected(_ tree: FilePath) throws -> Set<[UInt8]> {
            try freshCrawlBytes(roots: [CrawlRoot(path: tree)], .alwaysTrue, hidden: true)
        }

        static func startDaemon(_ paths: DaemonPaths, tree: FilePath) throws -> IndexDaemon {
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            _ = try DaemonClient.connect(paths).addScope(
                ScopeRequest(path: tree, rules: ScopeRules(includeHidden: true)))
            return daemon
        }

        /// Waits until a query sees the index at `expected` (the changes
        /// applied), and returns that answer's clock.
        static func settled(_ paths: DaemonPaths, _ tree: FilePath, _ expected: Set<[UInt8]>) throws -> String? {
            var clock: String?
            let settled = waitUntil(timeout: 20) {
                guard
                    let lines = try? IndexDaemonTests.exchange(
                        paths,
                        "{\"id\":1,\"command\":\"query\",\"predicate\":\"TRUEPREDICATE\",\"output\":\"count\",\"scopes\":[{\"path\":\"\(tree.string)\",\"hidden\":true}]}\n"
                    ), lines.last?["stale"]?.bool == false
                else { return false }
                clock = lines.last?["clock"]?.string
                return lines.last?["count"]?.integer == Int64(expected.count)
            }
            return settled ? clock : nil
        }

        /// Resumed after nothing, one change and many: told exactly what
        /// changed (by the ids it already has), and the results it then
        /// holds are the disk's.
        @Test(arguments: [0, 1, 200])
        func aResumedSubscriptionIsToldOnlyWhatChanged(changes: Int) throws {
            let temp = try TemporaryDirectory()
            for i in 0..<300 { try temp.file("tree/d\(i % 7)/f\(i).txt", contents: "\(i)") }
            let tree = temp.path.appending("tree")
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.startDaemon(paths, tree: tree)
            defer { daemon.stop() }
            let first = try Subscriber(paths, scope: tree)
            first.gather()
            #expect(first.fresh == false && first.clock != nil)
            #expect(Set(first.items.values) == (try Self.expected(tree)))
            let clock = try #require(first.clock)
            let before = first.items
            // The client goes away; the disk changes.
            var touched: Set<String> = []
            for i in 0..<changes {
                switch i % 4 {
                case 0:
                    try temp.file("tree/new/n\(i).txt")
                    touched.insert("\(tree.string)/new/n\(i).txt")
                case 1:
                    #expect(unlink("\(tree.string)/d\(i % 7)/f\(i).txt") == 0)
                case 2:
                    #expect(rename("\(tree.string)/d\(i % 7)/f\(i).txt", "\(tree.string)/d\(i % 7)/g\(i).txt") == 0)
                    touched.insert("\(tree.string)/d\(i % 7)/g\(i).txt")
                default:
                    try temp.file("tree/d\(i % 7)/f\(i).txt", contents: "changed \(i)")
                    touched.insert("\(tree.string)/d\(i % 7)/f\(i).txt")
                }
            }
            let expected = try Self.expected(tree)
            _ = try Self.settled(paths, tree, expected)
            let resumed = try Subscriber(paths, scope: tree, since: clock)
            resumed.items = before
            resumed.gather()
            #expect(resumed.fresh == false)
            #expect(resumed.read(until: expected))
            // No `result` line: only the changes, each told once.
            let told = resumed.added + resumed.changed + resumed.removed
            #expect(Set(told).count == told.count)
            // Each change touches its file and the folder it is in (whose
            // dates change): at most three items each (a new folder too).
            #expect(told.count <= 3 * changes, "\(told.count) items for \(changes) changes")
            // Unchanged files kept their ids and were not told again.
            for (id, path) in before
            where !touched.contains(String(decoding: path, as: UTF8.self)) && path.suffix(4).elementsEqual(".txt".utf8)
            {
                if expected.contains(path) { #expect(resumed.items[id] == path && !told.contains(id)) }
            }
            // A renamed file kept its id.
            if changes > 2 {
                let old = before.first { $0.value == Array("\(tree.string)/d2/f2.txt".utf8) }?.key
                #expect(old != nil && resumed.items[old!] == Array("\(tree.string)/d2/g2.txt".utf8))
            }
            if changes == 0 { #expect(told.isEmpty && resumed.bytes < 300) }
        }

        /// After a restart (the snapshot carries the clock and its journal),
        /// a client resumes with the changes made while the daemon was
        /// down; a clock from another instance or past the journal is
        /// answered in full, `fresh`.
        @Test func aClientResumesAcrossARestartAndStartsAfreshWhenItCannot() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<100 { try temp.file("tree/d\(i % 4)/f\(i).txt", contents: "\(i)") }
            let tree = temp.path.appending("tree")
            let paths = IndexDaemonTests.paths(temp)
            var clock: String
            var before: [Int64: [UInt8]]
            do {
                let daemon = try Self.startDaemon(paths, tree: tree)
                let first = try Subscriber(paths, scope: tree)
                first.gather()
                clock = try #require(first.clock)
                before = first.items
                daemon.stop()
            }
            #expect(unlink("\(tree.string)/d1/f1.txt") == 0)
            try temp.file("tree/d2/f2.txt", contents: "edited while down")
            try temp.file("tree/d3/new.txt")
            let expected = try Self.expected(tree)
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            let current = try #require(try Self.settled(paths, tree, expected))
            let resumed = try Subscriber(paths, scope: tree, since: clock)
            resumed.items = before
            resumed.gather()
            #expect(resumed.fresh == false)
            #expect(resumed.read(until: expected))
            let told = Set(resumed.added + resumed.changed + resumed.removed)
            // The three files, and at most the three folders they are in.
            #expect(told.count >= 3 && told.count <= 6, "\(told.count) told")
            let removedFile = before.first { $0.value == Array("\(tree.string)/d1/f1.txt".utf8) }!.key
            #expect(resumed.removed.contains(removedFile))
            #expect(resumed.added.contains { resumed.items[$0] == Array("\(tree.string)/d3/new.txt".utf8) })
            let edited = before.first { $0.value == Array("\(tree.string)/d2/f2.txt".utf8) }!.key
            #expect(resumed.changed.contains(edited), "the edited file keeps its id across the restart")

            // Another instance's clock, and garbage: refused or answered in full.
            let other = try Subscriber(paths, scope: tree, since: "c:0123456789abcdef:5")
            other.gather()
            #expect(other.fresh == true && Set(other.items.values) == expected)
            let garbage = try Subscriber(paths, scope: tree, since: "yesterday")
            garbage.gather()
            #expect(garbage.error?["code"]?.string == "bad-request")

            // Past the journal: fresh.
            daemon.engine.limitJournal(to: 2)
            for i in 0..<5 { try temp.file("tree/more/m\(i).txt") }
            let later = try Self.expected(tree)
            _ = try Self.settled(paths, tree, later)
            let truncated = try Subscriber(paths, scope: tree, since: current)
            truncated.gather()
            #expect(truncated.fresh == true && Set(truncated.items.values) == later)
        }

        /// A client of protocol 1 (no `protocol` field) is told which
        /// protocol the daemon speaks and which it sent.
        @Test func aProtocolOneClientIsToldBothVersions() throws {
            let temp = try TemporaryDirectory()
            try temp.file("tree/a.txt")
            let tree = temp.path.appending("tree")
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.startDaemon(paths, tree: tree)
            defer { daemon.stop() }
            let old = try Subscriber(paths, scope: tree, protocol: 1)
            old.gather()
            #expect(old.error?["code"]?.string == "protocol-version")
            let message = old.error?["message"]?.string ?? ""
            #expect(message.contains("protocol 2") && message.contains("protocol 1"), "\(message)")
        }

        /// A one-shot query and then a subscription since its clock, while
        /// a storm runs: together they miss nothing (the client's results
        /// end as the disk's), and the subscription never tells again a
        /// file the storm did not touch.
        @Test(arguments: [UInt64(3), 17, 41, 59, 73, 97])
        func aQueryThenASubscriptionSinceItsClockMissNothingUnderAStorm(seed: UInt64) throws {
            let temp = try TemporaryDirectory()
            for i in 0..<200 { try temp.file("tree/still/s\(i).txt") }
            for i in 0..<40 { try temp.file("tree/storm/d\(i % 4)/f\(i).txt") }
            let outside = try temp.folder("outside")
            let tree = temp.path.appending("tree")
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.startDaemon(paths, tree: tree)
            defer { daemon.stop() }
            let storming = Locked(true)
            let stormThread = Thread {
                var storm = Storm(scope: "\(tree.string)/storm", outside: outside.string, seed: seed)
                while storming.withLock({ $0 }) { storm.run(operations: 20) }
            }
            stormThread.start()
            // Small, slowed slices, so the storm lands inside the query.
            daemon.engine.streamSliceSlots.withLock { $0 = 16 }
            daemon.engine.sliceHook.withLock { $0 = { usleep(500) } }
            let lines = try IndexDaemonTests.exchange(
                paths,
                "{\"id\":1,\"command\":\"query\",\"predicate\":\"TRUEPREDICATE\",\"output\":\"items\",\"scopes\":[{\"path\":\"\(tree.string)\",\"hidden\":true}]}\n"
            )
            daemon.engine.sliceHook.withLock { $0 = nil }
            var items: [Int64: [UInt8]] = [:]
            for line in lines {
                if let item = line["item"], let id = item["id"]?.integer { items[id] = item.bytesField("path") }
            }
            let clock = try #require(lines.last?["clock"]?.string)
            let subscriber = try Subscriber(paths, scope: tree, since: clock)
            subscriber.items = items
            subscriber.gather()
            #expect(subscriber.fresh == false)
            usleep(100_000)
            storming.withLock { $0 = false }
            while !stormThread.isFinished { usleep(1_000) }
            let expected = try Self.expected(tree)
            let converged = subscriber.read(until: expected)
            func shown(_ paths: Set<[UInt8]>) -> [String] {
                paths.map { String(decoding: $0, as: UTF8.self) }.sorted().prefix(6).map { $0 }
            }
            let held = Set(subscriber.items.values)
            #expect(
                converged,
                "extra \(shown(held.subtracting(expected))), missing \(shown(expected.subtracting(held))), \(held.count) vs \(subscriber.items.count)"
            )
            let still = Set(items.filter { $0.value.starts(with: Array("\(tree.string)/still/".utf8)) }.keys)
            let told = subscriber.added + subscriber.changed + subscriber.removed
            #expect(still.count == 200)
            #expect(told.allSatisfy { !still.contains($0) }, "an untouched file was told again")
        }

        /// `MetadataQuery(source: .daemon)` resumes after the daemon
        /// restarts: the files it had are not delivered again, the change
        /// made meanwhile is.
        /// A subscription over the daemon whose reader fell behind (its
        /// mailbox overflowed and dropped changes) gets everything anew, in
        /// one fresh snapshot, once it asks: not a stream resumed from the
        /// clock it had, which would leave out what was dropped; and the
        /// snapshot, larger than the mailbox, does not overflow it again.
        @Test func aSubscriptionThatFellBehindGetsAFreshSnapshot() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<5 { try temp.file("tree/f\(i).txt") }
            let tree = temp.path.appending("tree")
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.startDaemon(paths, tree: tree)
            defer { daemon.stop() }
            let source = DaemonSource(paths: paths)
            let (subscription, _) = source.subscribe(
                scopes: [ScopeRequest(path: tree, rules: ScopeRules(includeHidden: true))],
                predicate: try MetadataPredicate("kMDItemFSName LIKE '*.txt'"), container: nil, budget: nil,
                capacity: 8, progress: nil, fetching: [], viewer: nil, wake: {})
            defer { source.unsubscribe(subscription) }
            var first: Set<String> = []
            #expect(
                waitUntil(timeout: 20) {
                    for case .snapshot(let all, _) in subscription.take() {
                        first = Set(all.map { String(decoding: $0.pathBytes, as: UTF8.self) })
                    }
                    return first.count == 5
                })
            // More changes than the mailbox holds, unread until the daemon
            // has them all (and has sent them: a query is answered after
            // the subscriptions are told).
            for i in 0..<40 { try temp.file("tree/g\(i).txt") }
            #expect(try Self.settled(paths, tree, try Self.expected(tree)) != nil)
            #expect(
                waitUntil(timeout: 20) {
                    subscription.take().contains {
                        if case .resynchronize = $0 { return true }
                        return false
                    }
                }, "the mailbox overflowed")
            source.resynchronize(subscription)
            var fresh: Set<String> = []
            #expect(
                waitUntil(timeout: 20) {
                    for case .snapshot(let all, true) in subscription.take() {
                        fresh = Set(all.map { String(decoding: $0.pathBytes, as: UTF8.self) })
                    }
                    return fresh.count == 45
                }, "\(fresh.count) in the fresh snapshot")
        }

        @Test func aDaemonQueryResumesAfterTheDaemonRestarts() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<50 { try temp.file("tree/f\(i).txt") }
            let tree = temp.path.appending("tree")
            let paths = IndexDaemonTests.paths(temp)
            var daemon = try Self.startDaemon(paths, tree: tree)
            let query = MetadataQuery(source: .daemon(paths))
            query.predicate = try MetadataPredicate("kMDItemFSName LIKE '*.txt'")
            query.searchScopes = [.directory(tree)]
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            #expect(query.resultCount == 50)
            let ids = Set(query.results.map(\.id))
            daemon.stop()
            try temp.file("tree/while-down.txt")
            daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2)
            defer { daemon.stop() }
            #expect(recorder.wait(timeout: 30) { query.results.contains { $0.name == "while-down.txt" } })
            query.deliveryQueue.sync {}
            let updates = recorder.deliveredUpdates
            let removed = updates.flatMap(\.removed)
            let added = updates.flatMap(\.added)
            #expect(removed.isEmpty, "\(removed.map(\.path))")
            #expect(added.map(\.name) == ["while-down.txt"])
            #expect(Set(query.results.map(\.id)).isSuperset(of: ids))
            query.stop()
        }
    }
}
