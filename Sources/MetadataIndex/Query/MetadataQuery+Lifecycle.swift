import Foundation
import SystemPackage

extension MetadataQuery {
    /// Starts gathering.
    ///
    /// - Returns: false when there is no predicate or the query is already
    ///   running; otherwise true, after posting did start gathering.
    @discardableResult
    public func start() -> Bool {
        let start = stateLock.withLock { () -> (Int, Configuration)? in
            guard configuration.predicate != nil, phase != .gathering, phase != .live else { return nil }
            generation += 1
            phase = .gathering
            visible = []
            positions = [:]
            resultsVersion += 1
            externalFolders = configuration.container?.externalDocumentFolders ?? []
            live = [:]
            pending = [:]
            pendingOrder = []
            scopeErrors = []
            lastProgressPost = .distantPast
            compiled = CompiledPredicate(configuration.predicate!)
            return (generation, configuration)
        }
        guard let (generation, configuration) = start else { return false }
        post(.didStartGathering, generation: generation, synchronously: true)
        let thread = Thread { [self] in gather(generation: generation, configuration: configuration) }
        thread.name = "mdq-gather"
        thread.start()
        return true
    }

    /// Stops the query: no notification is posted after this returns; the
    /// results stay readable. `start()` begins anew.
    public func stop() {
        deliveryLock.lock()
        let (observer, anchors, engine, continuations) = stateLock.withLock {
            () -> (UInt64?, [LiveIndex.Anchor], LiveIndex?, [AsyncStream<Event>.Continuation]) in
            guard phase == .gathering || phase == .live else { return (nil, [], nil, []) }
            phase = .stopped
            generation += 1
            let taken = (self.observer, self.anchors, self.engine, Array(self.continuations.values))
            self.observer = nil
            self.anchors = []
            self.continuations = [:]
            pending = [:]
            pendingOrder = []
            return taken
        }
        deliveryLock.unlock()
        for continuation in continuations { continuation.finish() }
        guard let engine else { return }
        if let observer { engine.lock.withLock { engine.removeObserver(observer) } }
        for anchor in anchors { engine.release(anchor) }
    }

    /// The crawl roots of the configured scopes.
    func crawlRoots(_ configuration: Configuration) -> ([CrawlRoot], [MetadataError]) {
        var roots: [CrawlRoot] = []
        var errors: [MetadataError] = []
        var ubiquitous: Set<SearchScope> = []
        for scope in configuration.scopes {
            if let directory = scope.directory {
                roots.append(CrawlRoot(path: directory))
            } else if scope == .userHome {
                roots.append(CrawlRoot(path: FilePath(ProcessEnvironment.variable("HOME") ?? "/")))
            } else {
                ubiquitous.insert(scope)
            }
        }
        if !ubiquitous.isEmpty {
            if let container = configuration.container {
                roots += container.crawlRoots(for: ubiquitous)
            } else {
                errors.append(
                    MetadataError(
                        code: .containerNotFound, message: "the ubiquitous scopes need a container (set `container`)"))
            }
        }
        return (CrawlRoot.removingOverlaps(roots), errors)
    }

    private func gather(generation: Int, configuration: Configuration) {
        let engine: LiveIndex
        do {
            engine = try engineProvider()
        } catch {
            stateLock.withLock { scopeErrors.append(error) }
            finishGathering(generation: generation, engine: nil, anchors: [])
            return
        }
        let (roots, errors) = crawlRoots(configuration)
        stateLock.withLock {
            self.engine = engine
            scopeErrors += errors
        }
        var anchors: [LiveIndex.Anchor] = []
        for root in roots {
            guard stateLock.withLock({ self.generation == generation }) else { break }
            do {
                let anchor = try engine.acquire(root, includeHidden: configuration.includeHidden) { [weak self] count in
                    self?.progress(count, generation: generation)
                }
                anchors.append(anchor)
            } catch {
                stateLock.withLock { scopeErrors.append(error) }
            }
        }
        finishGathering(generation: generation, engine: engine, anchors: anchors)
    }

    private func progress(_ count: Int, generation: Int) {
        let due = stateLock.withLock { () -> Bool in
            guard self.generation == generation, phase == .gathering else { return false }
            let now = Date()
            guard now.timeIntervalSince(lastProgressPost) >= configuration.interval else { return false }
            lastProgressPost = now
            return true
        }
        if due { post(.gatheringProgress(gathered: count), generation: generation, synchronously: false) }
    }

    /// Computes the first results and starts observing the engine, in one
    /// critical section so no change falls between the two.
    private func finishGathering(generation: Int, engine: LiveIndex?, anchors: [LiveIndex.Anchor]) {
        guard let engine else {
            post(.didFinishGathering(resultCount: 0), generation: generation, synchronously: false)
            return
        }
        engine.lock.lock()
        let current = stateLock.withLock { () -> Bool in
            guard self.generation == generation else { return false }
            self.anchors = anchors
            return true
        }
        guard current else {
            engine.lock.unlock()
            for anchor in anchors { engine.release(anchor) }
            return
        }
        let predicate = stateLock.withLock { compiled! }
        var first: [UInt32: MetadataItem] = [:]
        var order: [UInt32] = []
        // One scan of the whole index on every core, then the scope test
        // for the matches only (each id once, so scopes that meet through
        // a symlinked root still report a file once).
        var batch = itemBatch()
        for id in IndexScan(index: engine.index, predicate: predicate).matchingEntries() {
            if let item = item(id, in: engine, anchors: anchors, batch: &batch) {
                first[id] = item
                order.append(id)
            }
        }
        let observer = engine.addObserver { [weak self] changes in
            self?.indexDidChange(changes, engine: engine, generation: generation)
        }
        stateLock.withLock {
            self.observer = observer
            self.live = first
        }
        engine.lock.unlock()
        let results = order.map { first[$0]! }
        post(
            .didFinishGathering(resultCount: results.count), generation: generation, synchronously: false,
            finishing: results)
    }

    /// The item for an index entry if it lies in one of `anchors` (the
    /// query's scopes, read once per scan or batch by the caller) and
    /// matches; caller holds the engine lock.
    func evaluate(
        _ id: UInt32, in engine: LiveIndex, anchors: [LiveIndex.Anchor], evaluator: PredicateEvaluator,
        batch: inout ItemBatch
    ) -> MetadataItem? {
        guard engine.index.contains(EntryID(id)),
            evaluator.matches(IndexSubject(index: engine.index, id: id))
        else { return nil }
        return item(id, in: engine, anchors: anchors, batch: &batch)
    }

    /// What building the items of one scan or batch of changes needs from
    /// the configuration, read once, and the conflict copies seen so far.
    struct ItemBatch {
        let excludedFolderNames: Set<[UInt8]>
        let container: UbiquityContainer?
        let externalFolders: [FilePath]
        var conflicts = ConflictCache()
    }

    func itemBatch() -> ItemBatch {
        stateLock.withLock {
            ItemBatch(
                excludedFolderNames: configuration.excludedFolderNames, container: configuration.container,
                externalFolders: externalFolders)
        }
    }

    /// The item for an index entry that matches, if it lies in one of
    /// `anchors`; caller holds the engine lock.
    private func item(
        _ id: UInt32, in engine: LiveIndex, anchors: [LiveIndex.Anchor], batch: inout ItemBatch
    ) -> MetadataItem? {
        let index = engine.index
        guard index.contains(EntryID(id)), !index.isRoot(EntryID(id)) else { return nil }
        let excluded = batch.excludedFolderNames
        var inScope = false
        // A scope's own folder is not one of its results.
        for anchor in anchors where anchor.entry.rawValue != id {
            var current = id
            var childOfAnchor = id
            var hidden = false
            while current != anchor.entry.rawValue {
                if !anchor.includeHidden, index.withName(of: EntryID(current), { $0.first == 0x2E }) { hidden = true }
                // Below an excluded folder (the folder itself is still a result).
                if current != id, !excluded.isEmpty, excluded.contains(index.name(of: EntryID(current))) {
                    hidden = true
                }
                childOfAnchor = current
                guard let parent = index.parent(of: EntryID(current)) else { break }
                current = parent.rawValue
            }
            guard current == anchor.entry.rawValue, !hidden else { continue }
            if !anchor.excludedChildNames.isEmpty,
                anchor.excludedChildNames.contains(index.name(of: EntryID(childOfAnchor)))
            {
                continue
            }
            inScope = true
            break
        }
        guard inScope else { return nil }
        let serial = stateLock.withLock { () -> UInt64 in
            if let existing = live[id] { return existing.serial }
            defer { nextSerial += 1 }
            return nextSerial
        }
        let path = index.path(of: EntryID(id)).bytes
        let ubiquity = batch.container.flatMap {
            MetadataItem.Ubiquity(path: path, container: $0, externalFolders: batch.externalFolders)
        }
        return MetadataItem(
            serial: serial, pathBytes: path, kind: index.kind(of: EntryID(id)),
            metadata: index.metadata(of: EntryID(id)), ubiquity: ubiquity,
            hasUnresolvedConflicts: batch.conflicts.hasCopies(id, in: index),
            conflictOriginalPathBytes: index.conflictOriginal(of: id).map { index.path(of: EntryID($0)).bytes })
    }

    /// Folds one batch of index changes into the pending update. Called by
    /// the engine under its lock.
    private func indexDidChange(_ changes: IndexChanges, engine: LiveIndex, generation: Int) {
        guard
            let evaluator = stateLock.withLock({ () -> PredicateEvaluator? in
                guard self.generation == generation else { return nil }
                return compiled?.makeEvaluator()
            })
        else { return }
        // A scope folder that was deleted and made again is a new entry.
        stateLock.withLock {
            for (i, anchor) in anchors.enumerated()
            where !engine.index.contains(anchor.entry) || engine.index.path(of: anchor.entry) != anchor.path {
                if let root = engine.topRoots.first(where: { $0.value.crawlRoot.covers(anchor.path) })?.key,
                    let entry = engine.entry(at: anchor.path, from: root)
                {
                    anchors[i].entry = entry
                }
            }
        }
        var touched: [UInt32] = []
        touched.reserveCapacity(changes.added.count + changes.changed.count)
        for id in changes.added where !changes.removed.contains(id) { touched.append(id) }
        for id in changes.changed where !changes.removed.contains(id) && !changes.added.contains(id) {
            touched.append(id)
        }
        var outcomes: [(UInt32, MetadataItem?)] = []
        let scopes = stateLock.withLock { anchors }
        var batch = itemBatch()
        for id in touched {
            outcomes.append((id, evaluate(id, in: engine, anchors: scopes, evaluator: evaluator, batch: &batch)))
        }
        var anything = false
        stateLock.withLock {
            guard self.generation == generation else { return }
            for id in changes.removed {
                if let old = live.removeValue(forKey: id) {
                    record(.removed(old))
                    anything = true
                }
            }
            for (id, now) in outcomes {
                switch (live[id], now) {
                case (nil, let now?):
                    live[id] = now
                    record(.added(now))
                    anything = true
                case (let old?, let now?):
                    if !old.hasSameAttributes(as: now) {
                        live[id] = now
                        record(.changed(now))
                        anything = true
                    }
                case (let old?, nil):
                    live[id] = nil
                    record(.removed(old))
                    anything = true
                case (nil, nil):
                    break
                }
            }
        }
        if anything { scheduleDelivery(now: false) }
    }

    /// Merges a change into the pending update, per result. Caller holds
    /// `stateLock`.
    private func record(_ change: Pending) {
        let serial: UInt64
        switch change {
        case .added(let item), .changed(let item), .removed(let item): serial = item.serial
        }
        switch (pending[serial], change) {
        case (nil, _):
            pending[serial] = change
            pendingOrder.append(serial)
        case (.added?, .changed(let item)):
            pending[serial] = .added(item)
        case (.added?, .removed):
            pending[serial] = nil  // created, then deleted: it never was
        case (.changed?, .changed), (.changed?, .removed), (.removed?, _):
            pending[serial] = change
        default:
            pending[serial] = change
        }
    }

    /// Arranges delivery of the pending update after the batching interval
    /// (at once when `now` or the interval is 0).
    func scheduleDelivery(now: Bool) {
        let plan = stateLock.withLock { () -> (Int, TimeInterval)? in
            guard phase == .live, disableCount == 0, !deliveryScheduled, !pendingOrder.isEmpty else { return nil }
            deliveryScheduled = true
            return (generation, now ? 0 : configuration.interval)
        }
        guard let (generation, delay) = plan else { return }
        let fire: @Sendable () -> Void = { [weak self] in self?.deliverUpdate(generation: generation) }
        if delay <= 0 {
            deliveryQueue.async(execute: fire)
        } else {
            deliveryQueue.asyncAfter(deadline: .now() + delay, execute: fire)
        }
    }

    private func deliverUpdate(generation: Int) {
        stateLock.withLock { deliveryScheduled = false }
        post(nil, generation: generation, synchronously: false)
    }

    /// Posts an event (or, for `nil`, the pending update) on the delivery
    /// queue or the operation queue; checks at posting time that the query
    /// was not stopped or restarted meanwhile.
    func post(_ event: Event?, generation: Int, synchronously: Bool, finishing: [MetadataItem]? = nil) {
        let work: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            self.deliveryLock.lock()
            defer { self.deliveryLock.unlock() }
            var updates: [Update] = []
            var continuations: [AsyncStream<Event>.Continuation] = []
            let proceed = self.stateLock.withLock { () -> Bool in
                guard self.generation == generation, self.phase != .stopped else { return false }
                if let finishing {
                    self.phase = .live
                    self.visible = finishing
                    self.applySort()
                } else if event == nil {
                    guard self.disableCount == 0 else { return false }
                    updates = self.takePendingUpdates()
                    if updates.isEmpty { return false }
                }
                continuations = Array(self.continuations.values)
                return true
            }
            guard proceed else { return }
            if let event {
                let name: Notification.Name
                var userInfo: [String: Any]?
                switch event {
                case .didStartGathering: name = .metadataQueryDidStartGathering
                case .gatheringProgress(let gathered):
                    name = .metadataQueryGatheringProgress
                    userInfo = ["gathered": gathered]
                case .didFinishGathering: name = .metadataQueryDidFinishGathering
                case .didUpdate: name = .metadataQueryDidUpdate
                }
                NotificationCenter.default.post(name: name, object: self, userInfo: userInfo)
                for continuation in continuations { continuation.yield(event) }
            }
            for update in updates {
                NotificationCenter.default.post(
                    name: .metadataQueryDidUpdate, object: self,
                    userInfo: [
                        Self.addedItemsKey: update.added, Self.changedItemsKey: update.changed,
                        Self.removedItemsKey: update.removed,
                    ])
                for continuation in continuations { continuation.yield(.didUpdate(update)) }
            }
            if finishing != nil {
                // Changes made while the results were computed follow at once.
                self.scheduleDelivery(now: true)
            }
        }
        let queue = stateLock.withLock { configuration.operationQueue }
        if synchronously {
            if let queue, OperationQueue.current !== queue {
                queue.addOperations([BlockOperation(block: work)], waitUntilFinished: true)
            } else {
                work()
            }
        } else if let queue {
            queue.addOperation(work)
        } else {
            deliveryQueue.async(execute: work)
        }
    }

    /// Applies the pending changes to the visible results and returns them
    /// as updates of at most `maximumChangesPerUpdate` items. Caller holds
    /// `stateLock`.
    private func takePendingUpdates() -> [Update] {
        var updates: [Update] = []
        var current = Update(added: [], changed: [], removed: [])
        var count = 0
        var removedSerials = Set<UInt64>()
        var changedItems: [UInt64: MetadataItem] = [:]
        var addedItems: [MetadataItem] = []
        for serial in pendingOrder {
            guard let change = pending[serial] else { continue }
            switch change {
            case .added(let item):
                current.added.append(item)
                addedItems.append(item)
            case .changed(let item):
                current.changed.append(item)
                changedItems[serial] = item
            case .removed(let item):
                current.removed.append(item)
                removedSerials.insert(serial)
            }
            count += 1
            if count == Self.maximumChangesPerUpdate {
                updates.append(current)
                current = Update(added: [], changed: [], removed: [])
                count = 0
            }
        }
        if count > 0 { updates.append(current) }
        pending = [:]
        pendingOrder = []
        let descriptors = configuration.sortDescriptors
        if descriptors.isEmpty {
            if !removedSerials.isEmpty { visible.removeAll { removedSerials.contains($0.serial) } }
            if !changedItems.isEmpty {
                for i in visible.indices { if let item = changedItems[visible[i].serial] { visible[i] = item } }
            }
            visible += addedItems
        } else {
            // Sorted: take out what went or changed, then put the changed
            // and added items in at their places (binary search), so an
            // update costs O(n + k log n), not a sort of everything.
            if !removedSerials.isEmpty || !changedItems.isEmpty {
                visible.removeAll { removedSerials.contains($0.serial) || changedItems[$0.serial] != nil }
            }
            let incoming = (Array(changedItems.values) + addedItems).sorted(by: descriptors)
            if !incoming.isEmpty { visible = Self.merge(incoming, into: visible, descriptors) }
        }
        positions = nil
        resultsVersion += 1
        return updates
    }

    /// `incoming` (sorted) merged into `sorted`, each new item after the
    /// equal ones already there.
    private static func merge(
        _ incoming: [MetadataItem], into sorted: [MetadataItem], _ descriptors: [MetadataSortDescriptor]
    ) -> [MetadataItem] {
        func precedes(_ a: MetadataItem, _ b: MetadataItem) -> Bool {
            for descriptor in descriptors {
                switch descriptor.compare(a, b) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return false
        }
        var result: [MetadataItem] = []
        result.reserveCapacity(sorted.count + incoming.count)
        var start = 0
        for item in incoming {
            // The first position in sorted[start...] whose element the item precedes.
            var low = start
            var high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if precedes(item, sorted[middle]) { high = middle } else { low = middle + 1 }
            }
            result += sorted[start..<low]
            result.append(item)
            start = low
        }
        result += sorted[start...]
        return result
    }

    /// Sorts the visible results (stable) and rebuilds the position table.
    /// Caller holds `stateLock`.
    private func applySort() {
        let descriptors = configuration.sortDescriptors
        if !descriptors.isEmpty { visible = visible.sorted(by: descriptors) }
        positions = nil
        resultsVersion += 1
    }
}
