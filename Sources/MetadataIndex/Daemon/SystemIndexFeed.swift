import Glibc
import MDQWire
import Synchronization
import SystemPackage

/// The per-user daemon's watcher when a system index runs (`mdq system`):
/// the folders of a scope the system index keeps live are followed through
/// it, with no inotify watch of their own; every other folder gets an
/// inotify watch as before.
///
/// Each followed scope is one `subscribe` stream to the system index, of
/// changes only (`feed`), over everything in the scope that this user may
/// see. Its updates become the inotify events watches on those folders
/// would have given: an added item a `CREATE` in its folder, a removed one
/// a `DELETE`, a changed one an attribute change, a moved one a
/// `MOVED_FROM`/`MOVED_TO` pair (the items a moved folder carries are
/// implied by its own move). An update reaches a folder only once the
/// engine watches it, as with inotify; the engine lists a folder after
/// watching it, so what happened before is on the disk it reads.
///
/// Folders the system index does not report on stay with inotify: another
/// filesystem than the scope's, and those its prunes leave out (a pruned
/// path, a pruned name above or at them).
///
/// When a stream ends (the system index stopped), its folders are watched
/// with inotify from then on, and the engine rescans (an overflow) for
/// what changed in between.
final class SystemIndexFeed: FolderWatcher, Sendable {
    /// Feed watch numbers start here, above any inotify watch descriptor.
    static let firstWatch: Int32 = 1 << 30

    let paths: DaemonPaths
    private let inotify: InotifyWatcher
    private let state = Locked(State())
    private let cookies = Atomic<UInt32>(1)

    /// A scope followed through the system index.
    fileprivate struct Followed {
        var device: DeviceNumber
        /// The system index's filesystem root and its prunes.
        var systemRoot: [UInt8]
        var prunedNames: Set<[UInt8]>
        var prunedPaths: Set<[UInt8]>
        var connection: FeedConnection
    }

    fileprivate struct Watched {
        var path: [UInt8]
        var context: UInt64
        /// The followed scope it belongs to.
        var scope: [UInt8]
    }

    fileprivate struct State {
        var owner: Int?
        var onEvents: InotifyWatcher.EventHandler?
        var onWatchAdded: InotifyWatcher.WatchAddedHandler?
        var followed: [[UInt8]: Followed] = [:]
        var watches: [Int32: Watched] = [:]
        var byPath: [[UInt8]: Int32] = [:]
        var freeWatches: [Int32] = []
        var nextWatch = SystemIndexFeed.firstWatch
    }

    init(paths: DaemonPaths = .system) throws(MetadataError) {
        self.paths = paths
        inotify = try InotifyWatcher.shared()
    }

    // MARK: Following scopes

    /// Follows `scope` through the system index when one runs and keeps it
    /// live (whole, for this user): its folders then cost no inotify watch.
    /// Waits for the system index to accept the stream; false when it does
    /// not run, does not cover the scope, or refuses.
    func follow(_ scope: FilePath) -> Bool {
        let path = scope.lexicallyNormalized().bytes
        if state.withLock({ $0.followed[path] != nil }) { return true }
        guard let client = try? DaemonClient.connectSystem(paths), let status = try? client.status() else {
            return false
        }
        // The system index's filesystem holding the scope, and its prunes.
        let holders = status.scopes.filter { held, live in
            live && (held.path.bytes == path || path.starts(with: Self.folderPrefix(held.path.bytes)))
        }
        guard let holder = holders.max(by: { $0.scope.path.bytes.count < $1.scope.path.bytes.count })?.scope,
            case .success(let info) = FileStatus.of(pathBytes: path)
        else { return false }
        let connection = FeedConnection(paths: paths, scope: path)
        connection.onUpdate = { [weak self] update in self?.deliver(update, scope: path) }
        connection.onResynchronize = { [weak self] in self?.overflow() }
        connection.onEnd = { [weak self] in self?.lost(path) }
        guard connection.start() else { return false }
        state.withLock { s in
            s.followed[path] = Followed(
                device: info.device, systemRoot: holder.path.bytes, prunedNames: holder.rules.prunedFolderNames,
                prunedPaths: holder.rules.prunedFolderPaths, connection: connection)
        }
        return true
    }

    /// Stops following `scope` (removed from the daemon); its folders'
    /// watches go with the engine's root.
    func unfollow(_ scope: FilePath) {
        let path = scope.lexicallyNormalized().bytes
        let followed = state.withLock { $0.followed.removeValue(forKey: path) }
        followed?.connection.stop()
    }

    /// The scopes followed now.
    var followedScopes: [FilePath] {
        state.withLock { s in s.followed.keys.sorted { $0.lexicographicallyPrecedes($1) }.map(FilePath.fromBytes) }
    }

    /// Folders followed through the system index (no inotify watch each).
    var followedFolders: Int { state.withLock { $0.watches.count } }

    /// Stops every stream.
    func stop() {
        let connections = state.withLock { s -> [FeedConnection] in
            defer { s.followed.removeAll() }
            return s.followed.values.map(\.connection)
        }
        for connection in connections { connection.stop() }
    }

    private static func folderPrefix(_ path: [UInt8]) -> [UInt8] {
        path == [0x2F] ? path : path + [0x2F]
    }

    // MARK: FolderWatcher

    func register(
        watchLimit: Int?, onWatchAdded: @escaping InotifyWatcher.WatchAddedHandler,
        onEvents: @escaping InotifyWatcher.EventHandler
    ) -> Int {
        let owner = inotify.register(watchLimit: watchLimit, onWatchAdded: onWatchAdded, onEvents: onEvents)
        state.withLock { s in
            precondition(s.owner == nil, "a system index feed serves one engine")
            s.owner = owner
            s.onEvents = onEvents
            s.onWatchAdded = onWatchAdded
        }
        return owner
    }

    func unregister(_ owner: Int) {
        stop()
        state.withLock { s in
            s.onEvents = nil
            s.onWatchAdded = nil
            s.watches.removeAll()
            s.byPath.removeAll()
        }
        inotify.unregister(owner)
    }

    func addWatch(descriptor: FileDescriptor, owner: Int, context: UInt64) -> Result<Int32, Errno> {
        if let path = Self.path(of: descriptor), case .success(let info) = FileStatus.of(descriptor: descriptor) {
            let added = state.withLock { s -> (Int32, InotifyWatcher.WatchAddedHandler?)? in
                guard let scope = s.followingScope(of: path, device: info.device) else { return nil }
                if let known = s.byPath[path] {
                    s.watches[known]?.context = context
                    return (known, s.onWatchAdded)
                }
                let watch: Int32
                if let reused = s.freeWatches.popLast() {
                    watch = reused
                } else {
                    watch = s.nextWatch
                    s.nextWatch += 1
                }
                s.watches[watch] = Watched(path: path, context: context, scope: scope)
                s.byPath[path] = watch
                return (watch, s.onWatchAdded)
            }
            if let (watch, handler) = added {
                handler?(watch, context)
                return .success(watch)
            }
        }
        return inotify.addWatch(descriptor: descriptor, owner: owner, context: context)
    }

    func removeWatch(_ watch: Int32, owner: Int) {
        guard watch >= Self.firstWatch else {
            inotify.removeWatch(watch, owner: owner)
            return
        }
        state.withLock { s in
            guard let watched = s.watches.removeValue(forKey: watch) else { return }
            if s.byPath[watched.path] == watch { s.byPath[watched.path] = nil }
            s.freeWatches.append(watch)
        }
    }

    func setWatchLimit(_ limit: Int?, owner: Int) {
        inotify.setWatchLimit(limit, owner: owner)
    }

    /// The owner's inotify watches (folders followed cost none).
    func watchCount(owner: Int) -> Int {
        inotify.watchCount(owner: owner)
    }

    var kernelWatchLimit: Int? { InotifyLibrary.shared.maxUserWatches }

    /// The folder's path, from the descriptor the engine opened it with.
    private static func path(of descriptor: FileDescriptor) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = buffer.withUnsafeMutableBufferPointer { raw in
            readlink("/proc/self/fd/\(descriptor.rawValue)", raw.baseAddress!, raw.count - 1)
        }
        guard length > 0, buffer[0] == 0x2F else { return nil }
        let path = Array(buffer[..<length])
        // A folder removed while open reads as "… (deleted)": not followed.
        return Self.endsDeleted(path) ? nil : path
    }

    private static func endsDeleted(_ path: [UInt8]) -> Bool {
        let suffix = Array(" (deleted)".utf8)
        return path.count > suffix.count && Array(path.suffix(suffix.count)) == suffix
    }

    // MARK: Updates

    /// Delivers a stream's update as the events its folders' watches would
    /// have given.
    private func deliver(_ update: FeedConnection.Update, scope: [UInt8]) {
        var events: [InotifyEvent] = []
        let handler = state.withLock { s -> InotifyWatcher.EventHandler? in
            func watch(ofParentOf path: [UInt8]) -> (Int32, [UInt8])? {
                guard let slash = path.lastIndex(of: 0x2F) else { return nil }
                let parent = slash == 0 ? [0x2F] : Array(path[..<slash])
                guard let watch = s.byPath[parent] else { return nil }
                return (watch, Array(path[(slash + 1)...]))
            }
            for item in update.removed {
                guard let (watch, name) = watch(ofParentOf: item.path) else { continue }
                events.append(
                    InotifyEvent(
                        watch: watch, mask: [.delete, item.isFolder ? .isDirectory : []], cookie: 0, name: name))
            }
            var moves: [(from: [UInt8], to: [UInt8])] = []
            for item in update.changed {
                guard let previous = item.previousPath, previous != item.path else {
                    guard let (watch, name) = watch(ofParentOf: item.path) else { continue }
                    events.append(
                        InotifyEvent(
                            watch: watch, mask: [.attributes, .closeWrite, item.isFolder ? .isDirectory : []],
                            cookie: 0, name: name))
                    continue
                }
                // Carried by a folder moved in this update: implied.
                let carried = moves.contains { move in
                    previous.starts(with: move.from + [0x2F])
                        && item.path == move.to + previous[move.from.count...]
                }
                if carried { continue }
                let cookie = cookies.add(1, ordering: .relaxed).oldValue
                let directory: InotifyMask = item.isFolder ? .isDirectory : []
                if let (watch, name) = watch(ofParentOf: previous) {
                    events.append(
                        InotifyEvent(watch: watch, mask: [.movedFrom, directory], cookie: cookie, name: name))
                }
                if let (watch, name) = watch(ofParentOf: item.path) {
                    events.append(InotifyEvent(watch: watch, mask: [.movedTo, directory], cookie: cookie, name: name))
                }
                if item.isFolder {
                    moves.append((previous, item.path))
                    s.rename(previous, to: item.path)
                }
            }
            for item in update.added {
                guard let (watch, name) = watch(ofParentOf: item.path) else { continue }
                events.append(
                    InotifyEvent(
                        watch: watch, mask: [.create, item.isFolder ? .isDirectory : []], cookie: 0, name: name))
            }
            return s.onEvents
        }
        if !events.isEmpty { handler?(events) }
    }

    /// Changes were lost (the system index resynchronized the stream): the
    /// engine rescans, as after an inotify overflow.
    private func overflow() {
        let handler = state.withLock { $0.onEvents }
        handler?([InotifyEvent(watch: -1, mask: .queueOverflow, cookie: 0, name: [])])
    }

    /// A stream ended without being stopped: its folders are watched with
    /// inotify from now on, and the engine rescans for what changed since.
    private func lost(_ scope: [UInt8]) {
        let (owner, moved) = state.withLock { s -> (Int?, [Watched]) in
            guard s.followed.removeValue(forKey: scope) != nil else { return (nil, []) }
            let moved = s.watches.filter { $0.value.scope == scope }
            for (watch, watched) in moved {
                s.watches[watch] = nil
                if s.byPath[watched.path] == watch { s.byPath[watched.path] = nil }
            }
            return (s.owner, Array(moved.values))
        }
        guard let owner else { return }
        for watched in moved {
            let path = FilePath.fromBytes(watched.path)
            guard case .success(let folder) = DirectoryHandle.open(path: path) else { continue }
            _ = inotify.addWatch(descriptor: folder.descriptor, owner: owner, context: watched.context)
        }
        overflow()
    }
}

extension SystemIndexFeed.State {
    /// The followed scope whose stream reports on the folder at `path` on
    /// `device`, if any: the folder lies in it, on its filesystem, and no
    /// prune of the system index leaves out what is inside it.
    fileprivate func followingScope(of path: [UInt8], device: DeviceNumber) -> [UInt8]? {
        for (scope, followed) in followed
        where followed.device == device && (path == scope || path.starts(with: scope + [0x2F])) {
            if followed.prunedPaths.contains(where: { path == $0 || path.starts(with: $0 + [0x2F]) }) { return nil }
            if !followed.prunedNames.isEmpty {
                let below = path.dropFirst(followed.systemRoot.count)
                if below.split(separator: 0x2F).contains(where: { followed.prunedNames.contains(Array($0)) }) {
                    return nil
                }
            }
            return scope
        }
        return nil
    }

    /// A followed folder moved: it and the folders inside it are known by
    /// their new paths.
    fileprivate mutating func rename(_ from: [UInt8], to: [UInt8]) {
        let prefix = from + [0x2F]
        let affected = byPath.filter { $0.key == from || $0.key.starts(with: prefix) }
        for (path, watch) in affected {
            byPath[path] = nil
            let moved = to + path[from.count...]
            byPath[moved] = watch
            watches[watch]?.path = moved
        }
    }
}

/// One stream of changes from the system index, on a thread of its own.
final class FeedConnection: @unchecked Sendable {
    struct Item {
        var path: [UInt8]
        var previousPath: [UInt8]?
        var isFolder: Bool
    }

    struct Update {
        var added: [Item]
        var changed: [Item]
        var removed: [Item]
    }

    let paths: DaemonPaths
    let scope: [UInt8]
    // Set before `start`, read by the stream's thread only.
    var onUpdate: (@Sendable (Update) -> Void)?
    var onResynchronize: (@Sendable () -> Void)?
    var onEnd: (@Sendable () -> Void)?
    private let state = ConditionLocked(State())

    private struct State {
        var socket: UnixSocket?
        /// nil until the system index accepted (true) or refused (false).
        var accepted: Bool?
        var stopped = false
    }

    init(paths: DaemonPaths, scope: [UInt8]) {
        self.paths = paths
        self.scope = scope
    }

    /// Connects and subscribes; true once the system index has gathered
    /// the scope (it covers it and serves this user).
    func start() -> Bool {
        guard case .success(let socket) = UnixSocket.connectToSystemIndex(at: paths.socket) else { return false }
        var request = JSONWriter(capacity: 256)
        request.raw(#"{"id":1,"command":"subscribe","interval":0,"feed":true,"predicate":"TRUEPREDICATE","#)
        request.raw(#""scopes":[{"#)
        request.bytesField("path", scope)
        request.raw(#","hidden":true}]}"#)
        request.raw("\n")
        guard case .success = withBytes(of: request.bytes, { socket.write($0) }) else { return false }
        state.withLock { $0.socket = socket }
        guard WorkerThreads.start(name: "mdq-feed", { [self] in run(socket) }) != nil else { return false }
        state.wait(until: { $0.accepted != nil }) { _ in }
        return state.withLock { $0.accepted } == true
    }

    func stop() {
        let socket = state.mutateAndBroadcast { s -> UnixSocket? in
            s.stopped = true
            return s.socket
        }
        socket?.shutdown()
    }

    private func run(_ socket: UnixSocket) {
        var reader = LineReader(socket: socket, maximum: 1 << 30, timeout: 120_000)
        func settle(_ accepted: Bool) {
            state.mutateAndBroadcast { if $0.accepted == nil { $0.accepted = accepted } }
        }
        defer {
            let wasAccepted = state.withLock { $0.accepted == true && !$0.stopped }
            settle(false)
            state.withLock { $0.socket = nil }
            if wasAccepted { onEnd?() }
        }
        while true {
            guard case .line(let line) = reader.next(idle: -1), let value = try? JSONValue.parse(line) else { return }
            if value["error"] != nil { return }
            switch value["event"]?.string {
            case "didFinishGathering":
                settle(true)
            case "resynchronize":
                onResynchronize?()
            case "didUpdate":
                func items(_ key: String) -> [Item] {
                    (value[key]?.array ?? []).compactMap { item in
                        guard let path = item.bytesField("path") else { return nil }
                        return Item(
                            path: path, previousPath: item.bytesField("previousPath"),
                            isFolder: item["kind"]?.string == EntryKind.folder.description)
                    }
                }
                onUpdate?(Update(added: items("added"), changed: items("changed"), removed: items("removed")))
            default:
                break
            }
        }
    }
}
