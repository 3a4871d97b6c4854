import MDQCore
package import MDQSystem
package import MDQWatch
package import SystemPackage

extension LiveEngine {
    /// Saves the index and the engine's roots (with their rules) to `path`,
    /// atomically (see `AtomicFileWriter`).
    ///
    /// The index is written to the page cache under the engine's lock (tens
    /// of milliseconds for a million entries: events queue meanwhile and
    /// queries wait), then flushed to disk and renamed into place after
    /// the lock is released.
    ///
    /// - Throws: `MetadataError` `.persistence` naming the file.
    package func saveSnapshot(to path: FilePath) throws(MetadataError) {
        AtomicFileWriter.removeLeftovers(of: path)
        var writer: AtomicFileWriter
        do {
            writer = try AtomicFileWriter(replacing: path)
        } catch {
            throw MetadataError.persistence("cannot write the index snapshot", path: path, underlying: error)
        }
        let now = Timestamp.now
        let written: Result<Void, Errno> = state.withLock { s in
            do throws(Errno) {
                try IndexSnapshot.write(s.index, extra: s.encodedExtra(), written: now, to: &writer)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        do {
            try written.get()
            try writer.commit()
        } catch {
            throw MetadataError.persistence("cannot write the index snapshot", path: path, underlying: error)
        }
    }

    /// An engine whose index and roots come from the snapshot at `path`.
    /// Its roots are neither watched nor checked until `verify()`; queries
    /// answered before then may be stale.
    ///
    /// - Throws: `MetadataError` `.persistence` with the reason when the
    ///   file is missing, unreadable, truncated, corrupted, of another
    ///   format or inconsistent: the caller crawls instead.
    package static func restoring(
        from path: FilePath, watchLimit: Int? = nil, crawlThreads: Int? = nil, fanotify: FanotifyWatcher? = nil
    ) throws(MetadataError) -> (engine: LiveEngine, written: Timestamp) {
        try restoring(from: path, watchLimit: watchLimit, crawlThreads: crawlThreads, watcher: fanotify)
    }

    /// As above, watching with `watcher` (nil: the process's inotify watcher).
    package static func restoring(
        from path: FilePath, watchLimit: Int? = nil, crawlThreads: Int?, watcher: (any FolderWatcher)?
    ) throws(MetadataError) -> (engine: LiveEngine, written: Timestamp) {
        let read: Result<IndexSnapshot.Loaded, IndexSnapshot.Refusal>
        do {
            // Mapped, not read: the load copies what it keeps straight
            // from the page cache.
            read = try withMappedFile(path) { (bytes) throws(Errno) in
                Result { () throws(IndexSnapshot.Refusal) in try IndexSnapshot.load(bytes) }
            }
        } catch {
            throw MetadataError.persistence("cannot read the index snapshot", path: path, underlying: error)
        }
        let loaded: IndexSnapshot.Loaded
        let roots: [UInt32: EngineRoot]
        let clock: ChangeClock?
        do {
            loaded = try read.get()
            (roots, clock) = try EngineState.decodeExtra(loaded.extra, index: loaded.index)
        } catch {
            throw MetadataError.persistence("index snapshot discarded (\(error.reason))", path: path)
        }
        let engine = try LiveEngine(
            index: loaded.index, watcher: watcher, watchLimit: watchLimit, crawlThreads: crawlThreads,
            eventCapacity: 1 << 20)
        engine.state.withLock { s in
            s.roots = roots
            s.unverifiedRoots = Set(roots.keys)
            // The saver's history goes on here: its clocks stay good.
            if let clock { s.clock = clock }
        }
        return (engine, loaded.written)
    }

    /// Whether some restored root has not been checked against the disk
    /// yet (results may be stale).
    package var isVerifying: Bool { state.withLock { !$0.unverifiedRoots.isEmpty } }

    /// Checks every restored root against the disk: watches every folder
    /// and re-lists and re-stats everything (each root on every core, at a
    /// priority below the queries': they answer from the snapshot
    /// meanwhile, and must not be slowed by the check), and tells
    /// subscribers what changed while nothing watched, as ordinary changes.
    /// Roots gone meanwhile are watched for. Returns when done.
    package func verify() {
        let roots = state.withLock { Array($0.unverifiedRoots) }
        for root in roots {
            reconcile(root: root, inBackground: true)
            state.withLock { s in
                s.unverifiedRoots.remove(root)
                s.roots[root]?.unreadUntilVerified = false
            }
            publish()
        }
        let missing = state.withLock { s in s.roots.filter { $0.value.missing }.map(\.key) }
        for root in missing { recoverRoot(root) }
        publish()
        // Verification re-lists every restored folder: as much churn as
        // a crawl of the whole index.
        ProcessMemory.releaseFreePages(after: state.withLock { $0.index.count })
    }

    /// Drops restored roots no scope uses (a scope removed while the
    /// engine was down); with `paths`, only those at these paths (restored
    /// under other rules, to be crawled afresh).
    package func dropUnusedRoots(at paths: [FilePath]? = nil) {
        state.withLock { s in
            for (id, root) in s.roots where root.users <= 0 && paths.map({ $0.contains(root.path) }) ?? true {
                s.roots[id] = nil
                s.unverifiedRoots.remove(id)
                s.dropWatches(under: id)
                s.index.remove(EntryID(id))
            }
        }
    }
}

extension EngineState {
    /// The engine's part of a snapshot (its `XTRA` section): the roots with
    /// their rules, then the clock and its journal.
    func encodedExtra() -> [UInt8] {
        var out = ByteWriter()
        encodeRoots(to: &out)
        clock.encode(to: &out)
        return out.bytes
    }

    /// The roots and the clock from a snapshot's `XTRA` section; no clock
    /// from a snapshot written before clocks.
    static func decodeExtra(_ bytes: [UInt8], index: FileIndex) throws(IndexSnapshot.Refusal) -> (
        [UInt32: EngineRoot], ChangeClock?
    ) {
        try withBytes(of: bytes) { (raw) throws(IndexSnapshot.Refusal) in
            var reader = ByteReader(raw)
            let roots = try decodeRoots(&reader, index: index)
            let clock = try ChangeClock.decode(&reader)
            guard reader.isAtEnd else { throw IndexSnapshot.Refusal(reason: "bytes after the clock") }
            return (roots, clock)
        }
    }

    /// The roots and their rules.
    private func encodeRoots(to out: inout ByteWriter) {
        out.append(UInt32(roots.count))
        for (id, root) in roots.sorted(by: { $0.key < $1.key }) {
            let prunes = !root.rules.prunedFolderPaths.isEmpty || !root.rules.prunedFolderNames.isEmpty
            out.append(id)
            out.appendBlob(root.path.bytes)
            out.append(
                UInt8(
                    (root.rules.includeHidden ? 1 : 0) | (root.rules.stayOnFileSystem ? 2 : 0) | (root.missing ? 4 : 0)
                        | (prunes ? 8 : 0) | (root.lacksAttributes ? 16 : 0))
            )
            var sets = [root.rules.excludedFolderNames, root.rules.excludedRootChildNames]
            // Prunes (flag 8) came later: a snapshot without any reads as
            // before.
            if prunes { sets += [root.rules.prunedFolderPaths, root.rules.prunedFolderNames] }
            for names in sets {
                out.append(UInt32(names.count))
                for name in names.sorted(by: { $0.lexicographicallyPrecedes($1) }) { out.appendBlob(name) }
            }
            out.append(root.device.major)
            out.append(root.device.minor)
            out.append(root.inode)
        }
    }

    /// Roots from a snapshot, each checked to be a root of `index`.
    private static func decodeRoots(_ reader: inout ByteReader, index: FileIndex) throws(IndexSnapshot.Refusal)
        -> [UInt32: EngineRoot]
    {
        var roots: [UInt32: EngineRoot] = [:]
        let count: UInt32 = try reader.read()
        for _ in 0..<count {
            let id: UInt32 = try reader.read()
            let path = FilePath.fromBytes(try reader.readBlob())
            let flags: UInt8 = try reader.read()
            var sets: [Set<[UInt8]>] = []
            for _ in 0..<(flags & 8 != 0 ? 4 : 2) {
                let n: UInt32 = try reader.read()
                guard Int(n) <= reader.remaining / 4 else { throw IndexSnapshot.Refusal(reason: "root rules") }
                var names: Set<[UInt8]> = []
                for _ in 0..<n { names.insert(try reader.readBlob()) }
                sets.append(names)
            }
            let device = DeviceNumber(major: try reader.read(), minor: try reader.read())
            let inode: UInt64 = try reader.read()
            guard index.contains(EntryID(id)), index.isRoot(EntryID(id)), index.path(of: EntryID(id)) == path else {
                throw IndexSnapshot.Refusal(reason: "root \(path) is not in the index")
            }
            roots[id] = EngineRoot(
                path: path,
                rules: ScopeRules(
                    includeHidden: flags & 1 != 0, excludedFolderNames: sets[0], excludedRootChildNames: sets[1],
                    stayOnFileSystem: flags & 2 != 0, prunedFolderPaths: sets.count > 2 ? sets[2] : [],
                    prunedFolderNames: sets.count > 3 ? sets[3] : []),
                device: device, inode: inode, users: 0, missing: flags & 4 != 0,
                // Saved before its fill ended (flag 16, ignored by readers
                // from before names first).
                unreadUntilVerified: flags & 16 != 0)
        }
        guard Set(roots.keys) == Set(index.rootPaths.keys) else {
            throw IndexSnapshot.Refusal(reason: "the roots do not match the index")
        }
        return roots
    }
}
