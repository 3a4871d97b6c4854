import MDQSystem
package import SystemPackage

/// What a live engine watches folders with: per-folder inotify watches
/// (`InotifyWatcher`, the per-user daemon's) or fanotify filesystem marks
/// (`FanotifyWatcher`, the system index's, one mark per filesystem).
///
/// Either way the engine sees the same thing: a watch per folder it lists,
/// added before the listing (`addWatch`, with the folder as its purpose),
/// and `FolderChange`s naming those watches, delivered in order on the
/// watcher's thread. What a backend knows natively (inotify's masks,
/// cookies and watch descriptors, fanotify's file handles) it translates at
/// its edge; which backend an engine gets is decided in one place
/// (`WatcherRegistry`).
package protocol FolderWatcher: Sendable {
    /// Adds an owner (an engine); returns its id for the other calls.
    func register(
        watchLimit: Int?, onWatchAdded: @escaping WatchAddedHandler, onChanges: @escaping ChangeHandler
    ) -> Int
    /// Removes an owner and its watches; returns when done.
    func unregister(_ owner: Int)
    /// Watches the folder open at `descriptor` for `owner`, calling the
    /// owner's `onWatchAdded` with `purpose` before returning the watch.
    func addWatch(descriptor: FileDescriptor, owner: Int, purpose: WatchPurpose) -> Result<WatchID, Errno>
    /// Stops watching; changes already read for the watch may still arrive.
    func removeWatch(_ watch: WatchID, owner: Int)
    /// The owner's own watch limit (nil: only the kernel's).
    func setWatchLimit(_ limit: Int?, owner: Int)
    /// The owner's live watches.
    func watchCount(owner: Int) -> Int
    /// The kernel's limit on this user's watches, which problems quote when
    /// a folder could not be watched; nil when folders cost no kernel watch.
    var kernelWatchLimit: Int? { get }
    /// The file handle of the folder `watch` follows, by which a follower
    /// of the engine knows that folder (`EventFollower`); nil when the
    /// watcher does not follow folders by handle.
    func followHandle(of watch: WatchID) -> [UInt8]?
    /// Whether a change may be older than what the engine already holds
    /// for its name, so that deletions and moves are checked against the
    /// disk before they are applied: a stream that lags the disk
    /// (`SystemIndexFeed`, whose events can predate a folder's listing), or
    /// a kernel queue that merges a later event of a name into an earlier
    /// one (fanotify). inotify merges only an event identical to the one
    /// just before it, so its order holds.
    var eventsNeedVerifying: Bool { get }
}

/// What to do with changes: called on the watcher's thread, in order.
package typealias ChangeHandler = @Sendable ([FolderChange]) -> Void

/// Called right after a watch is added, on the thread serving the request,
/// with the request's purpose. A change of the watch read in between
/// reaches the owner first; it happened before the folder is listed, so
/// the owner may drop it.
package typealias WatchAddedHandler = @Sendable (_ watch: WatchID, _ purpose: WatchPurpose) -> Void

/// Why the engine watches a folder, handed back with the watch
/// (`onWatchAdded`): a field of its own, never bits of the watch's number.
package enum WatchPurpose: Sendable, Hashable {
    /// The index folder with this id: its entries' changes and its own.
    case folder(UInt32)
    /// The nearest existing ancestor of the scope root with this id, gone
    /// for now: watched until the root's path leads to a folder again.
    case missingRoot(UInt32)
}

extension FolderWatcher {
    package func followHandle(of watch: WatchID) -> [UInt8]? { nil }
    package var eventsNeedVerifying: Bool { false }
}

extension InotifyWatcher: FolderWatcher {
    package var kernelWatchLimit: Int? { InotifyLibrary.shared.maxUserWatches }
}

/// Watch numbers handed out in turn, as the kernel hands out inotify's:
/// a number freed is not given again before all others have been. Events
/// already read for a watch still reach the engine after the watch is
/// removed; the engine drops them (it knows the number no more), but a
/// number given again at once would lead them to the next folder watched.
package struct WatchNumbers {
    let first: Int32
    private var next: Int32

    package init(from first: Int32) {
        self.first = first
        next = first
    }

    /// The next number not `inUse`, wrapping around past `Int32.max`.
    package mutating func take(inUse: (Int32) -> Bool) -> Int32 {
        while true {
            let number = next
            next = next == Int32.max ? first : next + 1
            if !inUse(number) { return number }
        }
    }
}
