import CInotifyTools
import Foundation
import Glibc
import Synchronization
import SystemPackage

/// The process's inotify watcher, built on libinotifytools.
///
/// libinotifytools keeps global state and is not thread-safe, so one
/// dedicated thread owns it: it adds and removes watches and reads events.
/// That thread waits inside `inotifytools_next_event` with a long timeout,
/// costing no CPU while the filesystem is quiet. Other threads hand it work
/// through a request queue and wake it by touching a private control file
/// that it watches: the resulting event ends the wait at once.
///
/// Watches are added through `/proc/self/fd/N` of the folder's open
/// descriptor, so no full path is needed (deep paths work) and the folder
/// watched is exactly the one the crawler opened.
final class InotifyWatcher: @unchecked Sendable {
    /// What to do with events: called on the watcher thread, in order.
    typealias EventHandler = @Sendable ([InotifyEvent]) -> Void
    /// Called on the watcher thread right after a watch is added, before any
    /// of its events are delivered, with the request's context.
    typealias WatchAddedHandler = @Sendable (_ watch: Int32, _ context: UInt64) -> Void

    private enum Request {
        case add(descriptor: CInt, context: UInt64, completion: Completion)
        case remove(watch: Int32)
        case shed(completion: Completion)
        case stop
    }

    /// A one-shot rendezvous between a requester and the watcher thread.
    final class Completion: @unchecked Sendable {
        // `result` is written once under `condition` before `signal`.
        private let condition = NSCondition()
        private var result: Result<Int32, Errno>?

        func finish(_ value: Result<Int32, Errno>) {
            condition.lock()
            result = value
            condition.signal()
            condition.unlock()
        }

        func wait() -> Result<Int32, Errno> {
            condition.lock()
            defer { condition.unlock() }
            while result == nil { condition.wait() }
            return result!
        }
    }

    private let requests = Mutex<[Request]>([])
    private let wakePending = Atomic<Bool>(false)
    private let controlFolder: FilePath
    private let controlDescriptor: CInt
    /// Only the watcher thread changes it (after `shed`).
    private var controlWatch: Int32
    private let onEvents: EventHandler
    private let onWatchAdded: WatchAddedHandler
    /// Live watches other than the control watch; only the watcher thread writes it.
    private let liveWatchCount = Atomic<Int>(0)
    /// Watches the kernel dropped (IN_IGNORED): libinotifytools keeps a record
    /// of each forever, until `shed`.
    private let staleRecordCount = Atomic<Int>(0)
    /// A test may set a lower watch limit than the kernel's.
    let watchLimit: Int?
    private var thread: pthread_t?

    /// Starts the watcher thread.
    ///
    /// - Throws: `MetadataError.watcherUnavailable` when inotify cannot start.
    init(
        watchLimit: Int? = nil, onWatchAdded: @escaping WatchAddedHandler, onEvents: @escaping EventHandler
    ) throws(MetadataError) {
        try InotifyLibrary.shared.initialize()
        self.watchLimit = watchLimit
        self.onEvents = onEvents
        self.onWatchAdded = onWatchAdded
        var template = Array("/tmp/mdq-control-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw MetadataError(
                code: .watcherUnavailable, message: "cannot create the watcher's control folder in /tmp",
                underlying: Errno(rawValue: errno))
        }
        controlFolder = FilePath(String(cString: made))
        controlDescriptor = open(made, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let token = openat(controlDescriptor, "wake", O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if token >= 0 { closeDescriptor(token) }
        guard controlDescriptor >= 0 else {
            throw MetadataError(
                code: .watcherUnavailable, message: "cannot open the watcher's control folder", path: controlFolder,
                underlying: Errno(rawValue: errno))
        }
        controlWatch = try Self.watchControlFolder(controlFolder)
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        pthread_create(&thread, nil, { context in
            let watcher = Unmanaged<InotifyWatcher>.fromOpaque(context!).takeRetainedValue()
            watcher.run()
            return nil
        }, box.toOpaque())
        self.thread = thread
    }

    /// Watches the folder open at `descriptor`, waiting until the watch is
    /// in place. The descriptor must stay open until this returns.
    ///
    /// - Returns: the watch descriptor, or `ENOSPC` at the watch limit, or
    ///   the error inotify gave.
    func addWatch(descriptor: FileDescriptor, context: UInt64) -> Result<Int32, Errno> {
        let completion = Completion()
        enqueue(.add(descriptor: descriptor.rawValue, context: context, completion: completion))
        return completion.wait()
    }

    /// Stops watching; events already queued for the watch may still arrive.
    func removeWatch(_ watch: Int32) {
        enqueue(.remove(watch: watch))
    }

    /// Live watches (the control watch excluded).
    var watchCount: Int { liveWatchCount.load(ordering: .relaxed) }

    /// Records libinotifytools still holds for watches the kernel dropped.
    var staleRecords: Int { staleRecordCount.load(ordering: .relaxed) }

    /// Drops libinotifytools' records of dead watches: `inotifytools_cleanup`
    /// then initialise again. Every watch is lost in the process; the caller
    /// must re-add its live watches and reconcile (events in between are
    /// not seen). Returns when done.
    func shed() {
        let completion = Completion()
        enqueue(.shed(completion: completion))
        _ = completion.wait()
    }

    /// Stops the watcher thread; no event is delivered afterwards.
    func stop() {
        enqueue(.stop)
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    private static func watchControlFolder(_ folder: FilePath) throws(MetadataError) -> Int32 {
        let mask = UInt32(IN_ATTRIB | IN_ONLYDIR)
        let added = folder.withPlatformString { inotifytools_watch_file($0, Int32(bitPattern: mask)) }
        let watch = folder.withPlatformString { inotify_add_watch(InotifyLibrary.shared.descriptor, $0, mask) }
        guard added != 0, watch > 0 else {
            throw MetadataError(
                code: .watcherUnavailable, message: "cannot watch the watcher's control folder", path: folder,
                underlying: Errno(rawValue: inotifytools_error()))
        }
        return watch
    }

    private func enqueue(_ request: Request) {
        requests.withLock { $0.append(request) }
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            // Touch the control file: an IN_ATTRIB on the control watch ends
            // the watcher thread's wait.
            _ = utimensat(controlDescriptor, "wake", nil, 0)
        }
    }

    // MARK: The watcher thread

    private func run() {
        var batch: [InotifyEvent] = []
        var running = true
        while running {
            // A long timeout: the thread sleeps in select() until an event,
            // a request (the control file) or once an hour.
            guard let pointer = inotifytools_next_event(3600) else {
                // A timeout, or a failed read (errno in the library): do not
                // spin on a persistent error.
                if inotifytools_error() != 0 && inotifytools_error() != EINTR { usleep(10_000) }
                continue
            }
            let event = pointer.pointee
            if event.wd == controlWatch {
                running = serveRequests()
                continue
            }
            var name: [UInt8] = []
            if event.len > 0 {
                let base = UnsafeRawPointer(pointer) + MemoryLayout<inotify_event>.size
                let bytes = base.assumingMemoryBound(to: UInt8.self)
                name = Array(UnsafeBufferPointer(start: bytes, count: strnlen(base.assumingMemoryBound(to: CChar.self), Int(event.len))))
            }
            let mask = InotifyMask(rawValue: event.mask)
            if mask.contains(.ignored) {
                liveWatchCount.subtract(1, ordering: .relaxed)
                staleRecordCount.add(1, ordering: .relaxed)
            }
            batch.append(InotifyEvent(watch: event.wd, mask: mask, cookie: event.cookie, name: name))
            onEvents(batch)
            batch.removeAll(keepingCapacity: true)
        }
        closeDescriptor(controlDescriptor)
        try? FileManager.default.removeItem(atPath: controlFolder.string)
    }

    /// Serves queued requests; false when asked to stop.
    private func serveRequests() -> Bool {
        wakePending.store(false, ordering: .releasing)
        let pending = requests.withLock { queue -> [Request] in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        for request in pending {
            switch request {
            case .add(let descriptor, let context, let completion):
                completion.finish(add(descriptor: descriptor, context: context))
            case .remove(let watch):
                if inotifytools_remove_watch_by_wd(watch) != 0 {
                    liveWatchCount.subtract(1, ordering: .relaxed)
                }
            case .shed(let completion):
                liveWatchCount.store(0, ordering: .relaxed)
                staleRecordCount.store(0, ordering: .relaxed)
                do throws(MetadataError) {
                    try InotifyLibrary.shared.reinitialize()
                    controlWatch = try Self.watchControlFolder(controlFolder)
                    completion.finish(.success(0))
                } catch {
                    completion.finish(.failure(error.underlying ?? .ioError))
                }
            case .stop:
                return false
            }
        }
        return true
    }

    private func add(descriptor: CInt, context: UInt64) -> Result<Int32, Errno> {
        if let watchLimit, liveWatchCount.load(ordering: .relaxed) >= watchLimit {
            return .failure(.noSpace)
        }
        let path = "/proc/self/fd/\(descriptor)"
        let mask = InotifyMask.folderWatch.rawValue
        let added = inotifytools_watch_file(path, Int32(bitPattern: mask))
        guard added != 0 else {
            return .failure(Errno(rawValue: inotifytools_error()))
        }
        // The library's filename table keeps stale records, so a reused
        // "/proc/self/fd/N" string can resolve to an old watch. Ask the
        // kernel instead: adding the same folder with the same mask changes
        // nothing and returns its watch descriptor.
        let watch = inotify_add_watch(InotifyLibrary.shared.descriptor, path, mask)
        guard watch > 0 else { return .failure(Errno(rawValue: errno)) }
        liveWatchCount.add(1, ordering: .relaxed)
        onWatchAdded(watch, context)
        return .success(watch)
    }
}
