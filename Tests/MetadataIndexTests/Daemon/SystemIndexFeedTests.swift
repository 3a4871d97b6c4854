import Foundation
import Glibc
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
                var systemPaths = DaemonPaths(
                    runtimeDirectory: temp.path.appending("system-run"),
                    stateDirectory: temp.path.appending("system-state"))
                systemPaths.isSystem = true
                self.systemPaths = systemPaths
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

            func start(configuration: SystemConfiguration = .standard, scope: FilePath? = nil) throws {
                system = try IndexDaemon.startSystem(
                    mounts: [filesystem.mountPoint], configuration: configuration, paths: systemPaths)
                let systemPaths = systemPaths
                // Followed once the system index has its filesystem live.
                #expect(
                    waitUntil(timeout: 20) {
                        (try? DaemonClient.connectSystem(systemPaths).status())?.scopes.contains { $0.live } == true
                    })
                user = try IndexDaemon.start(paths: userPaths, crawlThreads: 2, systemIndex: systemPaths)
                _ = try DaemonClient.connect(userPaths).addScope(
                    ScopeRequest(path: scope ?? self.scope, rules: ScopeRules()))
            }

            func status() throws -> DaemonStatus { try DaemonClient.connect(userPaths).status() }

            deinit {
                user?.stop()
                system?.stop()
            }
        }

        func startQuery(_ text: String, _ pair: Pair) throws -> (MetadataQuery, QueryRecorder) {
            try startLiveQuery(text, scope: pair.scope, engine: try #require(pair.user).engine)
        }

        func expectConverges(
            _ query: MetadataQuery, _ recorder: QueryRecorder, initial: [MetadataItem], scope: FilePath,
            _ text: String, _ context: String
        ) throws {
            try expectLiveQueryConverges(query, recorder, initial: initial, text, context) {
                try freshItems(roots: [CrawlRoot(path: scope)], $0, hidden: false)
            }
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
                queries.append((query, recorder, recorder.initialResults))
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

        /// The stream slowed down on purpose (a busy system index, a slow
        /// reader): a rename's two halves land in different batches of the
        /// user's engine, folders are listed before the system index
        /// watches them; storms still converge.
        @Test(arguments: [UInt64(31), 32])
        func aSlowStreamStillConverges(seed: UInt64) throws {
            FeedConnection.slowDown = 30_000
            defer { FeedConnection.slowDown = 0 }
            let pair = try Pair()
            try pair.start()
            let text = "TRUEPREDICATE"
            let (query, recorder) = try startQuery(text, pair)
            let initial = recorder.initialResults
            var storm = Storm(scope: pair.scope.string, outside: pair.outside.string, seed: seed)
            storm.run(operations: 1000)
            try expectConverges(query, recorder, initial: initial, scope: pair.scope, text, "slowed, seed \(seed)")
            query.stop()
            #expect(try pair.status().watches == 0)
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
            let initial = recorder.initialResults
            pair.system?.stop()
            #expect(
                waitUntil(timeout: 10) { (try? pair.status())?.followed.isEmpty == true }, "no longer followed")
            #expect(try pair.status().watches > 0, "watched with inotify now")
            var storm = Storm(scope: pair.scope.string, outside: pair.outside.string, seed: 5)
            storm.run(operations: 800)
            try expectConverges(query, recorder, initial: initial, scope: pair.scope, text, "after the stop")
        }

        /// `MetadataQuery(source: .daemon)` with no daemon of the user's is
        /// answered by the system index, live.
        @Test func aDaemonQueryWithoutTheUsersDaemonIsAnsweredByTheSystemIndex() throws {
            let pair = try Pair()
            pair.system = try IndexDaemon.startSystem(mounts: [pair.filesystem.mountPoint], paths: pair.systemPaths)
            let systemPaths = pair.systemPaths
            #expect(
                waitUntil(timeout: 20) {
                    (try? DaemonClient.connectSystem(systemPaths).status())?.scopes.contains { $0.live } == true
                })
            let userPaths = pair.userPaths
            let query = MetadataQuery(engineProvider: { DaemonSource(paths: userPaths, fallback: systemPaths) })
            query.predicate = try MetadataPredicate("kMDItemFSName LIKE '*.txt'")
            query.searchScopes = [.directory(pair.scope)]
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            defer { query.stop() }
            #expect(query.results.count == 40, "\(query.errors)")
            FileManager.default.createFile(atPath: pair.scope.appending("pre1/later.txt").string, contents: nil)
            #expect(recorder.wait(timeout: 10) { query.results.contains { $0.name == "later.txt" } })
        }

        /// Waits until a query on the user's engine over `scope` equals a
        /// fresh crawl; the differences left otherwise.
        func differences(_ query: MetadataQuery, scope: FilePath) -> [String] {
            var differences: [String] = []
            _ = waitUntil(timeout: 10, interval: 0.05) {
                guard
                    let fresh = try? freshItems(
                        roots: [CrawlRoot(path: scope)], MetadataPredicate("TRUEPREDICATE"), hidden: false)
                else { return false }
                differences = attributeDifferences(query.results, fresh)
                return differences.isEmpty
            }
            return differences
        }

        func write(_ path: FilePath, _ text: String) {
            FileManager.default.createFile(atPath: path.string, contents: Data(text.utf8))
        }

        /// Moves close together, which one batch of the system index's
        /// events holds: rotations (`mv cur old; mv new cur`), a folder moved
        /// and one it carried moved on, a file changed and its folder renamed
        /// at once. Each converges, and later changes land where they belong.
        @Test func movesCloseTogetherConverge() throws {
            let pair = try Pair(files: 0)
            for i in 0..<10 {
                for name in ["cur", "new"] {
                    let folder = pair.scope.appending("r\(i)/\(name)/sub")
                    try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
                    write(folder.appending("\(name).txt"), name)
                }
                let carried = pair.scope.appending("a\(i)/c")
                try FileManager.default.createDirectory(atPath: carried.string, withIntermediateDirectories: true)
                write(carried.appending("f.txt"), "f")
                try FileManager.default.createDirectory(
                    atPath: pair.scope.appending("d\(i)").string, withIntermediateDirectories: true)
                write(pair.scope.appending("d\(i)/f.txt"), "f")
            }
            try pair.start()
            let (query, _) = try startQuery("TRUEPREDICATE", pair)
            defer { query.stop() }
            #expect(differences(query, scope: pair.scope).isEmpty, "initial")
            let base = pair.scope.string
            for i in 0..<10 {
                _ = rename("\(base)/r\(i)/cur", "\(base)/r\(i)/old")
                _ = rename("\(base)/r\(i)/new", "\(base)/r\(i)/cur")
                _ = rename("\(base)/a\(i)", "\(base)/b\(i)")
                _ = rename("\(base)/b\(i)/c", "\(base)/x\(i)")
                write(FilePath("\(base)/d\(i)/f.txt"), String(repeating: "x", count: 100 + i))
                _ = rename("\(base)/d\(i)", "\(base)/e\(i)")
            }
            let after = differences(query, scope: pair.scope)
            #expect(after.isEmpty, "\(after.count) \(after.prefix(6))")
            for i in 0..<10 { write(pair.scope.appending("r\(i)/old/sub/later.txt"), "l") }
            let later = differences(query, scope: pair.scope)
            #expect(later.isEmpty, "\(later.count) \(later.prefix(6))")
            #expect(try pair.status().watches == 0)
        }

        /// The user's engine lists what is on the disk now, while the
        /// stream still tells what the system index applied a while ago
        /// (slowed on purpose): trees moved in from outside are listed
        /// after the folders in them were rotated and remade, and events
        /// reported under a folder's old path must still reach that folder,
        /// not the one at the path now. Files made in every folder after
        /// the rotations are found.
        @Test(arguments: [UInt64(41), 42, 43])
        func eventsReachTheirFolderWhateverItsPathWhenListed(seed: UInt64) throws {
            FeedConnection.slowDown = 20_000
            defer { FeedConnection.slowDown = 0 }
            let pair = try Pair(files: 0)
            try pair.start()
            let (query, recorder) = try startQuery("TRUEPREDICATE", pair)
            let initial = recorder.initialResults
            let trees = RotatedTrees(scope: pair.scope, outside: pair.outside)
            try trees.run(seed: seed)
            try expectConverges(query, recorder, initial: initial, scope: pair.scope, "TRUEPREDICATE", "seed \(seed)")
            // And what is made in each folder afterwards lands there.
            trees.writeLater()
            try expectConverges(
                query, recorder, initial: initial, scope: pair.scope, "TRUEPREDICATE", "later, seed \(seed)")
            query.stop()
            #expect(try pair.status().watches == 0)
        }

        /// A followed folder renamed to a name the system index prunes:
        /// its contents stay (the user's daemon prunes nothing), and what is
        /// made inside it later is found (watched with inotify now).
        @Test func aFolderRenamedIntoAPruneKeepsItsContents() throws {
            let pair = try Pair(files: 0)
            let data = pair.scope.appending("proj/data")
            try FileManager.default.createDirectory(
                atPath: data.appending("inner").string, withIntermediateDirectories: true)
            write(data.appending("f.txt"), "hello")
            var configuration = SystemConfiguration.standard
            configuration.prunedNames = [Array("cache".utf8)]
            try pair.start(configuration: configuration)
            #expect(try pair.status().followed == [pair.scope])
            let (query, _) = try startQuery("TRUEPREDICATE", pair)
            defer { query.stop() }
            #expect(rename(data.string, pair.scope.appending("proj/cache").string) == 0)
            let after = differences(query, scope: pair.scope)
            #expect(after.isEmpty, "\(after)")
            // The system index says nothing of what is inside it now: its
            // two folders are watched with inotify.
            #expect(waitUntil(timeout: 10) { ((try? pair.status())?.watches ?? 0) >= 2 })
            write(pair.scope.appending("proj/cache/new.txt"), "new")
            write(pair.scope.appending("proj/cache/inner/deeper.txt"), "deeper")
            let later = differences(query, scope: pair.scope)
            #expect(later.isEmpty, "\(later)")
        }

        /// A scope that is the mount point of a filesystem the system index
        /// does not index is not followed (nothing would be told): it is
        /// watched with inotify, and its changes are found.
        @Test func aScopeOnAnotherFilesystemIsWatchedWithInotify() throws {
            let pair = try Pair(files: 0)
            let inner = pair.scope.appending("inner")
            try FileManager.default.createDirectory(atPath: inner.string, withIntermediateDirectories: true)
            #expect(try Shell.run("/usr/bin/mount", ["-t", "tmpfs", "none", inner.string]).status == 0)
            defer { _ = try? Shell.run("/usr/bin/umount", ["-l", inner.string]) }
            try FileManager.default.createDirectory(
                atPath: inner.appending("sub").string, withIntermediateDirectories: true)
            try pair.start(scope: inner)
            let status = try pair.status()
            #expect(status.followed.isEmpty && status.watches > 0, "\(status.followed) \(status.watches)")
            let (query, _) = try startLiveQuery(
                "TRUEPREDICATE", scope: inner, engine: try #require(pair.user).engine)
            defer { query.stop() }
            write(inner.appending("sub/b.txt"), "b")
            #expect(differences(query, scope: inner).isEmpty)
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

/// What a review found, kept as tests: streams that outlive what they
/// follow, nested scopes, watches handed between the feed and inotify.
extension LiveSuites.SystemIndexFeedTests {
    /// An inner scope followed first, an outer one added after: the outer
    /// stream takes the inner's folders over, so a folder moved from the
    /// inner scope to the outer one is still told.
    @Test func anOuterScopeTakesOverAnInnerOnesStream() throws {
        let pair = try Pair(files: 0)
        let inner = pair.scope.appending("inner")
        for i in 0..<20 {
            try FileManager.default.createDirectory(
                atPath: inner.appending("d\(i)/sub").string, withIntermediateDirectories: true)
        }
        try pair.start(scope: inner)
        _ = try DaemonClient.connect(pair.userPaths).addScope(ScopeRequest(path: pair.scope, rules: ScopeRules()))
        #expect(try pair.status().followed == [pair.scope])
        let (query, _) = try startQuery("TRUEPREDICATE", pair)
        defer { query.stop() }
        #expect(differences(query, scope: pair.scope).isEmpty, "initial")
        for i in 0..<20 {
            #expect(rename(inner.appending("d\(i)").string, pair.scope.appending("d\(i)").string) == 0)
        }
        let moved = differences(query, scope: pair.scope)
        #expect(moved.isEmpty, "after the moves: \(moved.prefix(4))")
        for i in 0..<20 {
            write(pair.scope.appending("d\(i)/later.txt"), "l")
            write(pair.scope.appending("d\(i)/sub/deeper.txt"), "l")
        }
        let later = differences(query, scope: pair.scope)
        #expect(later.isEmpty, "later: \(later.prefix(4))")
    }

    /// The followed folder itself renamed away: the stream ends (its paths
    /// lead nowhere), and the daemon sees its scope gone, then made again.
    @Test func theFollowedFolderRenamedAwayEndsItsStream() throws {
        let pair = try Pair(files: 4)
        try pair.start()
        let (query, _) = try startQuery("TRUEPREDICATE", pair)
        defer { query.stop() }
        #expect(differences(query, scope: pair.scope).isEmpty, "initial")
        #expect(rename(pair.scope.string, pair.outside.appending("gone").string) == 0)
        #expect(waitUntil(timeout: 10, interval: 0.05) { query.results.isEmpty }, "\(query.results.count) left")
        try FileManager.default.createDirectory(atPath: pair.scope.string, withIntermediateDirectories: true)
        write(pair.scope.appending("new.txt"), "n")
        let after = differences(query, scope: pair.scope)
        #expect(after.isEmpty, "\(after.prefix(6))")
    }

    /// The system index drops its filesystem and adds it again (a remount):
    /// the stream ends with it, and what changed meanwhile is found.
    @Test func aFilesystemDroppedByTheSystemIndexEndsTheStream() throws {
        let pair = try Pair(files: 8)
        try pair.start()
        let (query, _) = try startQuery("TRUEPREDICATE", pair)
        defer { query.stop() }
        #expect(differences(query, scope: pair.scope).isEmpty, "initial")
        let system = try #require(pair.system)
        let held = try DaemonClient.connectSystem(pair.systemPaths).status().scopes.map(\.scope)
        _ = try system.removeScopes(at: pair.filesystem.mountPoint)
        write(pair.scope.appending("pre0/while-away.txt"), "w")
        _ = unlink(pair.scope.appending("pre1/f1.txt").string)
        for scope in held { try system.addScope(scope) }
        write(pair.scope.appending("pre2/after.txt"), "a")
        let after = differences(query, scope: pair.scope)
        #expect(after.isEmpty, "\(after)")
    }

    /// A folder back from a prune is followed again at the next rescan, and
    /// the inotify watch it had is removed (not left behind).
    @Test func aWatchHandedBackToTheFeedIsRemoved() throws {
        let pair = try Pair(files: 0)
        let data = pair.scope.appending("proj/data")
        try FileManager.default.createDirectory(
            atPath: data.appending("inner").string, withIntermediateDirectories: true)
        var configuration = SystemConfiguration.standard
        configuration.prunedNames = [Array("cache".utf8)]
        try pair.start(configuration: configuration)
        let (query, _) = try startQuery("TRUEPREDICATE", pair)
        defer { query.stop() }
        #expect(rename(data.string, pair.scope.appending("proj/cache").string) == 0)
        #expect(waitUntil(timeout: 10) { ((try? pair.status())?.watches ?? 0) >= 2 })
        #expect(rename(pair.scope.appending("proj/cache").string, data.string) == 0)
        #expect(differences(query, scope: pair.scope).isEmpty)
        pair.user?.feed?.requestRescan()
        #expect(waitUntil(timeout: 10) { (try? pair.status())?.watches == 0 })
    }

    /// A filesystem mounted inside another the system index holds is
    /// followed through its own root (the deepest), not refused as being on
    /// another filesystem than the outer one.
    @Test func aFolderOfANestedFilesystemIsFollowed() throws {
        let pair = try Pair(files: 0)
        let other = try LoopFilesystem()
        let target = pair.scope.appending("inner")
        try FileManager.default.createDirectory(atPath: target.string, withIntermediateDirectories: true)
        #expect(try Shell.run("/usr/bin/mount", ["--bind", other.mountPoint.string, target.string]).status == 0)
        defer { _ = try? Shell.run("/usr/bin/umount", ["-l", target.string]) }
        try FileManager.default.createDirectory(
            atPath: target.appending("x/y").string, withIntermediateDirectories: true)
        pair.system = try IndexDaemon.startSystem(
            mounts: [target, pair.filesystem.mountPoint], paths: pair.systemPaths)
        let systemPaths = pair.systemPaths
        #expect(
            waitUntil(timeout: 20) {
                (try? DaemonClient.connectSystem(systemPaths).status())?.scopes.filter { $0.live }.count == 2
            })
        let feed = try SystemIndexFeed(paths: systemPaths)
        defer { feed.stop() }
        #expect(feed.follow(target.appending("x")))
    }
}
