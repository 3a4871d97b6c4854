import CInotifyTools
import CLinuxSyscalls
import Foundation
import Glibc
package import MDQSystem
import Synchronization
package import SystemPackage

/// The process's inotify watcher, built on libinotifytools.
///
/// libinotifytools keeps global state and is not thread-safe, so one
/// dedicated thread owns it and reads events. That thread waits inside
/// `inotifytools_next_event` with a long timeout, costing no CPU while the
/// filesystem is quiet. Watches are added and removed through a request
/// queue served in order by one thread at a time: a thread adding a watch
/// serves it itself when nobody else is serving; otherwise (and for
/// removals, which callers make under their own locks) the watcher thread
/// is woken by touching an anonymous wake file (a memfd, so nothing is left
/// in /tmp) that it watches. An event read before its watch's owner knows
/// the watch comes before the folder is listed, so the listing shows its
/// effect; the owner drops it.
///
/// Watches are added through `/proc/self/fd/N` of the folder's open
/// descriptor, so no full path is needed (deep paths work) and the folder
/// watched is exactly the one the crawler opened.
///
/// The library reads and decodes events; watches are added and removed
/// with `inotify_add_watch`/`inotify_rm_watch` on its descriptor rather than
/// `inotifytools_watch_file`. Its per-watch records (a struct of counters,
/// the path string and two tree nodes: about 320 bytes a watch here) would
/// duplicate the engine's own watch-to-folder maps, go stale on every
/// `IN_IGNORED` (it never drops them) and hold paths that renames make
/// wrong. `inotifytools_next_event` looks nothing up by watch (no stats, no
/// regex), so events of watches it never saw pass through unchanged.
///
/// Events leave this backend as `FolderChange`s: a rename's two halves
/// are paired here (`InotifyMoves`) into one `moved`, and masks, cookies
/// and watch descriptors stay inside.
///
/// There is one watcher per process (the library's state is global); the
/// engines using it are its owners. A folder watched by two owners is one
/// kernel watch; its changes go to both (a rename between a folder both
/// watch and one only one watches is a move for the first, half a move for
/// the other). Each owner may have its own watch limit (tests inject one).
package final class InotifyWatcher: Sendable {
    /// One engine using the watcher.
    struct Owner {
        var onWatchAdded: WatchAddedHandler
        var onChanges: ChangeHandler
        var watchLimit: Int?
        var watches: Set<Int32> = []
    }

    private enum Request {
        case add(owner: Int, descriptor: CInt, purpose: WatchPurpose, completion: Completion)
        case remove(owner: Int, watch: Int32)
        case unregister(owner: Int)
        case pause(gate: Completion, paused: Completion)
    }

    /// A one-shot rendezvous between a requester and the watcher thread.
    final class Completion: Sendable {
        private let result = ConditionLocked<Result<Int32, Errno>?>(nil)

        func finish(_ value: Result<Int32, Errno>) {
            result.mutateAndBroadcast { $0 = value }
        }

        func wait() -> Result<Int32, Errno> {
            result.wait(until: { $0 != nil }) { $0! }
        }

        var isFinished: Bool { result.withLock { $0 != nil } }
    }

    /// Held by whichever thread serves the request queue: requests are
    /// served one thread at a time, in order (an add never overtakes a
    /// remove queued before it).
    private let serving = Mutex(())

    /// Queued requests (a leaf lock: nothing else is taken while held).
    private let requests = Locked<[Request]>([])
    private let wakePending = Atomic<Bool>(false)
    /// An anonymous file (memfd) whose attribute changes wake the watcher
    /// thread: nothing is left behind in any folder, even after a crash.
    private let controlDescriptor: CInt
    private let controlWatch: Int32
    /// Another anonymous file, touched as a read barrier while a rename's
    /// first half waits for its second (`InotifyMoves`).
    private let barrierDescriptor: CInt
    private let barrierWatch: Int32
    /// libinotifytools' inotify descriptor, where watches are added.
    private let inotifyDescriptor: CInt
    /// Owners and the routing of watches to them; guarded by `owners`'s lock,
    /// written only on the watcher thread (plus `register`).
    private let owners = Locked<[Int: Owner]>([:])
    private let routes = Locked<[Int32: WatchOwners]>([:])
    private let nextOwner = Atomic<Int>(1)

    private static let sharedWatcher = Locked<InotifyWatcher?>(nil)

    /// The process's watcher, started on first use.
    ///
    /// - Throws: `MetadataError.watcherUnavailable` when inotify cannot start.
    package static func shared() throws(MetadataError) -> InotifyWatcher {
        try sharedWatcher.withLock { (watcher) throws(MetadataError) -> InotifyWatcher in
            if let watcher { return watcher }
            let made = try InotifyWatcher()
            watcher = made
            return made
        }
    }

    /// Adds an owner; returns its id for the other calls.
    package func register(
        watchLimit: Int? = nil, onWatchAdded: @escaping WatchAddedHandler, onChanges: @escaping ChangeHandler
    ) -> Int {
        let id = nextOwner.add(1, ordering: .relaxed).oldValue
        owners.withLock {
            $0[id] = Owner(onWatchAdded: onWatchAdded, onChanges: onChanges, watchLimit: watchLimit)
        }
        return id
    }

    /// Removes an owner and the watches only it used; returns when done.
    package func unregister(_ owner: Int) {
        enqueue(.unregister(owner: owner))
        // A round trip through the thread: everything before is served.
        serveBarrier()
    }

    private func serveBarrier() {
        let gate = pauseReading()
        gate.finish(.success(0))
    }

    /// Starts the watcher thread.
    private init() throws(MetadataError) {
        try InotifyLibrary.shared.initialize()
        inotifyDescriptor = InotifyLibrary.shared.descriptor
        controlDescriptor = try Self.anonymousFile("mdq-watcher-wake")
        controlWatch = try Self.watchControlFile(controlDescriptor, inotify: inotifyDescriptor)
        barrierDescriptor = try Self.anonymousFile("mdq-watcher-barrier")
        barrierWatch = try Self.watchControlFile(barrierDescriptor, inotify: inotifyDescriptor)
        // The watcher lives as long as the process: its thread holds it.
        guard WorkerThreads.start(name: "mdq-inotify", { [self] in run() }) != nil else {
            throw MetadataError.watcherUnavailable("cannot start the watcher's thread (the thread limit)")
        }
    }

    /// Watches the folder open at `descriptor`, waiting until the watch is
    /// in place. The descriptor must stay open until this returns.
    ///
    /// - Returns: the watch descriptor, or `ENOSPC` at the watch limit, or
    ///   the error inotify gave.
    ///
    /// The calling thread serves the queue itself when no other thread is
    /// serving it (the common case: a crawl adds one watch per folder, and
    /// a hand-off to the watcher thread and back costs two context
    /// switches, most of a 39,000-folder crawl's time). Otherwise, or when
    /// a request only the watcher thread may serve comes first (`pause`),
    /// the watcher thread is woken and serves it.
    package func addWatch(descriptor: FileDescriptor, owner: Int, purpose: WatchPurpose) -> Result<WatchID, Errno> {
        let completion = Completion()
        requests.withLock {
            $0.append(.add(owner: owner, descriptor: descriptor.rawValue, purpose: purpose, completion: completion))
        }
        _ = serving.withLockIfAvailable { _ in drain(onWatcherThread: false) }
        if !completion.isFinished { wake() }
        return completion.wait().map(WatchID.init)
    }

    /// Stops watching for this owner; changes already read for the watch
    /// may still arrive.
    package func removeWatch(_ watch: WatchID, owner: Int) {
        enqueue(.remove(owner: owner, watch: watch.number))
    }

    /// Sets the owner's own watch limit (nil: only the kernel's).
    package func setWatchLimit(_ limit: Int?, owner: Int) {
        owners.withLock { $0[owner]?.watchLimit = limit }
    }

    /// The owner's live watches.
    package func watchCount(owner: Int) -> Int {
        owners.withLock { $0[owner]?.watches.count ?? 0 }
    }

    /// Holds the watcher thread (it reads no events) until the returned
    /// gate is finished: lets a test overflow the kernel queue.
    func pauseReading() -> Completion {
        let gate = Completion()
        let paused = Completion()
        enqueue(.pause(gate: gate, paused: paused))
        _ = paused.wait()
        return gate
    }

    private static func anonymousFile(_ name: String) throws(MetadataError) -> CInt {
        switch syscallResult({ mdq_anonymous_file(name) }) {
        case .success(let descriptor):
            return descriptor
        case .failure(let error):
            throw MetadataError.watcherUnavailable(
                "cannot create the watcher's file \(name) (memfd_create)", underlying: error)
        }
    }

    /// Watches the wake file for attribute changes, through its /proc link
    /// (inotify watches paths; the link resolves to the anonymous file).
    private static func watchControlFile(_ file: CInt, inotify: CInt) throws(MetadataError) -> Int32 {
        switch syscallResult({ inotify_add_watch(inotify, "/proc/self/fd/\(file)", UInt32(IN_ATTRIB)) }) {
        case .success(let watch):
            return watch
        case .failure(let error):
            throw MetadataError.watcherUnavailable(
                "cannot watch the watcher's wake file (is /proc mounted?)", underlying: error)
        }
    }

    private func enqueue(_ request: Request) {
        requests.withLock { $0.append(request) }
        wake()
    }

    /// Wakes the watcher thread to serve the queue.
    private func wake() {
        if !wakePending.exchange(true, ordering: .acquiringAndReleasing) {
            // Touch the wake file: an IN_ATTRIB on its watch ends the
            // watcher thread's wait.
            _ = syscallResult { futimens(controlDescriptor, nil) }
        }
    }

    // MARK: The watcher thread

    private func run() {
        var moves = InotifyMoves()
        while true {
            // A long timeout: the thread sleeps in select() until an event,
            // a request (the wake file) or once an hour.
            guard let pointer = inotifytools_next_event(3600) else {
                // A timeout, or a failed read (errno in the library): do not
                // spin on a persistent error.
                if inotifytools_error() != 0 && inotifytools_error() != EINTR { usleep(10_000) }
                continue
            }
            let event = pointer.pointee
            if event.wd == controlWatch {
                serveRequests()
                continue
            }
            let touch: Bool
            if event.wd == barrierWatch {
                touch = moves.barrierRead()
            } else {
                var name: [UInt8] = []
                if event.len > 0 {
                    let base = UnsafeRawPointer(pointer) + MemoryLayout<inotify_event>.size
                    let bytes = base.assumingMemoryBound(to: UInt8.self)
                    name = Array(
                        UnsafeBufferPointer(
                            start: bytes, count: strnlen(base.assumingMemoryBound(to: CChar.self), Int(event.len))))
                }
                touch = moves.read(
                    InotifyEvent(
                        watch: event.wd, mask: InotifyMask(rawValue: event.mask), cookie: event.cookie, name: name))
            }
            // Touch the barrier: its IN_ATTRIB queues behind every event
            // the kernel holds now.
            if touch { _ = syscallResult { futimens(barrierDescriptor, nil) } }
            deliver(moves.ready())
        }
    }

    /// Hands events on to the owners of their watches, as changes: a
    /// rename's halves with the owners of both ends as one `moved`, with
    /// the owners of one end as half a move.
    private func deliver(_ ready: ArraySlice<InotifyMoves.Held>) {
        guard !ready.isEmpty else { return }
        var changes: [Int: [FolderChange]] = [:]
        routes.withLock { routes in
            for held in ready {
                let event = held.event
                if event.mask.contains(.queueOverflow) {
                    for owner in owners.withLock({ Array($0.keys) }) {
                        changes[owner, default: []].append(.overflow(nil))
                    }
                    continue
                }
                let targets = routes[event.watch] ?? WatchOwners()
                if let partner = held.partner {
                    let destinations = routes[partner.watch] ?? WatchOwners()
                    let from = ChangePlace(WatchID(event.watch), event.name)
                    let to = ChangePlace(WatchID(partner.watch), partner.name)
                    let isFolder = event.mask.contains(.isDirectory)
                    for owner in targets {
                        changes[owner, default: []].append(
                            destinations.contains(owner)
                                ? .moved(from: from, to: to, isFolder: isFolder) : .movedAway(from, isFolder: isFolder))
                    }
                    for owner in destinations where !targets.contains(owner) {
                        changes[owner, default: []].append(.arrived(to, isFolder: isFolder))
                    }
                    continue
                }
                if event.mask.contains(.ignored) {
                    routes[event.watch] = nil
                    owners.withLock { owners in for owner in targets { owners[owner]?.watches.remove(event.watch) } }
                }
                guard let change = Self.change(event) else { continue }
                for owner in targets { changes[owner, default: []].append(change) }
            }
        }
        let handlers = owners.withLock { owners in
            changes.compactMap { owner, list in owners[owner].map { ($0.onChanges, list) } }
        }
        for (handler, list) in handlers { handler(list) }
    }

    /// One event (not half of a rename paired here) as a change.
    static func change(_ event: InotifyEvent) -> FolderChange? {
        let watch = WatchID(event.watch)
        let mask = event.mask
        if mask.contains(.ignored) { return .unwatched(watch) }
        var aspects: ChangeAspects = []
        if mask.contains(.attributes) { aspects.insert(.attributes) }
        if !mask.isDisjoint(with: [.modify, .closeWrite]) { aspects.insert(.contents) }
        let place = ChangePlace(watch, event.name)
        if event.name.isEmpty {
            if !mask.isDisjoint(with: [.deleteSelf, .moveSelf]) { return .folderGone(watch) }
            return aspects.isEmpty ? nil : .changed(place, aspects)
        }
        let isFolder = mask.contains(.isDirectory)
        if mask.contains(.create) { return .created(place, isFolder: isFolder) }
        if mask.contains(.delete) { return .removed(place, isFolder: isFolder) }
        if mask.contains(.movedFrom) { return .movedAway(place, isFolder: isFolder) }
        if mask.contains(.movedTo) { return .arrived(place, isFolder: isFolder) }
        return aspects.isEmpty ? nil : .changed(place, aspects)
    }

    /// Serves queued requests.
    private func serveRequests() {
        wakePending.store(false, ordering: .releasing)
        serving.withLock { _ in drain(onWatcherThread: true) }
    }

    /// Serves queued requests in order until the queue is empty; a thread
    /// other than the watcher's stops before a `pause` (which holds the
    /// watcher thread) and leaves it and what follows to that thread.
    /// Called with `serving` held.
    private func drain(onWatcherThread: Bool) {
        while true {
            let request = requests.withLock { requests -> Request? in
                guard let first = requests.first else { return nil }
                if case .pause = first, !onWatcherThread { return nil }
                return requests.removeFirst()
            }
            guard let request else { return }
            switch request {
            case .add(let owner, let descriptor, let purpose, let completion):
                completion.finish(add(owner: owner, descriptor: descriptor, purpose: purpose))
            case .remove(let owner, let watch):
                remove(watch, owner: owner)
            case .unregister(let owner):
                let watches = owners.withLock { $0[owner]?.watches ?? [] }
                for watch in watches { remove(watch, owner: owner) }
                owners.withLock { _ = $0.removeValue(forKey: owner) }
            case .pause(let gate, let paused):
                paused.finish(.success(0))
                _ = gate.wait()
            }
        }
    }

    private func remove(_ watch: Int32, owner: Int) {
        owners.withLock { _ = $0[owner]?.watches.remove(watch) }
        let unused = routes.withLock { routes -> Bool in
            routes[watch]?.remove(owner)
            if routes[watch]?.isEmpty ?? false {
                routes[watch] = nil
                return true
            }
            return false
        }
        if unused { _ = syscallResult { inotify_rm_watch(inotifyDescriptor, watch) } }
    }

    private func add(owner: Int, descriptor: CInt, purpose: WatchPurpose) -> Result<Int32, Errno> {
        let (limit, count, handler) = owners.withLock { owners in
            (owners[owner]?.watchLimit, owners[owner]?.watches.count ?? 0, owners[owner]?.onWatchAdded)
        }
        if let limit, count >= limit {
            return .failure(.noSpace)
        }
        let path = "/proc/self/fd/\(descriptor)"
        let mask = InotifyMask.folderWatch.rawValue
        // A folder already watched (by another owner) gets its existing
        // watch descriptor back: the same mask changes nothing.
        let watch: Int32
        switch syscallResult({ inotify_add_watch(inotifyDescriptor, path, mask) }) {
        case .success(let added): watch = added
        case .failure(let error): return .failure(error)
        }
        routes.withLock { $0[watch, default: WatchOwners()].insert(owner) }
        owners.withLock { _ = $0[owner]?.watches.insert(watch) }
        handler?(WatchID(watch), purpose)
        return .success(watch)
    }
}

/// The owners of one watch. Almost every watch has one, kept inline: a set
/// per watch would be an allocation per watched folder (about 80 bytes
/// each, 2 MB for a tree of 27,000 folders).
struct WatchOwners: Sequence {
    /// 0 when there is none (owner ids start at 1).
    private var first = 0
    private var others: Set<Int>?

    var isEmpty: Bool { first == 0 && (others?.isEmpty ?? true) }

    func contains(_ owner: Int) -> Bool { first == owner || others?.contains(owner) == true }

    mutating func insert(_ owner: Int) {
        if first == owner || others?.contains(owner) == true { return }
        if first == 0 {
            first = owner
        } else {
            others = (others ?? []).union([owner])
        }
    }

    mutating func remove(_ owner: Int) {
        if first == owner {
            first = others?.popFirst() ?? 0
        } else {
            others?.remove(owner)
        }
        if others?.isEmpty == true { others = nil }
    }

    struct Iterator: IteratorProtocol {
        fileprivate var first: Int
        fileprivate var others: Set<Int>.Iterator?

        mutating func next() -> Int? {
            if first != 0 {
                defer { first = 0 }
                return first
            }
            return others?.next()
        }
    }

    func makeIterator() -> Iterator { Iterator(first: first, others: others?.makeIterator()) }
}
