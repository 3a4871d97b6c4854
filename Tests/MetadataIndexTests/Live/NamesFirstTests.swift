import Foundation
import Glibc
import Synchronization
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// A names-first index (`LiveEngine.retain(_:namesFirst:)`) answers names as
/// soon as its folders are read, and nothing else until its files' sizes
/// and dates are: a query that needs them is declined (the daemon's
/// clients crawl instead), a live query waits; once filled, and once the
/// disk is quiet after a storm during the fill, it is a fresh crawl.
extension LiveSuites {
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct NamesFirstTests {
        static let hidden = ScopeRules(includeHidden: true)

        /// Folders three deep with files of many sizes, some hidden.
        static func plant(_ temp: TemporaryDirectory) throws -> FilePath {
            for i in 0..<90 {
                let folder = "tree/d\(i % 6)/e\(i % 4)" + (i % 5 == 0 ? "/.h" : "")
                try temp.file(
                    "\(folder)/f-\(i).\(i % 3 == 0 ? "png" : "txt")", contents: String(repeating: "x", count: i * 7))
            }
            return temp.path.appending("tree")
        }

        static func paths(_ answer: OneShotAnswer) -> Set<[UInt8]> {
            Set(answer.paths.split(separator: 0).map(Array.init))
        }

        /// A live query over `scope` on `engine`, started (not waited for).
        static func query(_ predicate: MetadataPredicate, _ scope: FilePath, engine: LiveEngine) -> MetadataQuery {
            let query = MetadataQuery(engineProvider: { engine })
            query.predicate = predicate
            query.state.withLock { $0.configuration.scopeRequests = [ScopeRequest(path: scope, rules: hidden)] }
            query.notificationBatchingInterval = 0
            return query
        }

        /// Once quiet, `query` (everything under `tree`, hidden items
        /// included) is a fresh crawl, and its updates replay to it.
        static func expectConverges(
            _ query: MetadataQuery, _ recorder: QueryRecorder, _ tree: FilePath, _ context: String
        ) throws {
            try expectLiveQueryConverges(query, recorder, initial: recorder.initialResults, "TRUEPREDICATE", context) {
                try freshItems(roots: [CrawlRoot(path: tree)], $0, hidden: true)
            }
        }

        /// While the fill is held: names and kinds answer exactly; sizes,
        /// dates and whole entries are declined with the reason; a live
        /// query's gathering ends only after the fill, with every
        /// attribute a fresh crawl reads.
        @Test func namesAnswerAtOnceAndTheRestWaitsForTheFill() throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.plant(temp)
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let release = engine.holdFills()
            defer { release.mutateAndBroadcast { $0 = true } }
            let scope = ScopeRequest(path: tree, rules: Self.hidden)
            let retained = try engine.retain(scope, namesFirst: true)
            defer { engine.release(retained) }
            #expect(engine.isFilling)

            // A live query started now gathers only once the fill is over
            // (checked while the one-shot queries below run).
            let live = Self.query(try MetadataPredicate("kMDItemFSSize > 100"), tree, engine: engine)
            let released = Atomic<Bool>(false)
            let finishedEarly = Atomic<Bool>(false)
            let token = NotificationCenter.default.addObserver(
                forName: .metadataQueryDidFinishGathering, object: live, queue: nil
            ) { _ in
                if !released.load(ordering: .relaxed) { finishedEarly.store(true, ordering: .relaxed) }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            let recorder = QueryRecorder(live)
            #expect(live.start())

            for text in ["kMDItemFSName LIKE '*.png'", "TRUEPREDICATE", "kMDItemContentTypeTree == 'public.image'"] {
                let predicate = try MetadataPredicate(text)
                let answer = try engine.answer(scopes: [scope], predicate: predicate, output: .paths).get()
                #expect(
                    Self.paths(answer)
                        == (try freshCrawlBytes(roots: [CrawlRoot(path: tree)], predicate, hidden: true)),
                    "\(text)")
                #expect(!answer.stale)
            }
            for (text, output) in [
                ("kMDItemFSSize > 100", OneShotOutput.count), ("kMDItemFSSize == 0", .paths),
                ("kMDItemFSName LIKE '*.png'", .entries),
            ] {
                let result = try engine.answer(scopes: [scope], predicate: try MetadataPredicate(text), output: output)
                guard case .failure(let uncovered) = result else {
                    Issue.record("\(text) answered before the sizes and dates were read")
                    continue
                }
                #expect(uncovered.gap == ScopeNotCovered.stillFilling + tree.string, "\(text)")
            }

            released.store(true, ordering: .relaxed)
            release.mutateAndBroadcast { $0 = true }
            #expect(recorder.waitForFinish())
            let early = finishedEarly.load(ordering: .relaxed)
            #expect(!early, "a live query finished gathering before the fill")
            engine.waitUntilFilled()
            let fresh = try freshItems(
                roots: [CrawlRoot(path: tree)], try MetadataPredicate("kMDItemFSSize > 100"), hidden: true)
            #expect(!fresh.isEmpty)
            #expect(attributeDifferences(recorder.initialResults, fresh).isEmpty)
            live.stop()
            let sized = try engine.answer(
                scopes: [scope], predicate: try MetadataPredicate("kMDItemFSSize > 100"), output: .paths
            ).get()
            #expect(Self.paths(sized) == Set(fresh.keys))
        }

        /// A seeded storm while the fill runs (slowed on purpose, folder by
        /// folder): once quiet, a live query over everything equals a fresh
        /// crawl in every path and attribute, as after a full crawl.
        @Test(arguments: [UInt64(1), 2, 3, 4])
        func aStormDuringTheFillConverges(seed: UInt64) throws {
            let temp = try TemporaryDirectory()
            let tree = try Self.plant(temp)
            let outside = try temp.folder("outside")
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let slowed = Atomic<Bool>(false)
            engine.crawlHook.withLock {
                $0 = { _ in if slowed.load(ordering: .relaxed) { usleep(3000) } }
            }
            engine.fillHook.withLock { $0 = { slowed.store(true, ordering: .relaxed) } }
            let scope = ScopeRequest(path: tree, rules: Self.hidden)
            let retained = try engine.retain(scope, namesFirst: true)
            defer { engine.release(retained) }
            var storm = Storm(scope: tree.string, outside: outside.string, seed: seed)
            storm.run(operations: 1500)
            engine.waitUntilFilled()
            slowed.store(false, ordering: .relaxed)

            let query = Self.query(.alwaysTrue, tree, engine: engine)
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            try Self.expectConverges(query, recorder, tree, "seed \(seed)")
            // No entry is left without its attributes.
            let unread = engine.state.withLock { s in
                (0..<UInt32(s.index.slotCount)).filter { id in
                    s.index.contains(EntryID(id)) && !s.index.metadata(of: EntryID(id)).isStatted
                }.count
            }
            #expect(unread == 0)
            query.stop()
        }

        /// A file renamed and another made at its name between the moment
        /// the fill took the folder's unread names and the moment it read
        /// them: the file read is not the entry's (another inode than its
        /// listing's), so the entry is not given its attributes; the folder
        /// is listed again and both end with their own.
        @Test func aFileReplacedWhileItsFolderIsReadKeepsItsOwnAttributes() throws {
            let temp = try TemporaryDirectory()
            try temp.file("tree/d/a.txt", contents: String(repeating: "a", count: 10))
            try temp.file("tree/d/other.txt", contents: "o")
            let tree = temp.path.appending("tree")
            let folder = tree.appending("d").string
            let engine = try LiveEngine(crawlThreads: 1)
            defer { engine.shutdown() }
            let replaced = Atomic<Bool>(false)
            engine.fillHook.withLock {
                $0 = {
                    engine.crawlHook.withLock {
                        $0 = { id in
                            let isFolder = engine.state.withLock { $0.index.name(of: id) == Array("d".utf8) }
                            guard isFolder, !replaced.exchange(true, ordering: .relaxed) else { return }
                            rename(folder + "/a.txt", folder + "/b.txt")
                            let fd = open(folder + "/a.txt", O_WRONLY | O_CREAT, 0o644)
                            _ = write(fd, String(repeating: "n", count: 333), 333)
                            close(fd)
                        }
                    }
                }
            }
            let scope = ScopeRequest(path: tree, rules: Self.hidden)
            let retained = try engine.retain(scope, namesFirst: true)
            defer { engine.release(retained) }
            engine.waitUntilFilled()
            let flag = replaced.load(ordering: .relaxed)
            #expect(flag, "the fill read the folder")
            let query = Self.query(.alwaysTrue, tree, engine: engine)
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            try Self.expectConverges(query, recorder, tree, "replaced")
            #expect(query.results.first { $0.name == "b.txt" }?.metadata.size == 10)
            query.stop()
        }

        /// A count over one root while another root's first crawl is under
        /// way counts only the first root's entries (the entries gathered so
        /// far of the other are in the index too).
        @Test func aScopeCountsOnlyItsOwnEntriesWhileAnotherIsGathered() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<30 {
                try temp.file("a/f-\(i).txt")
                try temp.file("b/d\(i % 3)/g-\(i).txt")
            }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let first = ScopeRequest(path: temp.path.appending("a"), rules: ScopeRules())
            let retained = try engine.retain(first)
            defer { engine.release(retained) }
            let reached = ConditionLocked(0)
            let release = ConditionLocked(false)
            engine.crawlHook.withLock {
                $0 = { _ in
                    // Held at its second folder: some of the other root is in.
                    if reached.mutateAndBroadcast({
                        $0 += 1; return $0
                    }) == 2 {
                        _ = release.wait(until: { $0 }, deadline: .now + .seconds(60)) { _ in }
                    }
                }
            }
            let second = temp.path.appending("b")
            let other = Thread { _ = try? engine.retain(ScopeRequest(path: second, rules: ScopeRules())) }
            other.start()
            defer { release.mutateAndBroadcast { $0 = true } }
            _ = reached.wait(until: { $0 >= 2 }, deadline: .now + .seconds(20)) { _ in }
            #expect(engine.entryCount > 32, "some of the other root is gathered")
            let answer = try engine.answer(scopes: [first], predicate: .alwaysTrue, output: .count).get()
            #expect(answer.count == 30)
        }
    }
}
