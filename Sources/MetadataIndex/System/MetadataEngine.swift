import MDQCore
public import MDQSystem
import MDQWatch

/// Process-wide setup of the engine.
public enum MetadataEngine {
    /// Initialises the inotify layer (libinotifytools) for this process.
    ///
    /// Call early, before the process opens many descriptors: the library
    /// reads with `select()`, which cannot take a descriptor >= 1024, so
    /// initialising late in a busy process can fail. Calling again is free.
    /// Live queries call this themselves; one-shot searches do not need it.
    ///
    /// - Returns: the per-user watch limit
    ///   (`/proc/sys/fs/inotify/max_user_watches`).
    /// - Throws: `MetadataError` `.watcherUnavailable` when the kernel refuses
    ///   an inotify instance or its descriptor would be >= 1024.
    @discardableResult
    public static func initializeWatching() throws(MetadataError) -> Int {
        try InotifyLibrary.shared.initialize()
        return InotifyLibrary.shared.maxUserWatches
    }
}
