/// A watch as the watcher seam names it: what `FolderWatcher.addWatch`
/// returns and every change in the watched folder carries. The engine keeps
/// it to know which folder a change happened in and to stop the watch; what
/// it stands for inside a backend (an inotify watch descriptor, a folder's
/// file handle, a line of a script) is the backend's alone.
package struct WatchID: Hashable, Sendable, CustomStringConvertible {
    /// The backend's number for the watch; meaningless outside it.
    package let number: Int32

    package init(_ number: Int32) { self.number = number }

    package var description: String { "watch \(number)" }
}

/// A name inside a watched folder: where a change happened. An empty name
/// is the folder itself.
package struct ChangePlace: Hashable, Sendable {
    package var watch: WatchID
    package var name: [UInt8]

    package init(_ watch: WatchID, _ name: [UInt8]) {
        self.watch = watch
        self.name = name
    }
}

/// What changed about an entry that stayed where it was.
package struct ChangeAspects: OptionSet, Hashable, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Its attributes (mode, owner, times, extended attributes).
    package static let attributes = ChangeAspects(rawValue: 1)
    /// Its contents (written to).
    package static let contents = ChangeAspects(rawValue: 2)
}

/// One change a watcher reports, in no backend's terms: what the engine
/// applies, what the system index's `follow` stream carries, what a test
/// scripts. Masks, cookies, watch descriptors and file handles stay inside
/// their backend, which translates its native events into these at its
/// edge.
///
/// A change says where to look, not what is there now: the engine reads
/// the disk for what it applies (a backend may merge what happened to a
/// name into one `created`).
package enum FolderChange: Hashable, Sendable {
    /// An entry appeared at the place (made, or linked), or something
    /// happened to the name that is to be read again.
    case created(ChangePlace, isFolder: Bool)
    /// The entry at the place was deleted.
    case removed(ChangePlace, isFolder: Bool)
    /// The entry at the place (the folder itself, when the name is empty)
    /// changed where it is.
    case changed(ChangePlace, ChangeAspects)
    /// A rename with both ends watched: the entry at `from` is now at `to`
    /// (replacing whatever was there). One change, whatever the backend
    /// (inotify pairs its own halves; fanotify's `FAN_RENAME` has both).
    case moved(from: ChangePlace, to: ChangePlace, isFolder: Bool)
    /// Half a rename: the entry left for somewhere this watcher does not
    /// see (out of the watched folders).
    case movedAway(ChangePlace, isFolder: Bool)
    /// Half a rename: an entry came from somewhere this watcher does not
    /// see.
    case arrived(ChangePlace, isFolder: Bool)
    /// The watched folder itself was deleted or moved (a scope root's
    /// fate; an inner folder's is told by its parent's change).
    case folderGone(WatchID)
    /// The backend watches the folder no more (it was deleted, or the
    /// watch removed): nothing more comes for this watch.
    case unwatched(WatchID)
    /// Changes were lost: of one folder (its contents are to be listed
    /// again), or of everything (nil: every folder is).
    case overflow(WatchID?)

    /// Every watch the change names (a move, both ends').
    package var watches: [WatchID] {
        switch self {
        case .created(let place, _), .removed(let place, _), .changed(let place, _), .movedAway(let place, _),
            .arrived(let place, _):
            [place.watch]
        case .moved(let from, let to, _): from.watch == to.watch ? [from.watch] : [from.watch, to.watch]
        case .folderGone(let watch), .unwatched(let watch): [watch]
        case .overflow(let watch): watch.map { [$0] } ?? []
        }
    }

    /// A rename as far as it is seen: both ends a `moved`, one end half a
    /// move, none nothing.
    package static func rename(from: ChangePlace?, to: ChangePlace?, isFolder: Bool) -> FolderChange? {
        switch (from, to) {
        case (let from?, let to?): .moved(from: from, to: to, isFolder: isFolder)
        case (let from?, nil): .movedAway(from, isFolder: isFolder)
        case (nil, let to?): .arrived(to, isFolder: isFolder)
        case (nil, nil): nil
        }
    }

    /// The same change with its watches replaced (`map` gives the new
    /// watch for each; nil drops that end: a move with one end left is a
    /// half-move, a change with none is nil). How a backend that relays
    /// another's changes (the system index's feed) re-addresses them.
    package func rewatched(_ map: (WatchID) -> WatchID?) -> FolderChange? {
        switch self {
        case .created(let place, let isFolder):
            map(place.watch).map { .created(ChangePlace($0, place.name), isFolder: isFolder) }
        case .removed(let place, let isFolder):
            map(place.watch).map { .removed(ChangePlace($0, place.name), isFolder: isFolder) }
        case .changed(let place, let aspects):
            map(place.watch).map { .changed(ChangePlace($0, place.name), aspects) }
        case .movedAway(let place, let isFolder):
            map(place.watch).map { .movedAway(ChangePlace($0, place.name), isFolder: isFolder) }
        case .arrived(let place, let isFolder):
            map(place.watch).map { .arrived(ChangePlace($0, place.name), isFolder: isFolder) }
        case .moved(let from, let to, let isFolder):
            .rename(
                from: map(from.watch).map { ChangePlace($0, from.name) },
                to: map(to.watch).map { ChangePlace($0, to.name) }, isFolder: isFolder)
        case .folderGone(let watch): map(watch).map { .folderGone($0) }
        case .unwatched(let watch): map(watch).map { .unwatched($0) }
        case .overflow(let watch):
            // An overflow of a folder not known here is still a loss.
            .overflow(watch.flatMap(map))
        }
    }
}
