import MDQCore
package import MDQSystem
import MDQWatch
package import SystemPackage

/// Another process following the engine's own events under a folder (a
/// user's daemon following the system index, `SystemIndexFeed`): each event
/// the engine applies there, as the folder's file handle and its path when
/// it was applied and the inotify event a watch on it would have given, in
/// the engine's order. Only folders on the followed folder's filesystem,
/// watched by handle (`FolderWatcher.followHandle(of:)`): the handle names
/// the folder as an inotify watch does, whatever path the follower knows it
/// by, and unlike an inode number it is not given to a folder made later.
///
/// Events reach the follower only for folders whose contents its viewer may
/// see (the folder itself, for the folder's own events). What the engine
/// learns otherwise (a rescan, a backlog folded into folder rescans) is an
/// `overflow`: the follower rescans. Events wait in an outbox bounded by
/// `capacity`; a follower that falls behind gets an overflow instead.
package final class EventFollower: Sendable {
    /// One event, by the path of its folder.
    package struct Event: Sendable {
        package var folder: [UInt8]
        /// The folder's file handle (`FanotifyWatcher.followHandle`).
        package var handle: [UInt8]
        package var mask: UInt32
        package var cookie: UInt32
        package var name: [UInt8]

        package init(folder: [UInt8], handle: [UInt8], mask: UInt32, cookie: UInt32, name: [UInt8]) {
            self.folder = folder
            self.handle = handle
            self.mask = mask
            self.cookie = cookie
            self.name = name
        }
    }

    /// What the writer takes from the outbox.
    package enum Delivery {
        case events([Event])
        case overflow
        case closed
    }

    let scope: [UInt8]
    /// The filesystem followed: folders of others mounted inside are not.
    package let device: DeviceNumber
    let viewer: Viewer?
    let capacity: Int
    private let outbox = ConditionLocked(Outbox())

    private struct Outbox {
        var events: [Event] = []
        var bytes = 0
        var overflowed = false
        var closed = false
    }

    package init(scope: [UInt8], device: DeviceNumber, viewer: Viewer?, capacity: Int = 16 << 20) {
        self.scope = scope
        self.device = device
        self.viewer = viewer
        self.capacity = capacity
    }

    /// Whether `folder` (a path) lies in the followed folder.
    func covers(_ folder: [UInt8]) -> Bool {
        folder == scope || (folder.starts(with: scope) && (scope == [0x2F] || folder[scope.count] == 0x2F))
    }

    /// Queues an event (under the engine's lock: only the outbox's is taken).
    func record(_ event: Event) {
        outbox.mutateAndBroadcast { box in
            guard !box.closed, !box.overflowed else { return }
            box.bytes += event.folder.count + event.name.count + event.handle.count + 16
            if box.bytes > capacity {
                box.events = []
                box.bytes = 0
                box.overflowed = true
            } else {
                box.events.append(event)
            }
        }
    }

    /// The follower must rescan: what was queued is dropped.
    func overflow() {
        outbox.mutateAndBroadcast { box in
            box.events = []
            box.bytes = 0
            box.overflowed = true
        }
    }

    /// Waits for something to send.
    package func next() -> Delivery {
        var delivery = Delivery.closed
        outbox.wait(until: { $0.closed || $0.overflowed || !$0.events.isEmpty }) { box in
            if box.overflowed {
                box.overflowed = false
                delivery = .overflow
            } else if !box.events.isEmpty {
                delivery = .events(box.events)
                box.events = []
                box.bytes = 0
            } else {
                delivery = .closed
            }
        }
        return delivery
    }

    package func close() {
        outbox.mutateAndBroadcast { $0.closed = true }
    }
}

extension EngineState {
    /// The live root that lists `path` (normalized), the deepest: a
    /// filesystem mounted inside another has its own root.
    func deepestRoot(listing path: FilePath) -> UInt32? {
        roots.filter { !$0.value.missing && $0.value.lists(path) }
            .max { $0.value.path.components.count < $1.value.path.components.count }?.key
    }

    /// Ends the streams of followers whose folder is `folder` or lies inside
    /// it, before it moves or leaves the index: their paths would no longer
    /// lead anywhere. A follower's end is its cue to watch by itself.
    func endFollowers(touching folder: UInt32) {
        guard !followers.isEmpty, index.contains(EntryID(folder)), index.kind(of: EntryID(folder)) == .folder else {
            return
        }
        let path = pathBytes(of: folder)
        let prefix = path == [0x2F] ? path : path + [0x2F]
        for (key, follower) in followers where follower.scope == path || follower.scope.starts(with: prefix) {
            follower.close()
            followers[key] = nil
            followerStarts[key] = nil
        }
    }

    /// Tells the followers whose folder holds `folder` an event the engine
    /// is applying there (the viewer's permission judged by the index).
    func tell(_ event: InotifyEvent, in folder: UInt32, contents: Bool = false) {
        guard let watch = folderToWatch[folder], let device = index.folderDevice(of: EntryID(folder)) else { return }
        let path = pathBytes(of: folder)
        // Read once, and only for an event some follower is told.
        var handle: [UInt8]?
        for (key, follower) in followers where follower.device == device && follower.covers(path) {
            if let viewer = follower.viewer, !viewer.isRoot {
                // What the viewer may reach is remembered for one batch
                // (`LiveEngine.applyBatch` forgets it).
                // The walk starts at the followed folder, which the user
                // opened.
                let start = followerStarts[key].map { [$0] } ?? []
                var visibility =
                    followerVisibility.removeValue(forKey: key) ?? Visibility(viewer: viewer, starts: start)
                let allowed =
                    event.name.isEmpty && !contents
                    ? visibility.allows(folder, in: index) : visibility.allowsContents(of: folder, in: index)
                followerVisibility[key] = visibility
                guard allowed else { continue }
            }
            guard let known = handle ?? followHandle?(watch) else { return }
            handle = known
            follower.record(
                EventFollower.Event(
                    folder: path, handle: known, mask: event.mask.rawValue, cookie: event.cookie,
                    name: event.name))
        }
    }
}

extension LiveEngine {
    /// Why `follow` refused a follower.
    package enum FollowRefusal: Error {
        /// The index holds no folder at its path (any more).
        case notHeld
    }

    /// Starts telling `follower` the events applied in its folder (how
    /// many one user may have is the daemon's to count: `ServiceLimits`).
    package func follow(_ follower: EventFollower) -> Result<Void, FollowRefusal> {
        state.withLock { s in
            // The followed folder's entry, where its user's walk starts
            // (its stream ends before it moves or goes: `endFollowers`).
            let path = FilePath.fromBytes(follower.scope)
            guard let root = s.deepestRoot(listing: path), let start = s.entry(at: path, from: root) else {
                return .failure(.notHeld)
            }
            s.followers[ObjectIdentifier(follower)] = follower
            s.followerStarts[ObjectIdentifier(follower)] = start
            if s.followHandle == nil { s.followHandle = { [watcher] in watcher.followHandle(of: $0) } }
            return .success(())
        }
    }

    /// The device of the live root that lists `path`, as it was crawled.
    package func rootDevice(holding path: FilePath) -> DeviceNumber? {
        let normalized = path.lexicallyNormalized()
        return state.withLock { s in s.deepestRoot(listing: normalized).flatMap { s.roots[$0]?.device } }
    }

    /// Whether the folder at `path` is watched by a handle a follower can
    /// know it by (not on a filesystem watched folder by folder).
    package func followsByHandle(_ path: FilePath) -> Bool {
        let normalized = path.lexicallyNormalized()
        let watch = state.withLock { s -> Int32? in
            guard let root = s.deepestRoot(listing: normalized), let folder = s.entry(at: normalized, from: root)
            else { return nil }
            return s.folderToWatch[folder.rawValue]
        }
        return watch.flatMap { watcher.followHandle(of: $0) } != nil
    }

    /// Stops telling `follower`.
    package func unfollow(_ follower: EventFollower) {
        state.withLock { s in
            s.followers[ObjectIdentifier(follower)] = nil
            s.followerStarts[ObjectIdentifier(follower)] = nil
        }
        follower.close()
    }

    /// Tells the followers of a folder the engine listed without events
    /// (one that appeared, or a rescan of it) to list it again: what
    /// changed in it before the engine watched it, or while events were
    /// folded, reached no follower. Sent as inotify's overflow on the
    /// folder's watch (a folded folder, for the follower's engine).
    func tellFollowersRelisted(_ folder: UInt32) {
        state.withLock { s in
            guard !s.followers.isEmpty, s.index.contains(EntryID(folder)),
                s.index.kind(of: EntryID(folder)) == .folder
            else { return }
            s.tell(InotifyEvent(watch: -1, mask: .queueOverflow, cookie: 0, name: []), in: folder, contents: true)
        }
    }

    /// Tells every follower to rescan (the engine rescanned, or folded a
    /// backlog into folder rescans, without events to pass on).
    func overflowFollowers() {
        for follower in state.withLock({ Array($0.followers.values) }) { follower.overflow() }
    }
}
