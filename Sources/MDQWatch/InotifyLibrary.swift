import CInotifyTools
import Foundation
import Glibc
package import MDQSystem
import Synchronization
import SystemPackage

/// The process's one libinotifytools instance.
///
/// libinotifytools keeps all of its state in globals and is neither
/// thread-safe nor reentrant, so every call goes through this type, under its
/// lock. The library reads with `select()`, which is undefined for a
/// descriptor >= 1024, so it is initialised early and refuses to start when
/// its descriptor would be that high.
package final class InotifyLibrary: Sendable {
    /// The engine initialises the library once per process, on first use.
    package static let shared = InotifyLibrary()

    private struct State {
        var initialized = false
        /// The library's inotify descriptor (it has no getter): the lowest
        /// free descriptor at initialisation, checked via /proc.
        var descriptor: CInt = -1
    }

    private let state = Locked(State())

    private init() {}

    /// Initialises libinotifytools if it is not already.
    ///
    /// - Throws: `MetadataError` with code `.watcherUnavailable` when the
    ///   kernel refuses an inotify instance (the per-user limit is
    ///   `/proc/sys/fs/inotify/max_user_instances`) or when its descriptor
    ///   would be >= 1024.
    package func initialize() throws(MetadataError) {
        try state.withLock { (state) throws(MetadataError) in
            if state.initialized { return }
            try Self.start(&state)
        }
    }

    /// The library's inotify descriptor.
    var descriptor: CInt {
        state.withLock { $0.descriptor }
    }

    private static func start(_ state: inout State) throws(MetadataError) {
        // The library has no getter for its descriptor: it is the inotify
        // descriptor that appears in /proc/self/fd across initialisation
        // (mdq opens no other inotify instance).
        let before = inotifyDescriptors()
        guard inotifytools_initialize() != 0 else {
            let error = Errno(rawValue: inotifytools_error())
            throw MetadataError.watcherUnavailable(
                "cannot start inotify (see /proc/sys/fs/inotify/max_user_instances)",
                underlying: error
            )
        }
        let after = inotifyDescriptors()
        let added = after.subtracting(before)
        guard let descriptor = added.count == 1 ? added.first : (after.count == 1 ? after.first : nil) else {
            throw MetadataError.watcherUnavailable("cannot find libinotifytools' inotify descriptor")
        }
        // The library reads with select(), undefined for descriptors >= 1024.
        guard descriptor < FD_SETSIZE else {
            inotifytools_cleanup()
            throw MetadataError.watcherUnavailable(
                "libinotifytools got descriptor \(descriptor) but can only use descriptors below \(FD_SETSIZE) "
                    + "(it uses select()); start watching earlier, before the process opens so many files"
            )
        }
        state.descriptor = descriptor
        state.initialized = true
    }

    /// The process's inotify descriptors, from /proc/self/fd.
    private static func inotifyDescriptors() -> Set<CInt> {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        return Set(entries.compactMap { CInt($0) }.filter(isInotify))
    }

    private static func isInotify(_ descriptor: CInt) -> Bool {
        guard case .success(let path) = descriptorPath(descriptor) else { return false }
        return String(decoding: path, as: UTF8.self).contains("inotify")
    }

    /// Whether `initialize()` has succeeded in this process.
    var isInitialized: Bool {
        state.withLock { $0.initialized }
    }

    /// The per-user watch limit, `/proc/sys/fs/inotify/max_user_watches`.
    package var maxUserWatches: Int {
        state.withLock { _ in Int(inotifytools_get_max_user_watches()) }
    }
}
