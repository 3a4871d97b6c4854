import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MetadataIndex

extension LiveSuites {
    /// A user daemon beside a system index: a scope the system index keeps
    /// live is followed through it, with no inotify watch, and stays as
    /// correct as with watches (seeded storms converge to a fresh crawl,
    /// attributes included, and updates replay); when the system index
    /// stops, the daemon watches with inotify again and catches up.
    @Suite(.serialized, .timeLimit(.minutes(5)), .enabled(if: LoopFilesystem.isAvailable))
    struct SystemIndexFeedTests {
        /// A loop filesystem indexed by a system index in this process, and
        /// a user daemon whose state is elsewhere.
        final class Pair {
            let filesystem: LoopFilesystem
            let temp: TemporaryDirectory
            let systemPaths: DaemonPaths
            let userPaths: DaemonPaths
            var system: IndexDaemon?
            var user: IndexDaemon?
            var scope: FilePath { filesystem.mountPoint.appending("home/user") }
            var outside: FilePath { filesystem.mountPoint.appending("elsewhere") }

            init(files: Int = 40) throws {
                filesystem = try LoopFilesystem()
                temp = try TemporaryDirectory()
                _ = chmod(temp.path.string, 0o755)
                systemPaths = DaemonPaths(
                    runtimeDirectory: temp.path.appending("system-run"),
                    stateDirectory: temp.path.appending("system-state"))
                userPaths = DaemonPaths(
                    runtimeDirectory: temp.path.appending("user-run"), stateDirectory: temp.path.appending("user-state")
                )
                for folder in [scope, outside] {
                    try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
                }
                for i in 0..<files {
                    let folder = scope.appending("pre\(i % 4)")
                    try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
                    FileManager.default.createFile(
                        atPath: folder.appending("f\(i).txt").string, contents: Data("\(i)".utf8))
                }
            }

            func start() throws {
                system = try IndexDaemon.startSystem(mounts: [filesystem.mountPoint], paths: systemPaths)
                let systemPaths = systemPaths
                // Followed once the system index has its filesystem live.
                #expect(
                    waitUntil(timeout: 20) {
                        (try? DaemonClient.connectSystem(systemPaths).status())?.scopes.contains { $0.live } == true
                    })
                user = try IndexDaemon.start(paths: userPaths, crawlThreads: 2, systemIndex: systemPaths)
                _ = try DaemonClient.connect(userPaths).addScope(ScopeRequest(path: scope, rules: ScopeRules()))
            }

            func status() throws -> DaemonStatus { try DaemonClient.connect(userPaths).status() }

            deinit {
                user?.stop()
                system?.stop()
            }
        }

        func startQuery(_ text: String, _ pair: Pair) throws -> (MetadataQuery, QueryRecorder) {
            let engine = try #require(pair.user).engine
            let query = MetadataQuery(engineProvider: { engine })
            query.predicate = try MetadataPredicate(text)
            query.searchScopes = [.directory(pair.scope)]
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            return (query, recorder)
        }

        func expectConverges(
            _ query: MetadataQuery, _ recorder: QueryRecorder, initial: [MetadataItem], scope: FilePath,
            _ text: String, _ context: String
        ) throws {
            let predicate = try MetadataPredicate(text)
            var differences: [String] = []
            let converged = recorder.wait(timeout: 30) {
                guard let fresh = try? freshItems(roots: [CrawlRoot(path: scope)], predicate, hidden: false)
                else { return false }
                differences = attributeDifferences(query.results, fresh)
                return differences.isEmpty
            }
            #expect(converged, "\(context) \(text): \(differences.prefix(5))")
            query.deliveryQueue.sync {}
            let (problems, state) = replay(recorder.deliveredUpdates, on: initial)
            #expect(problems.isEmpty, "\(context): \(problems.prefix(5))")
            #expect(Set(state.keys) == Set(query.results.map(\.id)), "\(context): replayed updates differ")
        }

        /// Followed through the system index: no inotify watch for the
        /// scope's folders, and storms (saves, renames across folders and
        /// out of the scope and back, trees moved deep) converge.
        @Test(arguments: [UInt64(21), 22, 23])
        func aFollowedScopeConvergesWithNoInotifyWatch(seed: UInt64) throws {
            let pair = try Pair()
            try pair.start()
            let status = try pair.status()
            #expect(status.followed == [pair.scope], "\(status.followed)")
            #expect(status.watches == 0 && status.followedFolders > 0, "\(status.watches) \(status.followedFolders)")
            let texts = ["TRUEPREDICATE", "kMDItemFSName LIKE[c] '*.txt' OR kMDItemFSSize > 10"]
            var queries: [(MetadataQuery, QueryRecorder, [MetadataItem])] = []
            for text in texts {
                let (query, recorder) = try startQuery(text, pair)
                queries.append((query, recorder, query.results))
            }
            var storm = Storm(scope: pair.scope.string, outside: pair.outside.string, seed: seed)
            storm.run(operations: 1500)
            for ((query, recorder, initial), text) in zip(queries, texts) {
                #expect(recorder.wait(timeout: 10) { !recorder.updates.isEmpty }, "the storm reached the query")
                try expectConverges(query, recorder, initial: initial, scope: pair.scope, text, "seed \(seed)")
                query.stop()
            }
            #expect(try pair.status().watches == 0, "the storm added no inotify watch")
        }

        /// The system index stops: the daemon watches the scope's folders
        /// with inotify from then on, and what changed meanwhile and after
        /// is found.
        @Test func whenTheSystemIndexStopsInotifyTakesOver() throws {
            let pair = try Pair()
            try pair.start()
            let text = "TRUEPREDICATE"
            let (query, recorder) = try startQuery(text, pair)
            defer { query.stop() }
            let initial = query.results
            pair.system?.stop()
            #expect(
                waitUntil(timeout: 10) { (try? pair.status())?.followed.isEmpty == true }, "no longer followed")
            #expect(try pair.status().watches > 0, "watched with inotify now")
            var storm = Storm(scope: pair.scope.string, outside: pair.outside.string, seed: 5)
            storm.run(operations: 800)
            try expectConverges(query, recorder, initial: initial, scope: pair.scope, text, "after the stop")
        }

        /// Without a system index the daemon watches with inotify, as ever.
        @Test func withoutASystemIndexEveryFolderIsWatched() throws {
            let pair = try Pair()
            pair.user = try IndexDaemon.start(paths: pair.userPaths, crawlThreads: 2, systemIndex: pair.systemPaths)
            _ = try DaemonClient.connect(pair.userPaths).addScope(ScopeRequest(path: pair.scope, rules: ScopeRules()))
            let status = try pair.status()
            #expect(status.followed.isEmpty && status.watches > 0)
        }
    }
}
