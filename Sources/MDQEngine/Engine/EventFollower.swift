import MDQCore
package import MDQSystem
package import MDQWatch
package import SystemPackage

/// Another process following the engine's own changes under a folder (a
/// user's daemon following the system index, `SystemIndexFeed`): each
/// change the engine applies there, in the engine's order, with each
/// folder it names given by its file handle and by its path when the change
/// was applied. Only folders on the followed folder's filesystem, watched
/// by handle (`FolderWatcher.followHandle(of:)`): the handle names the
/// folder as an inotify watch does, whatever path the follower knows it by,
/// and unlike an inode number it is not given to a folder made later.
///
/// Changes reach the follower only for folders whose contents its viewer
/// may see (the folder itself, for the folder's own changes); a move with
/// one end hidden from it is half a move. What the engine learns otherwise
/// (a rescan, a backlog folded into folder rescans) is an `overflow`: the
/// follower rescans. Changes wait in an outbox bounded by `capacity`; a
/// follower that falls behind gets an overflow instead.
package final class EventFollower: Sendable {
    /// A folder a change names, and the name inside it.
    package struct Place: Sendable, Equatable {
        /// The folder's path when the change was applied.
        package var folder: [UInt8]
        /// The folder's file handle (`FanotifyWatcher.followHandle`).
        package var handle: [UInt8]
        /// Empty: the folder itself.
        package var name: [UInt8]

        package init(folder: [UInt8], handle: [UInt8], name: [UInt8]) {
            self.folder = folder
            self.handle = handle
            self.name = name
        }
    }

    /// One change, in the follow stream's terms: `FolderChange`'s
    /// vocabulary, with places given by handle and path instead of watch.
    package struct Event: Sendable, Equatable {
        package enum Kind: String, Sendable, CaseIterable {
            case created, removed, changed, moved, movedAway, arrived, folderGone, overflow
        }

        package var kind: Kind
        /// Where it happened (a move's source; the folder, for
        /// `folderGone` and `overflow`).
        package var place: Place
        /// A move's destination.
        package var destination: Place?
        package var isFolder: Bool
        /// What changed, for `changed`.
        package var aspects: ChangeAspects

        package init(
            kind: Kind, place: Place, destination: Place? = nil, isFolder: Bool = false, aspects: ChangeAspects = []
        ) {
            self.kind = kind
            self.place = place
            self.destination = destination
            self.isFolder = isFolder
            self.aspects = aspects
        }

        /// Where an entry arrived: a move's destination, an arrival's place.
        package var arrival: Place? {
            switch kind {
            case .moved: destination
            case .arrived: place
            default: nil
            }
        }

        /// The change this event is for a watcher that knows folders by
        /// `watch(place)`; nil when it knows none of its folders (a move
        /// with one end known is half a move).
        package func change(watch: (Place) -> WatchID?) -> FolderChange? {
            let at = watch(place).map { ChangePlace($0, place.name) }
            switch kind {
            case .created: return at.map { .created($0, isFolder: isFolder) }
            case .removed: return at.map { .removed($0, isFolder: isFolder) }
            case .changed: return at.map { .changed($0, aspects) }
            case .movedAway: return at.map { .movedAway($0, isFolder: isFolder) }
            case .arrived: return at.map { .arrived($0, isFolder: isFolder) }
            case .folderGone: return at.map { .folderGone($0.watch) }
            case .overflow: return at.map { .overflow($0.watch) }
            case .moved:
                guard let destination else { return nil }
                return .rename(
                    from: at, to: watch(destination).map { ChangePlace($0, destination.name) }, isFolder: isFolder)
            }
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
            box.bytes += event.place.folder.count + event.place.name.count + event.place.handle.count + 24
            if let destination = event.destination {
                box.bytes += destination.folder.count + destination.name.count + destination.handle.count
            }
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
        roots.filter { !$0.value.missing && lists(path, in: $0.key) }
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

    /// Tells the followers whose folder holds the change's folders the
    /// change the engine is applying (the viewer's permission judged by
    /// the index, for each end of a move). `contents`: the change concerns
    /// what is inside the folder even without a name (a folder to list
    /// again).
    func tell(_ change: FolderChange, contents: Bool = false) {
        /// A folder the change names, with its path and device.
        struct End {
            var folder: UInt32
            var watch: WatchID
            var path: [UInt8]
            var name: [UInt8]
            var handle: [UInt8]?
        }
        func end(_ watch: WatchID, _ name: [UInt8]) -> End? {
            guard let folder = watchToFolder[watch] else { return nil }
            return End(folder: folder, watch: folderToWatch[folder] ?? watch, path: pathBytes(of: folder), name: name)
        }
        let kind: EventFollower.Event.Kind
        var ends: [End?]
        var isFolder = false
        var aspects: ChangeAspects = []
        switch change {
        case .created(let place, let folder):
            (kind, ends, isFolder) = (.created, [end(place.watch, place.name)], folder)
        case .removed(let place, let folder):
            (kind, ends, isFolder) = (.removed, [end(place.watch, place.name)], folder)
        case .changed(let place, let what):
            (kind, ends, aspects) = (.changed, [end(place.watch, place.name)], what)
        case .movedAway(let place, let folder):
            (kind, ends, isFolder) = (.movedAway, [end(place.watch, place.name)], folder)
        case .arrived(let place, let folder):
            (kind, ends, isFolder) = (.arrived, [end(place.watch, place.name)], folder)
        case .moved(let from, let to, let folder):
            (kind, ends, isFolder) = (.moved, [end(from.watch, from.name), end(to.watch, to.name)], folder)
        case .folderGone(let watch):
            (kind, ends) = (.folderGone, [end(watch, [])])
        case .overflow(let watch?):
            (kind, ends) = (.overflow, [end(watch, [])])
        case .overflow(nil), .unwatched:
            return
        }
        // Only ends on a folder of the index with a device.
        var devices: [DeviceNumber?] = []
        for end in ends { devices.append(end.flatMap { index.folderDevice(of: EntryID($0.folder)) }) }
        for (key, follower) in followers {
            // The ends this follower may be told of.
            var seen: [End?] = []
            for (i, candidate) in ends.enumerated() {
                guard let candidate, devices[i] == follower.device, follower.covers(candidate.path) else {
                    seen.append(nil)
                    continue
                }
                if let viewer = follower.viewer, !viewer.isRoot {
                    // What the viewer may reach is remembered for one batch
                    // (`LiveEngine.applyBatch` forgets it). The walk starts
                    // at the followed folder, which the user opened.
                    let start = followerStarts[key].map { [$0] } ?? []
                    var visibility =
                        followerVisibility.removeValue(forKey: key) ?? Visibility(viewer: viewer, starts: start)
                    let allowed =
                        candidate.name.isEmpty && !contents && kind != .overflow
                        ? visibility.allows(candidate.folder, in: index)
                        : visibility.allowsContents(of: candidate.folder, in: index)
                    followerVisibility[key] = visibility
                    guard allowed else {
                        seen.append(nil)
                        continue
                    }
                }
                seen.append(candidate)
            }
            func place(_ i: Int) -> EventFollower.Place? {
                guard i < seen.count, var known = seen[i] else { return nil }
                if known.handle == nil { known.handle = ends[i]?.handle ?? followHandle?(known.watch) }
                ends[i]?.handle = known.handle
                guard let handle = known.handle else { return nil }
                return EventFollower.Place(folder: known.path, handle: handle, name: known.name)
            }
            let event: EventFollower.Event
            switch (kind, place(0), place(1)) {
            case (.moved, let from?, let to?):
                event = EventFollower.Event(kind: .moved, place: from, destination: to, isFolder: isFolder)
            case (.moved, let from?, nil):
                event = EventFollower.Event(kind: .movedAway, place: from, isFolder: isFolder)
            case (.moved, nil, let to?):
                event = EventFollower.Event(kind: .arrived, place: to, isFolder: isFolder)
            case (_, let at?, _):
                event = EventFollower.Event(kind: kind, place: at, isFolder: isFolder, aspects: aspects)
            default:
                continue
            }
            follower.record(event)
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
        let watch = state.withLock { s -> WatchID? in
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
    /// folded, reached no follower. Sent as an overflow of the folder (a
    /// folded folder, for the follower's engine).
    func tellFollowersRelisted(_ folder: UInt32) {
        state.withLock { s in
            guard !s.followers.isEmpty, s.index.contains(EntryID(folder)),
                s.index.kind(of: EntryID(folder)) == .folder
            else { return }
            guard let watch = s.folderToWatch[folder] else { return }
            s.tell(.overflow(watch), contents: true)
        }
    }

    /// Tells every follower to rescan (the engine rescanned, or folded a
    /// backlog into folder rescans, without events to pass on).
    func overflowFollowers() {
        for follower in state.withLock({ Array($0.followers.values) }) { follower.overflow() }
    }
}
