import Foundation
import SystemPackage

extension LiveIndex {
    /// Where a query's scope sits in the engine's index.
    struct Anchor: Sendable, Hashable {
        /// The scope folder's entry (a top root, or a folder inside one).
        var entry: EntryID
        var path: FilePath
        var excludedChildNames: Set<[UInt8]>
        var includeHidden: Bool
    }

    /// Makes `root` live (crawled and watched), sharing what is already
    /// watched: a scope inside a live root reuses its entries; a scope that
    /// contains live roots absorbs them.
    ///
    /// - Parameter progress: receives the running count of entries gathered.
    /// - Throws: `MetadataError` naming the scope when it cannot be opened.
    func acquire(
        _ root: CrawlRoot, includeHidden: Bool, progress: (@Sendable (Int) -> Void)? = nil
    ) throws(MetadataError) -> Anchor {
        let path = root.path.lexicallyNormalized()
        lock.lock()
        for (id, info) in topRoots where !info.missing && info.crawlRoot.covers(path) {
            if includeHidden && !info.includeHidden {
                topRoots[id]?.includeHidden = true
                lock.unlock()
                reconcile(root: id)
                lock.lock()
            }
            if let entry = entry(at: path, from: id) {
                topRoots[id]?.users += 1
                lock.unlock()
                return Anchor(
                    entry: entry, path: path, excludedChildNames: root.excludedChildNames,
                    includeHidden: includeHidden)
            }
        }
        lock.unlock()

        let handle: DirectoryHandle
        switch DirectoryHandle.open(path: path) {
        case .success(let opened): handle = opened
        case .failure(let error): throw MetadataError.scope(error, path: path)
        }
        let status: FileStatus
        switch FileStatus.of(descriptor: handle.descriptor) {
        case .success(let s): status = s
        case .failure(let error): throw MetadataError.scope(error, path: path)
        }
        lock.lock()
        let id = index.addRoot(path: path, metadata: EntryMetadata(status), device: status.device)
        topRoots[id.rawValue] = TopRoot(
            crawlRoot: CrawlRoot(path: path, excludedChildNames: root.excludedChildNames),
            includeHidden: includeHidden, device: status.device, inode: status.inode, users: 1)
        lock.unlock()
        let sink = LiveSink(engine: self, recording: false)
        let done = ProgressTicker(sink: sink, report: progress)
        crawl(handle: handle, folder: id, root: id.rawValue, sink: sink)
        done.stop()
        return Anchor(entry: id, path: path, excludedChildNames: root.excludedChildNames, includeHidden: includeHidden)
    }

    /// Gives a scope back; a root nobody uses any more is dropped with its
    /// watches, so idle scopes cost no watches.
    func release(_ anchor: Anchor) {
        lock.lock()
        defer { lock.unlock() }
        let rootID: UInt32
        if index.contains(anchor.entry) {
            rootID = index.root(of: anchor.entry).rawValue
        } else if let found = topRoots.first(where: { $0.value.crawlRoot.covers(anchor.path) })?.key {
            rootID = found
        } else {
            return
        }
        guard var info = topRoots[rootID] else { return }
        info.users -= 1
        if info.users > 0 {
            topRoots[rootID] = info
            return
        }
        topRoots[rootID] = nil
        if let recovery = info.recoveryWatch {
            recoveryWatches[recovery] = nil
            if watchToFolder[recovery] == nil { removeWatch(recovery) }
        }
        dropWatches(under: rootID)
        index.remove(EntryID(rootID))
    }

    /// The entry at `path` inside the root `root`, walking names.
    func entry(at path: FilePath, from root: UInt32) -> EntryID? {
        guard let rootPath = topRoots[root]?.crawlRoot.path else { return nil }
        var current = EntryID(root)
        for component in path.components.dropFirst(rootPath.components.count) {
            guard let next = index.child(named: FilePath(root: nil, [component]).bytes, in: current) else {
                return nil
            }
            current = next
        }
        return index.kind(of: current) == .folder ? current : nil
    }

    /// A live top root other than `except` that is this folder: same path,
    /// and still the same file (inode and device). The path check matters:
    /// inode numbers of deleted folders are reused at once.
    func innerRoot(matching status: FileStatus, path: [UInt8], except: UInt32) -> UInt32? {
        topRoots.first { id, info in
            id != except && !info.missing && info.inode == status.inode && info.device == status.device
                && info.crawlRoot.path.bytes == path
        }?.key
    }

    /// Makes a top root a folder of a larger root that contains it. Caller
    /// holds the lock.
    func graft(_ inner: UInt32, into folder: EntryID, name: UnsafeRawBufferPointer, outer: UInt32) {
        guard let info = topRoots.removeValue(forKey: inner) else { return }
        if let existing = index.child(named: name, in: folder) { removeEntry(existing.rawValue) }
        index.graft(root: EntryID(inner), into: folder, name: name)
        topRoots[outer]?.users += info.users
    }

    /// Crawls an open folder that is already in the index, with the watch
    /// seam, then lets held-back events go.
    func crawl(handle: DirectoryHandle, folder: EntryID, root: UInt32, sink: LiveSink) {
        let info = lock.withLock { topRoots[root] }
        let options = CrawlOptions(includeHidden: info?.includeHidden ?? false, threadCount: crawlThreads)
        Crawler(sink: sink, options: options).crawl(
            folders: [(handle, folder)],
            under: info?.crawlRoot ?? CrawlRoot(path: "/"),
            rootDevice: info?.device ?? DeviceNumber(major: 0, minor: 0))
    }

    /// Opens a folder of the index by its path, checking it is that folder
    /// (same inode); a stale path marks it dirty instead.
    func openVerified(_ folder: UInt32) -> (DirectoryHandle, UInt32)? {
        let (path, root, inode) = lock.withLock { () -> ([UInt8]?, UInt32, UInt64) in
            guard index.contains(EntryID(folder)), index.kind(of: EntryID(folder)) == .folder else {
                return (nil, 0, 0)
            }
            return (
                pathBytes(of: folder), index.root(of: EntryID(folder)).rawValue,
                index.metadata(of: EntryID(folder)).inode
            )
        }
        guard let path else { return nil }
        // Any failure (the path is stale while an ancestor's rename is not
        // applied yet, or it now names another folder) leaves the folder for
        // a verified rescan later: giving up here would leave it unlisted and
        // unwatched for good.
        guard case .success(let handle) = DirectoryHandle.open(pathBytes: path),
            case .success(let status) = FileStatus.of(descriptor: handle.descriptor), status.inode == inode
        else {
            lock.withLock { _ = dirtyFolders.insert(folder) }
            return nil
        }
        return (handle, root)
    }

    /// Crawls a folder that appeared (created or moved in), recording changes.
    func crawlFolder(_ folder: UInt32) {
        guard let (handle, root) = openVerified(folder) else { return }
        crawl(handle: handle, folder: EntryID(folder), root: root, sink: LiveSink(engine: self, recording: true))
    }

    /// Rescans one folder's subtree: what the crawl does not see is removed.
    func reconcile(folder: UInt32) {
        lock.withLock {
            for id in index.descendants(of: EntryID(folder)) { index.setMark(id.rawValue, false) }
        }
        guard let (handle, root) = openVerified(folder) else { return }
        crawl(handle: handle, folder: EntryID(folder), root: root, sink: LiveSink(engine: self, recording: true))
        sweep(under: folder)
    }

    /// Removes unmarked entries below `folder` (topmost first).
    func sweep(under folder: UInt32) {
        lock.withLock {
            guard index.contains(EntryID(folder)) else { return }
            var stack = index.children(of: EntryID(folder))
            while let id = stack.popLast() {
                if !index.isMarked(id) {
                    removeEntry(id.rawValue)
                } else if index.kind(of: id) == .folder {
                    stack += index.children(of: id)
                }
            }
        }
    }

    /// Rescans a root and makes the index equal to the disk, recording only
    /// what differs (after an overflow or a root's return).
    func reconcile(root: UInt32) {
        let path: [UInt8]? = lock.withLock {
            guard topRoots[root] != nil, index.contains(EntryID(root)) else { return nil }
            for id in index.descendants(of: EntryID(root)) { index.setMark(id.rawValue, false) }
            return pathBytes(of: root)
        }
        guard let path else { return }
        guard case .success(let handle) = DirectoryHandle.open(pathBytes: path) else {
            lock.withLock {
                if topRoots[root] != nil && !(topRoots[root]?.missing ?? true) { rootGone(root) }
            }
            return
        }
        crawl(handle: handle, folder: EntryID(root), root: root, sink: LiveSink(engine: self, recording: true))
        // Unmarked entries were not seen by the rescan: gone.
        sweep(under: root)
    }

    func reconcileAll() {
        let roots = lock.withLock { () -> [UInt32] in
            rescanCount += 1
            return topRoots.filter { !$0.value.missing }.map(\.key)
        }
        for root in roots { reconcile(root: root) }
    }

    /// Brings a missing root back if its folder exists again; otherwise
    /// watches its nearest existing ancestor for it to reappear.
    func recoverRoot(_ root: UInt32) {
        guard let info = lock.withLock({ topRoots[root] }), info.missing else { return }
        let path = info.crawlRoot.path
        if case .success(let handle) = DirectoryHandle.open(path: path),
            case .success(let status) = FileStatus.of(descriptor: handle.descriptor)
        {
            lock.withLock {
                topRoots[root]?.missing = false
                topRoots[root]?.device = status.device
                topRoots[root]?.inode = status.inode
                if let recovery = topRoots[root]?.recoveryWatch {
                    recoveryWatches[recovery] = nil
                    topRoots[root]?.recoveryWatch = nil
                    if watchToFolder[recovery] == nil { removeWatch(recovery) }
                }
                for id in index.descendants(of: EntryID(root)) { index.setMark(id.rawValue, false) }
            }
            crawl(handle: handle, folder: EntryID(root), root: root, sink: LiveSink(engine: self, recording: true))
            return
        }
        // Watch the nearest ancestor that exists, for the next step back.
        var ancestor = path
        while ancestor.removeLastComponent(), !ancestor.isEmpty {
            guard case .success(let handle) = DirectoryHandle.open(path: ancestor) else { continue }
            let context = UInt64(1) << 32 | UInt64(root)
            if case .success(let watch) = addWatch(handle.descriptor, context: context) {
                lock.withLock {
                    if let old = topRoots[root]?.recoveryWatch, old != watch {
                        recoveryWatches[old] = nil
                        if watchToFolder[old] == nil { removeWatch(old) }
                    }
                    topRoots[root]?.recoveryWatch = watch
                    recoveryWatches[watch] = root
                }
                // It may have come back before the watch was in place.
                if case .success = DirectoryHandle.open(path: path) { recoverRoot(root) }
            }
            return
        }
    }
}

/// Reports a sink's progress count every 100 ms while a gather runs.
final class ProgressTicker: @unchecked Sendable {
    private let timer: (any DispatchSourceTimer)?

    init(sink: LiveSink, report: (@Sendable (Int) -> Void)?) {
        guard let report else {
            timer = nil
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
        timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
        timer.setEventHandler { report(sink.progress.load(ordering: .relaxed)) }
        timer.resume()
        self.timer = timer
    }

    func stop() {
        timer?.cancel()
    }
}
