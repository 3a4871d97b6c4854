import MDQCore
import MDQSystem
import SystemPackage

extension LiveEngine {
    /// The second pass of a names-first crawl (`acquire(namesFirst:)`):
    /// reads the size and dates of every file of the root that the first
    /// pass only named, on every core at a priority below the queries' and
    /// the trigram builder's. It walks the index's own folders, not the
    /// disk's listings: no folder is listed again and no name looked up.
    ///
    /// Changes go on meanwhile (the first pass placed the watches), and an
    /// entry an event has read is newer than anything read here: the fill
    /// only writes attributes to an entry still unread, still at the name
    /// and in the folder it read, and of the inode its listing gave
    /// (`DirectoryReader.Entry.inode`). Anything else (a file renamed or
    /// replaced since) makes its folder dirty, to be listed again once the
    /// fill ends (`cleanDirtyFolders`), as is every folder still holding an
    /// unread file then.
    ///
    /// `path` and `inode` are the root's when its first pass ended: a root
    /// dropped and made again meanwhile is another one, with a fill of its
    /// own.
    func fill(root: UInt32, path: FilePath?, inode: UInt64?) {
        let isSameRoot = { (s: EngineState) -> Bool in
            guard let info = s.roots[root] else { return false }
            return info.filling && info.path == path && info.inode == inode
        }
        fillHook.withLock { $0 }?()
        if state.withLock({ isSameRoot($0) }), let (handle, _) = openVerified(root) {
            readAttributes(below: root, handle: handle)
            state.withLock { s in if isSameRoot(s) { s.dirtyFoldersOfUnreadFiles(below: root) } }
        }
        endCrawl(of: root, isCurrent: isSameRoot)
        // The first pass grew the index by as much as a crawl does.
        ProcessMemory.releaseFreePages(after: entryCount)
        cleanDirtyFolders(force: false)
        publish()
        onFillEnded.withLock { $0 }?()
    }

    /// Whether some root's files' attributes are still being read (`fill`).
    package var isFilling: Bool { state.withLock { s in s.roots.values.contains(where: \.filling) } }

    /// Whether some root is still being gathered or filled.
    package var hasUnfinishedRoots: Bool { state.withLock { s in s.roots.values.contains(where: \.isBusy) } }

    /// Blocks until no root's attributes are being read.
    package func waitUntilFilled() {
        while true {
            let ended = crawlsEnded.withLock { $0 }
            guard isFilling else { return }
            crawlsEnded.wait(until: { $0 != ended }) { _ in }
        }
    }

    /// A folder to fill: open already (the root), or to open by name in
    /// its parent's open folder; the folder by its identity.
    private struct FillJob: Sendable {
        var parent: DirectoryHandle?
        var opened: DirectoryHandle?
        var folder: UInt64
        /// NUL-terminated.
        var name: [CChar]
    }

    /// One thread's reusable lists.
    private struct FillScratch {
        var files: [(identity: UInt64, name: Int)] = []
        var folders: [(identity: UInt64, name: Int)] = []
        var names: [CChar] = []
        var read: [Result<FileStatus, Errno>] = []

        mutating func reset() {
            files.removeAll(keepingCapacity: true)
            folders.removeAll(keepingCapacity: true)
            names.removeAll(keepingCapacity: true)
            read.removeAll(keepingCapacity: true)
        }
    }

    /// The walk of `fill`, each thread depth-first from its own stack,
    /// sharing work as the crawler does (`CrawlQueue`).
    private func readAttributes(below root: UInt32, handle: DirectoryHandle) {
        let identity = state.withLock { $0.index.identity(of: root) }
        let queue = CrawlQueue(
            jobs: [FillJob(parent: nil, opened: handle, folder: identity, name: [])], workerCount: crawlThreads)
        WorkerThreads.run(count: crawlThreads, name: "mdq-fill", priority: .background) { [self] _ in
            var scratch = FillScratch()
            var local: [FillJob] = []
            while let first = queue.take() {
                local.append(first)
                while let job = local.popLast() {
                    fill(job, scratch: &scratch, local: &local)
                    if local.count > 1 && queue.hasIdleWorkers {
                        let half = local.count / 2
                        queue.donate(local[..<half])
                        local.removeFirst(half)
                    }
                }
            }
        }
    }

    /// Reads the unread files of one folder, and queues its folders.
    private func fill(_ job: FillJob, scratch: inout FillScratch, local: inout [FillJob]) {
        let handle: DirectoryHandle
        if let opened = job.opened {
            handle = opened
        } else {
            guard let parent = job.parent,
                case .success(let opened) = job.name.withUnsafeBufferPointer({ parent.openChild($0.baseAddress!) })
            else {
                // Gone, renamed or unreadable since the first pass: its
                // events, or a listing once the fill ends, say what it holds.
                state.withLock { s in
                    if let folder = s.index.entry(identity: job.folder) { s.dirtyFolders.insert(folder.rawValue) }
                }
                return
            }
            handle = opened
        }
        let status = FileStatus.of(descriptor: handle.descriptor, acl: false)
        scratch.reset()
        let folder = state.withLock { s -> UInt32? in
            guard let folder = s.index.entry(identity: job.folder) else { return nil }
            // Another folder at the name now (`mv b a; mv c b`): not this
            // entry's, so nothing is read from it.
            guard case .success(let status) = status, s.isEntry(folder.rawValue, status) else {
                s.dirtyFolders.insert(folder.rawValue)
                return nil
            }
            s.index.unreadChildren(
                of: folder, files: &scratch.files, folders: &scratch.folders, names: &scratch.names)
            return folder.rawValue
        }
        guard let folder else { return }
        crawlHook.withLock { $0 }?(EntryID(folder))
        scratch.names.withUnsafeBufferPointer { names in
            for file in scratch.files {
                scratch.read.append(FileStatus.of(names.baseAddress! + file.name, in: handle.descriptor))
            }
        }
        state.withLock { s in
            var stale = false
            for (file, read) in zip(scratch.files, scratch.read) {
                guard let id = s.index.entry(identity: file.identity) else { continue }
                guard case .success(let status) = read else {
                    // Vanished (its event removes it), or not readable (it
                    // stays without attributes, as a crawl leaves it).
                    if case .failure(.noSuchFileOrDirectory) = read { stale = true }
                    continue
                }
                let known = s.index.metadata(of: id)
                // Read already, by an event: newer than this.
                if known.isStatted { continue }
                let sameName = scratch.names.withUnsafeBufferPointer { names in
                    s.index.withName(of: id) { name in
                        name.elementsEqual(
                            UnsafeRawBufferPointer(start: names.baseAddress! + file.name, count: name.count))
                            && names[file.name + name.count] == 0
                    }
                }
                guard s.index.parent(of: id)?.rawValue == folder, sameName, known.kind == status.kind,
                    known.inode == 0 || known.inode == status.inode
                else {
                    stale = true
                    continue
                }
                s.index.update(id, metadata: EntryMetadata(status), device: status.device)
            }
            if stale { s.dirtyFolders.insert(folder) }
        }
        for sub in scratch.folders {
            let end = scratch.names[sub.name...].firstIndex(of: 0)!
            local.append(
                FillJob(
                    parent: handle, opened: nil, folder: sub.identity, name: Array(scratch.names[sub.name...end])))
        }
    }
}

extension EngineState {
    /// Marks dirty every folder below `root` that holds a file still
    /// without attributes after a fill (renamed or replaced while it ran),
    /// so a listing reads them (`cleanDirtyFolders`).
    ///
    /// - Complexity: one pass over the slots; a walk up for the few unread.
    func dirtyFoldersOfUnreadFiles(below root: UInt32) {
        for slot in 0..<UInt32(index.slotCount) {
            let id = EntryID(slot)
            guard index.contains(id), index.kind(of: id) != .folder, !index.isStatted(id),
                let parent = index.parent(of: id), index.root(of: id).rawValue == root,
                folderProblems[parent.rawValue] == nil
            else { continue }
            dirtyFolders.insert(parent.rawValue)
        }
    }
}
