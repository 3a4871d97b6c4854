import Foundation
package import MDQCore
package import MDQImport
package import MDQSystem
package import SystemPackage

/// Keeps a live engine's files imported: what the importers read from
/// inside each file, in an `ImportStore`, so live queries and the daemon's
/// answers can test imported attributes (`kMDItemTextContent`,
/// `kMDItemPixelWidth`, ...) as they test names.
///
/// - A file created or modified is imported once it has settled (no change
///   for `settle`), in the worker pool (low priority, bounded); when the
///   import lands, the engine re-tests the file against every subscription,
///   which then hears `added`, `changed` or `removed`.
/// - The store is keyed by device and inode: a rename keeps the import (its
///   stamp, modification time and size, is unchanged, so nothing is read
///   again); a deleted file's import is dropped with it.
/// - A file whose import failed keeps its failure, and is not retried until
///   it changes; a worker that could not start is retried later.
/// - `reconcile` compares the store with the index (after a scope is
///   gathered, and at start): imports missing or stale ones, drops those of
///   files no longer indexed.
/// - What waits is an `ImportQueue`: settled changes first, then the
///   backlog most recently modified first; taking a batch costs the batch,
///   not the backlog, and a waiting file about 9 bytes.
///
/// Thread-safe. The engine calls `noteChanges` and `values` under its lock;
/// the indexer's own thread never holds its lock while taking the engine's.
package final class ContentIndexer: ImportedContent {
    package struct Configuration: Sendable {
        /// How long a file must be left alone before it is imported.
        package var settle: Duration = .milliseconds(400)
        /// Files imported between two looks at the queue.
        package var batch: Int = 64
        /// Delay before a file whose worker could not start is tried again.
        var retry: Duration = .seconds(5)

        package init() {}
    }

    package let store: ImportStore
    package let pool: ImportWorkerPool
    let configuration: Configuration
    private let log: @Sendable (String) -> Void
    private let engine = Locked<LiveEngine?>(nil)
    /// The indexed scope folders and whether each imports, deepest first.
    private let scopes = Locked<[(path: [UInt8], imports: Bool)]>([])
    private let queue = ConditionLocked(Queue())
    /// Saves a batch's imports while the next is imported, at the
    /// indexer's low priority; waited for before anything else touches
    /// the store.
    private let storing = HandoffThread(name: "mdq-content-db", priority: .background)

    private struct Queue {
        /// Files to import, by entry id, in the order they are taken
        /// (`ImportQueue`: the next batch costs O(batch), not O(backlog)).
        var pending = ImportQueue()
        /// Identities of files removed from the index, not yet dropped
        /// from the store: their rows are hidden meanwhile (the inode may
        /// be reused by a new file at once).
        var removed: Set<FileKey> = []
        var reconcile = false
        /// A reconcile was put off until every root is gathered and filled
        /// (`LiveEngine.onFillEnded` asks again): files are pending that
        /// the index cannot name yet.
        var awaitingRoots = false
        /// Imported files whose extended attributes may have changed (their
        /// attributes changed), to read again.
        var attributeChecks: [UInt32: FileKey] = [:]
        /// Bumped whenever files are queued, so the thread recomputes when
        /// the next one is due.
        var queued = 0
        var importing = 0
        var stopping = false
        var stopped = false
        /// Imports stored since the indexer started.
        var imported = 0
        /// Files whose imports just landed, with the identity and stamp
        /// they were read at: the engine re-tests them as changed, and
        /// `noteChanges` then knows them without asking the store (taken
        /// whole by the next `noteChanges`: a batch or two at most).
        var landed: [UInt32: (key: FileKey, stamp: FileStamp)] = [:]
    }

    /// - Parameters:
    ///   - store: where imports are kept.
    ///   - pool: the workers that import.
    ///   - log: receives a line when the store cannot be written.
    package init(
        store: ImportStore, pool: ImportWorkerPool, configuration: Configuration = Configuration(),
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.store = store
        self.pool = pool
        self.configuration = configuration
        self.log = log
    }

    /// Starts importing for `engine`: from now on it tells the indexer
    /// what changed, and its queries read the store. Reconciles at once.
    ///
    /// - Throws: `MetadataError.watcherUnavailable` when the indexer's
    ///   thread cannot start.
    package func attach(to engine: LiveEngine) throws(MetadataError) {
        self.engine.withLock { $0 = engine }
        engine.state.withLock { s in
            s.content = self
            s.index.collectsRemovedFiles = true
        }
        queue.mutateAndBroadcast { $0.reconcile = true }
        let started = WorkerThreads.start(name: "mdq-content") { [self] in run() }
        if started == nil {
            detach()
            throw MetadataError.watcherUnavailable("cannot start the content indexer's thread (the thread limit)")
        }
    }

    /// Stops importing (imports under way finish) and lets go of the engine.
    package func stop() {
        queue.mutateAndBroadcast { $0.stopping = true }
        queue.wait(until: { $0.stopped }, deadline: .now + .seconds(30)) { _ in }
        detach()
    }

    private func detach() {
        if let engine = engine.withLock({ e -> LiveEngine? in
            defer { e = nil }; return e
        }) {
            engine.state.withLock { s in
                s.content = nil
                s.index.collectsRemovedFiles = false
            }
        }
    }

    /// Says which scope folders import what is inside their files (`mdq
    /// index add --no-content` makes one that does not): a file follows
    /// the deepest scope holding it; files outside every scope import.
    /// Call `requestReconcile` after a change, to import or drop what it
    /// changed.
    package func setScopes(_ list: [(FilePath, Bool)]) {
        let sorted = list.map { (path: $0.0.lexicallyNormalized().bytes, imports: $0.1) }
            .sorted { $0.path.count > $1.path.count }
        scopes.withLock { $0 = sorted }
    }

    /// Whether some scope imports nothing (so paths must be checked).
    private var excludes: Bool { scopes.withLock { $0.contains { !$0.imports } } }

    /// Whether the file at `path` is imported.
    private func imports(_ path: [UInt8]) -> Bool {
        scopes.withLock { list in
            for scope in list
            where path.count > scope.path.count && path.starts(with: scope.path)
                && (path[scope.path.count] == 0x2F || scope.path == [0x2F])
            {
                return scope.imports
            }
            return true
        }
    }

    /// Files waiting to be imported or being imported.
    package var pendingCount: Int {
        queue.withLock { $0.pending.count + $0.importing + ($0.reconcile || $0.awaitingRoots ? 1 : 0) }
    }

    /// Imports stored since the indexer started.
    package var importedCount: Int { queue.withLock { $0.imported } }

    /// Asks for the store to be compared with the index again (a scope was
    /// added and gathered).
    package func requestReconcile() {
        queue.mutateAndBroadcast { $0.reconcile = true }
    }

    // MARK: Called by the engine, under its lock

    /// Queues the files of a batch of changes (created, modified, renamed:
    /// a rename settles to nothing to do) and forgets removed ones.
    func noteChanges(_ changes: IndexChanges, removedFiles: [FileKey], index: FileIndex) {
        let due = ContinuousClock.now + configuration.settle
        var items: [UInt32] = []
        let checksPaths = excludes
        let landed = queue.withLock { q in
            defer { q.landed = [:] }
            return q.landed
        }
        for id in changes.added.union(changes.changed) where !changes.removed.contains(id) {
            guard let key = index.fileKey(of: EntryID(id)), let stamp = index.fileStamp(of: EntryID(id)) else {
                continue
            }
            // Re-tested after its import landed, renamed, or its attributes
            // changed: nothing new to read.
            if let known = landed[id], known.key == key && known.stamp == stamp { continue }
            if store.stamp(for: key) == stamp { continue }
            if checksPaths && !imports(index.path(of: EntryID(id)).bytes) { continue }
            items.append(id)
        }
        // Only the extended attributes may have changed: read them again
        // for files imported at their current stamp (others are imported
        // whole anyway).
        var checks: [(UInt32, FileKey)] = []
        for id in changes.attributes where !changes.removed.contains(id) {
            guard let key = index.fileKey(of: EntryID(id)), let stamp = index.fileStamp(of: EntryID(id)),
                store.stamp(for: key) == stamp
            else { continue }
            checks.append((id, key))
        }
        guard !items.isEmpty || !removedFiles.isEmpty || !checks.isEmpty else { return }
        queue.mutateAndBroadcast { q in
            for (id, key) in checks { q.attributeChecks[id] = key }
            for id in items { q.pending.enqueue(id, due: due) }
            for id in changes.removed {
                q.pending.remove(id)
                q.attributeChecks[id] = nil
            }
            q.queued &+= 1
            q.removed.formUnion(removedFiles)
            // A key removed and then given to a new file in the same batch
            // is the new file's: its row goes (it was the old file's), and
            // the new file is imported.
        }
    }

    /// The stored values of a file, with its text when `text` is asked for;
    /// nil when it was never imported (or its row awaits removal).
    package func values(for key: FileKey, text: Bool) -> ImportedValues? {
        if queue.withLock({ $0.removed.contains(key) }) { return nil }
        guard let (record, body) = store.recordAndText(for: key, text: text) else { return nil }
        var values = record.values
        if let sniffed = record.sniffedType { values[.sniffedContentType] = .text(Array(sniffed.utf8)) }
        if let failure = record.failure { values[.importError] = .text(Array(failure.utf8)) }
        if let body { values[.textContent] = .text(body) }
        return values
    }

    /// What the full-text index decides for a whole scan of `predicate`;
    /// nil when it decides nothing.
    func acceleration(for predicate: CompiledPredicate) -> TextAcceleration? {
        guard predicate.importedAttributes.contains(.textContent) else { return nil }
        // Each index query once (the prefilter is often one of the tests).
        var found: [TextPrefilter: Set<FileKey>] = [:]
        let (tests, all) = predicate.decidableWordTests
        var acceleration = TextAcceleration()
        for (matcher, filter) in tests {
            guard let files = found[filter] ?? store.candidates(filter) else { continue }
            found[filter] = files
            acceleration.decided[matcher] = files
        }
        acceleration.candidates = predicate.textPrefilter.flatMap { found[$0] ?? store.candidates($0) }
        if !acceleration.decided.isEmpty {
            acceleration.nonASCII = store.filesWithNonASCIIText()
            acceleration.decidesAllTextTests = all && acceleration.decided.count == tests.count
        }
        return acceleration.candidates == nil && acceleration.decided.isEmpty ? nil : acceleration
    }

    // MARK: The indexer's thread

    private enum Work {
        case stop
        case drop(Set<FileKey>)
        case reconcile
        case imports([UInt32])
        case attributes([(UInt32, FileKey)])
    }

    private func run() {
        // Imports are work no one waits for: they yield to the threads
        // that answer queries and apply events (the workers run at nice
        // 19). Not the idle scheduling class: this thread and the store's
        // hold the engine's lock for a batch's facts and landing, and a
        // thread that may not run for seconds on a busy machine must hold
        // nothing others wait for.
        WorkerThreads.Priority.background.apply()
        // Files imported since the heap was last trimmed.
        var imported = 0
        while true {
            // When the next file is due: O(1) but for entries left behind by
            // files queued again or removed, each skipped once.
            let (next, seen) = queue.withLock { q in (q.pending.nextDue(), q.queued) }
            let work = queue.wait(
                until: { q in
                    q.stopping || !q.removed.isEmpty || q.reconcile || q.queued != seen || !q.attributeChecks.isEmpty
                        || next.map { $0 <= .now } == true
                },
                deadline: next
            ) { q -> Work? in
                if q.stopping {
                    q.stopped = true
                    return .stop
                }
                if !q.removed.isEmpty { return .drop(q.removed) }
                if !q.attributeChecks.isEmpty {
                    let checks = q.attributeChecks.map { ($0.key, $0.value) }
                    q.attributeChecks = [:]
                    q.importing += checks.count
                    return .attributes(checks)
                }
                if q.reconcile {
                    q.reconcile = false
                    q.importing += 1
                    return .reconcile
                }
                let taken = q.pending.take(configuration.batch)
                guard !taken.isEmpty else { return nil }
                // Arrays keep their capacity when emptied: after a first
                // import of a whole tree, that is megabytes.
                q.pending.shrinkIfEmpty()
                q.importing += taken.count
                return .imports(taken)
            }
            // Everything but the next batch's imports waits for the last
            // batch to be stored (removals, reconciling and checks see it).
            if case .imports? = work {} else { storing.wait() }
            switch work {
            case .stop?:
                storing.stop()
                queue.mutateAndBroadcast { _ in }
                return
            case .drop(let keys)?:
                do {
                    try store.remove(Array(keys))
                    queue.withLock { $0.removed.subtract(keys) }
                } catch {
                    log("warning: \(error.description)")
                    queue.withLock { $0.removed.subtract(keys) }
                }
            case .reconcile?:
                reconcile()
                queue.mutateAndBroadcast { $0.importing -= 1 }
            case .imports(let items)?:
                importFiles(items)
                imported += items.count
                // Caught up: fold the log into the store, and give back
                // the heap the catching up used (its queues, the reports).
                if queue.withLock({ $0.pending.count == 0 && $0.removed.isEmpty }) {
                    storing.wait()
                    store.checkpoint()
                    if ProcessMemory.releaseFreePages(after: imported, threshold: 10_000) { imported = 0 }
                }
            case .attributes(let checks)?:
                rereadExtendedAttributes(checks)
                queue.mutateAndBroadcast { $0.importing -= checks.count }
            case nil:
                continue
            }
        }
    }

    /// Reads the extended attributes of imported files again (in this
    /// process: a few `fgetxattr` calls, nothing of the contents), stores
    /// those that changed, and has the engine re-test those files.
    private func rereadExtendedAttributes(_ checks: [(UInt32, FileKey)]) {
        guard let engine = engine.withLock({ $0 }) else { return }
        var updates: [(key: FileKey, values: ImportedValues)] = []
        var ids: [UInt32] = []
        let keys = Dictionary(checks, uniquingKeysWith: { first, _ in first })
        for fact in engine.fileFacts(checks.map(\.0)) where keys[fact.id] == fact.key {
            guard imports(fact.path), let stored = store.recordAndText(for: fact.key, text: false)?.record,
                stored.stamp == fact.stamp,
                case .success(let file) = ContentFile.open(FilePath.fromBytes(fact.path), budget: 0)
            else { continue }
            let now = ExtendedAttributeImporter.values(of: file)
            guard now != stored.values.restricted(to: ExtendedAttributeImporter.attributes) else { continue }
            updates.append((fact.key, now))
            ids.append(fact.id)
        }
        guard !updates.isEmpty else { return }
        do {
            try store.replaceValues(of: ExtendedAttributeImporter.attributes, with: updates)
        } catch {
            log("warning: \(error.description)")
            return
        }
        engine.importsLanded(ids)
    }

    /// Imports files whose stored stamp is not theirs, then stores the
    /// imports of files still as they were, and has the engine re-test them.
    private func importFiles(_ items: [UInt32]) {
        guard let engine = engine.withLock({ $0 }) else { return }
        // Where each file is and what it looks like now (an id removed is
        // dropped from the queue, one given to another file is queued for
        // it); files gone or already imported at this stamp drop out.
        let facts = engine.fileFacts(items).filter { fact in
            store.stamp(for: fact.key) != fact.stamp && imports(fact.path)
        }
        let skipped = items.count - facts.count
        if skipped > 0 { queue.mutateAndBroadcast { $0.importing -= skipped } }
        guard !facts.isEmpty else { return }
        // The pool's lanes take the next file when free (a PDF can take a
        // hundred times a text file's time), several small ones in flight
        // to each worker.
        let reports = pool.importFiles(facts.map { FilePath.fromBytes($0.path) }, sizes: facts.map(\.stamp.size))
        // Only imports of files still at the stamp they were read at: a
        // file changed meanwhile is queued again by that change.
        let current = Dictionary(
            engine.fileFacts(facts.map(\.id)).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var landed: [(key: FileKey, stamp: FileStamp, report: ImportReport)] = []
        var ids: [UInt32] = []
        var retry: [UInt32] = []
        for (fact, report) in zip(facts, reports) {
            guard let now = current[fact.id], now.key == fact.key, now.stamp == fact.stamp else { continue }
            if report.failure?.isTransient == true {
                retry.append(fact.id)
                continue
            }
            landed.append((fact.key, fact.stamp, report))
            ids.append(fact.id)
        }
        // Stored while the next batch is imported: the workers need not
        // wait for SQLite and the compression of the text (one batch in
        // the writer at most, so memory stays one batch's reports).
        let imported = facts.count
        storing.run { [self, ids, landed, retry] in
            var ids = ids
            do throws(MetadataError) {
                try store.save(landed)
            } catch {
                log("warning: \(error.description)")
                ids = []
            }
            queue.mutateAndBroadcast { q in
                q.importing -= imported
                q.imported += ids.count
                for (id, entry) in zip(ids, landed) { q.landed[id] = (entry.key, entry.stamp) }
                let later = ContinuousClock.now + configuration.retry
                for id in retry where !q.pending.contains(id) { q.pending.enqueue(id, due: later) }
                q.queued &+= 1
            }
            if !ids.isEmpty { engine.importsLanded(ids) }
        }
    }

    /// Queues every indexed file whose import is missing or stale; drops
    /// imports of files the index no longer has.
    private func reconcile() {
        guard let engine = engine.withLock({ $0 }) else { return }
        // Files not crawled yet, or whose sizes and dates are still being
        // read, have no stamp, and their imports would look orphaned: the
        // engine asks again once they are read (`LiveEngine.onFillEnded`;
        // the daemon asks after adding a scope).
        if engine.hasUnfinishedRoots {
            queue.withLock { $0.awaitingRoots = true }
            return
        }
        // The store's files, sorted, against the index's read a slice of
        // slots at a time: memory is 32 bytes a stored file and a bit
        // (not three tables of every file), and the engine's lock is held
        // for a slice, not for the whole index.
        let stored = store.sortedStamps()
        var indexed = EntrySet(capacity: stored.count)
        let checksPaths = excludes
        var start: UInt32 = 0
        while true {
            let (files, slots) = engine.fileStamps(in: start..<(start &+ Self.reconcileSlice), paths: checksPaths)
            var queued: [(id: UInt32, modified: Int64)] = []
            for file in files {
                // A file of a names-only scope is not indexed for content:
                // its import, if any, goes.
                if let path = file.path, !imports(path) { continue }
                if let i = ImportStore.StoredStamp.index(of: file.key, in: stored) {
                    indexed.insert(UInt32(i))
                    if stored[i].stamp == file.stamp { continue }
                }
                queued.append((file.id, file.stamp.modification))
            }
            if !queued.isEmpty {
                queue.mutateAndBroadcast { q in
                    for file in queued { q.pending.enqueueBacklog(file.id, modified: file.modified) }
                    q.queued &+= 1
                }
            }
            start &+= Self.reconcileSlice
            if Int(start) >= slots || start < Self.reconcileSlice { break }
        }
        var orphans: [FileKey] = []
        for (i, file) in stored.enumerated() where !indexed.contains(UInt32(i)) {
            orphans.append(file.key)
        }
        if !orphans.isEmpty {
            do {
                try store.remove(orphans)
            } catch {
                log("warning: \(error.description)")
            }
        }
        queue.mutateAndBroadcast { q in
            q.awaitingRoots = false
            q.queued &+= 1
        }
    }

    /// Index slots read under one hold of the engine's lock by `reconcile`.
    static let reconcileSlice: UInt32 = 1 << 16
}

/// What the content indexer needs to know of an indexed file.
struct IndexedFileFacts: Sendable {
    var id: UInt32
    var key: FileKey
    var stamp: FileStamp
    package var path: [UInt8]
}

extension LiveEngine {
    /// The files among `ids` as they are in the index now (ids that are
    /// gone or are not files are left out).
    func fileFacts(_ ids: [UInt32]) -> [IndexedFileFacts] {
        state.withLock { s in
            ids.compactMap { id -> IndexedFileFacts? in
                guard let key = s.index.fileKey(of: EntryID(id)), let stamp = s.index.fileStamp(of: EntryID(id)) else {
                    return nil
                }
                return IndexedFileFacts(id: id, key: key, stamp: stamp, path: s.pathBytes(of: id))
            }
        }
    }

    /// The indexed files in `slots`, with their identity and stamp (and
    /// path when asked), and how many slots the index has.
    func fileStamps(in slots: Range<UInt32>, paths: Bool) -> (
        files: [(id: UInt32, key: FileKey, stamp: FileStamp, path: [UInt8]?)], slotCount: Int
    ) {
        state.withLock { s in
            var files: [(id: UInt32, key: FileKey, stamp: FileStamp, path: [UInt8]?)] = []
            for raw in slots.clamped(to: 0..<UInt32(s.index.slotCount)) {
                guard let key = s.index.fileKey(of: EntryID(raw)), let stamp = s.index.fileStamp(of: EntryID(raw))
                else {
                    continue
                }
                files.append((raw, key, stamp, paths ? s.pathBytes(of: raw) : nil))
            }
            return (files, s.index.slotCount)
        }
    }

    /// Imports of these files landed in the store: every subscription
    /// re-tests them.
    func importsLanded(_ ids: [UInt32]) {
        state.withLock { s in
            for id in ids where s.index.contains(EntryID(id)) { s.changes.changed.insert(id) }
        }
        publish()
    }
}
