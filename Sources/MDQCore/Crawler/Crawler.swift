package import MDQSystem
import SystemPackage

/// Walks scope roots in parallel and feeds each folder's entries to a sink.
///
/// Each folder is opened relative to its parent (`openat` with `O_NOFOLLOW`),
/// listed with `getdents64` into a 256 KiB buffer, and its entries stat'ed
/// with `statx` relative to the open folder: no full path is built per entry,
/// and paths longer than `PATH_MAX` work. Symlinks are recorded, never
/// followed. Hidden entries are skipped unless asked for. An unreadable folder
/// or an entry that vanished is a warning, never fatal.
package struct Crawler<Sink: CrawlSink>: Sendable {
    let sink: Sink
    let options: CrawlOptions

    package init(sink: Sink, options: CrawlOptions) {
        self.sink = sink
        self.options = options
    }

    private struct Job: Sendable {
        var parent: DirectoryHandle?
        /// NUL-terminated name in the parent; for a root, its path.
        var name: [CChar]
        var folder: Sink.Folder
        var rootIndex: Int
        var isRoot: Bool
    }

    /// Crawls `roots`, blocking the calling thread (which becomes worker 0)
    /// until every folder is done.
    ///
    /// - Throws: `MetadataError` with `.scopeNotFound`, `.scopeUnreadable` or
    ///   `.scopeNotFolder` and the root's path, before any crawling, when a
    ///   root cannot be opened.
    package func crawl(_ roots: [CrawlRoot]) throws(MetadataError) {
        ProcessLimits.raisedOpenFileLimit
        var jobs: [Job] = []
        var rootDevices: [DeviceNumber] = []
        for (index, root) in roots.enumerated() {
            let handle: DirectoryHandle
            switch DirectoryHandle.open(path: root.path) {
            case .success(let opened): handle = opened
            case .failure(let error): throw MetadataError.scope(error, path: root.path)
            }
            let status: FileStatus
            switch FileStatus.of(descriptor: handle.descriptor) {
            case .success(let s): status = s
            case .failure(let error): throw MetadataError.scope(error, path: root.path)
            }
            rootDevices.append(status.device)
            let folder = sink.beginRoot(root, status: status)
            // The root's handle is already open: pass it as the "parent" of an
            // empty name, which `process` treats as "use the parent itself".
            jobs.append(Job(parent: handle, name: [0], folder: folder, rootIndex: index, isRoot: true))
        }
        let threads = options.threadCount
        let queue = CrawlQueue(jobs: jobs.reversed(), workerCount: threads)
        let context = Context(rules: roots.map { options.rules(for: $0) }, rootDevices: rootDevices)
        WorkerThreads.run(count: threads, name: "mdq-crawl", priority: options.threadPriority) { _ in
            self.work(queue: queue, context: context)
        }
    }

    /// Crawls an already-known folder (one that appeared, or a rescan):
    /// `handle` is open on the folder whose sink handle is given. The folder
    /// itself is not reported; its contents are, under `rules` (the scope
    /// root's own exclusions apply only when `isScopeRoot`).
    package func crawl(
        folder: (DirectoryHandle, Sink.Folder), isScopeRoot: Bool, rules: ScopeRules, rootDevice: DeviceNumber
    ) {
        ProcessLimits.raisedOpenFileLimit
        let job = Job(parent: folder.0, name: [0], folder: folder.1, rootIndex: 0, isRoot: true)
        let queue = CrawlQueue(jobs: [job], workerCount: options.threadCount)
        let context = Context(rules: [isScopeRoot ? rules : rules.belowRoot], rootDevices: [rootDevice])
        WorkerThreads.run(count: options.threadCount, name: "mdq-crawl", priority: options.threadPriority) { _ in
            self.work(queue: queue, context: context)
        }
    }

    private struct Context: Sendable {
        /// Per root: what belongs to it.
        var rules: [ScopeRules]
        var rootDevices: [DeviceNumber]
    }

    private func work(queue: CrawlQueue<Job>, context: Context) {
        var worker = sink.makeWorker()
        var reader = DirectoryReader()
        var batch = CrawlBatch()
        var subfolders: [Sink.Folder?] = []
        var local: [Job] = []
        while let first = queue.take() {
            local.append(first)
            while let job = local.popLast() {
                // Stopping early: drop the remaining jobs unopened (the
                // queue's are taken and dropped one by one, cheaply).
                if sink.isFinished {
                    local.removeAll()
                    break
                }
                process(
                    job, context: context, reader: &reader, batch: &batch,
                    subfolders: &subfolders, worker: &worker, local: &local)
                if local.count > 1 && queue.idleWorkers.load(ordering: .relaxed) > 0 {
                    let half = local.count / 2
                    queue.donate(local[..<half])
                    local.removeFirst(half)
                }
            }
        }
        sink.finish(worker: &worker)
    }

    private func process(
        _ job: Job, context: Context, reader: inout DirectoryReader, batch: inout CrawlBatch,
        subfolders: inout [Sink.Folder?], worker: inout Sink.Worker, local: inout [Job]
    ) {
        let handle: DirectoryHandle
        if job.isRoot {
            handle = job.parent!
        } else {
            switch job.name.withUnsafeBufferPointer({ job.parent!.openChild($0.baseAddress!) }) {
            case .success(let opened):
                handle = opened
            case .failure(let error):
                let path = sink.path(of: job.folder, child: nil)
                // ENOENT: the folder vanished since it was listed; ELOOP and
                // ENOTDIR: it was replaced by a symlink or file. The entry itself
                // was reported by its parent's listing.
                sink.warn(CrawlWarning(operation: .open, path: path, error: error), worker: &worker)
                sink.didFail(job.folder, error: error, worker: &worker)
                return
            }
        }
        let directory = handle.descriptor
        guard sink.willList(job.folder, directory: directory, worker: &worker) else { return }

        batch.removeAll()
        let rules = context.rules[job.rootIndex]
        let rootDevice = context.rootDevices[job.rootIndex]
        let statAll = options.statEntries
        let statFolders = options.statFolders || rules.stayOnFileSystem
        // Entries listed but not stat'ed (a folder readable but not
        // searchable): one warning for the folder, not one per entry.
        var statFailure: Errno?
        let result = reader.forEachEntry(of: directory) { entry in
            let nameBuffer = UnsafeRawBufferPointer(start: entry.name, count: entry.nameLength)
            guard rules.admits(nameBuffer, isRootChild: job.isRoot) else { return }
            var kind = EntryKind(directoryEntryType: entry.type)
            var status: FileStatus?
            let needsStat = statAll || kind == nil || (kind == .folder && statFolders)
            if needsStat {
                switch FileStatus.of(entry.name, in: directory) {
                case .success(let s):
                    status = s
                    kind = s.kind
                case .failure(.noSuchFileOrDirectory):
                    // Vanished between listing and stat: it no longer exists,
                    // so it is not an entry (a watcher reports the deletion).
                    sink.warn(
                        CrawlWarning(
                            operation: .vanished, path: sink.path(of: job.folder, child: nameBuffer),
                            error: .noSuchFileOrDirectory),
                        worker: &worker)
                    return
                case .failure(let error):
                    if statFailure == nil { statFailure = error }
                }
            }
            let resolvedKind = kind ?? .other
            var descend =
                resolvedKind == .folder
                && rules.descends(into: nameBuffer, path: { sink.path(of: job.folder, child: nameBuffer).bytes })
            if descend && rules.stayOnFileSystem, let device = status?.device, device != rootDevice {
                descend = false
            }
            let start = Int32(batch.nameBytes.count)
            batch.nameBytes.append(contentsOf: nameBuffer.assumingMemoryBound(to: UInt8.self))
            batch.nameBytes.append(0)
            batch.entries.append(
                CrawlBatch.Entry(
                    nameStart: start, nameLength: UInt8(truncatingIfNeeded: entry.nameLength), kind: resolvedKind,
                    isASCIIName: NameBytes.isASCII(nameBuffer), status: status, inode: entry.inode,
                    descend: descend))
        }
        if let statFailure {
            sink.warn(
                CrawlWarning(operation: .statEntries, path: sink.path(of: job.folder, child: nil), error: statFailure),
                worker: &worker)
            sink.didMissAttributes(in: job.folder, error: statFailure, worker: &worker)
        }
        if case .failure(let error) = result {
            sink.warn(
                CrawlWarning(operation: .list, path: sink.path(of: job.folder, child: nil), error: error),
                worker: &worker)
            sink.didFail(job.folder, error: error, worker: &worker)
        }
        subfolders.removeAll(keepingCapacity: true)
        sink.didList(job.folder, batch: batch, directory: directory, worker: &worker, subfolders: &subfolders)
        precondition(
            subfolders.count == batch.entries.lazy.filter(\.descend).count,
            "a crawl sink must give one (optional) folder per descending entry")
        var next = 0
        for entry in batch.entries where entry.descend {
            defer { next += 1 }
            guard let folder = subfolders[next] else { continue }
            let name = batch.nameBytes[Int(entry.nameStart)...Int(entry.nameStart) + Int(entry.nameLength)]
            local.append(
                Job(
                    parent: handle, name: name.map { CChar(bitPattern: $0) }, folder: folder,
                    rootIndex: job.rootIndex, isRoot: false))
        }
    }
}
