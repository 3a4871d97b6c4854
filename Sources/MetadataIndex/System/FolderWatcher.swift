import SystemPackage

/// What a live engine watches folders with: per-folder inotify watches
/// (`InotifyWatcher`, the per-user daemon's) or fanotify filesystem marks
/// (`FanotifyWatcher`, the system index's, one mark per filesystem).
///
/// Either way the engine sees the same thing: a watch per folder it lists,
/// added before the listing (`addWatch`, with the folder as context), and
/// events in inotify's shape, a watch and a name, delivered in order on
/// the watcher's thread.
protocol FolderWatcher: Sendable {
    /// Adds an owner (an engine); returns its id for the other calls.
    func register(
        watchLimit: Int?, onWatchAdded: @escaping InotifyWatcher.WatchAddedHandler,
        onEvents: @escaping InotifyWatcher.EventHandler
    ) -> Int
    /// Removes an owner and its watches; returns when done.
    func unregister(_ owner: Int)
    /// Watches the folder open at `descriptor` for `owner`, calling the
    /// owner's `onWatchAdded` with `context` before returning the watch.
    func addWatch(descriptor: FileDescriptor, owner: Int, context: UInt64) -> Result<Int32, Errno>
    /// Stops watching; events already read for the watch may still arrive.
    func removeWatch(_ watch: Int32, owner: Int)
    /// The owner's own watch limit (nil: only the kernel's).
    func setWatchLimit(_ limit: Int?, owner: Int)
    /// The owner's live watches.
    func watchCount(owner: Int) -> Int
    /// The kernel's limit on this user's watches, which problems quote when
    /// a folder could not be watched; nil when folders cost no kernel watch.
    var kernelWatchLimit: Int? { get }
}

extension InotifyWatcher: FolderWatcher {
    var kernelWatchLimit: Int? { InotifyLibrary.shared.maxUserWatches }
}
