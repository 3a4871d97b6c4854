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
@testable import MetadataIndex

extension LiveSuites {
    /// Queries started while another query's scope is still being gathered:
    /// each must gather the complete set, then hear of every later change,
    /// whatever point of the other's crawl it started at.
    ///
    /// The first query's crawl is slowed on purpose (a pause in every
    /// folder's listing), and the second starts after a different number
    /// of the first's folders in every run, from before its first listing
    /// to after its end.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct ConcurrentGatheringTests {
        /// How the two scopes relate.
        enum Layout: String, CaseIterable, CustomTestStringConvertible {
            /// Both on the container.
            case same
            /// The first on the container, the second on its Documents.
            case innerSecond
            /// The first on Documents, the second on the container.
            case outerSecond
            /// The first kept live without a subscription (the daemon's
            /// `index add`), the second a subscription on the same folder.
            case retainedFirst
            /// The second needs looser rules (hidden entries) than the
            /// first's: what they admit is crawled for it.
            case looserSecond

            var testDescription: String { rawValue }
        }

        static let folders = 8
        static let filesPerFolder = 6

        /// A container with Documents and Data, `folders` folders in each
        /// half, hidden entries among them.
        static func makeTree(in temp: TemporaryDirectory) throws -> FilePath {
            let container = try temp.folder("container")
            for half in ["Documents", "Data"] {
                for f in 0..<folders / 2 {
                    for i in 0..<filesPerFolder { try temp.file("container/\(half)/d\(f)/f\(i).txt", contents: "x") }
                    try temp.file("container/\(half)/d\(f)/.hidden\(f)")
                }
            }
            return container
        }

        @Test(arguments: Layout.allCases)
        func aSecondQueryGathersEverythingAndStaysLive(layout: Layout) throws {
            let predicate = try MetadataPredicate("kMDItemFSName LIKE '*'")
            // Folders the first crawl lists: the container's own, the two
            // halves, and every folder inside (one half for Documents).
            let firstListings = layout == .outerSecond ? 1 + Self.folders / 2 : 3 + Self.folders
            for run in 0...(firstListings + 1) {
                let temp = try TemporaryDirectory()
                let container = try Self.makeTree(in: temp)
                let documents = container.appending("Documents")
                let (first, second): (ScopeRequest, ScopeRequest)
                switch layout {
                case .same, .retainedFirst:
                    (first, second) = (
                        ScopeRequest(path: container, rules: ScopeRules()),
                        ScopeRequest(path: container, rules: ScopeRules())
                    )
                case .innerSecond:
                    (first, second) = (
                        ScopeRequest(path: container, rules: ScopeRules()),
                        ScopeRequest(path: documents, rules: ScopeRules())
                    )
                case .outerSecond:
                    (first, second) = (
                        ScopeRequest(path: documents, rules: ScopeRules()),
                        ScopeRequest(path: container, rules: ScopeRules())
                    )
                case .looserSecond:
                    (first, second) = (
                        ScopeRequest(path: container, rules: ScopeRules()),
                        ScopeRequest(path: container, rules: ScopeRules(includeHidden: true))
                    )
                }
                let engine = try LiveEngine(crawlThreads: 2)
                defer { engine.shutdown() }
                // The first crawl pauses in every listing; `run` listings
                // in, the second query starts (past the end: after it).
                let listed = ConditionLocked(0)
                engine.crawlHook.withLock {
                    $0 = { _ in
                        listed.mutateAndBroadcast { $0 += 1 }
                        usleep(3_000)
                    }
                }
                let firstResult = Locked<Subscription?>(nil)
                let firstDone = ConditionLocked(false)
                let thread = Thread {
                    if layout == .retainedFirst {
                        _ = try? engine.retain(first)
                    } else {
                        let (subscription, _) = engine.subscribe(scopes: [first], predicate: predicate, wake: {})
                        firstResult.withLock { $0 = subscription }
                    }
                    firstDone.mutateAndBroadcast { $0 = true }
                }
                thread.start()
                if run <= firstListings {
                    listed.wait(until: { $0 >= run }, deadline: .now + .seconds(30)) { _ in }
                } else {
                    firstDone.wait(until: { $0 }, deadline: .now + .seconds(30)) { _ in }
                }
                let (secondSubscription, errors) = engine.subscribe(
                    scopes: [second], predicate: predicate, wake: {})
                #expect(errors.isEmpty)
                firstDone.wait(until: { $0 }, deadline: .now + .seconds(30)) { _ in }
                engine.crawlHook.withLock { $0 = nil }

                var subscriptions = [(second, secondSubscription, "second")]
                if let firstSubscription = firstResult.withLock({ $0 }) {
                    subscriptions.append((first, firstSubscription, "first"))
                }
                var tracked: [(ScopeRequest, Subscription, String, Tracker)] = []
                for (scope, subscription, label) in subscriptions {
                    var tracker = Tracker()
                    tracker.take(subscription.take())
                    let expected = try freshCrawlBytes(
                        roots: [CrawlRoot(path: scope.path)], predicate, hidden: scope.rules.includeHidden)
                    let complete = tracker.paths == expected
                    #expect(
                        complete,
                        "\(layout) run \(run): the \(label) query gathered \(tracker.paths.count) of \(expected.count)")
                    tracked.append((scope, subscription, label, tracker))
                }
                // Live from there on, for both.
                try temp.file("container/Documents/d0/later.txt")
                for i in tracked.indices {
                    let later = Array("\(documents.string)/d0/later.txt".utf8)
                    let deadline = Date(timeIntervalSinceNow: 10)
                    while !tracked[i].3.paths.contains(later) && Date() < deadline {
                        tracked[i].3.take(tracked[i].1.take())
                        if !tracked[i].3.paths.contains(later) { usleep(2_000) }
                    }
                    let heard = tracked[i].3.paths.contains(later)
                    #expect(
                        heard,
                        "\(layout) run \(run): the \(tracked[i].2) query missed a file made after gathering")
                }
                for (_, subscription, _, _) in tracked { engine.unsubscribe(subscription) }
            }
        }

        /// Two `MetadataQuery`s on one container started at the same moment
        /// from two threads, many times: both finish gathering with every
        /// file.
        @Test func twoQueriesStartedTogetherBothGatherEverything() throws {
            let temp = try TemporaryDirectory()
            let container = try Self.makeTree(in: temp)
            let expected = try freshCrawl(container, try MetadataPredicate("kMDItemFSName LIKE '*.txt'"))
            for run in 0..<20 {
                let engine = try LiveEngine(crawlThreads: 2)
                defer { engine.shutdown() }
                engine.crawlHook.withLock { $0 = { _ in usleep(UInt32(500 * (run % 4))) } }
                let queries = (0..<2).map { _ in
                    let query = MetadataQuery(engineProvider: { engine })
                    query.predicate = try! MetadataPredicate("kMDItemFSName LIKE '*.txt'")
                    query.searchScopes = [.directory(container)]
                    return query
                }
                let recorders = queries.map { QueryRecorder($0) }
                let gate = ConditionLocked(0)
                let threads = queries.map { query in
                    Thread {
                        gate.mutateAndBroadcast { $0 += 1 }
                        gate.wait(until: { $0 >= 2 }) { _ in }
                        _ = query.start()
                    }
                }
                threads.forEach { $0.start() }
                for (i, recorder) in recorders.enumerated() {
                    #expect(recorder.waitForFinish(), "run \(run): query \(i) never finished gathering")
                    let paths = Set(queries[i].results.map(\.path.string))
                    let complete = paths == expected
                    #expect(complete, "run \(run): query \(i) gathered \(paths.count) of \(expected.count)")
                }
                queries.forEach { $0.stop() }
            }
        }
    }
}

/// The paths a subscriber knows, from its messages.
struct Tracker {
    var byID: [UInt64: [UInt8]] = [:]

    var paths: Set<[UInt8]> { Set(byID.values) }

    mutating func take(_ messages: [SubscriptionMessage]) {
        for message in messages {
            switch message {
            case .snapshot(let entries, _):
                byID = [:]
                for entry in entries { byID[entry.entry] = entry.pathBytes }
            case .changes(let added, let changed, let removed), .resumed(let added, let changed, let removed, _):
                for id in removed { byID[id] = nil }
                for entry in added + changed { byID[entry.entry] = entry.pathBytes }
            case .resynchronize, .problems:
                break
            }
        }
    }
}

extension LiveSuites {
    /// A subscription whose first scan runs in slices (a `MATCHES`
    /// predicate) while a seeded storm changes the tree: once quiet, what it
    /// was told equals a fresh crawl, whatever the storm did during the
    /// scan. The scan is slowed on purpose: every slice yields to the storm.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct SlicedFirstScanTests {
        @Test(arguments: [11, 12, 13, 14])
        func aSlicedFirstScanDuringAStormConverges(seed: UInt64) throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            let outside = try temp.folder("outside")
            for i in 0..<1500 { try temp.file("scope/d\(i % 12)/f\(i).txt", contents: "x") }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            // Each pause lets the storm's changes land between slices; it
            // counts as time the slice held the engine, so the slices stay
            // a few slots long (`SliceTurns.nextLength`).
            engine.sliceHook.withLock { $0 = { usleep(2_000) } }
            let predicate = try MetadataPredicate("kMDItemFSName MATCHES '.*[0-9].*'")
            // Acquire first (a plain subscription), so the sliced scan below
            // races only the storm.
            let (warm, _) = engine.subscribe(
                scopes: [ScopeRequest(path: scope, rules: ScopeRules())],
                predicate: try MetadataPredicate("TRUEPREDICATE"),
                wake: {})
            let stormDone = ConditionLocked(false)
            let storm = Thread {
                var storm = Storm(scope: scope.string, outside: outside.string, seed: seed)
                storm.run(operations: 400)
                stormDone.mutateAndBroadcast { $0 = true }
            }
            storm.start()
            let (subscription, errors) = engine.subscribe(
                scopes: [ScopeRequest(path: scope, rules: ScopeRules())], predicate: predicate, wake: {})
            #expect(errors.isEmpty)
            stormDone.wait(until: { $0 }, deadline: .now + .seconds(60)) { _ in }
            var tracker = Tracker()
            let deadline = Date(timeIntervalSinceNow: 30)
            var expected = Set<[UInt8]>()
            var converged = false
            while Date() < deadline {
                tracker.take(subscription.take())
                expected = try freshCrawlBytes(roots: [CrawlRoot(path: scope)], predicate)
                if tracker.paths == expected {
                    converged = true
                    break
                }
                usleep(50_000)
            }
            #expect(converged, "seed \(seed): told \(tracker.paths.count), a fresh crawl finds \(expected.count)")
            engine.unsubscribe(subscription)
            engine.unsubscribe(warm)
        }
    }
}

extension LiveSuites {
    /// A folder taken away while a crawl lists it (its parent's event
    /// applied between its listing and its entries going into the index):
    /// the crawl leaves what was below it (it once trapped: the crawler
    /// was told of no folder to descend into for its subfolders), and the
    /// live query converges on the disk. Each run replaces the folder on
    /// disk from inside its listing, waiting until the engine has applied
    /// the removal, so the window is always hit.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct FolderGoneWhileListedTests {
        @Test(arguments: [1, 2, 3])
        func aFolderRemovedWhileItIsListedLeavesNothingBehind(crawlThreads: Int) throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            for sub in ["e1", "e2", "e3"] {
                for i in 0..<3 { try temp.file("scope/d/\(sub)/f\(i).txt", contents: "x") }
            }
            try temp.file("scope/keep/x.txt", contents: "k")
            let engine = try LiveEngine(crawlThreads: crawlThreads)
            defer { engine.shutdown() }
            let gone = scope.appending("d")
            let raced = Locked(false)
            engine.listedHook.withLock {
                $0 = { id in
                    let path = engine.state.withLock { $0.pathBytes(of: id.rawValue) }
                    guard path == Array(gone.string.utf8), !raced.withLock({ $0 }) else { return }
                    // The folder goes, a file takes its name; the engine
                    // applies the parent's events before the listing ends.
                    _ = try? FileManager.default.removeItem(atPath: gone.string)
                    _ = FileManager.default.createFile(atPath: gone.string, contents: Data("now a file".utf8))
                    let removed = waitUntil(timeout: 10, interval: 0.005) {
                        engine.state.withLock { !$0.index.contains(id) || $0.index.kind(of: id) != .folder }
                    }
                    raced.withLock { $0 = removed }
                }
            }
            let (query, recorder) = try startLiveQuery("TRUEPREDICATE", scope: scope, engine: engine)
            defer { query.stop() }
            let initial = recorder.initialResults
            #expect(raced.withLock { $0 }, "the folder was taken away while it was listed")
            try expectLiveQueryConverges(query, recorder, initial: initial, "TRUEPREDICATE", "threads \(crawlThreads)")
            {
                try freshItems(roots: [CrawlRoot(path: scope)], $0)
            }
            // Nothing of what was below it is left, and the file is there.
            let paths = Set(query.results.map(\.path.string))
            #expect(!paths.contains { $0.hasPrefix(gone.string + "/") }, "\(paths.sorted())")
            #expect(paths.contains(gone.string) && paths.contains(scope.appending("keep/x.txt").string))
        }

        /// `rm -r build && mkdir build` while `build` is listed: the new
        /// folder may take the old one's id once the removal is published.
        /// What the listing found belongs to the old folder, not the new one.
        @Test(arguments: [1, 2])
        func aFolderReplacedWhileItIsListedGetsNoneOfTheOldContents(crawlThreads: Int) throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            for sub in ["e1", "e2"] {
                for i in 0..<3 { try temp.file("scope/build/\(sub)/f\(i).txt", contents: "x") }
            }
            try temp.file("scope/build/top.txt", contents: "t")
            try temp.file("scope/keep/x.txt", contents: "k")
            let engine = try LiveEngine(crawlThreads: crawlThreads)
            defer { engine.shutdown() }
            let replaced = scope.appending("build")
            let fresh = replaced.appending("fresh.txt")
            let raced = Locked(false)
            let tried = Locked(false)
            engine.listedHook.withLock {
                $0 = { id in
                    let path = engine.state.withLock { $0.pathBytes(of: id.rawValue) }
                    guard path == Array(replaced.string.utf8), !tried.withLock({ $0 }) else { return }
                    tried.withLock { $0 = true }
                    let old = engine.state.withLock { $0.index.metadata(of: id) }
                    // The folder goes; once the engine has applied and
                    // published that, its id is free, and the new folder
                    // made under the same name takes it.
                    _ = try? FileManager.default.removeItem(atPath: replaced.string)
                    _ = waitUntil(timeout: 10, interval: 0.005) { engine.state.withLock { !$0.index.contains(id) } }
                    _ = try? FileManager.default.createDirectory(
                        atPath: replaced.string, withIntermediateDirectories: false)
                    let reused = waitUntil(timeout: 10, interval: 0.005) {
                        engine.state.withLock {
                            $0.index.contains(id) && $0.index.kind(of: id) == .folder
                                && ($0.index.metadata(of: id).inode != old.inode
                                    || $0.index.metadata(of: id).birthTime != old.birthTime)
                        }
                    }
                    raced.withLock { $0 = reused }
                    // What the new folder holds is found.
                    _ = FileManager.default.createFile(atPath: fresh.string, contents: Data("new".utf8))
                }
            }
            let (query, recorder) = try startLiveQuery("TRUEPREDICATE", scope: scope, engine: engine)
            defer { query.stop() }
            let initial = recorder.initialResults
            #expect(raced.withLock { $0 }, "a new folder took the listed folder's id")
            try expectLiveQueryConverges(query, recorder, initial: initial, "TRUEPREDICATE", "threads \(crawlThreads)")
            {
                try freshItems(roots: [CrawlRoot(path: scope)], $0)
            }
            let paths = Set(query.results.map(\.path.string))
            #expect(paths.filter { $0.hasPrefix(replaced.string + "/") } == [fresh.string], "\(paths.sorted())")
            #expect(paths.contains(replaced.string) && paths.contains(scope.appending("keep/x.txt").string))
            // Nothing else below it was ever reported, not even for a while:
            // the new folder held only its file, and the old one's contents
            // were not in the index before it went.
            let reported = recorder.records.withLock { $0.flatMap { $0.added.map(\.path.string) } }
            let phantoms = (initial.map(\.path.string) + reported).filter {
                $0.hasPrefix(replaced.string + "/") && $0 != fresh.string
            }
            #expect(phantoms.isEmpty, "\(phantoms)")
        }
    }
}
