import Glibc
import MDQCore
import MDQEngine
import MDQSystem
import MDQWatch
import MDQWire
import SystemPackage

/// The per-user daemon's watcher when a system index runs (`mdq system`):
/// the folders of a scope the system index keeps live are followed through
/// it, with no inotify watch of their own; every other folder gets an
/// inotify watch as before.
///
/// Each followed scope is one `follow` stream from the system index: the
/// changes its engine applies in the scope's folders, in its order, in the
/// watcher seam's vocabulary (`FolderChange`), each folder named by its
/// file handle and path (only folders whose contents this user may see). A
/// folder's handle leads to the watch the engine holds for it here, so the
/// engine applies the very changes the system index applied, to the folder
/// they happened in, as an inotify watch follows its inode. Not by
/// path: the system index reports a path as it knew it when it applied the
/// event, which lags the disk this engine lists, so a folder renamed, or
/// removed and made again, in between would be taken for another. Not by
/// inode number either: ext4 gives a removed folder's number to the next
/// one made, and the late events of the removed one (deletions, applied
/// without reading the disk) would empty the new one; the handle holds the
/// inode's generation. An event reaches a folder only once the engine
/// watches it, as with inotify; the engine lists a folder after watching
/// it, so the events it gets for the folder are all those after some point
/// before its listing, and applying those older than the listing again
/// leaves it as the disk is, as inotify's between a watch and a listing do.
///
/// Folders the system index does not report on stay with inotify: another
/// filesystem than the scope's, and those its prunes leave out (a pruned
/// path, a pruned name at or above them). A followed folder moved into a
/// prune is dropped from the feed, and the engine rescans (re-watching it
/// with inotify).
///
/// When a stream ends (the system index stopped) or overflows, the engine
/// rescans, as after an inotify overflow: the folders of a stream that
/// ended are watched with inotify from then on.
final class SystemIndexFeed: FolderWatcher, Sendable {
    /// Feed watch numbers start here, above any inotify watch descriptor.
    static let firstWatch: Int32 = 1 << 30

    let paths: DaemonPaths
    private let inotify: InotifyWatcher
    private let state = Locked(State())

    /// A scope followed through the system index.
    fileprivate struct Followed {
        var device: DeviceNumber
        /// The system index's filesystem root and its prunes.
        var systemRoot: [UInt8]
        var prunedNames: Set<[UInt8]>
        var prunedPaths: Set<[UInt8]>
        /// nil while the stream starts.
        var connection: FeedConnection?
    }

    fileprivate struct Watched {
        var purpose: WatchPurpose
        /// The followed scope it belongs to.
        var scope: [UInt8]
        /// The folder's device and handle: a folder watched again keeps its
        /// watch, as with inotify; another folder at the path gets its own.
        var identity: Identity
    }

    fileprivate struct Identity: Hashable {
        var device: DeviceNumber
        /// `FanotifyWatcher.followHandle(of:)`.
        var handle: [UInt8]
    }

    fileprivate struct State {
        var owner: Int?
        var onChanges: ChangeHandler?
        var onWatchAdded: WatchAddedHandler?
        var followed: [[UInt8]: Followed] = [:]
        var watches: [Int32: Watched] = [:]
        var byIdentity: [Identity: Int32] = [:]
        var numbers = WatchNumbers(from: SystemIndexFeed.firstWatch)
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
        guard let client = try? DaemonClient.connectSystem(paths), let status = try? client.status() else {
            return false
        }
        // The system index's filesystem holding the scope, and its prunes.
        let holders = status.scopes.filter { held, live in
            live && (held.path.bytes == path || path.starts(with: Self.folderPrefix(held.path.bytes)))
        }
        guard let holder = holders.max(by: { $0.scope.path.bytes.count < $1.scope.path.bytes.count })?.scope,
            case .success(let info) = FileStatus.of(pathBytes: path),
            case .success(let rootInfo) = FileStatus.of(pathBytes: holder.path.bytes),
            info.device == rootInfo.device
        else { return false }
        // Scopes inside a followed one need no stream of their own; the
        // streams of scopes inside this one end (their folders are this
        // one's from the rescan on).
        var inner: [FeedConnection] = []
        let reserved = state.withLock { s -> Bool in
            if s.followed.keys.contains(where: { path == $0 || path.starts(with: Self.folderPrefix($0)) }) {
                return false
            }
            for scope in s.followed.keys where scope.starts(with: Self.folderPrefix(path)) {
                if let connection = s.followed.removeValue(forKey: scope)?.connection { inner.append(connection) }
                s.forget(scope: scope)
            }
            s.followed[path] = Followed(
                device: info.device, systemRoot: holder.path.bytes, prunedNames: holder.rules.prunedFolderNames,
                prunedPaths: holder.rules.prunedFolderPaths, connection: nil)
            return true
        }
        for connection in inner { connection.stop() }
        guard reserved else { return state.withLock { $0.followingScope(of: path, device: info.device) != nil } }
        let connection = FeedConnection(paths: paths, scope: path)
        connection.onEvents = { [weak self] events in self?.deliver(events, scope: path) }
        connection.onOverflow = { [weak self] in self?.requestRescan() }
        connection.onEnd = { [weak self] in self?.lost(path) }
        guard connection.start() else {
            state.withLock { _ = $0.followed.removeValue(forKey: path) }
            return false
        }
        let kept = state.withLock { s -> Bool in
            guard s.followed[path] != nil else { return false }
            s.followed[path]?.connection = connection
            return true
        }
        if !kept { connection.stop() }
        // The folders of the scopes whose streams ended are watched again,
        // through this one.
        if !inner.isEmpty { requestRescan() }
        return kept
    }

    /// Stops following `scope` (removed from the daemon); its folders'
    /// watches go with the engine's root.
    func unfollow(_ scope: FilePath) {
        let path = scope.lexicallyNormalized().bytes
        let followed = state.withLock { s -> Followed? in
            let followed = s.followed.removeValue(forKey: path)
            s.forget(scope: path)
            return followed
        }
        followed?.connection?.stop()
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
            return s.followed.values.compactMap(\.connection)
        }
        for connection in connections { connection.stop() }
    }

    fileprivate static func folderPrefix(_ path: [UInt8]) -> [UInt8] {
        path == [0x2F] ? path : path + [0x2F]
    }

    // MARK: FolderWatcher

    package func register(
        watchLimit: Int?, onWatchAdded: @escaping WatchAddedHandler, onChanges: @escaping ChangeHandler
    ) -> Int {
        let owner = inotify.register(watchLimit: watchLimit, onWatchAdded: onWatchAdded, onChanges: onChanges)
        state.withLock { s in
            precondition(s.owner == nil, "a system index feed serves one engine")
            s.owner = owner
            s.onChanges = onChanges
            s.onWatchAdded = onWatchAdded
        }
        return owner
    }

    package func unregister(_ owner: Int) {
        stop()
        state.withLock { s in
            s.onChanges = nil
            s.onWatchAdded = nil
            s.watches.removeAll()
            s.byIdentity.removeAll()
        }
        inotify.unregister(owner)
    }

    package func addWatch(descriptor: FileDescriptor, owner: Int, purpose: WatchPurpose) -> Result<WatchID, Errno> {
        if let path = Self.path(of: descriptor), case .success(let info) = FileStatus.of(descriptor: descriptor),
            let handle = FanotifyWatcher.followHandle(of: descriptor)
        {
            let added = state.withLock { s -> (WatchID, WatchAddedHandler?)? in
                guard let scope = s.followingScope(of: path, device: info.device) else { return nil }
                let identity = Identity(device: info.device, handle: handle)
                if let known = s.byIdentity[identity], s.watches[known] != nil {
                    // The same folder, perhaps at another path by now.
                    s.watches[known]?.purpose = purpose
                    s.watches[known]?.scope = scope
                    return (WatchID(known), s.onWatchAdded)
                }
                // Handed out in turn: an event for a watch gone must not
                // reach a folder that came after it.
                let watches = s.watches
                let watch = s.numbers.take { watches[$0] != nil }
                s.watches[watch] = Watched(purpose: purpose, scope: scope, identity: identity)
                s.byIdentity[identity] = watch
                return (WatchID(watch), s.onWatchAdded)
            }
            if let (watch, handler) = added {
                handler?(watch, purpose)
                return .success(watch)
            }
        }
        return inotify.addWatch(descriptor: descriptor, owner: owner, purpose: purpose)
    }

    func removeWatch(_ watch: WatchID, owner: Int) {
        guard watch.number >= Self.firstWatch else {
            inotify.removeWatch(watch, owner: owner)
            return
        }
        state.withLock { s in
            guard let watched = s.watches.removeValue(forKey: watch.number) else { return }
            if s.byIdentity[watched.identity] == watch.number { s.byIdentity[watched.identity] = nil }
        }
    }

    package func setWatchLimit(_ limit: Int?, owner: Int) {
        inotify.setWatchLimit(limit, owner: owner)
    }

    /// The owner's inotify watches (folders followed cost none).
    package func watchCount(owner: Int) -> Int {
        inotify.watchCount(owner: owner)
    }

    package var kernelWatchLimit: Int? { InotifyLibrary.shared.maxUserWatches }

    /// The system index tells what it applied, which lags the disk: an
    /// event can be older than the listing of its folder here.
    package var eventsNeedVerifying: Bool { true }

    /// The folder's path, from the descriptor the engine opened it with.
    private static func path(of descriptor: FileDescriptor) -> [UInt8]? {
        guard case .success(let path) = descriptorPath(descriptor.rawValue), path.first == 0x2F else { return nil }
        // A folder removed while open reads as "… (deleted)": not followed.
        return Self.endsDeleted(path) ? nil : path
    }

    private static func endsDeleted(_ path: [UInt8]) -> Bool {
        let suffix = Array(" (deleted)".utf8)
        return path.count > suffix.count && Array(path.suffix(suffix.count)) == suffix
    }

    // MARK: Updates

    /// Delivers a stream's changes to the watches of their folders (by
    /// file handle), in order.
    private func deliver(_ incoming: [EventFollower.Event], scope: [UInt8]) {
        var changes: [FolderChange] = []
        var leftFeed = false
        let handler = state.withLock { s -> ChangeHandler? in
            guard let device = s.followed[scope]?.device else { return nil }
            for event in incoming {
                let change = event.change { place in
                    s.byIdentity[Identity(device: device, handle: place.handle)].map(WatchID.init)
                }
                guard let change else { continue }
                changes.append(change)
                // A folder moved where the system index does not report (a
                // prune) is not told of any more: the engine rescans, which
                // watches it with inotify. (Its path is the system index's,
                // as it knew it: the move's own destination.)
                if event.isFolder, let arrival = event.arrival,
                    s.followingScope(of: Self.folderPrefix(arrival.folder) + arrival.name, device: device) == nil
                {
                    leftFeed = true
                }
            }
            return s.onChanges
        }
        if !changes.isEmpty { handler?(changes) }
        if leftFeed { requestRescan() }
    }

    /// Changes were lost (the stream overflowed, or the system index
    /// rescanned): the engine rescans, as after an inotify overflow.
    func requestRescan() {
        let handler = state.withLock { $0.onChanges }
        handler?([.overflow(nil)])
    }

    /// A stream ended without being stopped: its folders leave the feed,
    /// and the engine rescans, watching them with inotify from then on.
    private func lost(_ scope: [UInt8]) {
        let gone = state.withLock { s -> Bool in
            guard s.followed.removeValue(forKey: scope) != nil else { return false }
            s.forget(scope: scope)
            return true
        }
        if gone { requestRescan() }
    }
}

extension SystemIndexFeed.State {
    /// The followed scope whose stream reports on the folder at `path` on
    /// `device`, if any: the folder lies in it, on its filesystem, and no
    /// prune of the system index leaves out what is inside it.
    fileprivate func followingScope(of path: [UInt8], device: DeviceNumber) -> [UInt8]? {
        for (scope, followed) in followed
        where followed.connection != nil && followed.device == device
            && (path == scope || path.starts(with: SystemIndexFeed.folderPrefix(scope)))
        {
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

    /// Forgets the feed watches of a scope no longer followed (the engine
    /// re-watches its folders when it rescans).
    fileprivate mutating func forget(scope: [UInt8]) {
        for (watch, watched) in watches where watched.scope == scope {
            watches[watch] = nil
            if byIdentity[watched.identity] == watch { byIdentity[watched.identity] = nil }
        }
    }
}

/// One `follow` stream from the system index, on a thread of its own.
final class FeedConnection: @unchecked Sendable {
    /// Tests slow the stream down on purpose: up to this many microseconds
    /// before each line of events is delivered.
    nonisolated(unsafe) static var slowDown: UInt32 = 0

    let paths: DaemonPaths
    let scope: [UInt8]
    // Set before `start`, read by the stream's thread only.
    var onEvents: (@Sendable ([EventFollower.Event]) -> Void)?
    var onOverflow: (@Sendable () -> Void)?
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

    /// Connects and asks to follow the scope; true once the system index
    /// has accepted (within 10 s).
    func start() -> Bool {
        guard case .success(let socket) = UnixSocket.connectToSystemIndex(at: paths.socket),
            case .success(let folder) = OpenedFolders.open([FilePath.fromBytes(scope)])
        else { return false }
        // The folder as this user opened it (the system index resolves no
        // path a user gives it).
        var request = JSONWriter(capacity: 256)
        request.raw(#"{"id":1,"command":"follow","descriptors":1,"scope":{"#)
        request.bytesField("path", scope)
        request.raw(#","descriptor":0}}"#)
        request.raw("\n")
        let written = withBytes(of: request.bytes) { socket.write($0, passing: folder.descriptors) }
        guard case .success = written else { return false }
        state.withLock { $0.socket = socket }
        guard WorkerThreads.start(name: "mdq-feed", { [self] in run(socket) }) != nil else { return false }
        state.wait(until: { $0.accepted != nil }, deadline: ContinuousClock.now + .seconds(10)) { _ in }
        let accepted = state.withLock { $0.accepted } == true
        if !accepted { stop() }
        return accepted
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
            case "following":
                settle(true)
            case "overflow":
                onOverflow?()
            case "events":
                if Self.slowDown > 0 { usleep(UInt32.random(in: 0...Self.slowDown)) }
                var events: [EventFollower.Event] = []
                for item in value["events"]?.array ?? [] {
                    // A change this side cannot read (a system index of
                    // another version) ends the stream: inotify takes over.
                    guard let event = FollowWire.event(item) else { return }
                    events.append(event)
                }
                onEvents?(events)
            default:
                break
            }
        }
    }
}
