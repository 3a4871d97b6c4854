import CInotifyTools
import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MDQWatch
@testable import MetadataIndex

/// After the filesystem goes quiet, every live query equals a fresh crawl.
extension LiveSuites {
    @Suite(.serialized, .timeLimit(.minutes(5)))
    struct LiveConvergenceTests {
        func paths(_ query: MetadataQuery) -> Set<String> {
            Set(query.results.map { String(decoding: $0.pathBytes, as: UTF8.self) })
        }

        /// Starts a query and waits for its first results.
        func startQuery(
            _ predicate: String, scopes: [SearchScope], engine: LiveEngine? = nil, container: UbiquityContainer? = nil
        ) throws -> (MetadataQuery, QueryRecorder) {
            let query = engine.map { engine in MetadataQuery(engineProvider: { engine }) } ?? MetadataQuery()
            query.predicate = try MetadataPredicate(predicate)
            query.searchScopes = scopes
            query.container = container
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            return (query, recorder)
        }

        /// Replays the updates on the first results (see `replay`): no
        /// problem, and the end state is the query's results, attributes
        /// included.
        func expectConsistentUpdates(_ recorder: QueryRecorder, initial: [MetadataItem], final: [MetadataItem]) {
            let (problems, state) = replay(recorder.deliveredUpdates, on: initial)
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            #expect(Set(state.keys) == Set(final.map(\.id)))
            for item in final {
                #expect(state[item.id]?.hasSameAttributes(as: item) == true, "replayed state differs: \(item.path)")
            }
        }

        /// Seeds of the storm test: 1...5 in the suite, or `MDQ_STORM_SEEDS`
        /// (a count, or `first-last`) for longer runs (`Scripts/storm`).
        static let stormSeeds: [UInt64] = {
            let text = ProcessInfo.processInfo.environment["MDQ_STORM_SEEDS"] ?? "5"
            let bounds = text.split(separator: "-").compactMap { UInt64($0) }
            if bounds.count == 2 { return Array(bounds[0]...max(bounds[0], bounds[1])) }
            return Array(1...max(1, bounds.first ?? 20))
        }()
        /// Operations per seed: 5,000, or `MDQ_STORM_OPS`.
        static let stormOperations = Int(ProcessInfo.processInfo.environment["MDQ_STORM_OPS"] ?? "") ?? 5000

        /// A seeded storm in a container (atomic saves, writes, moves between
        /// Documents and the rest, in and out of it, folder trees renamed
        /// deep down, files replaced by folders, symlinks and loops) under
        /// four live queries with different predicates, scopes and hidden
        /// rules. Once the disk is quiet, each query equals a fresh crawl in
        /// every path and every attribute (folders' dates included), and its
        /// updates replay to that state (see `replay`).
        @Test(arguments: stormSeeds)
        func seededStormConverges(seed: UInt64) throws {
            let temp = try TemporaryDirectory()
            let root = try temp.folder("container")
            let outside = try temp.folder("outside")
            for i in 0..<40 { try temp.file("container/\(i % 2 == 0 ? "Documents/" : "")pre\(i % 4)/f\(i).txt") }
            let container = UbiquityContainer(path: root)
            // The ubiquitous scopes report hidden items (Apple's default);
            // the folder scope does not.
            let cases: [(text: String, scopes: [SearchScope], hidden: Bool)] = [
                ("TRUEPREDICATE", [.directory(root)], false),
                ("kMDItemFSName LIKE[c] '*.txt'", [.ubiquitousDocuments], true),
                ("kMDItemPath CONTAINS '/docs' OR kMDItemFSName ENDSWITH '.png'", [.ubiquitousData], true),
                (
                    "kMDItemFSName BEGINSWITH[cd] 'in-' OR kMDItemFSSize > 10",
                    [.ubiquitousDocuments, .ubiquitousData], true
                ),
            ]
            var queries: [(MetadataQuery, QueryRecorder, [MetadataItem])] = []
            for (text, scopes, _) in cases {
                let (query, recorder) = try startQuery(text, scopes: scopes, container: container)
                queries.append((query, recorder, recorder.initialResults))
            }
            var storm = Storm(scope: root.string, outside: outside.string, seed: seed, protected: ["Documents"])
            storm.run(operations: Self.stormOperations)
            for ((query, recorder, initial), (text, scopes, hidden)) in zip(queries, cases) {
                let roots = scopes.flatMap { scope -> [CrawlRoot] in
                    if let path = scope.directory { return [CrawlRoot(path: path)] }
                    return container.crawlRoots(for: Set(scopes.filter { $0.directory == nil }))
                }
                let predicate = try MetadataPredicate(text)
                var differences: [String] = []
                let converged = recorder.wait(timeout: 30) {
                    guard
                        let fresh = try? freshItems(
                            roots: CrawlRoot.removingOverlaps(roots), predicate, hidden: hidden, container: container)
                    else { return false }
                    differences = attributeDifferences(query.results, fresh)
                    return differences.isEmpty
                }
                #expect(converged, "seed \(seed) \(text): \(differences.prefix(5))")
                query.deliveryQueue.sync {}
                if Set(initial) != Set(query.results) {
                    #expect(!recorder.updates.isEmpty, "results changed with no update: \(text)")
                }
                expectConsistentUpdates(recorder, initial: initial, final: query.results)
                #expect(query.errors.isEmpty, "\(query.errors)")
                query.stop()
            }
        }

        @Test func updatesAreConsistentThroughAStorm() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            let outside = try temp.folder("outside")
            let (query, recorder) = try startQuery("kMDItemFSName LIKE '*.txt'", scopes: [.directory(scope)])
            let initial = recorder.initialResults
            var storm = Storm(scope: scope.string, outside: outside.string, seed: 5)
            storm.run(operations: 2000)
            let expected = try freshCrawl(scope, try MetadataPredicate("kMDItemFSName LIKE '*.txt'"))
            let converged = recorder.wait(timeout: 60) { paths(query) == expected }
            if !converged {
                let actual = paths(query)
                FileHandle.standardError.write(
                    Data(
                        "STATE consistency: missing \(expected.subtracting(actual).sorted().prefix(5)) extra \(actual.subtracting(expected).sorted().prefix(5))\n"
                            .utf8))
            }
            #expect(converged)
            query.deliveryQueue.sync {}
            expectConsistentUpdates(recorder, initial: initial, final: query.results)
            query.stop()
        }

        @Test func filesCreatedInNewFoldersAreNeverMissed() throws {
            let temp = try TemporaryDirectory()
            let (query, recorder) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)])
            var expected = 0
            for round in 0..<60 {
                let folder = temp.path.appending("new\(round)/inner").string
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                for i in 0..<20 {
                    let fd = open(folder + "/f\(i)", O_WRONLY | O_CREAT, 0o644)
                    close(fd)
                }
                expected += 22
            }
            #expect(recorder.wait(timeout: 30) { query.resultCount == expected })
            #expect(paths(query) == (try freshCrawl(temp.path, .alwaysTrue)))
            query.stop()
        }

        @Test func folderTreesRenamedAndMovedAcrossTheScopeBoundary() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            for i in 0..<30 { try temp.file("scope/tree/a/b/f\(i).txt") }
            for i in 0..<10 { try temp.file("outside/incoming/g\(i).txt") }
            let (query, recorder) = try startQuery("kMDItemFSName LIKE '*.txt'", scopes: [.directory(scope)])
            #expect(query.resultCount == 30)
            let base = scope.string
            // Rename the tree: every file is changed (its path moved), none added or removed.
            let before = recorder.updates.count
            #expect(rename("\(base)/tree", "\(base)/renamed") == 0)
            #expect(
                recorder.wait {
                    paths(query).allSatisfy { $0.hasPrefix("\(base)/renamed/a/b/") } && query.resultCount == 30
                })
            // The results change as their update is posted: let the post finish.
            query.deliveryQueue.sync {}
            let renameUpdates = recorder.updates.dropFirst(before)
            #expect(renameUpdates.flatMap(\.changed).count == 30)
            #expect(renameUpdates.flatMap(\.added).isEmpty && renameUpdates.flatMap(\.removed).isEmpty)
            // Out of scope: removed. Back in: added, and watched again.
            #expect(rename("\(base)/renamed", temp.path.appending("outside/gone").string) == 0)
            #expect(recorder.wait { query.resultCount == 0 })
            #expect(rename(temp.path.appending("outside/incoming").string, "\(base)/incoming") == 0)
            #expect(recorder.wait { query.resultCount == 10 })
            try temp.file("scope/incoming/late.txt")
            #expect(recorder.wait { query.resultCount == 11 })
            // Changes in the moved-out tree are not ours any more.
            try temp.file("outside/gone/a/b/ignored.txt")
            #expect(paths(query) == (try freshCrawl(scope, try MetadataPredicate("kMDItemFSName LIKE '*.txt'"))))
            query.stop()
        }

        @Test func documentsAndDataScopesTradeFilesLive() throws {
            let temp = try TemporaryDirectory()
            try temp.file("Documents/report.txt")
            try temp.file("Library/cache.txt")
            let container = UbiquityContainer(path: temp.path)
            let (documents, documentsRecorder) = try startQuery(
                "TRUEPREDICATE", scopes: [.ubiquitousDocuments], container: container)
            let (data, dataRecorder) = try startQuery("TRUEPREDICATE", scopes: [.ubiquitousData], container: container)
            #expect(documents.results.map(\.name) == ["report.txt"])
            #expect(Set(data.results.map(\.name)) == ["Library", "cache.txt"])
            #expect(
                rename(temp.path.appending("Documents/report.txt").string, temp.path.appending("report.txt").string)
                    == 0)
            #expect(documentsRecorder.wait { documents.resultCount == 0 })
            #expect(dataRecorder.wait { data.results.contains { $0.name == "report.txt" } })
            documents.stop()
            data.stop()
        }

        @Test func overflowIsReconciled() throws {
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let temp = try TemporaryDirectory()
            try temp.file("survivor.txt")
            try temp.file("victim.txt")
            try temp.folder("burst")
            let (query, recorder) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            let initial = recorder.initialResults
            let folder = temp.path.appending("burst").string
            let gate = try #require(engine.watcher as? InotifyWatcher).pauseReading()
            // More events in a watched folder than the kernel queues (16,384 by
            // default): each file is a CREATE and a CLOSE_WRITE.
            for i in 0..<9000 {
                let path = folder + "/f\(i)"
                close(open(path, O_WRONLY | O_CREAT, 0o644))
                if i % 3 == 0 { unlink(path) }
            }
            unlink(temp.path.appending("victim.txt").string)
            gate.finish(.success(0))
            let expected = try freshCrawl(temp.path, .alwaysTrue)
            #expect(recorder.wait(timeout: 60) { paths(query) == expected })
            #expect(!paths(query).contains(temp.path.appending("victim.txt").string))
            #expect(engine.rescanCount >= 1, "the queue overflowed and was reconciled")
            // The updates carry exactly the net difference: the 6,000 files
            // that stayed, the victim; nothing created and deleted during
            // the burst, nothing twice.
            query.deliveryQueue.sync {}
            expectConsistentUpdates(recorder, initial: initial, final: query.results)
            let added = recorder.updates.flatMap(\.added).map(\.name)
            #expect(added.count == 6000)
            #expect(Set(added) == Set((0..<9000).filter { $0 % 3 != 0 }.map { "f\($0)" }))
            #expect(recorder.updates.flatMap(\.removed).map(\.name) == ["victim.txt"])
            #expect(
                recorder.updates.flatMap(\.changed).allSatisfy {
                    $0.name == "burst" || $0.name == temp.path.lastComponent?.string
                })
            query.stop()
        }

        /// Folders made and deleted over and over leave no watch behind:
        /// the kernel drops each (IN_IGNORED), the engine forgets it, and
        /// libinotifytools holds no record of any.
        @Test func churnedFoldersLeaveNoWatchesBehind() throws {
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let temp = try TemporaryDirectory()
            let (query, recorder) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            #expect(engine.watchCount == 1)
            for round in 0..<5 {
                for i in 0..<10 { try temp.folder("churn\(round)-\(i)/inner") }
                #expect(recorder.wait { query.resultCount == 20 && engine.watchCount == 21 })
                for i in 0..<10 {
                    try FileManager.default.removeItem(atPath: temp.path.appending("churn\(round)-\(i)").string)
                }
                #expect(recorder.wait { query.resultCount == 0 && engine.watchCount == 1 })
            }
            #expect(inotifytools_get_num_watches() == 0, "libinotifytools keeps no per-watch records")
            // Still live.
            try temp.file("after/churn.txt")
            #expect(
                recorder.wait { paths(query) == (try! freshCrawl(temp.path, .alwaysTrue)) && query.resultCount == 2 })
            query.stop()
        }

        @Test func watchLimitMakesTheQueryIncompleteWithAClearError() throws {
            let engine = try LiveEngine(watchLimit: 3, crawlThreads: 2)
            defer { engine.shutdown() }
            let temp = try TemporaryDirectory()
            for i in 0..<8 { try temp.file("d\(i)/f.txt") }
            let (query, _) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            // What was crawled is there; the query says it is not fully live.
            #expect(query.resultCount == 16)
            let errors = query.errors
            #expect(errors.count == 1)
            #expect(errors.first?.message.contains("/proc/sys/fs/inotify/max_user_watches") == true)
            #expect(errors.first?.message.contains("incomplete") == true)
            #expect(errors.first?.underlying == .noSpace)
            #expect(errors.first?.message.contains("these scopes need about 9") == true, "\(errors)")
            query.stop()
            // Raised, and the query restarted: complete and live.
            engine.setWatchLimit(nil)
            let (again, recorder) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            #expect(again.resultCount == 16)
            #expect(again.errors.isEmpty, "\(again.errors)")
            #expect(engine.watchCount == 9)
            try temp.file("d7/new.txt")
            #expect(recorder.wait { again.resultCount == 17 })
            again.stop()
        }

        /// The real kernel limit, lowered just below what a tree needs: the
        /// same clear error, and full service once it is raised again. Only
        /// as root and when asked (`MDQ_REAL_WATCH_LIMIT=1`): it changes a
        /// system-wide setting for a moment (restored even on failure).
        @Test(
            .enabled(if: getuid() == 0 && ProcessInfo.processInfo.environment["MDQ_REAL_WATCH_LIMIT"] == "1"))
        func realWatchLimitExhaustion() throws {
            let setting = "/proc/sys/fs/inotify/max_user_watches"
            let original = try String(contentsOfFile: setting, encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            defer { try? original.write(toFile: setting, atomically: false, encoding: .utf8) }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let temp = try TemporaryDirectory()
            for i in 0..<30 { try temp.file("d\(i)/f.txt") }
            // Every watch the user holds now (all processes), plus 10.
            let inUse = Self.inotifyWatchesInUse()
            try String(inUse + 10).write(toFile: setting, atomically: false, encoding: .utf8)
            let (query, _) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            try original.write(toFile: setting, atomically: false, encoding: .utf8)
            #expect(query.resultCount == 60, "everything crawled is still reported")
            let error = try #require(query.errors.first)
            #expect(error.underlying == .noSpace)
            #expect(error.message.contains("inotify watch limit \(original) in \(setting)"), "\(error.message)")
            #expect(error.message.contains("these scopes need about 31"), "\(error.message)")
            query.stop()
            let (again, recorder) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            #expect(again.errors.isEmpty, "\(again.errors)")
            #expect(engine.watchCount == 31)
            try temp.file("d29/new.txt")
            #expect(recorder.wait { again.resultCount == 61 })
            again.stop()
        }

        /// Watches held by this user's processes, from /proc/*/fdinfo.
        static func inotifyWatchesInUse() -> Int {
            var count = 0
            let uid = getuid()
            for process in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            where Int(process) != nil {
                var info = stat()
                guard stat("/proc/\(process)", &info) == 0, info.st_uid == uid,
                    let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process)/fdinfo")
                else { continue }
                for descriptor in descriptors {
                    guard
                        let text = try? String(contentsOfFile: "/proc/\(process)/fdinfo/\(descriptor)", encoding: .utf8)
                    else { continue }
                    count += text.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
                }
            }
            return count
        }

        @Test func aScopeRootDeletedAndRecreatedIsReportedAndRecovers() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            try temp.file("scope/a.txt")
            let (query, recorder) = try startQuery("TRUEPREDICATE", scopes: [.directory(scope)])
            #expect(query.resultCount == 1)
            try FileManager.default.removeItem(atPath: scope.string)
            #expect(recorder.wait { recorder.updates.flatMap(\.removed).contains { $0.name == "a.txt" } })
            #expect(query.resultCount == 0)
            try temp.file("scope/b.txt")
            #expect(recorder.wait { query.results.map(\.name) == ["b.txt"] })
            // Moved away and back.
            #expect(rename(scope.string, temp.path.appending("away").string) == 0)
            #expect(recorder.wait { query.resultCount == 0 })
            #expect(rename(temp.path.appending("away").string, scope.string) == 0)
            #expect(recorder.wait { query.results.map(\.name) == ["b.txt"] })
            try temp.file("scope/c.txt")
            #expect(recorder.wait { query.resultCount == 2 })
            query.stop()
        }

        @Test func overlappingQueriesShareOneIndexAndWatches() throws {
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let temp = try TemporaryDirectory()
            for i in 0..<5 { try temp.file("Documents/d\(i)/f.txt") }
            try temp.file("Library/x.txt")
            let (inner, innerRecorder) = try startQuery(
                "TRUEPREDICATE", scopes: [.directory(temp.path.appending("Documents"))], engine: engine)
            let watchesForInner = engine.watchCount
            let (outer, outerRecorder) = try startQuery(
                "TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            // The outer scope adds only the folders the inner one lacked.
            #expect(engine.watchCount == watchesForInner + 2)
            #expect(inner.resultCount == 10)
            #expect(outer.resultCount == 13)
            try temp.file("Documents/d0/new.txt")
            #expect(innerRecorder.wait { inner.resultCount == 11 })
            #expect(outerRecorder.wait { outer.resultCount == 14 })
            let (third, _) = try startQuery(
                "TRUEPREDICATE", scopes: [.directory(temp.path.appending("Documents/d1"))], engine: engine)
            #expect(third.resultCount == 1)
            #expect(engine.watchCount == watchesForInner + 2)
            inner.stop()
            outer.stop()
            third.stop()
            // Nobody needs the watches any more.
            #expect(innerRecorder.wait { engine.watchCount == 0 })
        }
    }
}
