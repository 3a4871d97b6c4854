import Foundation
import Synchronization
import SystemPackage

/// The crawl sink of the live engine: watches each folder before listing
/// it, inserts entries, records changes when crawling because of events, and
/// grafts existing roots that a new, larger root contains.
final class LiveSink: CrawlSink, @unchecked Sendable {
    let engine: LiveIndex
    /// Record insertions and changes for observers (event-driven crawls and
    /// rescans); a first gather records nothing.
    let recording: Bool
    /// Entries inserted so far, for gathering progress.
    let progress = Atomic<Int>(0)

    init(engine: LiveIndex, recording: Bool) {
        self.engine = engine
        self.recording = recording
    }

    func makeWorker() {}

    func beginRoot(_ root: CrawlRoot, status: FileStatus) -> EntryID {
        preconditionFailure("the live engine crawls from open folders")
    }

    func willList(_ folder: EntryID, directory: FileDescriptor, worker: inout Void) {
        engine.lock.withLock { _ = engine.listing.insert(folder.rawValue) }
        // The watch goes in before the listing (and without the lock: the
        // watcher thread takes it to record the new watch).
        if case .failure(let error) = engine.addWatch(directory, context: UInt64(folder.rawValue)) {
            engine.lock.withLock {
                if error == .noSpace || error == .permissionDenied {
                    let path = FilePath.fromBytes(engine.pathBytes(of: folder.rawValue))
                    engine.watchFailures.insert(LiveIndex.WatchFailure(path: path, error: error))
                    engine.unwatchable.insert(folder.rawValue)
                }
            }
        }
    }

    func didList(
        _ folder: EntryID, batch: borrowing CrawlBatch, directory: FileDescriptor,
        worker: inout Void, subfolders: inout [EntryID?]
    ) {
        engine.lock.lock()
        defer { engine.lock.unlock() }
        let index = engine.index
        guard index.contains(folder), index.kind(of: folder) == .folder else {
            engine.listing.remove(folder.rawValue)
            engine.deferred[folder.rawValue] = nil
            return
        }
        let root = index.root(of: folder).rawValue
        let info = engine.topRoots[root]
        var inserted = 0
        // Only checked when other roots exist (grafting a root the new one contains).
        let folderPath: [UInt8]? = engine.topRoots.count > 1 ? engine.pathBytes(of: folder.rawValue) : nil
        for entry in batch.entries {
            batch.withName(of: entry) { name in
                if folder.rawValue == root, let info, info.crawlRoot.excludedChildNames.contains(Array(name)) {
                    if entry.descend { subfolders.append(nil) }
                    return
                }
                if entry.descend, let status = entry.status, let folderPath,
                    let inner = engine.innerRoot(
                        matching: status, path: folderPath + (folderPath.last == 0x2F ? [] : [0x2F]) + Array(name),
                        except: root)
                {
                    engine.graft(inner, into: folder, name: name, outer: root)
                    subfolders.append(nil)
                    return
                }
                let metadata = entry.status.map(EntryMetadata.init) ?? EntryMetadata(kind: entry.kind)
                if let existing = index.child(named: name, in: folder), index.kind(of: existing) != metadata.kind {
                    engine.removeEntry(existing.rawValue)
                }
                let (id, outcome) = index.upsert(
                    name: name, in: folder, metadata: metadata, device: entry.status?.device)
                if recording {
                    switch outcome {
                    case .inserted:
                        engine.changes.added.insert(id.rawValue)
                        engine.noteConflictCopy(id.rawValue)
                    case .updated(let changed): if changed { engine.changes.changed.insert(id.rawValue) }
                    }
                }
                inserted += 1
                if entry.descend { subfolders.append(id) }
            }
        }
        // Events that arrived while the folder was listed apply after it.
        if let held = engine.deferred.removeValue(forKey: folder.rawValue) { engine.requeue(held) }
        engine.listing.remove(folder.rawValue)
        progress.add(inserted, ordering: .relaxed)
    }

    func path(of folder: EntryID, child name: UnsafeRawBufferPointer?) -> FilePath {
        engine.lock.withLock {
            var bytes = engine.pathBytes(of: folder.rawValue)
            if let name {
                if bytes.last != 0x2F { bytes.append(0x2F) }
                bytes.append(contentsOf: name)
            }
            return FilePath.fromBytes(bytes)
        }
    }

    func warn(_ warning: CrawlWarning, worker: inout Void) {}

    /// A folder this crawl could not open or list (renamed or removed
    /// meanwhile, unreadable): its known contents stay (a rescan's sweep
    /// must not remove what was not looked at) and it is rescanned once its
    /// path is current again.
    func didFail(_ folder: EntryID, worker: inout Void) {
        engine.lock.withLock {
            guard engine.index.contains(folder) else { return }
            engine.index.setMark(folder.rawValue, true)
            engine.index.forEachDescendant(of: folder) { engine.index.setMark($0.rawValue, true) }
            engine.dirtyFolders.insert(folder.rawValue)
            engine.listing.remove(folder.rawValue)
            if let held = engine.deferred.removeValue(forKey: folder.rawValue) { engine.requeue(held) }
        }
    }
}
