import CInotifyTools
import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

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
            _ predicate: String, scopes: [SearchScope], engine: LiveIndex? = nil, container: UbiquityContainer? = nil
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

        /// Replays the updates on the first results, by identity: a removal or
        /// change names a current result, an addition a new one; the end state
        /// is the query's results.
        func expectConsistentUpdates(_ recorder: QueryRecorder, initial: [MetadataItem], final: [MetadataItem]) {
            var state = Set(initial)
            for update in recorder.updates {
                for item in update.removed {
                    #expect(state.remove(item) != nil, "removed something not there: \(item)")
                }
                for item in update.changed { #expect(state.contains(item), "changed something not there: \(item)") }
                for item in update.added { #expect(state.insert(item).inserted, "added twice: \(item)") }
            }
            #expect(state == Set(final))
        }

        @Test(arguments: Array(1...8) as [UInt64])
        func seededStormConverges(seed: UInt64) throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            let outside = try temp.folder("outside")
            for i in 0..<40 { try temp.file("scope/pre\(i % 4)/f\(i).txt") }
            let predicates = ["TRUEPREDICATE", "kMDItemFSName LIKE[c] '*.txt'", "kMDItemPath CONTAINS '/docs'"]
            var queries: [(MetadataQuery, QueryRecorder, MetadataPredicate)] = []
            for text in predicates {
                let (query, recorder) = try startQuery(text, scopes: [.directory(scope)])
                queries.append((query, recorder, try MetadataPredicate(text)))
            }
            var storm = Storm(scope: scope.string, outside: outside.string, seed: seed)
            storm.run(operations: 5000)
            for (query, recorder, predicate) in queries {
                let expected = try freshCrawl(scope, predicate)
                let converged = recorder.wait(timeout: 10) { paths(query) == expected }
                let actual = paths(query)
                if !converged {
                    print(
                        "DIFF seed \(seed) \(predicate): missing", expected.subtracting(actual).sorted().prefix(8),
                        "extra",
                        actual.subtracting(expected).sorted().prefix(8))
                    let engine = try LiveIndex.shared()
                    var report = ""
                    engine.lock.withLock {
                        let root = engine.topRoots.first { $0.value.crawlRoot.path == scope }
                        report +=
                            "STATE audits found \(engine.auditFindings) needsAudit \(engine.needsAudit) unwatchable \(engine.unwatchable.count) dirty \(engine.dirtyFolders.count) listing \(engine.listing.count) "
                        report +=
                            "deferred \(engine.deferred.count) rescans \(engine.rescanCount) root \(root.map { "\($0.key) missing \($0.value.missing)" } ?? "none")\n"
                        for missing in expected.subtracting(actual).sorted().prefix(3) {
                            // Walk the index along the missing path to see where it stops.
                            var current = root.map { EntryID($0.key) }
                            var walked = ""
                            for part in missing.dropFirst(scope.string.count + 1).split(separator: "/") {
                                guard let at = current, let next = engine.index.child(named: Array(part.utf8), in: at)
                                else {
                                    walked += " [\(part) absent]"
                                    break
                                }
                                walked +=
                                    " \(part)#\(next.rawValue)(\(engine.index.kind(of: next)) watch \(engine.folderToWatch[next.rawValue].map(String.init) ?? "-"), dirty \(engine.dirtyFolders.contains(next.rawValue)), inode \(engine.index.metadata(of: next).inode))"
                                current = next
                            }
                            report += "STATE \(missing):\(walked)\n"
                        }
                    }
                    var info = stat()
                    lstat(scope.appending("z2").string, &info)
                    report += "STATE disk z2 inode \(info.st_ino) mode \(String(info.st_mode, radix: 8))\n"
                    FileHandle.standardError.write(Data(report.utf8))
                }
                #expect(
                    converged,
                    "seed \(seed) \(predicate): missing \(expected.subtracting(actual).sorted().prefix(5)), extra \(actual.subtracting(expected).sorted().prefix(5))"
                )
                query.stop()
            }
        }

        @Test func updatesAreConsistentThroughAStorm() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            let outside = try temp.folder("outside")
            let (query, recorder) = try startQuery("kMDItemFSName LIKE '*.txt'", scopes: [.directory(scope)])
            let initial = query.results
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
            let engine = try LiveIndex(crawlThreads: 2)
            defer { engine.shutdown() }
            let temp = try TemporaryDirectory()
            try temp.file("survivor.txt")
            try temp.file("victim.txt")
            try temp.folder("burst")
            let (query, recorder) = try startQuery("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            let folder = temp.path.appending("burst").string
            let gate = engine.watcher.pauseReading()
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
            #expect(engine.lock.withLock { engine.rescanCount } >= 1, "the queue overflowed and was reconciled")
            query.stop()
        }

        /// Folders made and deleted over and over leave no watch behind:
        /// the kernel drops each (IN_IGNORED), the engine forgets it, and
        /// libinotifytools holds no record of any.
        @Test func churnedFoldersLeaveNoWatchesBehind() throws {
            let engine = try LiveIndex(crawlThreads: 2)
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
            let engine = try LiveIndex(watchLimit: 3, crawlThreads: 2)
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
            query.stop()
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
            let engine = try LiveIndex(crawlThreads: 2)
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
