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
    /// An engine restored from its snapshot answers at once, then checks the
    /// disk and reports what changed while it was down.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct EngineSnapshotTests {
        @Test func restoredEngineAnswersAtOnceThenCatchesUp() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            for i in 0..<40 { try temp.file("scope/d\(i % 4)/f\(i).txt", contents: "\(i)") }
            let snapshot = temp.path.appending("index.snapshot")
            let predicate = try MetadataPredicate("kMDItemFSName LIKE '*.txt' OR kMDItemFSName LIKE 'd*'")
            let rules = ScopeRules(excludedFolderNames: [Array("skip".utf8)])
            do {
                let engine = try LiveEngine(crawlThreads: 2)
                defer { engine.shutdown() }
                let (subscription, errors) = engine.subscribe(
                    scopes: [ScopeRequest(path: scope, rules: rules)], predicate: predicate, wake: {})
                #expect(errors.isEmpty)
                try engine.saveSnapshot(to: snapshot)
                engine.unsubscribe(subscription)
            }
            // While no engine runs: a removal, a write, a rename, an atomic
            // save, a new folder, and a file inside an excluded folder.
            let base = scope.string
            #expect(unlink("\(base)/d0/f0.txt") == 0)
            try temp.file("scope/d1/f1.txt", contents: "longer now")
            #expect(rename("\(base)/d2/f2.txt", "\(base)/d2/renamed.txt") == 0)
            try temp.file("scope/d3/f3.txt.tmp", contents: "saved")
            #expect(rename("\(base)/d3/f3.txt.tmp", "\(base)/d3/f3.txt") == 0)
            try temp.file("scope/new/n.txt")
            try temp.file("scope/skip/hidden-from-us.txt")

            let (engine, written) = try LiveEngine.restoring(from: snapshot, crawlThreads: 2)
            defer { engine.shutdown() }
            #expect(written.nanosecondsSinceEpoch > 0)
            #expect(engine.isVerifying)
            let woken = Locked(0)
            let (subscription, errors) = engine.subscribe(
                scopes: [ScopeRequest(path: scope, rules: rules)], predicate: predicate,
                wake: { woken.withLock { $0 += 1 } })
            #expect(errors.isEmpty)
            engine.dropUnusedRoots()
            var results = ResultSet(factory: ItemFactory(container: nil), descriptors: [])
            // The first answer is the saved state: f0 still there.
            guard case .snapshot(let first, false) = subscription.take().first else {
                Issue.record("no first snapshot")
                return
            }
            results.install(first)
            #expect(results.visible.contains { $0.name == "f0.txt" })
            #expect(engine.watchCount == 0, "nothing is watched before verification")
            engine.verify()
            #expect(!engine.isVerifying)
            for message in subscription.take() {
                if case .changes(let added, let changed, let removed) = message {
                    results.apply(added: added, changed: changed, removed: removed)
                }
            }
            let initial = results.visible
            let updates = results.takeUpdates(limit: 50_000)
            let (problems, state) = replay(updates, on: initial)
            #expect(problems.isEmpty, "\(problems)")
            let names = { (items: [MetadataItem]) in Set(items.map(\.name)) }
            #expect(names(updates.flatMap(\.added)) == ["n.txt"])
            #expect(names(updates.flatMap(\.removed)) == ["f0.txt"])
            #expect(
                names(updates.flatMap(\.changed)).isSuperset(of: ["f1.txt", "renamed.txt", "f3.txt", "d0", "d2", "d3"]))
            let renamed = try #require(updates.flatMap(\.changed).first { $0.name == "renamed.txt" })
            #expect(updates.compactMap { $0.previousPath(of: renamed) }.first?.string == "\(base)/d2/f2.txt")
            let fresh = try freshItems(roots: [CrawlRoot(path: scope)], predicate)
                .filter { !$0.key.starts(with: Array("\(base)/skip/".utf8)) }
            #expect(attributeDifferences(Array(state.values), fresh).isEmpty)
            // Live from here on: watched again.
            #expect(engine.watchCount > 0)
            try temp.file("scope/d0/later.txt")
            let deadline = Date(timeIntervalSinceNow: 10)
            var sawLater = false
            while !sawLater && Date() < deadline {
                for message in subscription.take() {
                    if case .changes(let added, _, _) = message,
                        added.contains(where: { $0.pathBytes.suffix(9) == Array("later.txt".utf8) })
                    {
                        sawLater = true
                    }
                }
                usleep(5_000)
            }
            #expect(sawLater)
            engine.unsubscribe(subscription)
        }

        /// The name trigrams come back with the index: a restored engine
        /// searches with them before any thread has built a list, and the
        /// thread that keeps them later extends them, not rebuilds them.
        @Test func nameTrigramsComeBackWithTheIndex() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            for i in 0..<200 { try temp.file("scope/d\(i % 4)/report-\(i).png") }
            let snapshot = temp.path.appending("index.snapshot")
            let predicate = try MetadataPredicate("kMDItemFSName LIKE[c] 'REPORT-1*.png'")
            func answer(_ engine: LiveEngine) throws -> (paths: Set<[UInt8]>, stale: Bool) {
                guard
                    case .success(let answer) = try engine.answer(
                        scopes: [ScopeRequest(path: scope, rules: ScopeRules())], predicate: predicate, output: .paths)
                else { throw MetadataError.daemon("not covered") }
                return (Set(answer.paths.split(separator: 0).map(Array.init)), answer.stale)
            }
            let expected: Set<[UInt8]>
            do {
                let engine = try LiveEngine(crawlThreads: 2)
                defer { engine.shutdown() }
                let (subscription, _) = engine.subscribe(
                    scopes: [ScopeRequest(path: scope, rules: ScopeRules())], predicate: predicate, wake: {})
                engine.keepNameGrams()
                #expect(
                    waitUntil(timeout: 20) { engine.nameGramStatus?.complete == true && (try? answer(engine)) != nil })
                expected = try answer(engine).paths
                try engine.saveSnapshot(to: snapshot)
                engine.unsubscribe(subscription)
            }
            let (engine, _) = try LiveEngine.restoring(from: snapshot, crawlThreads: 2)
            defer { engine.shutdown() }
            let (subscription, errors) = engine.subscribe(
                scopes: [ScopeRequest(path: scope, rules: ScopeRules())], predicate: predicate, wake: {})
            defer { engine.unsubscribe(subscription) }
            #expect(errors.isEmpty)
            let restored = try #require(engine.nameGramStatus)
            #expect(restored.complete && restored.postings > 0)
            #expect(try answer(engine) == (expected, true))
            #expect(expected.count == 111)
            engine.keepNameGrams()
            engine.verify()
            #expect(try answer(engine) == (expected, false))
        }

        @Test func aDamagedSnapshotIsRefusedWithItsReason() throws {
            let temp = try TemporaryDirectory()
            let snapshot = temp.path.appending("index.snapshot")
            try temp.file("index.snapshot", contents: "MDQINDEX and then nonsense")
            let error = #expect(throws: MetadataError.self) { try LiveEngine.restoring(from: snapshot) }
            #expect(error?.code == .persistence)
            #expect(error?.message.contains("discarded") == true)
            let missing = #expect(throws: MetadataError.self) {
                try LiveEngine.restoring(from: temp.path.appending("absent"))
            }
            #expect(missing?.underlying == .noSuchFileOrDirectory)
        }
    }
}
