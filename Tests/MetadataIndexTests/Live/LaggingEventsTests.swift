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
@testable import MDQWatch
@testable import MetadataIndex

extension LiveSuites {
    /// An engine whose events can be older than its listing of their folder
    /// (a user's daemon following a system index that lags the disk): the
    /// events are replayed here by hand, after the engine listed the disk as
    /// it is now. A deletion or a move that the disk has since undone must
    /// not take a file out of the results, not even for one update: a sync
    /// client deletes what it is told was removed.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct LaggingEventsTests {
        func name(_ text: String) -> [UInt8] { Array(text.utf8) }

        func write(_ path: FilePath, _ text: String) {
            FileManager.default.createFile(atPath: path.string, contents: Data(text.utf8))
        }

        /// The disk after `changes`, listed by an engine; then the events of
        /// `changes`, late, each group applied before the next. Returns the
        /// removals the query reported and its final results, by path
        /// relative to the scope, and a fresh crawl's.
        func replayLate(
            prepare: (FilePath) throws -> Void, changes: (FilePath) throws -> Void,
            events: (_ scope: WatchID, _ inner: WatchID) -> [[FolderChange]]
        ) throws -> (removed: [String], results: Set<String>, fresh: Set<String>) {
            let temp = try TemporaryDirectory()
            let scope = temp.path.appending("scope")
            try FileManager.default.createDirectory(
                atPath: scope.appending("inner").string, withIntermediateDirectories: true)
            try prepare(scope)
            try changes(scope)
            let live = try ScriptedLiveScope(scope)
            defer { live.stop() }
            let (watcher, query, recorder) = (live.watcher, live.query, live.recorder)
            let scopeWatch = try #require(watcher.watch(of: scope))
            let innerWatch = try #require(watcher.watch(of: scope.appending("inner")))
            for (i, group) in events(scopeWatch, innerWatch).enumerated() {
                // A marker after each group: once it is in, the group was
                // applied (and its update posted).
                let marker = "marker\(i)"
                write(scope.appending(marker), "m")
                watcher.deliver(
                    group + [.created(ChangePlace(scopeWatch, name(marker)), isFolder: false)])
                #expect(recorder.wait { query.results.contains { $0.name == marker } })
            }
            let names = { (items: [MetadataItem]) in
                Set(items.map { String($0.path.string.dropFirst(scope.string.count + 1)) })
            }
            let removed = query.deliveryQueue.sync {
                recorder.deliveredUpdates.flatMap { $0.removed }.map {
                    String($0.path.string.dropFirst(scope.string.count + 1))
                }
            }
            let fresh = try freshItems(
                roots: [CrawlRoot(path: scope)], MetadataPredicate("TRUEPREDICATE"), hidden: false)
            return (
                removed, names(query.results),
                Set(fresh.values.map { String($0.path.string.dropFirst(scope.string.count + 1)) })
            )
        }

        /// `x` deleted and made again before the listing: its late DELETE
        /// leaves it.
        @Test func aLateDeletionOfAFileMadeAgainRemovesNothing() throws {
            let outcome = try replayLate(
                prepare: { write($0.appending("x"), "old") },
                changes: { scope in
                    _ = unlink(scope.appending("x").string)
                    write(scope.appending("x"), "new")
                },
                events: { scope, _ in
                    [
                        [.removed(ChangePlace(scope, name("x")), isFolder: false)],
                        [.created(ChangePlace(scope, name("x")), isFolder: false)],
                    ]
                })
            #expect(outcome.removed.isEmpty, "\(outcome.removed)")
            #expect(outcome.results == outcome.fresh)
        }

        /// `y` renamed to `inner/z`, then a new `y` made, before the
        /// listing: the late move pairs the new `y` with nothing; both stay
        /// where the disk has them.
        @Test func aLateMoveOfANameMadeAgainMovesNothing() throws {
            let outcome = try replayLate(
                prepare: { write($0.appending("y"), "first") },
                changes: { scope in
                    _ = rename(scope.appending("y").string, scope.appending("inner/z").string)
                    write(scope.appending("y"), "second")
                },
                events: { scope, inner in
                    [
                        [
                            .moved(
                                from: ChangePlace(scope, name("y")), to: ChangePlace(inner, name("z")), isFolder: false)
                        ],
                        [.created(ChangePlace(scope, name("y")), isFolder: false)],
                    ]
                })
            #expect(outcome.removed.isEmpty, "\(outcome.removed)")
            #expect(outcome.results == outcome.fresh)
        }

        /// Rotated folders (`mv a x; mv b a`) whose events come in two
        /// reads: after the first, `a` is read again and is folder `b`,
        /// crawled as a new entry, which takes `b`'s watches (the kernel
        /// gives a folder watched again the same watch). The second read
        /// moves `b`'s own entry onto `a`, replacing that new entry: the
        /// watches go back to `b`'s entry, not away, and what is made in
        /// the folder afterwards is found.
        @Test func aFolderCrawledAgainKeepsItsWatchWhenItsNewEntryGoes() throws {
            let temp = try TemporaryDirectory()
            let scope = temp.path.appending("scope")
            for name in ["a", "b"] {
                try FileManager.default.createDirectory(
                    atPath: scope.appending("\(name)/inner").string, withIntermediateDirectories: true)
                write(scope.appending("\(name)/inner/\(name).txt"), name)
            }
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            let (watcher, query, recorder) = (live.watcher, live.query, live.recorder)
            let root = try #require(watcher.watch(of: scope))
            let innerOfB = try #require(watcher.watch(of: scope.appending("b/inner")))
            _ = rename(scope.appending("a").string, scope.appending("x").string)
            _ = rename(scope.appending("b").string, scope.appending("a").string)
            func waitFor(_ path: String) -> Bool {
                recorder.wait { query.results.contains { $0.path.string == scope.appending(path).string } }
            }
            watcher.deliver([
                .moved(from: ChangePlace(root, name("a")), to: ChangePlace(root, name("x")), isFolder: true),
                .created(ChangePlace(root, name("a")), isFolder: true),
            ])
            #expect(waitFor("a/inner/b.txt"), "a read again")
            watcher.deliver([
                .moved(from: ChangePlace(root, name("b")), to: ChangePlace(root, name("a")), isFolder: true)
            ])
            #expect(recorder.wait { !query.results.contains { $0.path.string.hasPrefix(scope.appending("b").string) } })
            #expect(!watcher.removed.contains(innerOfB), "the folder's watch was removed")
            write(scope.appending("a/inner/later.txt"), "l")
            watcher.deliver([.created(ChangePlace(innerOfB, name("later.txt")), isFolder: false)])
            #expect(waitFor("a/inner/later.txt"), "an event of the folder reached it")
        }

        /// `rm -rf build; mkdir build` on ext4, which gives the new folder
        /// the old one's inode number: the new folder is listed and
        /// watched, and what is made in it is found (kept as the old entry,
        /// it would never hear of its contents).
        @Test(.enabled(if: LoopFilesystem.isAvailable))
        func aFolderRemovedAndMadeAgainIsListedAgain() throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            let build = scope.appending("build")
            try FileManager.default.createDirectory(atPath: build.string, withIntermediateDirectories: true)
            write(build.appending("old.txt"), "o")
            let live = try ScriptedLiveScope(scope)
            defer { live.stop() }
            let (watcher, query, recorder) = (live.watcher, live.query, live.recorder)
            let root = try #require(watcher.watch(of: scope))
            let oldBuild = try #require(watcher.watch(of: build))
            guard case .success(let before) = FileStatus.of(pathBytes: build.bytes) else { return }
            _ = unlink(build.appending("old.txt").string)
            _ = rmdir(build.string)
            _ = mkdir(build.string, 0o755)
            guard case .success(let after) = FileStatus.of(pathBytes: build.bytes) else { return }
            #expect(after.inode == before.inode, "ext4 gives the number again (the case under test)")
            watcher.deliver([
                .removed(ChangePlace(oldBuild, name("old.txt")), isFolder: false),
                .removed(ChangePlace(root, name("build")), isFolder: true),
                .created(ChangePlace(root, name("build")), isFolder: true),
            ])
            #expect(recorder.wait { watcher.watch(of: build) != nil }, "the new folder is watched")
            let newBuild = try #require(watcher.watch(of: build))
            write(build.appending("new.txt"), "n")
            watcher.deliver([.created(ChangePlace(newBuild, name("new.txt")), isFolder: false)])
            #expect(recorder.wait { query.results.contains { $0.name == "new.txt" } })
            #expect(!query.results.contains { $0.name == "old.txt" })
        }

        /// A scope root removed and made again while nothing told of it,
        /// then rescanned (after an overflow): the root is the folder at
        /// its path now, identity and dates, so a later check of its path
        /// does not find it stale; what is made in it afterwards is found.
        @Test func aRootMadeAgainUntoldIsTheNewFolderAfterARescan() throws {
            let temp = try TemporaryDirectory()
            let scope = temp.path.appending("scope")
            try FileManager.default.createDirectory(atPath: scope.string, withIntermediateDirectories: true)
            write(scope.appending("a.txt"), "a")
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            #expect(rename(scope.string, temp.path.appending("old").string) == 0)
            #expect(mkdir(scope.string, 0o755) == 0)
            write(scope.appending("b.txt"), "b")
            live.watcher.deliver([.overflow(nil)])
            let names = { Set(live.query.results.map(\.name)) }
            #expect(live.recorder.wait { names() == ["b.txt"] }, "\(names())")
            guard case .success(let disk) = FileStatus.of(pathBytes: scope.bytes) else {
                Issue.record("no scope")
                return
            }
            let root = live.engine.state.withLock { s in
                s.roots.first.map { (s.index.metadata(of: EntryID($0.key)), $0.value.inode) }
            }
            #expect(root?.0.inode == disk.inode && root?.0.birthTime == disk.birthTime && root?.1 == disk.inode)
            #expect(live.engine.state.withLock { $0.pathIsCurrent($0.roots.first!.key) })
            let watch = try #require(live.watcher.watch(of: scope))
            write(scope.appending("c.txt"), "c")
            live.watcher.deliver([.created(ChangePlace(watch, name("c.txt")), isFolder: false)])
            #expect(live.recorder.wait { names() == ["b.txt", "c.txt"] }, "\(names())")
        }

        /// A folder whose path stays stale once events are quiet (its
        /// rename was never told; an event from inside it was): only the
        /// nearest folder above it whose path is current is listed again,
        /// not its whole root (a system index's root is a filesystem).
        @Test func aStalePathRescansTheFolderAboveItNotTheRoot() throws {
            let temp = try TemporaryDirectory()
            let scope = temp.path.appending("scope")
            let q = scope.appending("p/q")
            try FileManager.default.createDirectory(
                atPath: q.appending("x").string, withIntermediateDirectories: true)
            write(q.appending("x/f.txt"), "f")
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            let watch = try #require(live.watcher.watch(of: q.appending("x")))
            let listed = Locked<[String]>([])
            live.engine.crawlHook.withLock {
                $0 = { [engine = live.engine] id in
                    let path = String(decoding: engine.state.withLock { $0.pathBytes(of: id.rawValue) }, as: UTF8.self)
                    listed.withLock { $0.append(path) }
                }
            }
            #expect(rename(q.appending("x").string, q.appending("y").string) == 0)
            write(q.appending("y/g.txt"), "g")
            live.watcher.deliver([.created(ChangePlace(watch, name("g.txt")), isFolder: false)])
            let expected = Set(["p", "p/q", "p/q/y", "p/q/y/f.txt", "p/q/y/g.txt"])
            let relative = { (items: [MetadataItem]) in
                Set(items.map { String($0.path.string.dropFirst(scope.string.count + 1)) })
            }
            #expect(live.recorder.wait { relative(live.query.results) == expected }, "\(relative(live.query.results))")
            let relisted = listed.withLock { $0 }
            #expect(relisted.contains(q.string), "\(relisted)")
            #expect(!relisted.contains(scope.string) && !relisted.contains(scope.appending("p").string), "\(relisted)")
        }

        /// A folder moved away and another made at its name: the late move
        /// out (no MOVED_TO: to outside the scope) keeps the new folder and
        /// what is in it.
        @Test func aLateMoveOutOfAFolderMadeAgainKeepsTheNewOne() throws {
            let outcome = try replayLate(
                prepare: { scope in
                    try FileManager.default.createDirectory(
                        atPath: scope.appending("d").string, withIntermediateDirectories: true)
                    write(scope.appending("d/old.txt"), "o")
                },
                changes: { scope in
                    _ = rename(scope.appending("d").string, scope.appending("../away").string)
                    _ = mkdir(scope.appending("d").string, 0o755)
                    write(scope.appending("d/new.txt"), "n")
                },
                events: { scope, _ in
                    [
                        [
                            .movedAway(ChangePlace(scope, name("d")), isFolder: true)
                        ],
                        [.created(ChangePlace(scope, name("d")), isFolder: true)],
                    ]
                })
            #expect(outcome.removed.isEmpty, "\(outcome.removed)")
            #expect(outcome.results == outcome.fresh)
        }
    }
}
