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

/// A live engine on fanotify filesystem marks (the system index's): one
/// mark for a whole loop-mounted ext4 filesystem, no inotify watch, and the
/// same guarantee as per-folder watches: once the disk is quiet, every live
/// query equals a fresh crawl, attributes included, and its updates replay
/// to that state.
extension LiveSuites {
    @Suite(.serialized, .timeLimit(.minutes(5)), .enabled(if: LoopFilesystem.isAvailable))
    struct FanotifyEngineTests {
        func startQuery(_ predicate: String, scope: FilePath, engine: LiveEngine) throws -> (
            MetadataQuery, QueryRecorder
        ) {
            try startLiveQuery(predicate, scope: scope, engine: engine)
        }

        /// A scope folder and a folder beside it (moves in and out), made on
        /// `filesystem`.
        func scopeAndOutside(on filesystem: LoopFilesystem) throws -> (scope: FilePath, outside: FilePath) {
            let scope = filesystem.mountPoint.appending("scope")
            let outside = filesystem.mountPoint.appending("outside")
            for folder in [scope, outside] {
                try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
            }
            return (scope, outside)
        }

        /// Waits until `query` equals a fresh crawl of `scope` (paths and
        /// attributes), then checks its updates replay to it.
        func expectConverges(
            _ query: MetadataQuery, _ recorder: QueryRecorder, initial: [MetadataItem], scope: FilePath, _ text: String,
            _ context: String
        ) throws {
            try expectLiveQueryConverges(query, recorder, initial: initial, text, context) {
                try freshItems(roots: [CrawlRoot(path: scope)], $0, hidden: false)
            }
        }

        /// A seeded storm (saves, renames across folders and out of the
        /// scope and back, trees moved deep down, files replaced by folders)
        /// in a scope on the loop filesystem, under two queries: both
        /// converge, and the engine used one mark and no inotify watch.
        @Test(arguments: [UInt64(1), 2, 3])
        func aStormOnOneMarkConverges(seed: UInt64) throws {
            let filesystem = try LoopFilesystem()
            let (scope, outside) = try scopeAndOutside(on: filesystem)
            for i in 0..<40 {
                let folder = scope.appending("pre\(i % 4)")
                try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
                FileManager.default.createFile(
                    atPath: folder.appending("f\(i).txt").string, contents: Data("\(i)".utf8))
            }
            let watcher = try FanotifyWatcher()
            let engine = try LiveEngine(fanotify: watcher)
            defer { engine.shutdown() }
            let texts = ["TRUEPREDICATE", "kMDItemFSName LIKE[c] '*.txt' OR kMDItemFSSize > 10"]
            var queries: [(MetadataQuery, QueryRecorder, [MetadataItem])] = []
            for text in texts {
                let (query, recorder) = try startQuery(text, scope: scope, engine: engine)
                queries.append((query, recorder, recorder.initialResults))
            }
            var storm = Storm(scope: scope.string, outside: outside.string, seed: seed)
            storm.run(operations: 2000)
            for ((query, recorder, initial), text) in zip(queries, texts) {
                #expect(recorder.wait(timeout: 10) { !recorder.updates.isEmpty }, "the storm reached the query")
                try expectConverges(query, recorder, initial: initial, scope: scope, text, "seed \(seed)")
                query.stop()
            }
            #expect(watcher.filesystems.values.allSatisfy { $0 == .marked } && watcher.filesystems.count == 1)
            #expect(watcher.kernelWatchLimit == nil, "no folder fell back to inotify")
        }

        /// Trees moved in from outside while their folders are rotated at
        /// once (`mv a x; mv b a; mv c b; mv x c`) and remade: the crawl of
        /// each tree meets names that lead to other folders than it
        /// listed. Each folder keeps its own contents and hears its own
        /// events: the query converges, and files made in every folder
        /// afterwards land there.
        @Test(arguments: [UInt64(1), 2, 3])
        func treesRotatedAsTheyAreCrawledConverge(seed: UInt64) throws {
            let filesystem = try LoopFilesystem()
            let (scope, outside) = try scopeAndOutside(on: filesystem)
            let engine = try LiveEngine(fanotify: FanotifyWatcher())
            defer { engine.shutdown() }
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            let initial = recorder.initialResults
            let trees = RotatedTrees(scope: scope, outside: outside)
            try trees.run(seed: seed)
            try expectConverges(query, recorder, initial: initial, scope: scope, "TRUEPREDICATE", "seed \(seed)")
            trees.writeLater()
            try expectConverges(query, recorder, initial: initial, scope: scope, "TRUEPREDICATE", "later, seed \(seed)")
            query.stop()
        }

        /// Each change is told by its own event, with no rescan: a rename
        /// is one change with the previous path (not a removal and an
        /// addition), a folder moved to another folder carries its contents,
        /// a write changes the file, a deletion removes.
        @Test func eachChangeIsItsOwnEvent() throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            for folder in ["a/deep", "b"] {
                try FileManager.default.createDirectory(
                    atPath: scope.appending(folder).string, withIntermediateDirectories: true)
            }
            FileManager.default.createFile(atPath: scope.appending("a/deep/x.txt").string, contents: nil)
            FileManager.default.createFile(atPath: scope.appending("b/y.txt").string, contents: nil)
            let engine = try LiveEngine(fanotify: FanotifyWatcher())
            defer { engine.shutdown() }
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            func lastUpdate(after count: Int) -> MetadataQuery.Update? {
                guard recorder.wait(timeout: 10, { recorder.deliveredUpdates.count > count }) else { return nil }
                query.deliveryQueue.sync {}
                return recorder.deliveredUpdates.last
            }
            func names(_ items: [MetadataItem]) -> [String] { items.map(\.name).sorted() }
            /// The first update after the first `count` that `wanted` takes:
            /// a write may come as two events (a modification, then the
            /// close), whose second update can arrive after the next step.
            func firstUpdate(after count: Int, _ wanted: @escaping (MetadataQuery.Update) -> Bool)
                -> MetadataQuery.Update?
            {
                guard recorder.wait(timeout: 10, { recorder.deliveredUpdates.dropFirst(count).contains(where: wanted) })
                else { return nil }
                return recorder.deliveredUpdates.dropFirst(count).first(where: wanted)
            }
            var seen = recorder.deliveredUpdates.count
            // A file renamed in its folder.
            try FileManager.default.moveItem(
                atPath: scope.appending("b/y.txt").string, toPath: scope.appending("b/z.txt").string)
            var update = try #require(lastUpdate(after: seen))
            #expect(names(update.changed).contains("z.txt") && update.added.isEmpty && update.removed.isEmpty)
            let renamed = try #require(update.changed.first { $0.name == "z.txt" })
            #expect(update.previousPath(of: renamed)?.string == scope.appending("b/y.txt").string)
            seen = recorder.deliveredUpdates.count
            // A folder moved into another: its contents follow, as changes.
            try FileManager.default.moveItem(
                atPath: scope.appending("a/deep").string, toPath: scope.appending("b/deep").string)
            update = try #require(lastUpdate(after: seen))
            #expect(update.added.isEmpty && update.removed.isEmpty, "\(update)")
            #expect(query.results.contains { $0.path == scope.appending("b/deep/x.txt") })
            seen = recorder.deliveredUpdates.count
            // A write: the file changed.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: scope.appending("b/deep/x.txt").string))
            try handle.write(contentsOf: Data("more".utf8))
            try handle.close()
            update = try #require(firstUpdate(after: seen) { !$0.changed.isEmpty })
            #expect(names(update.changed) == ["x.txt"])
            seen = recorder.deliveredUpdates.count
            // A deletion.
            try FileManager.default.removeItem(atPath: scope.appending("b/deep/x.txt").string)
            update = try #require(firstUpdate(after: seen) { !$0.removed.isEmpty })
            #expect(names(update.removed) == ["x.txt"] && update.added.isEmpty)
            #expect(engine.rescanCount == 0)
            #expect(engine.state.withLock { $0.dirtyFolders.isEmpty })
            query.stop()
        }

        /// The engine's own queue past its bound (a backlog it cannot hold)
        /// folds the backlog into the folders it concerned, which are
        /// rescanned, not the whole index; the query equals the disk again.
        @Test func anOverflowRescansOnlyTheFoldersConcerned() throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            try FileManager.default.createDirectory(atPath: scope.string, withIntermediateDirectories: true)
            let engine = try LiveEngine(eventCapacity: 8, fanotify: FanotifyWatcher())
            defer { engine.shutdown() }
            // A quiet folder beside the busy one: never rescanned.
            try FileManager.default.createDirectory(
                atPath: scope.appending("quiet").string, withIntermediateDirectories: true)
            let busy = scope.appending("busy")
            try FileManager.default.createDirectory(atPath: busy.string, withIntermediateDirectories: true)
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            let initial = recorder.initialResults
            for i in 0..<300 {
                FileManager.default.createFile(atPath: busy.appending("n\(i)").string, contents: nil)
                if i % 3 == 0 { try FileManager.default.removeItem(atPath: busy.appending("n\(i)").string) }
                if i % 50 == 49, FileManager.default.fileExists(atPath: busy.appending("n\(i)").string) {
                    try FileManager.default.moveItem(
                        atPath: busy.appending("n\(i)").string, toPath: scope.appending("quiet/m\(i)").string)
                }
            }
            try expectConverges(query, recorder, initial: initial, scope: scope, "TRUEPREDICATE", "overflow")
            #expect(engine.foldedRescanCount > 0, "the backlog was folded into its folders")
            #expect(engine.rescanCount == 0, "no full rescan")
            query.stop()
        }

        /// A filesystem the kernel refuses to mark is watched folder by
        /// folder with inotify, and is live all the same.
        @Test func aRefusedMarkFallsBackToInotify() throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            try FileManager.default.createDirectory(
                atPath: scope.appending("a/b").string, withIntermediateDirectories: true)
            let watcher = try FanotifyWatcher()
            watcher.refusesMarks = Errno.improperLink
            let engine = try LiveEngine(fanotify: watcher)
            defer { engine.shutdown() }
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            let initial = recorder.initialResults
            #expect(watcher.filesystems.values.first == FanotifyWatcher.FilesystemWatch.folderByFolder(.improperLink))
            #expect(engine.watchCount == 3, "one inotify watch per folder")
            FileManager.default.createFile(atPath: scope.appending("a/b/new.txt").string, contents: nil)
            try FileManager.default.moveItem(atPath: scope.appending("a").string, toPath: scope.appending("c").string)
            try expectConverges(query, recorder, initial: initial, scope: scope, "TRUEPREDICATE", "fallback")
            query.stop()
        }

        /// A `FAN_RENAME` is one change with both ends, whichever folders
        /// hold them; with one end outside the watched folders, half a move.
        @Test func aRenameIsOneChangeWithBothEnds() throws {
            let filesystem = try LoopFilesystem()
            let (a, b, outside) = (
                filesystem.mountPoint.appending("a"), filesystem.mountPoint.appending("b"),
                filesystem.mountPoint.appending("out")
            )
            for folder in [a, b, outside] {
                try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
            }
            FileManager.default.createFile(atPath: a.appending("f").string, contents: Data("f".utf8))
            let watcher = try FanotifyWatcher()
            let heard = Locked<[FolderChange]>([])
            let owner = watcher.register(
                watchLimit: nil, onWatchAdded: { _, _ in }, onChanges: { list in heard.withLock { $0 += list } })
            defer { watcher.unregister(owner) }
            func watch(_ folder: FilePath) throws -> WatchID {
                let handle = try #require(try? DirectoryHandle.open(path: folder).get())
                return try watcher.addWatch(descriptor: handle.descriptor, owner: owner, purpose: .folder(0)).get()
            }
            let (watchA, watchB) = (try watch(a), try watch(b))
            func waitFor(_ change: FolderChange) -> Bool {
                let deadline = ContinuousClock.now + .seconds(10)
                while ContinuousClock.now < deadline {
                    if heard.withLock({ $0.contains(change) }) { return true }
                    usleep(2_000)
                }
                return false
            }
            let name = { (text: String) in Array(text.utf8) }
            #expect(rename(a.appending("f").string, b.appending("g").string) == 0)
            #expect(
                waitFor(
                    .moved(from: ChangePlace(watchA, name("f")), to: ChangePlace(watchB, name("g")), isFolder: false)),
                "\(heard.withLock { $0 })")
            #expect(rename(b.appending("g").string, outside.appending("g").string) == 0)
            #expect(waitFor(.movedAway(ChangePlace(watchB, name("g")), isFolder: false)))
            #expect(rename(outside.appending("g").string, a.appending("h").string) == 0)
            #expect(waitFor(.arrived(ChangePlace(watchA, name("h")), isFolder: false)))
            let halves = heard.withLock { list in
                list.filter {
                    if case .arrived(let place, _) = $0 { return place.watch == watchB }
                    if case .movedAway(let place, _) = $0 { return place.watch == watchA }
                    return false
                }
            }
            #expect(halves.isEmpty, "the paired rename came in halves: \(halves)")
        }

        /// Events already read for a folder reach the engine after its watch
        /// is removed; it drops them because it no longer knows the watch's
        /// number. That number must not go to the next folder watched, or
        /// they would be applied there (a deletion emptying the wrong
        /// folder, seen in storms). Numbers are handed out in turn, as the
        /// kernel hands out inotify's, and wrap past the largest.
        @Test func aRemovedWatchsNumberIsNotGivenToTheNextFolder() throws {
            let filesystem = try LoopFilesystem()
            let folders = ["a", "b", "c"].map { filesystem.mountPoint.appending($0) }
            for folder in folders {
                try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
            }
            let watcher = try FanotifyWatcher()
            let owner = watcher.register(watchLimit: nil, onWatchAdded: { _, _ in }, onChanges: { _ in })
            defer { watcher.unregister(owner) }
            func watch(_ folder: FilePath) throws -> WatchID {
                let handle = try #require(try? DirectoryHandle.open(path: folder).get())
                return try watcher.addWatch(descriptor: handle.descriptor, owner: owner, purpose: .folder(0)).get()
            }
            var given: Set<WatchID> = []
            for folder in folders {
                let number = try watch(folder)
                #expect(!given.contains(number), "\(folder): \(number) again")
                given.insert(number)
                watcher.removeWatch(number, owner: owner)
            }
            // Watching a folder again gives a new number too.
            #expect(!given.contains(try watch(folders[0])))

            var numbers = WatchNumbers(from: Int32.max - 2)
            #expect([numbers.take { _ in false }, numbers.take { _ in false }] == [Int32.max - 2, Int32.max - 1])
            #expect(numbers.take { _ in false } == Int32.max)
            #expect(numbers.take { $0 == Int32.max - 2 } == Int32.max - 1, "wraps, skipping a number in use")
        }

        /// The scope root removed and made again: the query empties, then
        /// follows the new folder.
        @Test func aRemovedRootComesBack() throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            try FileManager.default.createDirectory(
                atPath: scope.appending("inner").string, withIntermediateDirectories: true)
            let engine = try LiveEngine(fanotify: FanotifyWatcher())
            defer { engine.shutdown() }
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            #expect(query.results.map(\.name) == ["inner"])
            try FileManager.default.removeItem(atPath: scope.string)
            #expect(recorder.wait(timeout: 10) { query.results.isEmpty })
            try FileManager.default.createDirectory(
                atPath: scope.appending("again").string, withIntermediateDirectories: true)
            #expect(recorder.wait(timeout: 10) { query.results.map(\.name) == ["again"] })
            query.stop()
        }

        /// The kernel merges an event into any queued one of the same
        /// folder, name and kind (file or folder), however far back: what
        /// happened to a name after a rename or a kind change can come
        /// before them. With the reading held while a name turns from
        /// folder to file to folder (or back) through renames, deletions
        /// made blind would remove what is there now; the query must equal
        /// the disk all the same.
        @Test(arguments: [
            // A folder removed, a file renamed onto its name and deleted,
            // a folder made there again (the mkdir joins the first removal).
            ["mkdir n", "touch x", "hold", "rmtree n", "mv x n", "rm n", "mkdir n"],
            // A file deleted, a folder renamed onto its name and removed, a
            // file made there again (the creation joins the first deletion).
            ["touch n", "mkdir y", "hold", "rm n", "mv y n", "rmtree n", "touch n"],
            // The same through a subfolder, the rename crossing folders.
            ["mkdir s", "mkdir s/n", "touch x", "hold", "rmtree s/n", "mv x s/n", "rm s/n", "mkdir s/n"],
        ])
        func mergedEventsOfOneNameConverge(steps: [String]) throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            try FileManager.default.createDirectory(atPath: scope.string, withIntermediateDirectories: true)
            let watcher = try FanotifyWatcher()
            let engine = try LiveEngine(fanotify: watcher)
            defer { engine.shutdown() }
            let held = steps.firstIndex(of: "hold")!
            for step in steps[..<held] { NameSteps.run(step, in: scope) }
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            let initial = recorder.initialResults
            try watcher.whileReadingIsHeld(trigger: scope) {
                for step in steps[(held + 1)...] { NameSteps.run(step, in: scope) }
            }
            try expectConverges(query, recorder, initial: initial, scope: scope, "TRUEPREDICATE", "\(steps)")
            query.stop()
        }

        /// A folder moved into another that is renamed at once (`mv x
        /// d/x; mv d e`), both read together: checked against the disk, the
        /// move's destination path is stale, which says nothing of the move.
        /// The folder keeps its items (not removed and added again: a sync
        /// client would delete and fetch them again).
        @Test func aFolderMovedIntoARenamedFolderKeepsItsItems() throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            for folder in ["x", "d"] {
                try FileManager.default.createDirectory(
                    atPath: scope.appending(folder).string, withIntermediateDirectories: true)
            }
            for i in 0..<20 {
                FileManager.default.createFile(atPath: scope.appending("x/f\(i).txt").string, contents: nil)
            }
            let watcher = try FanotifyWatcher()
            let engine = try LiveEngine(fanotify: watcher)
            defer { engine.shutdown() }
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            let initial = recorder.initialResults
            let before = Dictionary(uniqueKeysWithValues: initial.map { ($0.name, $0.id) })
            /// The engine's identities of the files, by name (what the
            /// shared index and the content store know them by).
            func identities(in folder: String) -> [String: UInt64] {
                engine.state.withLock { s in
                    var found: [String: UInt64] = [:]
                    let prefix = Array(scope.appending(folder).string.utf8) + [0x2F]
                    for slot in 0..<UInt32(s.index.slotCount) where s.index.contains(EntryID(slot)) {
                        let path = s.pathBytes(of: slot)
                        guard path.starts(with: prefix) else { continue }
                        found[String(decoding: path.dropFirst(prefix.count), as: UTF8.self)] = s.index.identity(
                            of: slot)
                    }
                    return found
                }
            }
            let engineBefore = identities(in: "x")
            try watcher.whileReadingIsHeld(trigger: scope) {
                #expect(rename(scope.appending("x").string, scope.appending("d/x").string) == 0)
                #expect(rename(scope.appending("d").string, scope.appending("e").string) == 0)
            }
            try expectConverges(
                query, recorder, initial: initial, scope: scope, "TRUEPREDICATE", "moved into a renamed folder")
            let removed = query.deliveryQueue.sync { recorder.deliveredUpdates.flatMap(\.removed) }
            #expect(removed.isEmpty, "\(removed.map(\.path))")
            for item in query.results where item.name.hasPrefix("f") {
                #expect(item.id == before[item.name], "\(item.path) kept its id")
            }
            #expect(identities(in: "e/x") == engineBefore, "the engine's identities are kept")
            query.stop()
        }

        /// A filesystem mounted inside another, each kept on its own (the
        /// system index's scopes: the filesystem stayed on, whichever is
        /// kept first): the mounted one is a root of its own, crawled and
        /// answered, not taken for the empty mount point of the other.
        @Test(arguments: [false, true])
        func aFilesystemMountedInsideAnotherIsARootOfItsOwn(innerFirst: Bool) throws {
            let filesystem = try LoopFilesystem()
            let inner = filesystem.mountPoint
            let outer = inner.removingLastComponent()
            FileManager.default.createFile(atPath: inner.appending("inner.txt").string, contents: nil)
            FileManager.default.createFile(atPath: outer.appending("outer.txt").string, contents: nil)
            let watcher = try FanotifyWatcher()
            let engine = try LiveEngine(fanotify: watcher)
            defer { engine.shutdown() }
            let rules = ScopeRules(includeHidden: true, stayOnFileSystem: true)
            let scopes = [ScopeRequest(path: outer, rules: rules), ScopeRequest(path: inner, rules: rules)]
            let retained = try (innerFirst ? scopes.reversed() : scopes).map { try engine.retain($0) }
            defer { engine.release(innerFirst ? retained[1] : retained[0]) }
            #expect(engine.state.withLock { $0.roots.count } == 2)
            func names(_ scope: ScopeRequest) throws -> Set<String> {
                guard
                    case .success(let answer) = try engine.answer(
                        scopes: [scope], predicate: MetadataPredicate("kMDItemFSName LIKE '*.txt'"), output: .entries)
                else { return [] }
                return Set(answer.entries.map { String(decoding: $0.pathBytes, as: UTF8.self) })
            }
            #expect(try names(scopes[1]) == [inner.appending("inner.txt").string])
            #expect(try names(scopes[0]) == [outer.appending("outer.txt").string], "the outer one stays on its own")
            // Live: a file made in the mounted filesystem is found there,
            // one removed goes; changes in the outer one (after which the
            // engine audits its unwatched folders) never bring the mounted
            // one's files into the outer root, nor take its top folder's
            // watch from the inner root.
            for round in 0..<3 {
                FileManager.default.createFile(atPath: outer.appending("outer\(round).txt").string, contents: nil)
                FileManager.default.createFile(atPath: inner.appending("later\(round).txt").string, contents: nil)
                #expect(
                    waitUntil(timeout: 10, interval: 0.02) {
                        (try? names(scopes[1]))?.contains(inner.appending("later\(round).txt").string) ?? false
                    }, "round \(round)")
                #expect(unlink(inner.appending("later\(round).txt").string) == 0)
                #expect(
                    waitUntil(timeout: 10, interval: 0.02) {
                        (try? names(scopes[1])) == [inner.appending("inner.txt").string]
                    }, "round \(round): \((try? names(scopes[1])) ?? [])")
                engine.cleanDirtyFolders(force: true)
                let outside = try names(scopes[0])
                #expect(!outside.contains { $0.hasPrefix(inner.string + "/") }, "round \(round): \(outside)")
            }
            // Unmounted (the system index drops its root and says where):
            // what the mount hid is the outer root's; mounted again, hidden.
            let innerRoot = innerFirst ? retained[0] : retained[1]
            engine.release(innerRoot)
            filesystem.unmount()
            // Its mark went with it (the system index forgets it so).
            watcher.keepFilesystems(of: [outer])
            FileManager.default.createFile(atPath: inner.appending("under.txt").string, contents: nil)
            engine.mountChanged(at: inner)
            let under = inner.appending("under.txt").string
            #expect(waitUntil(timeout: 10, interval: 0.02) { (try? names(scopes[0]))?.contains(under) ?? false })
            // Mounted again and kept again, as the system index does: the
            // outer root's new mount point takes no watch from the inner
            // root, which hears what is made in its top folder.
            try filesystem.mountAgain()
            engine.mountChanged(at: inner)
            let again = try engine.retain(scopes[1])
            defer { engine.release(again) }
            #expect(engine.state.withLock { $0.roots.count } == 2)
            #expect(
                waitUntil(timeout: 10, interval: 0.02) { !((try? names(scopes[0]))?.contains(under) ?? true) },
                "hidden again")
            FileManager.default.createFile(atPath: inner.appending("remounted.txt").string, contents: nil)
            #expect(
                waitUntil(timeout: 10, interval: 0.02) {
                    (try? names(scopes[1]))?.contains(inner.appending("remounted.txt").string) ?? false
                }, "the inner root hears its top folder")
        }

        /// The class of the test above, seeded: rounds of changes to two
        /// names (`n` and `s/n`), each step one that can succeed on what is
        /// at the name now (a file or folder made, written, deleted,
        /// renamed onto it from either folder or away), with the reading
        /// held through each round so the kernel merges what it can. After
        /// each round the query equals the disk and its updates replay to it.
        @Test(arguments: [UInt64(1), 2, 3, 4])
        func seededRoundsOfMergedEventsConverge(seed: UInt64) throws {
            let filesystem = try LoopFilesystem()
            let scope = filesystem.mountPoint.appending("scope")
            try FileManager.default.createDirectory(
                atPath: scope.appending("s").string, withIntermediateDirectories: true)
            let watcher = try FanotifyWatcher()
            let engine = try LiveEngine(fanotify: watcher)
            defer { engine.shutdown() }
            let (query, recorder) = try startQuery("TRUEPREDICATE", scope: scope, engine: engine)
            let initial = recorder.initialResults
            var random = SeededGenerator(seed: seed)
            for round in 0..<150 {
                var steps: [String] = []
                try watcher.whileReadingIsHeld(trigger: scope) {
                    for _ in 0..<Int.random(in: 2..<8, using: &random) {
                        let name = ["n", "s/n"].randomElement(using: &random)!
                        let aside = ["", "s/"].randomElement(using: &random)!
                        var status = stat()
                        let kind =
                            lstat(scope.appending(name).string, &status) != 0
                            ? 0 : (status.st_mode & S_IFMT) == S_IFDIR ? 2 : 1
                        let choices: [[String]] =
                            [
                                [["touch \(name)"], ["mkdir \(name)"]],
                                [["rm \(name)"], ["write \(name)"], ["chmod \(name)"], ["mv \(name) \(aside)z"]],
                                [["rmtree \(name)"], ["chmod \(name)"], ["touch \(name)/i"], ["mv \(name) \(aside)z"]],
                            ][kind] + [
                                ["touch \(aside)x", "mv \(aside)x \(name)"],
                                ["mkdir \(aside)y", "mv \(aside)y \(name)"],
                            ]
                        for step in choices.randomElement(using: &random)! {
                            steps.append(step)
                            NameSteps.run(step, in: scope)
                        }
                    }
                }
                try expectConverges(
                    query, recorder, initial: initial, scope: scope, "TRUEPREDICATE",
                    "seed \(seed) round \(round) \(steps)")
            }
            query.stop()
        }
    }
}

/// Changes to names in a scope, written as a shell would (`touch n`, `mv a
/// b`, `rmtree n`); each tolerates failure, as the names come and go.
enum NameSteps {
    static func run(_ step: String, in scope: FilePath) {
        let words = step.split(separator: " ").map(String.init)
        let path = scope.appending(words[1]).string
        switch words[0] {
        case "touch":
            let fd = open(path, O_WRONLY | O_CREAT, 0o644)
            if fd >= 0 { close(fd) }
        case "write":
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            if fd >= 0 {
                _ = "more".withCString { write(fd, $0, 4) }
                close(fd)
            }
        case "rm": _ = unlink(path)
        case "mkdir": _ = mkdir(path, 0o755)
        case "rmtree": try? FileManager.default.removeItem(atPath: path)
        case "mv": _ = rename(path, scope.appending(words[2]).string)
        case "chmod": _ = chmod(path, 0o700)
        default: preconditionFailure("no step \(step)")
        }
    }
}

extension FanotifyWatcher {
    /// Runs `body` while the reading thread waits before its next read, so
    /// that what `body` does queues in the kernel (which merges events of
    /// one name). A change to `trigger` (a folder the watcher follows) wakes
    /// the thread first.
    func whileReadingIsHeld(trigger: FilePath, _ body: () throws -> Void) throws {
        // 0: free, 1: asked to hold, 2: holding, 3: released.
        let gate = ConditionLocked(1)
        readHook.withLock {
            $0 = {
                gate.mutateAndBroadcast { if $0 == 1 { $0 = 2 } }
                _ = gate.wait(until: { $0 == 3 }, deadline: .now + .seconds(60)) { _ in }
            }
        }
        defer {
            readHook.withLock { $0 = nil }
            gate.mutateAndBroadcast { $0 = 3 }
        }
        // The thread may be reading already (the hook unset when it
        // passed it) and take the first change with that read: changes
        // are made until it waits.
        let wake = trigger.appending(".wake").string
        let deadline = ContinuousClock.now + .seconds(30)
        var holding = false
        while !holding && ContinuousClock.now < deadline {
            let fd = open(wake, O_WRONLY | O_CREAT, 0o644)
            if fd >= 0 { close(fd) }
            _ = unlink(wake)
            holding = gate.wait(until: { $0 == 2 }, deadline: .now + .milliseconds(100)) { $0 == 2 }
        }
        try #require(holding, "the reading thread stopped before a read")
        try body()
    }
}
