import Foundation
import SystemPackage

@testable import MDQCore
@testable import MDQEngine
@testable import MDQSystem
@testable import MDQWatch
@testable import MetadataIndex

/// The watcher seam's test double: a backend whose changes are a script.
/// It hands out watches as inotify does (one per folder: a folder watched
/// again gets its watch again, a folder made later with the inode number
/// of a removed one does not), reports nothing by itself, and delivers the
/// `FolderChange`s a test writes, on the test's thread, in order.
final class ScriptedWatcher: FolderWatcher, @unchecked Sendable {
    let lagging: Bool
    private let state = Locked(
        (
            added: nil as WatchAddedHandler?, changes: nil as ChangeHandler?,
            next: Int32(1), byFile: [String: Int32](), removed: Set<WatchID>()
        ))

    /// `lagging`: the script may tell of what happened before a folder was
    /// listed (`eventsNeedVerifying`), as a system index's feed does.
    init(lagging: Bool = true) { self.lagging = lagging }

    func register(
        watchLimit: Int?, onWatchAdded: @escaping WatchAddedHandler, onChanges: @escaping ChangeHandler
    ) -> Int {
        state.withLock {
            $0.added = onWatchAdded
            $0.changes = onChanges
        }
        return 1
    }

    func unregister(_ owner: Int) {}

    func addWatch(descriptor: FileDescriptor, owner: Int, purpose: WatchPurpose) -> Result<WatchID, Errno> {
        guard case .success(let status) = FileStatus.of(descriptor: descriptor) else {
            return .failure(.badFileDescriptor)
        }
        let file = Self.file(status)
        let (watch, handler) = state.withLock { s -> (Int32, WatchAddedHandler?) in
            if let known = s.byFile[file] { return (known, s.added) }
            defer { s.next += 1 }
            s.byFile[file] = s.next
            return (s.next, s.added)
        }
        handler?(WatchID(watch), purpose)
        return .success(WatchID(watch))
    }

    func removeWatch(_ watch: WatchID, owner: Int) {
        state.withLock { s in
            s.removed.insert(watch)
            s.byFile = s.byFile.filter { $0.value != watch.number }
        }
    }

    func setWatchLimit(_ limit: Int?, owner: Int) {}
    func watchCount(owner: Int) -> Int { state.withLock { $0.byFile.count } }
    var kernelWatchLimit: Int? { nil }
    var eventsNeedVerifying: Bool { lagging }

    /// The watch of the folder at `folder` now.
    func watch(of folder: FilePath) -> WatchID? {
        guard case .success(let status) = FileStatus.of(pathBytes: folder.bytes) else { return nil }
        return state.withLock { $0.byFile[Self.file(status)] }.map(WatchID.init)
    }

    /// `name` inside the folder at `folder`, by the folder's watch.
    func place(_ folder: FilePath, _ name: String) -> ChangePlace? {
        watch(of: folder).map { ChangePlace($0, Array(name.utf8)) }
    }

    /// A watch follows one inode, not its number (which a later folder may
    /// get): the number and birth time.
    static func file(_ status: FileStatus) -> String {
        "\(status.inode)@\(status.birthTime?.nanosecondsSinceEpoch ?? 0)"
    }

    /// The watches the engine removed.
    var removed: Set<WatchID> { state.withLock { $0.removed } }

    /// Delivers changes to the engine, as a backend's thread would.
    func deliver(_ changes: [FolderChange]) { state.withLock { $0.changes }?(changes) }
}

/// An engine on a `ScriptedWatcher` and a live query of all of `scope`.
struct ScriptedLiveScope {
    let watcher: ScriptedWatcher
    let engine: LiveEngine
    let query: MetadataQuery
    let recorder: QueryRecorder
    let scope: FilePath

    init(_ scope: FilePath, lagging: Bool = true) throws {
        self.scope = scope
        watcher = ScriptedWatcher(lagging: lagging)
        engine = try LiveEngine(
            index: FileIndex(), watcher: watcher, watchLimit: nil, crawlThreads: 1, eventCapacity: 1 << 16)
        (query, recorder) = try startLiveQuery("TRUEPREDICATE", scope: scope, engine: engine)
    }

    func stop() {
        query.stop()
        engine.shutdown()
    }

    /// The results, by path relative to the scope.
    var names: Set<String> {
        Set(query.results.map { String($0.path.string.dropFirst(scope.string.count + 1)) })
    }

    /// Delivers `changes`, then the creation of a marker file, and waits
    /// for the marker: the changes were applied and posted.
    func apply(_ changes: [FolderChange], marker: String) -> Bool {
        FileManager.default.createFile(atPath: scope.appending(marker).string, contents: Data())
        guard let place = watcher.place(scope, marker) else { return false }
        watcher.deliver(changes + [.created(place, isFolder: false)])
        return recorder.wait { query.results.contains { $0.name == marker } }
    }

    /// The updates delivered after the first `count`, merged, by path
    /// relative to the scope.
    func updates(after count: Int) -> (added: Set<String>, changed: Set<String>, removed: Set<String>) {
        let all = query.deliveryQueue.sync { Array(recorder.deliveredUpdates.dropFirst(count)) }
        let relative = { (items: [MetadataItem]) in
            Set(items.map { String($0.path.string.dropFirst(scope.string.count + 1)) })
        }
        return (relative(all.flatMap(\.added)), relative(all.flatMap(\.changed)), relative(all.flatMap(\.removed)))
    }

    var updateCount: Int { query.deliveryQueue.sync { recorder.deliveredUpdates.count } }
}
