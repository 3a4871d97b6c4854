import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQSystem
@testable import MDQWatch
@testable import MetadataIndex

/// inotify's rename halves paired inside its backend (`InotifyMoves`),
/// without a kernel: the order kept, both ends joined, a half with no
/// partner let go after two barriers.
@Suite struct InotifyMovesTests {
    func event(_ watch: Int32, _ mask: InotifyMask, cookie: UInt32 = 0, _ name: String) -> InotifyEvent {
        InotifyEvent(watch: watch, mask: mask, cookie: cookie, name: Array(name.utf8))
    }

    /// The changes the held events become, as the backend delivers them
    /// to an owner of every watch.
    func changes(_ ready: ArraySlice<InotifyMoves.Held>) -> [FolderChange] {
        ready.compactMap { held in
            guard let partner = held.partner else { return InotifyWatcher.change(held.event) }
            return .moved(
                from: ChangePlace(WatchID(held.event.watch), held.event.name),
                to: ChangePlace(WatchID(partner.watch), partner.name), isFolder: held.event.mask.contains(.isDirectory))
        }
    }

    func place(_ watch: Int32, _ name: String) -> ChangePlace { ChangePlace(WatchID(watch), Array(name.utf8)) }

    @Test func adjacentHalvesAreOneMove() {
        var moves = InotifyMoves()
        let step1 = moves.read(event(1, .movedFrom, cookie: 5, "a"))
        #expect(step1, "a half waits: the barrier is touched")
        let step2 = moves.ready()
        #expect(step2.isEmpty)
        let step3 = moves.read(event(2, .movedTo, cookie: 5, "b"))
        #expect(!step3)
        let ready15 = changes(moves.ready())
        #expect(ready15 == [.moved(from: place(1, "a"), to: place(2, "b"), isFolder: false)])
        // The barrier touched for it comes later and finds nothing held.
        let step4 = moves.barrierRead()
        #expect(!step4)
        #expect(!moves.isHolding)
    }

    /// Another event between the halves keeps its place after the move:
    /// a name made again at the old place applies after the rename.
    @Test func anEventBetweenTheHalvesFollowsTheMove() {
        var moves = InotifyMoves()
        _ = moves.read(event(1, .movedFrom, cookie: 9, "a"))
        _ = moves.read(event(1, .create, "a"))
        let step5 = moves.ready()
        #expect(step5.isEmpty, "held behind the open half")
        _ = moves.read(event(1, .movedTo, cookie: 9, "b"))
        #expect(
            changes(moves.ready()) == [
                .moved(from: place(1, "a"), to: place(1, "b"), isFolder: false),
                .created(place(1, "a"), isFolder: false),
            ])
    }

    /// A move out of the watched folders: two barriers pass, then it is a
    /// `movedAway`, and what was held behind it follows.
    @Test func aHalfWithNoPartnerGoesAfterTwoBarriers() {
        var moves = InotifyMoves()
        let step6 = moves.read(event(1, [.movedFrom, .isDirectory], cookie: 3, "d"))
        #expect(step6)
        _ = moves.read(event(1, .create, "e"))
        let step7 = moves.barrierRead()
        #expect(step7, "one pass: the barrier is touched again")
        let step8 = moves.ready()
        #expect(step8.isEmpty)
        let step9 = moves.barrierRead()
        #expect(!step9)
        let ready16 = changes(moves.ready())
        #expect(ready16 == [.movedAway(place(1, "d"), isFolder: true), .created(place(1, "e"), isFolder: false)])
        #expect(!moves.isHolding)
    }

    /// A half read after the barrier was touched is not let go by that
    /// barrier: its partner may be queued behind it.
    @Test func aBarrierCountsOnlyForHalvesHeldBeforeIt() {
        var moves = InotifyMoves()
        let step10 = moves.read(event(1, .movedFrom, cookie: 1, "a"))
        #expect(step10)
        let step11 = moves.read(event(1, .movedFrom, cookie: 2, "b"))
        #expect(!step11, "one barrier at a time")
        let step12 = moves.barrierRead()
        #expect(step12)
        let step13 = moves.barrierRead()
        #expect(step13, "\"b\" still waits: another barrier")
        // "a" had two passes; "b" one.
        let ready17 = changes(moves.ready())
        #expect(ready17 == [.movedAway(place(1, "a"), isFolder: false)])
        _ = moves.read(event(2, .movedTo, cookie: 2, "c"))
        let ready18 = changes(moves.ready())
        #expect(ready18 == [.moved(from: place(1, "b"), to: place(2, "c"), isFolder: false)])
    }

    /// A second half with no first (a move in from outside) is an arrival,
    /// and single events are changes of their own kind.
    @Test func singleEventsTranslate() {
        var moves = InotifyMoves()
        let step14 = moves.read(event(4, .movedTo, cookie: 8, "in"))
        #expect(!step14)
        _ = moves.read(event(4, .delete, "gone"))
        _ = moves.read(event(4, .attributes, "f"))
        _ = moves.read(event(4, .closeWrite, "f"))
        _ = moves.read(event(4, .deleteSelf, ""))
        _ = moves.read(event(4, .ignored, ""))
        #expect(
            changes(moves.ready()) == [
                .arrived(place(4, "in"), isFolder: false), .removed(place(4, "gone"), isFolder: false),
                .changed(place(4, "f"), .attributes), .changed(place(4, "f"), .contents), .folderGone(WatchID(4)),
                .unwatched(WatchID(4)),
            ])
    }
}

extension LiveSuites {
    /// The watcher seam: inotify's backend reports a rename as one change
    /// with both ends, and the engine, driven by a scripted backend, applies
    /// every kind of change the seam has.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct WatcherSeamTests {
        final class Collected: @unchecked Sendable {
            let changes = Locked<[FolderChange]>([])
            func wait(_ condition: ([FolderChange]) -> Bool) -> Bool {
                let deadline = ContinuousClock.now + .seconds(10)
                while ContinuousClock.now < deadline {
                    if changes.withLock({ condition($0) }) { return true }
                    usleep(2_000)
                }
                return false
            }
        }

        func watch(_ watcher: InotifyWatcher, _ folder: FilePath, owner: Int) throws -> WatchID {
            let handle = try DirectoryHandle.open(path: folder).get()
            return try watcher.addWatch(descriptor: handle.descriptor, owner: owner, purpose: .folder(0)).get()
        }

        /// Through the kernel: a rename between two watched folders is one
        /// `moved`; out of them, a `movedAway`; into them, an `arrived`. An
        /// owner watching only the source hears half the move.
        @Test func inotifyRenamesAreOneChangeWithBothEnds() throws {
            let temp = try TemporaryDirectory()
            let (a, b, outside) = (temp.path.appending("a"), temp.path.appending("b"), temp.path.appending("out"))
            for folder in [a, b, outside] { _ = mkdir(folder.string, 0o755) }
            FileManager.default.createFile(atPath: a.appending("f").string, contents: Data("x".utf8))
            FileManager.default.createFile(atPath: outside.appending("g").string, contents: Data("y".utf8))
            let watcher = try InotifyWatcher.shared()
            let both = Collected()
            let sourceOnly = Collected()
            let owner = watcher.register(
                watchLimit: nil, onWatchAdded: { _, _ in }, onChanges: { list in both.changes.withLock { $0 += list } })
            let other = watcher.register(
                watchLimit: nil, onWatchAdded: { _, _ in },
                onChanges: { list in sourceOnly.changes.withLock { $0 += list } })
            defer {
                watcher.unregister(owner)
                watcher.unregister(other)
            }
            let watchA = try watch(watcher, a, owner: owner)
            let watchB = try watch(watcher, b, owner: owner)
            #expect(try watch(watcher, a, owner: other) == watchA)
            let name = { (text: String) in Array(text.utf8) }

            #expect(rename(a.appending("f").string, b.appending("h").string) == 0)
            let moved = FolderChange.moved(
                from: ChangePlace(watchA, name("f")), to: ChangePlace(watchB, name("h")), isFolder: false)
            #expect(both.wait { $0.contains(moved) }, "\(both.changes.withLock { $0 })")
            #expect(sourceOnly.wait { $0.contains(.movedAway(ChangePlace(watchA, name("f")), isFolder: false)) })

            #expect(rename(b.appending("h").string, outside.appending("h").string) == 0)
            #expect(both.wait { $0.contains(.movedAway(ChangePlace(watchB, name("h")), isFolder: false)) })
            #expect(rename(outside.appending("g").string, a.appending("g").string) == 0)
            #expect(both.wait { $0.contains(.arrived(ChangePlace(watchA, name("g")), isFolder: false)) })
            // No half of the paired rename reached the owner of both ends.
            let heard = both.changes.withLock { $0 }
            #expect(!heard.contains(.movedAway(ChangePlace(watchA, name("f")), isFolder: false)), "\(heard)")
            #expect(!heard.contains(.arrived(ChangePlace(watchB, name("h")), isFolder: false)), "\(heard)")
        }

        func makeScope() throws -> (TemporaryDirectory, FilePath) {
            let temp = try TemporaryDirectory()
            let scope = temp.path.appending("scope")
            for folder in ["a", "b"] {
                try FileManager.default.createDirectory(
                    atPath: scope.appending(folder).string, withIntermediateDirectories: true)
            }
            FileManager.default.createFile(atPath: scope.appending("a/f.txt").string, contents: Data("f".utf8))
            FileManager.default.createFile(atPath: scope.appending("a/keep.txt").string, contents: Data("k".utf8))
            return (temp, scope)
        }

        /// A move with both ends is the same item at its new path: a
        /// change, never a removal (a sync client deletes what it is told
        /// was removed).
        @Test func aMoveWithBothEndsIsAChangeOfTheItem() throws {
            let (temp, scope) = try makeScope()
            _ = temp
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            #expect(live.recorder.waitForFinish())
            let before = live.updateCount
            let id = live.query.results.first { $0.name == "f.txt" }?.id
            #expect(rename(scope.appending("a/f.txt").string, scope.appending("b/g.txt").string) == 0)
            let from = try #require(live.watcher.place(scope.appending("a"), "f.txt"))
            let to = try #require(live.watcher.place(scope.appending("b"), "g.txt"))
            #expect(live.apply([.moved(from: from, to: to, isFolder: false)], marker: "m1"))
            let updates = live.updates(after: before)
            #expect(updates.removed.isEmpty, "\(updates)")
            #expect(updates.changed.contains("b/g.txt"), "\(updates)")
            #expect(live.query.results.first { $0.name == "g.txt" }?.id == id, "the same item")
            #expect(live.names == ["a", "b", "a/keep.txt", "b/g.txt", "m1"])
        }

        /// Half a move: out of the watched folders is a removal, in from
        /// outside an addition.
        @Test func halfMovesAreARemovalAndAnAddition() throws {
            let (temp, scope) = try makeScope()
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            #expect(live.recorder.waitForFinish())
            let before = live.updateCount
            #expect(rename(scope.appending("a/f.txt").string, temp.path.appending("away.txt").string) == 0)
            FileManager.default.createFile(atPath: temp.path.appending("in.txt").string, contents: Data("i".utf8))
            #expect(rename(temp.path.appending("in.txt").string, scope.appending("b/in.txt").string) == 0)
            let away = try #require(live.watcher.place(scope.appending("a"), "f.txt"))
            let arrival = try #require(live.watcher.place(scope.appending("b"), "in.txt"))
            #expect(
                live.apply(
                    [.movedAway(away, isFolder: false), .arrived(arrival, isFolder: false)], marker: "m2"))
            let updates = live.updates(after: before)
            #expect(updates.removed == ["a/f.txt"], "\(updates)")
            #expect(updates.added == ["b/in.txt", "m2"], "\(updates)")
            #expect(live.names == ["a", "b", "a/keep.txt", "b/in.txt", "m2"])
        }

        /// An overflow of one folder lists that folder again (and no other):
        /// what changed there untold is found.
        @Test func anOverflowOfOneFolderRelistsIt() throws {
            let (temp, scope) = try makeScope()
            _ = temp
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            #expect(live.recorder.waitForFinish())
            FileManager.default.createFile(atPath: scope.appending("a/untold.txt").string, contents: Data())
            _ = unlink(scope.appending("a/keep.txt").string)
            let folded = live.engine.foldedRescanCount
            let rescans = live.engine.rescanCount
            let watchA = try #require(live.watcher.watch(of: scope.appending("a")))
            #expect(live.apply([.overflow(watchA)], marker: "m3"))
            #expect(live.recorder.wait { live.names == ["a", "b", "a/f.txt", "a/untold.txt", "m3"] }, "\(live.names)")
            #expect(live.engine.foldedRescanCount == folded + 1)
            #expect(live.engine.rescanCount == rescans, "one folder, not everything")
        }

        /// An overflow of everything rescans every root.
        @Test func anOverflowOfEverythingRescans() throws {
            let (temp, scope) = try makeScope()
            _ = temp
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            #expect(live.recorder.waitForFinish())
            FileManager.default.createFile(atPath: scope.appending("b/untold.txt").string, contents: Data())
            #expect(rename(scope.appending("a").string, scope.appending("c").string) == 0)
            let rescans = live.engine.rescanCount
            #expect(live.apply([.overflow(nil)], marker: "m4"))
            #expect(
                live.recorder.wait { live.names == ["b", "c", "b/untold.txt", "c/f.txt", "c/keep.txt", "m4"] },
                "\(live.names)")
            #expect(live.engine.rescanCount == rescans + 1)
        }

        /// A folder's own changes and its end: the folder's dates are read
        /// again, and a root gone is empty until it comes back.
        @Test func aRootsOwnChangesAndItsEnd() throws {
            let (temp, scope) = try makeScope()
            let live = try ScriptedLiveScope(scope, lagging: false)
            defer { live.stop() }
            #expect(live.recorder.waitForFinish())
            let root = try #require(live.watcher.watch(of: scope))
            #expect(rename(scope.string, temp.path.appending("elsewhere").string) == 0)
            live.watcher.deliver([.folderGone(root)])
            #expect(live.recorder.wait { live.query.results.isEmpty }, "\(live.names)")
        }
    }
}

/// Backends are chosen in one place, by the engine's role.
@Suite struct WatcherRegistryTests {
    @Test func eachRoleGetsItsBackendAndAnOverrideItAllows() throws {
        #expect(try WatcherRegistry.backend(for: .inProcess, override: nil) == .inotify)
        #expect(try WatcherRegistry.backend(for: .systemIndex, override: nil) == .fanotify)
        #expect(try WatcherRegistry.backend(for: .userDaemon(systemIndex: true), override: nil) == .systemIndex)
        #expect(try WatcherRegistry.backend(for: .userDaemon(systemIndex: false), override: "") == .inotify)
        #expect(try WatcherRegistry.backend(for: .userDaemon(systemIndex: true), override: "inotify") == .inotify)
    }

    @Test func aBackendNotAllowedOrUnknownIsNamedInTheError() {
        do {
            _ = try WatcherRegistry.backend(for: .inProcess, override: "fanotify")
            Issue.record("fanotify accepted for in-process queries")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("inotify"), "\(error.message)")
        }
        do {
            _ = try WatcherRegistry.backend(for: .userDaemon(systemIndex: false), override: "kqueue")
            Issue.record("an unknown backend accepted")
        } catch {
            #expect(error.message.contains("kqueue") && error.message.contains("fanotify"), "\(error.message)")
        }
    }
}
