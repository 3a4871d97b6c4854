import MDQCore
import MDQSystem
import MDQWatch
import Synchronization
import SystemPackage

/// The crawl sink of the live engine: watches each folder before listing
/// it, inserts entries, records changes when crawling because of events, and
/// grafts existing roots that a new, larger root contains.
final class LiveSink: CrawlSink, Sendable {
    let engine: LiveEngine
    /// Record insertions and changes for subscribers (event-driven crawls
    /// and rescans); a first gather records nothing.
    let recording: Bool
    private let progress: ProgressCounter?

    package init(engine: LiveEngine, recording: Bool, progress: ProgressCounter? = nil) {
        self.engine = engine
        self.recording = recording
        self.progress = progress
    }

    /// Folders whose contents the rules exclude, found in one listing:
    /// watched (for their own attributes) once the lock is released.
    struct Worker {
        var watchOnly: [(EntryID, [CChar])] = []
    }

    func makeWorker() -> Worker { Worker() }

    func beginRoot(_ root: CrawlRoot, status: FileStatus) -> EntryID {
        preconditionFailure("the live engine crawls from open folders")
    }

    func willList(_ folder: EntryID, directory: FileDescriptor, worker: inout Worker) -> Bool {
        engine.crawlHook.withLock { $0 }?(folder)
        let opened = FileStatus.of(descriptor: directory, acl: false)
        let isTheFolder = engine.state.withLock { s -> Bool in
            guard s.index.contains(folder), s.index.kind(of: folder) == .folder else { return false }
            // Opened by name after its parent's listing: a rename since may
            // have put another folder there (`mv b a; mv c b`). That folder
            // is not this entry's: listed or watched as it, the entry would
            // hold the other folder's contents and hear its events wherever
            // the rename takes the entry. The entry is left unlisted, its
            // contents kept (marked, so a rescan's sweep keeps them), until
            // the rename's events say where it went (a folder moved before
            // it was watched is crawled there) or its path leads to it again.
            if !s.index.isRoot(folder), case .success(let status) = opened, !s.isEntry(folder.rawValue, status) {
                s.keepMarks(of: folder.rawValue)
                s.dirtyFolders.insert(folder.rawValue)
                return false
            }
            s.listing.insert(folder.rawValue)
            // Opened: whatever kept it unreadable is over.
            if case .unreadable = s.folderProblems[folder.rawValue] { s.folderProblems[folder.rawValue] = nil }
            return true
        }
        guard isTheFolder else { return false }
        // The watch goes in before the listing (and without the lock: the
        // watcher thread takes it to record the new watch, and that it is
        // watched, `LiveEngine.watchAdded`).
        if case .failure(let error) = engine.addWatch(directory, purpose: .folder(folder.rawValue)) {
            engine.state.withLock { $0.recordWatchFailure(folder.rawValue, error) }
        }
        return true
    }

    func didList(
        _ folder: EntryID, batch: borrowing CrawlBatch, directory: FileDescriptor,
        worker: inout Worker, subfolders: inout [EntryID?]
    ) {
        // The folder's own attributes now that its watch is in (`willList`):
        // they were read with its parent's listing, before the watch, and
        // an entry made inside it in between sent no event for its dates.
        let own = FileStatus.of(descriptor: directory)
        engine.listedHook.withLock { $0 }?(folder)
        let (inserted, held) = engine.state.withLock { s -> (Int, [FolderChange]?) in
            let index = s.index
            // Taken out of the index while it was listed (its removal
            // applied meanwhile, or a mount grafted in its place): nothing
            // below it is crawled, and the crawler is told so, one folder
            // per entry it would descend into.
            guard index.contains(folder), index.kind(of: folder) == .folder else {
                for entry in batch.entries where entry.descend { subfolders.append(nil) }
                s.listing.remove(folder.rawValue)
                s.deferred[folder.rawValue] = nil
                return (0, nil)
            }
            // Its id now names another folder: this one went while it was
            // listed, and a folder made since took the freed id once the
            // removal was published (`rm -r build && mkdir build`). What
            // the listing found is the old folder's; the new one is crawled
            // for its creation. Events held for the id are the new folder's.
            if !index.isRoot(folder), case .success(let status) = own, !s.isEntry(folder.rawValue, status) {
                for entry in batch.entries where entry.descend { subfolders.append(nil) }
                s.listing.remove(folder.rawValue)
                return (0, s.deferred.removeValue(forKey: folder.rawValue))
            }
            if case .success(let status) = own, status.kind == .folder,
                EngineState.isSameFile(index.metadata(of: folder), status)
            {
                s.update(folder.rawValue, to: status, recording: recording)
            }
            let root = index.root(of: folder).rawValue
            var inserted = 0
            // A first gather's folder with nothing in it yet (no event put
            // anything there since its watch): no name needs looking up.
            let fresh = !recording && index.hasNoChildren(folder)
            // Only checked when other roots exist (grafting a root the new one contains).
            let folderPath: [UInt8]? = s.roots.count > 1 ? s.pathBytes(of: folder.rawValue) : nil
            for entry in batch.entries {
                batch.withName(of: entry) { name in
                    if entry.descend, let status = entry.status, let folderPath,
                        let inner = s.innerRoot(
                            matching: status,
                            path: folderPath + (folderPath.last == 0x2F ? [] : [0x2F]) + Array(name),
                            except: root)
                    {
                        s.graft(inner, into: folder, name: name, outer: root)
                        subfolders.append(nil)
                        return
                    }
                    // Not stat'ed (names first): the listing's inode number
                    // says which file its attributes will be read from.
                    let metadata =
                        entry.status.map(EntryMetadata.init) ?? EntryMetadata(kind: entry.kind, inode: entry.inode)
                    var existing = fresh ? nil : index.child(named: name, in: folder)
                    if let found = existing, index.kind(of: found) != metadata.kind {
                        s.removeEntry(found.rawValue)
                        existing = nil
                    }
                    let (id, outcome) = index.upsert(
                        existing, name: name, in: folder, metadata: metadata, device: entry.status?.device)
                    if recording {
                        switch outcome {
                        case .inserted:
                            s.changes.added.insert(id.rawValue)
                            s.noteConflictCopy(id.rawValue)
                        case .updated(let changed): if changed { s.changes.changed.insert(id.rawValue) }
                        }
                    }
                    inserted += 1
                    if entry.descend {
                        subfolders.append(id)
                    } else if metadata.kind == .folder && s.folderToWatch[id.rawValue] == nil
                        && !s.descends(into: id.rawValue)
                    {
                        worker.watchOnly.append((id, Array(name.bindMemory(to: CChar.self)) + [0]))
                    }
                }
            }
            s.listing.remove(folder.rawValue)
            return (inserted, s.deferred.removeValue(forKey: folder.rawValue))
        }
        // Events that arrived while the folder was listed apply after it.
        if let held { engine.requeue(held) }
        for (id, name) in worker.watchOnly {
            let opened = name.withUnsafeBufferPointer { DirectoryHandle.openChild($0.baseAddress!, of: directory) }
            guard case .success(let child) = opened else { continue }
            // Opened by name since the listing: only watched as this entry
            // if it is still the folder listed (see `willList`).
            let status = FileStatus.of(descriptor: child.descriptor, acl: false)
            let isTheFolder = engine.state.withLock { s -> Bool in
                guard s.index.contains(id), case .success(let status) = status, s.isEntry(id.rawValue, status) else {
                    if s.index.contains(id) { s.dirtyFolders.insert(id.rawValue) }
                    return false
                }
                return true
            }
            if isTheFolder { engine.watchOnly(id.rawValue, handle: child, recording: recording) }
        }
        worker.watchOnly.removeAll(keepingCapacity: true)
        progress?.add(inserted)
    }

    package func path(of folder: EntryID, child name: UnsafeRawBufferPointer?) -> FilePath {
        engine.state.withLock { s in
            var bytes = s.pathBytes(of: folder.rawValue)
            if let name {
                if bytes.last != 0x2F { bytes.append(0x2F) }
                bytes.append(contentsOf: name)
            }
            return FilePath.fromBytes(bytes)
        }
    }

    func warn(_ warning: CrawlWarning, worker: inout Worker) {}

    /// Entries listed without their attributes (a folder readable but not
    /// searchable) make the folder a problem, as an unreadable one is:
    /// subscribers hear that its items lack sizes and dates, and it is
    /// retried when its entry changes (`willList` clears it).
    func didMissAttributes(in folder: EntryID, error: Errno, worker: inout Worker) {
        guard error == .permissionDenied || error == .notPermitted else { return }
        engine.state.withLock { s in
            guard s.index.contains(folder) else { return }
            s.folderProblems[folder.rawValue] = .unreadable(error)
        }
    }

    /// A folder this crawl could not open or list. Not allowed to (a
    /// permission): a problem the subscribers hear about, retried when the
    /// folder's entry changes. Renamed or removed meanwhile: its known
    /// contents stay (a rescan's sweep must not remove what was not looked
    /// at) and it is rescanned once its path is current again.
    func didFail(_ folder: EntryID, error: Errno, worker: inout Worker) {
        engine.state.withLock { s in
            guard s.index.contains(folder) else { return }
            s.keepMarks(of: folder.rawValue)
            s.listing.remove(folder.rawValue)
            if let held = s.deferred.removeValue(forKey: folder.rawValue) { engine.requeue(held) }
            if error == .permissionDenied || error == .notPermitted {
                s.folderProblems[folder.rawValue] = .unreadable(error)
            } else {
                s.dirtyFolders.insert(folder.rawValue)
            }
        }
    }
}

/// Counts the entries a gather has inserted and reports the running total
/// at most every 100 ms, from the crawler thread that passes the mark (no
/// timer thread).
final class ProgressCounter: Sendable {
    private let report: @Sendable (Int) -> Void
    private let count = Atomic<Int>(0)
    private let lastReport = Atomic<Int64>(0)
    private static let period: Int64 = 100_000_000

    package init(_ report: @escaping @Sendable (Int) -> Void) {
        self.report = report
        lastReport.store(Self.now(), ordering: .relaxed)
    }

    func add(_ inserted: Int) {
        let total = count.add(inserted, ordering: .relaxed).newValue
        let now = Self.now()
        let last = lastReport.load(ordering: .relaxed)
        guard now - last >= Self.period,
            lastReport.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return }
        report(total)
    }

    private static let origin = ContinuousClock.now

    private static func now() -> Int64 {
        let (seconds, attoseconds) = (ContinuousClock.now - origin).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
