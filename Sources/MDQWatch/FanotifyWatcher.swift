import CLinuxSyscalls
import Glibc
package import MDQSystem
package import SystemPackage

/// Watches whole filesystems with one fanotify mark each
/// (`FAN_MARK_FILESYSTEM`, reporting a directory file handle and a name
/// per event: `FAN_REPORT_DFID_NAME`), for a process with
/// `CAP_SYS_ADMIN`: the system index's watcher. A folder costs no kernel
/// watch; the watcher only remembers its file handle.
///
/// Each folder the engine lists gets a watch number of this watcher's own
/// (from `firstWatch` up), tied to the folder's file handle. The first
/// folder of a filesystem marks that filesystem. An event names a folder
/// by handle and an entry by name: it is delivered as the `FolderChange`
/// of that folder's watch (a `FAN_RENAME`, which carries both ends, as one
/// `moved`, or half a move when only one end is watched). Events in
/// folders the engine does not list (outside its scopes) are dropped on
/// reading, after a hash lookup.
///
/// A filesystem the kernel will not mark (one without file handles, a
/// btrfs subvolume: `EXDEV`, an older kernel) is watched folder by folder
/// through the process's `InotifyWatcher` instead; `filesystems` says which
/// is which and why.
///
/// The kernel's queue is unbounded (`FAN_UNLIMITED_QUEUE`): the reading
/// thread drains it as fast as it can into the engine's bounded queue,
/// which turns a backlog it cannot hold into an overflow and a rescan.
package final class FanotifyWatcher: FolderWatcher, Sendable {
    /// Watch numbers this watcher hands out start here, above any inotify
    /// watch descriptor (the kernel numbers those from 1 per group).
    static let firstWatch: Int32 = 1 << 30

    /// How one filesystem is watched.
    package enum FilesystemWatch: Sendable, Equatable {
        /// One fanotify mark covers it.
        case marked
        /// The kernel refused the mark (the error): folders are watched by inotify.
        case folderByFolder(Errno)
    }

    /// A folder's file handle within its filesystem: up to 16 bytes inline
    /// (ext4's and xfs's are 8 to 12), with its type and length; longer
    /// ones (btrfs) are kept whole.
    struct Handle: Hashable {
        var first: UInt64
        var second: UInt64
        /// The handle type in the high half, the length in the low.
        var shape: UInt32
        var longer: [UInt8]?

        init(type: Int32, bytes: UnsafeRawBufferPointer) {
            shape = UInt32(truncatingIfNeeded: type) << 16 | UInt32(bytes.count)
            if bytes.count <= 16 {
                var words: (UInt64, UInt64) = (0, 0)
                withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: bytes) }
                first = words.0
                second = words.1
                longer = nil
            } else {
                first = 0
                second = 0
                longer = Array(bytes)
            }
        }

        /// As a follower names the folder (`EventFollower`): the type (4
        /// bytes, little-endian), then the handle.
        var followBytes: [UInt8] {
            let type = Int32(truncatingIfNeeded: shape >> 16)
            var bytes = withUnsafeBytes(of: type.littleEndian) { Array($0) }
            if let longer {
                bytes += longer
            } else {
                withUnsafeBytes(of: (first, second)) { bytes += $0[..<Int(shape & 0xFFFF)] }
            }
            return bytes
        }
    }

    /// The filesystem (fsid) and file handle of the folder open at
    /// `descriptor`: what a fanotify event names it by.
    private static func handle(of descriptor: FileDescriptor) -> Result<(filesystem: UInt64, handle: Handle), Errno> {
        var filesystem: UInt64 = 0
        var type: Int32 = 0
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let written = withUnsafeMutableBytes(of: &bytes) { buffer in
            syscallResult {
                mdq_file_handle(
                    descriptor.rawValue, &filesystem, &type, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    UInt32(buffer.count))
            }
        }
        return written.map { length in
            let handle = withUnsafeBytes(of: &bytes) { buffer in
                Handle(type: type, bytes: UnsafeRawBufferPointer(rebasing: buffer[..<Int(length)]))
            }
            return (filesystem, handle)
        }
    }

    /// A folder's file handle as a follower names it (`EventFollower`). It
    /// names the folder as an inotify watch does: a folder made later with
    /// the same inode number has another (ext4 and xfs count generations).
    package static func followHandle(of descriptor: FileDescriptor) -> [UInt8]? {
        try? handle(of: descriptor).get().handle.followBytes
    }

    /// The handle of the folder `watch` follows, as `followHandle(of:)`
    /// gives it; nil for a folder watched with inotify.
    package func followHandle(of watch: WatchID) -> [UInt8]? {
        state.withLock { $0.keys[watch.number]?.handle }?.followBytes
    }

    private struct Key: Hashable {
        var filesystem: UInt64
        var handle: Handle
    }

    private struct State {
        var onWatchAdded: WatchAddedHandler?
        var onChanges: ChangeHandler?
        var watchLimit: Int?
        var filesystems: [UInt64: FilesystemWatch] = [:]
        /// The folders watched by handle, and the reverse for removal.
        var watches: [Key: Int32] = [:]
        var keys: [Int32: Key] = [:]
        /// Watch numbers, handed out in turn.
        var numbers = WatchNumbers(from: FanotifyWatcher.firstWatch)
        /// The inotify owner for filesystems watched folder by folder.
        var fallbackOwner: Int?
        var fallbackWatches = 0
        var stopping = false
        /// Events whose folder was not watched (outside the scopes).
        var dropped = 0
        var refusesMarks: Errno?
    }

    private let descriptor: CInt
    private let state = Locked(State())
    /// Run by the reading thread before each read of the kernel's queue: a
    /// test holds it to let events queue (and the kernel merge them).
    let readHook = Locked<(@Sendable () -> Void)?>(nil)
    private let stopped = ConditionLocked(false)

    /// Starts the fanotify group and its reading thread.
    ///
    /// - Throws: `MetadataError.watcherUnavailable` when fanotify cannot
    ///   start (`EPERM` without `CAP_SYS_ADMIN`, `ENOSYS` or `EINVAL` on a
    ///   kernel before 5.9), naming the reason.
    package init() throws(MetadataError) {
        let fd: CInt
        switch syscallResult({ mdq_fanotify_init(1) }) {
        case .success(let opened):
            fd = opened
        case .failure(let error):
            let why =
                error == .notPermitted
                ? "fanotify filesystem marks need CAP_SYS_ADMIN (run the system index as root)"
                : "this kernel has no fanotify with directory handles and names (Linux 5.9 or later)"
            throw MetadataError.watcherUnavailable(why, underlying: error)
        }
        descriptor = fd
        guard WorkerThreads.start(name: "mdq-fanotify", { [self] in run() }) != nil else {
            closeDescriptor(fd)
            throw MetadataError.watcherUnavailable("cannot start the watcher's thread (the thread limit)")
        }
    }

    /// Stops the reading thread and closes the group (every mark goes with it).
    package func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopping = true }
            return !s.stopping
        }
        guard first else { return }
        stopped.wait(until: { $0 }) { _ in }
        closeDescriptor(descriptor)
    }

    /// How each filesystem (by fsid) met so far is watched.
    package var filesystems: [UInt64: FilesystemWatch] { state.withLock { $0.filesystems } }

    /// Forgets the filesystems other than those mounted at `roots` (now):
    /// an unmounted filesystem's mark went with it, so one mounted again,
    /// with the same fsid, is marked afresh by its first folder.
    package func keepFilesystems(of roots: [FilePath]) {
        var kept: Set<UInt64> = []
        for root in roots {
            guard case .success(let folder) = DirectoryHandle.open(path: root),
                case .success(let read) = Self.handle(of: folder.descriptor)
            else { continue }
            kept.insert(read.filesystem)
        }
        state.withLock { s in s.filesystems = s.filesystems.filter { kept.contains($0.key) } }
    }

    /// Makes every new filesystem refuse its mark with this error, as a
    /// kernel or filesystem without them does (tests of the fallback).
    var refusesMarks: Errno? {
        get { state.withLock { $0.refusesMarks } }
        set { state.withLock { $0.refusesMarks = newValue } }
    }

    /// Events dropped because their folder was not watched.
    package var droppedEvents: Int { state.withLock { $0.dropped } }

    /// The kernel merges an event into any queued event of the same folder,
    /// name and kind (file or folder), however far back in the queue: a
    /// deletion read before a rename onto the same name can be newer than
    /// it. Deletions and moves are checked against the disk.
    package var eventsNeedVerifying: Bool { true }

    package var kernelWatchLimit: Int? {
        state.withLock { $0.fallbackOwner } == nil ? nil : InotifyLibrary.shared.maxUserWatches
    }

    // MARK: FolderWatcher

    /// One owner per watcher: the system index's engine.
    package func register(
        watchLimit: Int?, onWatchAdded: @escaping WatchAddedHandler, onChanges: @escaping ChangeHandler
    ) -> Int {
        state.withLock { s in
            precondition(s.onChanges == nil, "a fanotify watcher serves one engine")
            s.onWatchAdded = onWatchAdded
            s.onChanges = onChanges
            s.watchLimit = watchLimit
        }
        return 1
    }

    package func unregister(_ owner: Int) {
        let fallback = state.withLock { s -> Int? in
            s.onChanges = nil
            s.onWatchAdded = nil
            s.watches.removeAll()
            s.keys.removeAll()
            defer { s.fallbackOwner = nil }
            return s.fallbackOwner
        }
        if let fallback, let inotify = try? InotifyWatcher.shared() { inotify.unregister(fallback) }
        stop()
    }

    package func addWatch(descriptor folder: FileDescriptor, owner: Int, purpose: WatchPurpose) -> Result<
        WatchID, Errno
    > {
        guard case .success(let (filesystem, handle)) = Self.handle(of: folder) else {
            // No handles here: this folder is watched by inotify.
            return addFallbackWatch(folder, purpose: purpose)
        }
        // The filesystem's mark, made by its first folder.
        let how: FilesystemWatch
        if let known = state.withLock({ $0.filesystems[filesystem] }) {
            how = known
        } else {
            if let refusal = state.withLock({ $0.refusesMarks }) {
                how = .folderByFolder(refusal)
            } else {
                switch syscallResult({ mdq_fanotify_mark_filesystem(descriptor, "/proc/self/fd/\(folder.rawValue)", 0) }
                ) {
                case .success: how = .marked
                case .failure(let error): how = .folderByFolder(error)
                }
            }
            state.withLock { s in
                if s.filesystems[filesystem] == nil { s.filesystems[filesystem] = how }
            }
        }
        guard case .marked = how else { return addFallbackWatch(folder, purpose: purpose) }
        let key = Key(filesystem: filesystem, handle: handle)
        let result = state.withLock { s -> (WatchID, WatchAddedHandler?)? in
            if let watch = s.watches[key] { return (WatchID(watch), s.onWatchAdded) }
            if let limit = s.watchLimit, s.keys.count + s.fallbackWatches >= limit { return nil }
            let keys = s.keys
            let watch = s.numbers.take { keys[$0] != nil }
            s.watches[key] = watch
            s.keys[watch] = key
            return (WatchID(watch), s.onWatchAdded)
        }
        guard let (watch, handler) = result else { return .failure(.noSpace) }
        handler?(watch, purpose)
        return .success(watch)
    }

    package func removeWatch(_ watch: WatchID, owner: Int) {
        if watch.number < Self.firstWatch {
            let fallback = state.withLock { s -> Int? in
                if s.fallbackOwner != nil { s.fallbackWatches = max(0, s.fallbackWatches - 1) }
                return s.fallbackOwner
            }
            if let fallback, let inotify = try? InotifyWatcher.shared() { inotify.removeWatch(watch, owner: fallback) }
            return
        }
        state.withLock { s in
            guard let key = s.keys.removeValue(forKey: watch.number) else { return }
            if s.watches[key] == watch.number { s.watches[key] = nil }
        }
    }

    package func setWatchLimit(_ limit: Int?, owner: Int) {
        state.withLock { $0.watchLimit = limit }
    }

    package func watchCount(owner: Int) -> Int {
        state.withLock { $0.keys.count + $0.fallbackWatches }
    }

    /// Watches one folder with inotify, the owner's callbacks shared.
    private func addFallbackWatch(_ folder: FileDescriptor, purpose: WatchPurpose) -> Result<WatchID, Errno> {
        let inotify: InotifyWatcher
        do {
            inotify = try InotifyWatcher.shared()
        } catch {
            return .failure(error.underlying ?? .ioError)
        }
        let owner = state.withLock { s -> Int? in
            if let owner = s.fallbackOwner { return owner }
            guard let added = s.onWatchAdded, let changes = s.onChanges else { return nil }
            let owner = inotify.register(watchLimit: nil, onWatchAdded: added, onChanges: changes)
            s.fallbackOwner = owner
            return owner
        }
        guard let owner else { return .failure(.badFileDescriptor) }
        if let limit = state.withLock({ $0.watchLimit }), watchCount(owner: 1) >= limit { return .failure(.noSpace) }
        let result = inotify.addWatch(descriptor: folder, owner: owner, purpose: purpose)
        if case .success = result { state.withLock { $0.fallbackWatches += 1 } }
        return result
    }

    // MARK: Reading

    private func run() {
        let capacity = 1 << 18
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        var changes: [FolderChange] = []
        while !state.withLock({ $0.stopping }) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            // Woken by events; the timeout only lets `stop()` be noticed.
            guard case .success(let ready) = syscallResult({ poll(&poller, 1, 250) }), ready > 0 else { continue }
            readHook.withLock { $0 }?()
            let count: Int
            switch syscallResult({ read(descriptor, buffer, capacity) }) {
            case .success(let read) where read > 0:
                count = read
            case .success, .failure(.resourceTemporarilyUnavailable):
                continue
            case .failure:
                // Not expected of a fanotify group; back off, never spin.
                usleep(10_000)
                continue
            }
            decode(UnsafeRawBufferPointer(start: buffer, count: count), into: &changes)
            guard !changes.isEmpty else { continue }
            let handler = state.withLock { $0.onChanges }
            handler?(changes)
            changes.removeAll(keepingCapacity: true)
        }
        stopped.mutateAndBroadcast { $0 = true }
    }

    // fanotify's constants (the C macros do not import).
    private static let queueOverflow: UInt64 = 0x0000_4000
    private static let onDirectory: UInt64 = 0x4000_0000
    private static let renamed: UInt64 = 0x1000_0000
    private static let created: UInt64 = 0x0000_0100
    private static let deleted: UInt64 = 0x0000_0200
    private static let modified: UInt64 = 0x0000_0002
    private static let closedWrite: UInt64 = 0x0000_0008
    private static let attributesChanged: UInt64 = 0x0000_0004
    private static let deletedSelf: UInt64 = 0x0000_0400
    private static let movedSelf: UInt64 = 0x0000_0800
    /// Info record types: a directory and a name; a rename's two ends.
    private static let directoryAndName: UInt8 = 2
    private static let oldDirectoryAndName: UInt8 = 10
    private static let newDirectoryAndName: UInt8 = 12

    /// One record's folder and name.
    private struct Record {
        var key: Key
        var name: [UInt8]
    }

    /// Turns a read's events into changes, in order.
    private func decode(_ bytes: UnsafeRawBufferPointer, into changes: inout [FolderChange]) {
        var offset = 0
        // The records of one read, resolved to watches under one lock.
        var pending: [(mask: UInt64, records: [(type: UInt8, record: Record)])] = []
        while offset + 24 <= bytes.count {
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let metadataLength = Int(bytes.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self))
            guard length >= 24, offset + length <= bytes.count else { break }
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
            let fd = bytes.loadUnaligned(fromByteOffset: offset + 16, as: Int32.self)
            if fd >= 0 { closeDescriptor(fd) }  // never with FID reporting; closed if ever
            var records: [(UInt8, Record)] = []
            var info = offset + metadataLength
            while info + 4 <= offset + length {
                let type = bytes[info]
                let recordLength = Int(bytes.loadUnaligned(fromByteOffset: info + 2, as: UInt16.self))
                guard recordLength >= 20, info + recordLength <= offset + length else { break }
                let filesystem = bytes.loadUnaligned(fromByteOffset: info + 4, as: UInt64.self)
                let handleLength = Int(bytes.loadUnaligned(fromByteOffset: info + 12, as: UInt32.self))
                let handleType = bytes.loadUnaligned(fromByteOffset: info + 16, as: Int32.self)
                let handleStart = info + 20
                if handleStart + handleLength <= info + recordLength {
                    let handle = Handle(
                        type: handleType,
                        bytes: UnsafeRawBufferPointer(rebasing: bytes[handleStart..<handleStart + handleLength]))
                    var name: [UInt8] = []
                    var cursor = handleStart + handleLength
                    while cursor < info + recordLength && bytes[cursor] != 0 {
                        name.append(bytes[cursor])
                        cursor += 1
                    }
                    records.append((type, Record(key: Key(filesystem: filesystem, handle: handle), name: name)))
                }
                info += recordLength
            }
            pending.append((mask, records))
            offset += length
        }
        state.withLock { s in
            for (mask, records) in pending {
                if mask & Self.queueOverflow != 0 {
                    changes.append(.overflow(nil))
                    continue
                }
                let isFolder = mask & Self.onDirectory != 0
                /// The record's place, when its folder is watched.
                func place(_ record: Record) -> ChangePlace? {
                    guard let watch = s.watches[record.key] else {
                        s.dropped += 1
                        return nil
                    }
                    return ChangePlace(WatchID(watch), record.name)
                }
                if mask & Self.renamed != 0 {
                    let source = records.first { $0.type == Self.oldDirectoryAndName }.flatMap { place($0.record) }
                    let destination = records.first { $0.type == Self.newDirectoryAndName }.flatMap { place($0.record) }
                    if let rename = FolderChange.rename(from: source, to: destination, isFolder: isFolder) {
                        changes.append(rename)
                    }
                    // The kernel merges an event into one of the same name
                    // still queued: a creation at the old name after the
                    // rename can come merged into an event before it. The old
                    // name is read again after the move.
                    if let source { changes.append(.created(source, isFolder: false)) }
                    continue
                }
                guard let (_, record) = records.first(where: { $0.type == Self.directoryAndName }),
                    let at = place(record)
                else { continue }
                var aspects: ChangeAspects = []
                if mask & Self.attributesChanged != 0 { aspects.insert(.attributes) }
                if mask & (Self.modified | Self.closedWrite) != 0 { aspects.insert(.contents) }
                if record.name == [0x2E] {
                    // The folder itself: its attributes, or its own deletion
                    // or move (a root's; an inner folder's is told by its
                    // parent's entry event).
                    let own = ChangePlace(at.watch, [])
                    if mask & (Self.deletedSelf | Self.movedSelf) != 0 {
                        changes.append(.folderGone(at.watch))
                    } else if !aspects.isEmpty {
                        changes.append(.changed(own, aspects))
                    }
                    continue
                }
                // Events of one name merged by the kernel (a deletion and a
                // creation, in either order) are re-read from the disk: a
                // creation re-reads the name.
                let entryEvents = mask & (Self.created | Self.deleted)
                if entryEvents == Self.deleted && mask & ~(Self.deleted | Self.onDirectory | Self.deletedSelf) == 0 {
                    changes.append(.removed(at, isFolder: isFolder))
                } else if entryEvents != 0 {
                    changes.append(.created(at, isFolder: isFolder))
                } else if !aspects.isEmpty {
                    // A file's own deletion or move is told by its folder's
                    // DELETE or RENAME.
                    changes.append(.changed(at, aspects))
                }
            }
        }
    }
}
