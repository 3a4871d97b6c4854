import Foundation
import Glibc
import Synchronization
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

extension LiveSuites {
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct MetadataQueryTests {
        func makeQuery(_ predicate: String, in folder: FilePath, interval: Double = 0) throws -> MetadataQuery {
            let query = MetadataQuery()
            query.predicate = try MetadataPredicate(predicate)
            query.searchScopes = [.directory(folder)]
            query.notificationBatchingInterval = interval
            return query
        }

        /// Sorted results stay in order through a stream of live changes
        /// (inserted at their place, not re-sorted), with names compared
        /// like Finder and missing values first.
        @Test func sortedResultsStayOrderedThroughLiveChanges() throws {
            let temp = try TemporaryDirectory()
            var random = SeededGenerator(seed: 11)
            var names: [String] = []
            for i in 0..<40 {
                let name = ["file\(i).txt", "File\(i * 7).TXT", "a\(i)", "Z\(i).txt"][i % 4]
                try temp.file(name, contents: String(repeating: "x", count: Int.random(in: 0..<5, using: &random)))
                names.append(name)
            }
            try temp.file("sub/inner.txt")
            let query = try makeQuery("TRUEPREDICATE", in: temp.path)
            let descriptors = [
                MetadataSortDescriptor(key: "kMDItemFSSize", ascending: false),
                MetadataSortDescriptor(key: "kMDItemFSName"),
            ]
            query.sortDescriptors = descriptors
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            func ordered() -> Bool {
                let results = query.results
                let resorted = results.sorted(by: descriptors)
                return results.map(\.pathBytes) == resorted.map(\.pathBytes)
            }
            #expect(ordered())
            for step in 0..<200 {
                let name = names.randomElement(using: &random)!
                let path = temp.path.appending(name).string
                switch Int.random(in: 0..<4, using: &random) {
                case 0:
                    try temp.file(name, contents: String(repeating: "y", count: Int.random(in: 0..<6, using: &random)))
                case 1: unlink(path)
                case 2:
                    let renamed = "r\(step)-\(name)"
                    if rename(path, temp.path.appending(renamed).string) == 0 { names.append(renamed) }
                default: try temp.file("new\(step).txt", contents: "zz")
                }
            }
            // Quiet: the results are what a fresh crawl gives, in order.
            let expected = Set(try FileManager.default.subpathsOfDirectory(atPath: temp.path.string))
            #expect(
                recorder.wait {
                    Set(query.results.map { String($0.path.string.dropFirst(temp.path.string.count + 1)) }) == expected
                })
            #expect(ordered())
            for (i, item) in query.results.enumerated() { #expect(query.index(ofResult: item) == i) }
            // Folders have no size: missing values sort first ascending, so last descending.
            #expect(query.results.last?.kind == .folder)
            query.stop()
        }

        /// Value lists and grouped results follow the live results,
        /// including the tuple for items without a value.
        @Test func groupingAndValueListsStayCurrent() throws {
            let temp = try TemporaryDirectory()
            try temp.file("a.png", contents: "1")
            try temp.file("b.png", contents: "1")
            try temp.file("c.txt", contents: "22")
            try temp.file("photos/d.png", contents: "22")
            let query = try makeQuery("TRUEPREDICATE", in: temp.path)
            query.valueListAttributes = ["kMDItemContentType", "kMDItemFSSize"]
            query.groupingAttributes = ["kMDItemContentType", "kMDItemFSSize"]
            query.sortDescriptors = [MetadataSortDescriptor(key: "kMDItemFSName")]
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            func counts(_ attribute: String) -> [String: Int] {
                Dictionary(
                    uniqueKeysWithValues: (query.valueLists[attribute] ?? []).map {
                        ($0.value.map { "\($0)" } ?? "nil", $0.count)
                    })
            }
            #expect(counts("kMDItemContentType") == ["public.png": 3, "public.plain-text": 1, "public.folder": 1])
            #expect(counts("kMDItemFSSize") == ["1": 2, "2": 2, "nil": 1], "the folder has no size")
            let groups = query.groupedResults
            #expect(groups.map { $0.value as? String } == ["public.png", "public.plain-text", "public.folder"])
            let png = try #require(groups.first)
            #expect(png.resultCount == 3)
            #expect(png.subgroups?.map { $0.value as? Int } == [1, 2])
            #expect(png.subgroups?.first?.results.map(\.name) == ["a.png", "b.png"])
            try temp.file("e.txt", contents: "1")
            #expect(unlink(temp.path.appending("a.png").string) == 0)
            // Created then written: wait for the final size too.
            #expect(
                recorder.wait {
                    counts("kMDItemContentType") == ["public.png": 2, "public.plain-text": 2, "public.folder": 1]
                        && counts("kMDItemFSSize") == ["1": 2, "2": 2, "nil": 1]
                })
            #expect(query.groupedResults.first { $0.value as? String == "public.plain-text" }?.resultCount == 2)
            query.stop()
        }

        /// Excluded folder names leave out their contents, at any depth,
        /// also for files that appear later.
        @Test func excludedFoldersStayExcludedLive() throws {
            let temp = try TemporaryDirectory()
            try temp.file("src/main.js")
            try temp.file("src/node_modules/lib/index.js")
            let query = try makeQuery("kMDItemFSName LIKE '*.js'", in: temp.path)
            query.excludedFolderNames = ["node_modules"]
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            #expect(query.results.map(\.name) == ["main.js"])
            try temp.file("src/node_modules/lib/later.js")
            try temp.file("src/visible.js")
            #expect(recorder.wait { query.results.contains { $0.name == "visible.js" } })
            #expect(!query.results.contains { $0.name == "later.js" })
            query.stop()
        }

        /// A conflict copy appearing or going changes its original's
        /// `HasUnresolvedConflicts` flag, reported as a change, for both
        /// naming styles; the copy says what it conflicts with.
        @Test(arguments: [
            "report (conflicted copy 2025-01-31).txt", "report.sync-conflict-20250131-101112-ABCDEFG.txt",
        ])
        func conflictCopiesChangeTheirOriginalLive(copyName: String) throws {
            let temp = try TemporaryDirectory()
            try temp.file("report.txt")
            try temp.file("other.txt")
            let query = try makeQuery("kMDItemFSName LIKE '*.txt'", in: temp.path)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            func report() -> MetadataItem? { query.results.first { $0.name == "report.txt" } }
            #expect(report()?.hasUnresolvedConflicts == false)
            try temp.file(copyName)
            #expect(recorder.wait { report()?.hasUnresolvedConflicts == true })
            // The results change as their update is posted: let the post finish.
            query.deliveryQueue.sync {}
            #expect(recorder.updates.contains { $0.changed.contains { $0.name == "report.txt" } })
            let copy = query.results.first { $0.name == copyName }
            #expect(
                copy?.value(forAttribute: MetadataItem.conflictOriginalPathKey) as? String
                    == temp.path.appending("report.txt").string)
            #expect(query.results.first { $0.name == "other.txt" }?.hasUnresolvedConflicts == false)
            // Resolved: the copy is deleted.
            #expect(unlink(temp.path.appending(copyName).string) == 0)
            #expect(recorder.wait { report()?.hasUnresolvedConflicts == false })
            query.stop()
        }

        /// External document folders registered with a container persist in
        /// the user's state folder (another container value, as another
        /// process would make, sees them; nothing is written in the
        /// container) and are searched by the external documents scope.
        @Test func externalDocumentsAreRegisteredAndSearched() throws {
            let temp = try TemporaryDirectory()
            try temp.file("C/Documents/in.txt")
            try temp.file("Elsewhere/out.txt")
            let state = temp.path.appending("state")
            let container = UbiquityContainer(path: temp.path.appending("C"), stateDirectory: state)
            try container.registerExternalDocuments(temp.path.appending("Elsewhere"))
            try container.registerExternalDocuments(temp.path.appending("Elsewhere"))
            #expect(
                UbiquityContainer(path: temp.path.appending("C"), stateDirectory: state).externalDocumentFolders == [
                    temp.path.appending("Elsewhere")
                ])
            #expect(container.externalDocumentsRegistry.starts(with: state))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: temp.path.appending("C").string) == ["Documents"])
            #expect(throws: MetadataError.self) {
                try container.registerExternalDocuments(temp.path.appending("C/Documents"))
            }
            #expect(throws: MetadataError.self) { try container.registerExternalDocuments(temp.path.appending("nope")) }
            let query = MetadataQuery()
            query.predicate = try MetadataPredicate("kMDItemFSName LIKE '*.txt'")
            query.container = container
            query.searchScopes = [.ubiquitousDocuments, .accessibleExternalDocuments]
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            let byName = Dictionary(uniqueKeysWithValues: query.results.map { ($0.name, $0) })
            #expect(Set(byName.keys) == ["in.txt", "out.txt"])
            #expect(byName["out.txt"]?.value(forAttribute: MetadataItem.isExternalDocumentKey) as? Bool == true)
            #expect(byName["in.txt"]?.value(forAttribute: MetadataItem.isExternalDocumentKey) as? Bool == false)
            query.stop()
            try container.unregisterExternalDocuments(temp.path.appending("Elsewhere"))
            #expect(container.externalDocumentFolders.isEmpty)
        }

        /// Inside the query's container, items carry the ubiquitous keys of a
        /// fully synced local file.
        @Test func containerItemsCarryUbiquitousKeys() throws {
            let temp = try TemporaryDirectory()
            try temp.file("Documents/a.txt")
            let query = MetadataQuery()
            query.predicate = try MetadataPredicate("kMDItemFSName LIKE '*.txt'")
            query.container = UbiquityContainer(path: temp.path)
            query.searchScopes = [.ubiquitousDocuments]
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            let item = try #require(query.results.first)
            #expect(item.value(forAttribute: MetadataItem.isUbiquitousKey) as? Bool == true)
            #expect(
                item.value(forAttribute: MetadataItem.downloadingStatusKey) as? String
                    == MetadataItem.downloadingStatusCurrent)
            #expect(
                item.value(forAttribute: MetadataItem.containerDisplayNameKey) as? String
                    == temp.path.lastComponent?.string)
            query.stop()
        }

        @Test func startWithoutPredicateOrTwiceFails() throws {
            let temp = try TemporaryDirectory()
            let query = MetadataQuery()
            query.searchScopes = [.directory(temp.path)]
            #expect(query.start() == false)
            query.predicate = .alwaysTrue
            #expect(query.start())
            #expect(query.start() == false)
            query.stop()
        }

        @Test func notificationsComeInApplesOrder() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<50 { try temp.file("d\(i % 5)/f\(i).txt") }
            try temp.file("d0/skip.png")
            let query = try makeQuery("kMDItemFSName LIKE '*.txt'", in: temp.path)
            let recorder = QueryRecorder(query)
            #expect(query.start())
            // Did start gathering is posted before start() returns.
            #expect(recorder.kinds.first == .start)
            #expect(recorder.waitForFinish())
            #expect(query.resultCount == 50)
            #expect(!query.isGathering && query.isStarted)
            let kinds = recorder.kinds
            #expect(kinds.filter { $0 == .finish }.count == 1)
            let finishAt = kinds.firstIndex(of: .finish)!
            #expect(!kinds[finishAt...].contains(.progress), "progress only while gathering")
            #expect(!kinds[..<finishAt].contains(.update), "no update before finish")
            query.stop()
            #expect(query.isStopped)
            #expect(query.resultCount == 50, "results stay readable after stop")
        }

        @Test func liveUpdatesReportAddedChangedAndRemoved() throws {
            let temp = try TemporaryDirectory()
            try temp.file("a.txt")
            let query = try makeQuery("kMDItemFSName LIKE '*.txt'", in: temp.path)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            let base = temp.path.string

            try temp.file("sub/b.txt", contents: "new")
            #expect(recorder.wait { recorder.updates.flatMap(\.added).map(\.name).contains("b.txt") })
            #expect(recorder.resultNames(relativeTo: base) == ["a.txt", "sub/b.txt"])

            let before = recorder.updates.count
            try temp.file("sub/b.txt", contents: "written again, longer")
            // Truncate then write: one or two changes; wait for the last.
            #expect(
                recorder.wait {
                    recorder.updates.dropFirst(before).contains { $0.changed.contains { $0.name == "b.txt" } }
                        && query.results.first { $0.name == "b.txt" }?.metadata.size == 21
                }
            )

            // A rename that still matches is a change.
            let renamedAt = recorder.updates.count
            #expect(rename("\(base)/sub/b.txt", "\(base)/sub/c.txt") == 0)
            #expect(
                recorder.wait {
                    recorder.updates.dropFirst(renamedAt).contains { $0.changed.contains { $0.name == "c.txt" } }
                })
            #expect(recorder.resultNames(relativeTo: base) == ["a.txt", "sub/c.txt"])
            let renameUpdates = recorder.updates.dropFirst(renamedAt)
            #expect(renameUpdates.flatMap(\.changed).contains { $0.name == "c.txt" })
            #expect(!renameUpdates.flatMap(\.added).contains { $0.name == "c.txt" })

            // A rename that stops matching is a removal; one that starts, an addition.
            #expect(rename("\(base)/sub/c.txt", "\(base)/sub/c.bin") == 0)
            #expect(recorder.wait { recorder.resultNames(relativeTo: base) == ["a.txt"] })
            #expect(rename("\(base)/sub/c.bin", "\(base)/c.txt") == 0)
            #expect(recorder.wait { recorder.resultNames(relativeTo: base) == ["a.txt", "c.txt"] })

            #expect(unlink("\(base)/a.txt") == 0)
            #expect(recorder.wait { recorder.updates.flatMap(\.removed).contains { $0.name == "a.txt" } })
            #expect(recorder.resultNames(relativeTo: base) == ["c.txt"])
            query.stop()
        }

        /// A problem is reported once when found and once when it no
        /// longer holds (a scope folder gone, then back), with the error
        /// as it was reported, by notification and in `events`; `errors`
        /// is empty again.
        @Test func aProblemIsReportedOnceFoundAndOnceResolved() async throws {
            let temp = try TemporaryDirectory()
            try temp.file("scope/a.txt")
            let scope = temp.path.appending("scope")
            let query = try makeQuery("kMDItemFSName LIKE '*.txt'", in: scope)
            let notified = Locked<[(String, MetadataError)]>([])
            let center = NotificationCenter.default
            var tokens: [any NSObjectProtocol] = []
            for (name, kind) in [
                (Notification.Name.metadataQueryDidReportProblem, "reported"),
                (.metadataQueryDidResolveProblem, "resolved"),
            ] {
                tokens.append(
                    center.addObserver(forName: name, object: query, queue: nil) { note in
                        guard let error = note.userInfo?[MetadataQuery.problemKey] as? MetadataError else { return }
                        notified.withLock { $0.append((kind, error)) }
                    })
            }
            defer { for token in tokens { center.removeObserver(token) } }
            let events = query.events
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            #expect(rename(scope.string, temp.path.appending("away").string) == 0)
            #expect(waitUntil(timeout: 20) { notified.withLock { $0.count } == 1 })
            #expect(rename(temp.path.appending("away").string, scope.string) == 0)
            #expect(waitUntil(timeout: 20) { notified.withLock { $0.count } == 2 })
            let seen = notified.withLock { $0 }
            #expect(seen.map(\.0) == ["reported", "resolved"])
            #expect(seen.first?.1.code == .scopeNotFound && seen.first?.1.path == scope)
            #expect(seen.first?.1 == seen.last?.1, "resolved as it was reported")
            #expect(query.errors.isEmpty, "\(query.errors)")
            #expect(recorder.wait { recorder.resultNames(relativeTo: scope.string) == ["a.txt"] })
            query.stop()
            var kinds: [String] = []
            for await event in events {
                switch event {
                case .problem: kinds.append("reported")
                case .problemResolved: kinds.append("resolved")
                default: break
                }
            }
            #expect(kinds == ["reported", "resolved"])
            withExtendedLifetime(recorder) {}
        }

        @Test func createdThenDeletedWithinOneIntervalVanishes() throws {
            let temp = try TemporaryDirectory()
            let query = try makeQuery("kMDItemFSName LIKE '*'", in: temp.path, interval: 0.5)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            try temp.file("ephemeral.tmp")
            #expect(unlink(temp.path.appending("ephemeral.tmp").string) == 0)
            try temp.file("kept.txt")
            #expect(recorder.wait { !recorder.updates.isEmpty })
            let all = recorder.updates
            #expect(!all.flatMap(\.added).contains { $0.name == "ephemeral.tmp" })
            #expect(!all.flatMap(\.removed).contains { $0.name == "ephemeral.tmp" })
            #expect(all.flatMap(\.added).contains { $0.name == "kept.txt" })
            query.stop()
        }

        @Test func disabledUpdatesFreezeResultsAndDeliverOneMergedUpdate() throws {
            let temp = try TemporaryDirectory()
            try temp.file("keep.txt")
            try temp.file("doomed.txt")
            let query = try makeQuery("kMDItemFSName LIKE '*.txt'", in: temp.path)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            let base = temp.path.string
            query.disableUpdates()
            query.disableUpdates()
            try temp.file("new.txt")
            #expect(unlink("\(base)/doomed.txt") == 0)
            try temp.file("keep.txt", contents: "edited")
            try temp.file("flash.txt")
            #expect(unlink("\(base)/flash.txt") == 0)
            // The engine applied and told all four changes (whatever batches
            // they came in), the query took them all; its results must not
            // move.
            let engine = try LiveEngine.shared()
            #expect(
                recorder.wait {
                    let told = engine.state.withLock { state in
                        state.changes.isEmpty
                            && state.index.count(
                                matching: try! MetadataPredicate(
                                    "kMDItemFSName == 'new.txt' OR (kMDItemFSName == 'keep.txt' AND kMDItemFSSize == 6)"
                                ))
                                == 2
                            && state.index.count(
                                matching: try! MetadataPredicate("kMDItemFSName IN {'doomed.txt', 'flash.txt'}")) == 0
                    }
                    let taken = query.state.withLock { $0.subscription?.isEmpty ?? false }
                    let current = query.state.withLock { $0.results.currentItems() }
                    return told && taken && Set(current.map(\.name)) == ["keep.txt", "new.txt"]
                })
            #expect(recorder.resultNames(relativeTo: base) == ["keep.txt", "doomed.txt"])
            #expect(recorder.updates.isEmpty)
            query.enableUpdates()
            #expect(recorder.updates.isEmpty, "still disabled once")
            #expect(recorder.resultNames(relativeTo: base) == ["keep.txt", "doomed.txt"])
            query.enableUpdates()
            query.enableUpdates()  // extra: ignored
            #expect(recorder.wait { recorder.updates.count >= 1 })
            #expect(recorder.resultNames(relativeTo: base) == ["keep.txt", "new.txt"])
            let merged = recorder.updates[0]
            #expect(merged.added.map(\.name) == ["new.txt"])
            #expect(merged.removed.map(\.name) == ["doomed.txt"])
            #expect(merged.changed.map(\.name) == ["keep.txt"])
            query.stop()
        }

        @Test func stopDuringGatheringPostsNothingMore() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<3000 { try temp.file("f\(i % 30)/x\(i)") }
            // A second query on the same folder tells when the engine has seen a change.
            let witness = try makeQuery("kMDItemFSName == 'after-stop'", in: temp.path)
            let witnessRecorder = QueryRecorder(witness)
            witness.start()
            #expect(witnessRecorder.waitForFinish())

            let query = try makeQuery("TRUEPREDICATE", in: temp.path)
            let recorder = QueryRecorder(query)
            query.start()
            query.stop()
            let count = recorder.records.withLock { $0.count }
            #expect(!recorder.kinds.contains(.finish), "no finish after a stop during gathering")
            try temp.file("after-stop")
            #expect(witnessRecorder.wait { witness.resultCount == 1 })
            // Anything the stopped query would post is posted by now.
            query.deliveryQueue.sync {}
            #expect(recorder.records.withLock { $0.count } == count)
            // Start again: a new cycle.
            #expect(query.start())
            #expect(recorder.wait(timeout: 30) { recorder.kinds.filter { $0 == .finish }.count == 1 })
            #expect(query.resultCount == 3031)
            query.stop()
            witness.stop()
        }

        @Test func changingThePredicateRestartsTheQuery() throws {
            let temp = try TemporaryDirectory()
            try temp.file("a.txt")
            try temp.file("b.png")
            let query = try makeQuery("kMDItemFSName LIKE '*.txt'", in: temp.path)
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            query.predicate = try MetadataPredicate("kMDItemFSName LIKE '*.png'")
            #expect(recorder.wait { recorder.kinds.filter { $0 == .finish }.count == 2 })
            #expect(recorder.kinds.filter { $0 == .start }.count == 2)
            #expect(recorder.resultNames(relativeTo: temp.path.string) == ["b.png"])
            query.stop()
        }

        @Test func deliversOnTheOperationQueueInSortedOrder() throws {
            let temp = try TemporaryDirectory()
            for name in ["file10.txt", "File2.txt", "file1.txt"] { try temp.file(name) }
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            queue.name = "mdq-test-delivery"
            let query = try makeQuery("kMDItemFSName LIKE[c] '*.txt'", in: temp.path)
            query.operationQueue = queue
            query.sortDescriptors = [MetadataSortDescriptor(key: "kMDItemFSName")]
            let onQueue = Locked<[Bool]>([])
            let token = NotificationCenter.default.addObserver(forName: nil, object: query, queue: nil) { _ in
                onQueue.withLock { $0.append(OperationQueue.current === queue) }
            }
            defer { NotificationCenter.default.removeObserver(token) }
            let recorder = QueryRecorder(query)
            query.start()
            #expect(recorder.waitForFinish())
            #expect(query.results.map(\.name) == ["file1.txt", "File2.txt", "file10.txt"])
            try temp.file("file3.txt")
            #expect(recorder.wait { query.resultCount == 4 })
            #expect(query.results.map(\.name) == ["file1.txt", "File2.txt", "file3.txt", "file10.txt"])
            #expect(query.index(ofResult: query.results[2]) == 2)
            #expect(query.value(ofAttribute: "kMDItemFSName", forResultAt: 3) as? String == "file10.txt")
            query.stop()
            #expect(!onQueue.withLock { $0 }.isEmpty)
            #expect(onQueue.withLock { $0 }.allSatisfy { $0 }, "every notification on the operation queue")
        }

        @Test func eventsAsyncSequence() async throws {
            let temp = try TemporaryDirectory()
            try temp.file("a.txt")
            let query = try makeQuery("kMDItemFSName LIKE '*.txt'", in: temp.path)
            let stream = query.events
            query.start()
            var seen: [MetadataQuery.Event] = []
            for await event in stream {
                seen.append(event)
                if case .didFinishGathering = event {
                    try temp.file("b.txt")
                }
                if case .didUpdate(let update) = event, update.added.contains(where: { $0.name == "b.txt" }) { break }
            }
            #expect(seen.first == .didStartGathering)
            #expect(seen.contains(.didFinishGathering(resultCount: 1)))
            query.stop()
        }
    }
}
