package import MDQCore
package import MDQLive
package import MDQSystem
import SystemPackage

extension LiveEngine {
    /// Subscribes to the entries of `scopes` that match `predicate`: crawls
    /// and watches what is not live yet (blocking the calling thread), then,
    /// in one critical section, computes the matching entries, queues them as
    /// the first message and starts recording changes for the subscription,
    /// so no change falls between the two.
    ///
    /// - Parameters:
    ///   - scopes: the folders and their rules; overlapping scopes are fine
    ///     (each entry is reported once).
    ///   - capacity: entries the mailbox holds before the subscriber is told
    ///     to resynchronise.
    ///   - progress: the running count of entries gathered (from crawler
    ///     threads, at most every 100 ms).
    ///   - wake: called (never under the engine's lock) when the mailbox
    ///     receives a message after being empty.
    ///   - fetching: the imported attributes whose values the snapshots carry.
    ///   - viewer: the user the system index serves: only entries that user
    ///     may see are reported, and a permission change reports what it
    ///     shows or hides as additions and removals.
    ///   - since: the clock of what the subscriber already has (from an
    ///     earlier subscription, even of an engine this one was restored
    ///     from): when the journal reaches back to it, the first message is
    ///     `.resumed` with only what changed after it; otherwise a snapshot.
    /// - Returns: the subscription, and the scopes that could not be made
    ///   live (missing or unreadable folders), as errors naming them.
    package func subscribe(
        scopes: [ScopeRequest], predicate: MetadataPredicate, container: UbiquityContainer? = nil,
        budget: Double? = nil, capacity: Int = 1 << 20, progress: (@Sendable (Int) -> Void)? = nil,
        fetching: Set<MetadataAttribute> = [], viewer: Viewer? = nil, wake: @escaping @Sendable () -> Void
    ) -> (Subscription, [MetadataError]) {
        subscribe(
            scopes: scopes, predicate: predicate, container: container, budget: budget, capacity: capacity,
            progress: progress, fetching: fetching, viewer: viewer, since: nil, wake: wake)
    }

    /// As above, resumed `since` a clock when the journal reaches it.
    package func subscribe(
        scopes: [ScopeRequest], predicate: MetadataPredicate, container: UbiquityContainer? = nil,
        budget: Double? = nil, capacity: Int = 1 << 20, progress: (@Sendable (Int) -> Void)? = nil,
        fetching: Set<MetadataAttribute> = [], viewer: Viewer? = nil, since: EngineClock?,
        wake: @escaping @Sendable () -> Void
    ) -> (Subscription, [MetadataError]) {
        let viewer = viewer.flatMap { $0.isRoot ? nil : $0 }
        var anchors: [Anchor] = []
        var errors: [MetadataError] = []
        let counter = progress.map(ProgressCounter.init)
        for scope in scopes {
            do {
                anchors.append(try acquire(scope, progress: counter))
            } catch {
                errors.append(error)
            }
        }
        let limit = watcher.kernelWatchLimit ?? .max
        let compiled = CompiledPredicate(predicate)
        let ubiquity =
            compiled.requirements.contains(.ubiquity) ? container.map { UbiquityContext(container: $0) } : nil
        // A user of the system index is gathered in slices whatever the
        // predicate: no one user's scan holds the index for long.
        if compiled.usesRegex || viewer != nil {
            let subscription = subscribeInSlices(
                anchors: anchors, compiled: compiled, ubiquity: ubiquity, budget: budget, capacity: capacity,
                fetching: fetching, viewer: viewer, since: since, wake: wake, watchLimit: limit)
            return (subscription, errors)
        }
        var others: [Subscription] = []
        let subscription = state.withLock { s -> Subscription in
            // Changes applied but not yet dispatched are in the index and
            // not in the journal: dispatched first, so a resumption misses
            // none of them.
            if since != nil { others = s.dispatch(watchLimit: limit) }
            let record = s.register(
                anchors: anchors, compiled: compiled, ubiquity: ubiquity, budget: budget, capacity: capacity,
                fetching: fetching, viewer: viewer, wake: wake)
            let mailbox = record.mailbox
            if let since, let from = s.clock.resolve(since) {
                s.matchEntries(for: record)
                let first =
                    record.failure == nil ? s.resumption(of: record, after: from) : .snapshot([], isFresh: false)
                _ = mailbox.post(first, tick: s.clock.tick)
            } else {
                _ = mailbox.post(.snapshot(s.matchingSnapshots(for: record), isFresh: false), tick: s.clock.tick)
            }
            record.problems = s.problems(for: record, watchLimit: limit)
            if let failure = record.failure { record.problems.insert(failure, at: 0) }
            if !record.problems.isEmpty { _ = mailbox.post(.problems(record.problems), tick: s.clock.tick) }
            return mailbox
        }
        for other in others { other.notify() }
        subscription.notify()
        return (subscription, errors)
    }

    /// A subscription whose first scan is slow (a `MATCHES` predicate), or
    /// a user's of the system index, takes it in slices, holding the engine's lock for one slice at a time, as
    /// one-shot answers do (`answer`): the record is registered first, with
    /// a scan cursor; changes applied meanwhile to ids below the cursor
    /// update the snapshot being built, those at or past it are left to the
    /// scan, which meets them as they are then (`EngineState.dispatch`). So
    /// the first snapshot is exactly the index as it is when the last slice
    /// ends, and every later change follows it, as with a single scan.
    private func subscribeInSlices(
        anchors: [Anchor], compiled: CompiledPredicate, ubiquity: UbiquityContext?, budget: Double?, capacity: Int,
        fetching: Set<MetadataAttribute>, viewer: Viewer?, since: EngineClock?, wake: @escaping @Sendable () -> Void,
        watchLimit: Int
    ) -> Subscription {
        let record = state.withLock { s -> SubscriptionRecord in
            let record = s.register(
                anchors: anchors, compiled: compiled, ubiquity: ubiquity, budget: budget, capacity: capacity,
                fetching: fetching, viewer: viewer, wake: wake)
            record.scanCursor = 0
            s.reresolveAnchors(of: record)
            return record
        }
        gatherInSlices(record, isFresh: false, since: since, watchLimit: watchLimit)
        return record.mailbox
    }

    /// Scans a registered record's matches a slice at a time (its
    /// `scanCursor` set to 0), then posts them as its snapshot (or, resumed
    /// `since` a clock the journal reaches, what changed after it).
    private func gatherInSlices(
        _ record: SubscriptionRecord, isFresh: Bool, since: EngineClock? = nil, watchLimit: Int
    ) {
        let mailbox = record.mailbox
        let viewer = record.viewer
        let compiled = record.predicate
        let limit = QueryLimit(seconds: record.budget)
        let whole = 16 * ChunkScanner.chunkSize
        var sliceLength = compiled.isExpensive ? SliceTurns.firstExpensiveLength : 64
        // No full-text candidates here: imports landing between slices
        // would be missed by a set looked up before them.
        var conflicts = ConflictCache()
        // Other subscriptions told of changes dispatched here.
        var woken: [Subscription] = []
        while true {
            // How long this slice held the lock (`SliceTurns.nextLength`).
            var held = Duration.zero
            let done = sliceTurns.withTurn(for: viewer?.user ?? 0) {
                state.withLock { s -> Bool in
                    let started = ContinuousClock.now
                    defer { held = ContinuousClock.now - started }
                    guard s.subscriptions[mailbox.id] === record, let cursor = record.scanCursor else { return true }
                    let end = min(s.index.slotCount, cursor + sliceLength)
                    var scan = IndexScan(index: s.index, predicate: compiled)
                    scan.ubiquity = record.ubiquity
                    scan.content = s.content
                    scan.limit = limit
                    scan.slots = cursor..<end
                    // What the user may not see is left out before any test.
                    scan.visibility = viewer.map { Visibility(viewer: $0, starts: record.anchors.map(\.entry)) }
                    let matching = scan.matchingEntries()
                    if let error = limit.error {
                        // Past its budget: ended with no results and the error.
                        record.failure = .tooExpensive(error.message)
                        record.scanCursor = nil
                        record.pending = [:]
                        record.members = EntrySet()
                        _ = mailbox.post(.snapshot([], isFresh: isFresh), tick: s.clock.tick)
                        record.problems = [record.failure!] + s.problems(for: record, watchLimit: watchLimit)
                        _ = mailbox.post(.problems(record.problems), tick: s.clock.tick)
                        return true
                    }
                    var walk = ScopeWalk()
                    for id in matching where s.isInScope(id, anchors: record.anchors, walk: &walk) {
                        record.members.insert(id)
                        record.pending[id] = s.snapshot(
                            id, conflicts: &conflicts, fetching: record.fetching, reader: record.viewer)
                    }
                    guard end >= s.index.slotCount else {
                        record.scanCursor = end
                        return false
                    }
                    if since != nil {
                        // As above: what is applied and not dispatched
                        // goes to the journal first (and to this record's
                        // members, all of them scanned now).
                        record.scanCursor = end
                        woken += s.dispatch(watchLimit: watchLimit)
                    }
                    record.scanCursor = nil
                    if let since, let from = s.clock.resolve(since, viewer: viewer != nil) {
                        record.pending = [:]
                        _ = mailbox.post(s.resumption(of: record, after: from), tick: s.clock.tick)
                    } else {
                        let first = record.pending.keys.sorted().map { record.pending[$0]! }
                        record.pending = [:]
                        _ = mailbox.post(.snapshot(first, isFresh: isFresh), tick: s.clock.tick)
                    }
                    record.problems = s.problems(for: record, watchLimit: watchLimit)
                    if !record.problems.isEmpty { _ = mailbox.post(.problems(record.problems), tick: s.clock.tick) }
                    return true
                }
            }
            if done { break }
            // A test's slowed slice counts as a slow slice.
            let hooked = ContinuousClock.now
            sliceHook.withLock { $0 }?()
            held += ContinuousClock.now - hooked
            sliceLength = SliceTurns.nextLength(
                after: held, length: sliceLength, whole: whole, expensive: compiled.isExpensive)
        }
        for other in woken where other !== mailbox { other.notify() }
        mailbox.notify()
    }

    /// Ends a subscription: nothing more is queued; scopes nobody else uses
    /// are dropped with their watches.
    package func unsubscribe(_ subscription: Subscription) {
        subscription.close()
        let anchors = state.withLock { s in s.subscriptions.removeValue(forKey: subscription.id)?.anchors ?? [] }
        for anchor in anchors { release(anchor) }
    }

    /// Queues a fresh snapshot of every matching entry for a subscriber that
    /// was told to resynchronise (its mailbox overflowed); it replaces all
    /// the subscriber knew.
    package func resynchronize(_ subscription: Subscription) {
        let sliced = state.withLock { s -> SubscriptionRecord? in
            // A user's: gathered again in slices, as at first.
            guard let record = s.subscriptions[subscription.id], record.failure == nil, record.viewer != nil else {
                return nil
            }
            record.scanCursor = 0
            record.pending = [:]
            record.members = EntrySet()
            return record
        }
        if let sliced {
            gatherInSlices(sliced, isFresh: true, watchLimit: watcher.kernelWatchLimit ?? .max)
            return
        }
        let woken = state.withLock { s -> Bool in
            guard let record = s.subscriptions[subscription.id], record.failure == nil else { return false }
            let woken = record.mailbox.post(
                .snapshot(s.matchingSnapshots(for: record), isFresh: true), tick: s.clock.tick)
            if let failure = record.failure {
                record.problems.insert(failure, at: 0)
                return record.mailbox.post(.problems(record.problems), tick: s.clock.tick) || woken
            }
            return woken
        }
        if woken { subscription.notify() }
    }

    /// Every problem the engine has, in all its scopes.
    package var problems: [EngineProblem] {
        let limit = watcher.kernelWatchLimit ?? .max
        return state.withLock { s in s.problems(inside: nil, watchLimit: limit) }
    }
}

extension EngineState {
    /// A new subscription's record, with its mailbox, registered with
    /// nothing gathered yet: the caller gathers it under the same lock, or
    /// in slices from a scan cursor.
    func register(
        anchors: [Anchor], compiled: CompiledPredicate, ubiquity: UbiquityContext?, budget: Double?, capacity: Int,
        fetching: Set<MetadataAttribute>, viewer: Viewer?, wake: @escaping @Sendable () -> Void
    ) -> SubscriptionRecord {
        let id = nextSubscription
        nextSubscription += 1
        let mailbox = Subscription(id: id, capacity: capacity, wake: wake)
        let record = SubscriptionRecord(mailbox: mailbox, anchors: anchors, predicate: compiled, ubiquity: ubiquity)
        record.budget = budget ?? QueryLimit.defaultSeconds
        record.fetching = fetching
        record.viewer = viewer
        subscriptions[id] = record
        return record
    }

    /// Every entry in the record's scopes that matches, as snapshots; makes
    /// them the record's members.
    ///
    /// - Complexity: one scan of the index on every core, then the scope
    ///   test for the matches only.
    func matchingSnapshots(for record: SubscriptionRecord) -> [EntrySnapshot] {
        var conflicts = ConflictCache()
        return matchEntries(for: record).map {
            snapshot($0, conflicts: &conflicts, fetching: record.fetching, reader: record.viewer)
        }
    }

    /// Every entry in the record's scopes that matches; makes them the
    /// record's members.
    @discardableResult
    func matchEntries(for record: SubscriptionRecord) -> [UInt32] {
        reresolveAnchors(of: record)
        record.members = EntrySet()
        var result: [UInt32] = []
        var scan = IndexScan(index: index, predicate: record.predicate)
        scan.ubiquity = record.ubiquity
        scan.content = content
        scan.acceleration = content?.acceleration(for: record.predicate)
        let limit = QueryLimit(seconds: record.budget)
        scan.limit = limit
        // What the user may not see is left out before any test.
        scan.visibility = record.viewer.map { Visibility(viewer: $0, starts: record.anchors.map(\.entry)) }
        let matching = scan.matchingEntries()
        if let error = limit.error {
            // Past its budget: the subscription ends gathering with no
            // results and the error, and takes no more changes.
            record.failure = .tooExpensive(error.message)
            return []
        }
        var walk = ScopeWalk()
        for id in matching where isInScope(id, anchors: record.anchors, walk: &walk) {
            record.members.insert(id)
            result.append(id)
        }
        return result
    }

    /// What a subscriber that had the record's results at `tick` is missing
    /// (the record's members being the results now): each entry journalled
    /// since, as added (made since) or changed when it is a member, else as
    /// removed (it may have been one then).
    ///
    /// - Complexity: O(k) for k journal records after `tick`, plus a
    ///   snapshot of each member among them.
    func resumption(of record: SubscriptionRecord, after tick: UInt64) -> SubscriptionMessage {
        let (identities, created) = clock.changes(after: tick)
        var conflicts = ConflictCache()
        var added: [EntrySnapshot] = []
        var changed: [EntrySnapshot] = []
        var removed: [UInt64] = []
        for identity in identities {
            guard let entry = index.entry(identity: identity), record.members.contains(entry.rawValue)
            else {
                removed.append(identity)
                continue
            }
            let item = snapshot(entry.rawValue, conflicts: &conflicts, fetching: record.fetching, reader: record.viewer)
            if created.contains(identity) { added.append(item) } else { changed.append(item) }
        }
        var count = 0
        record.members.forEach { _ in count += 1 }
        return .resumed(added: added, changed: changed, removed: removed, count: count)
    }

    /// Advances the clock for a dispatched batch and journals every entry
    /// it touched, by identity (a removed entry's slot is still
    /// quarantined, so its identity is the one subscribers were told).
    ///
    /// Folders whose permissions changed are journalled as changed too:
    /// the shared index's publisher republishes who may list them.
    func journal(_ batch: IndexChanges, accessChanged: [UInt32]) {
        guard !batch.isEmpty || !accessChanged.isEmpty else { return }
        clock.advance()
        if !accessChanged.isEmpty { clock.noteAccessChange() }
        for id in batch.removed { clock.record(index.identity(of: id), .removed) }
        for id in batch.added where !batch.removed.contains(id) { clock.record(index.identity(of: id), .added) }
        for id in batch.changed where !batch.removed.contains(id) && !batch.added.contains(id) {
            clock.record(index.identity(of: id), .changed)
        }
        for id in accessChanged
        where index.contains(EntryID(id)) && !batch.removed.contains(id) && !batch.added.contains(id)
            && !batch.changed.contains(id)
        {
            clock.record(index.identity(of: id), .changed)
        }
    }

    /// Tells every subscription what the recorded changes did to its
    /// matches, and its problems when they changed; lets removed ids be
    /// reused. Returns the subscriptions to wake once the lock is released.
    func dispatch(watchLimit: Int) -> [Subscription] {
        let problemsDirty = problemsChanged
        problemsChanged = false
        // A folder's permissions changed: what is below it may be shown to,
        // or hidden from, the users subscriptions serve.
        let accessChanged = index.takeAccessChanges()
        guard !changes.isEmpty || !changes.attributes.isEmpty || problemsDirty || !accessChanged.isEmpty else {
            return []
        }
        let batch = changes
        changes = IndexChanges()
        if !batch.isEmpty { changeCount += 1 }
        journal(batch, accessChanged: accessChanged)
        if let content {
            let removedFiles = index.removedFiles
            index.removedFiles = []
            content.noteChanges(batch, removedFiles: removedFiles, index: index)
        }
        var touched: [UInt32] = []
        touched.reserveCapacity(batch.added.count + batch.changed.count)
        for id in batch.added where !batch.removed.contains(id) { touched.append(id) }
        for id in batch.changed where !batch.removed.contains(id) && !batch.added.contains(id) { touched.append(id) }
        // For subscriptions served to a user: the entries below folders
        // whose permissions changed are judged again too.
        var touchedForViewers = touched
        if !accessChanged.isEmpty && subscriptions.values.contains(where: { $0.viewer != nil }) {
            var seen = Set(touched)
            let changedFolders = Set(
                accessChanged.filter { index.contains(EntryID($0)) && !batch.removed.contains($0) })
            for folder in outermost(changedFolders) {
                if seen.insert(folder).inserted { touchedForViewers.append(folder) }
                index.forEachDescendant(of: EntryID(folder)) { id in
                    if seen.insert(id.rawValue).inserted { touchedForViewers.append(id.rawValue) }
                }
            }
        }
        // Judged again for a permission alone: told only when shown or
        // hidden (a chmod of a big tree is no flood of changes).
        let accessOnly = Set(touchedForViewers.dropFirst(touched.count))
        let batchCarries = !batch.isEmpty || !accessChanged.isEmpty
        var woken: [Subscription] = []
        for record in subscriptions.values where record.failure == nil {
            // A scope its user opened moved or went in this batch.
            var lostScope = false
            var wake = false
            // Each changed entry is judged under the subscription's budget
            // (a MATCHES pattern stops at its per-name cap), so a runaway
            // pattern ends its subscription with the error instead of
            // stalling the applier that holds the engine's lock.
            let limit = record.predicate.usesRegex ? QueryLimit(seconds: record.budget) : nil
            if let limit { QueryLimit.setCurrent(limit) }
            defer { if limit != nil { QueryLimit.setCurrent(nil) } }
            if let cursor = record.scanCursor {
                // Its first scan is under way: what changed below the
                // cursor updates the snapshot being built; the rest the scan
                // will meet.
                if batchCarries {
                    updatePending(
                        record, batch: batch, touched: record.viewer == nil ? touched : touchedForViewers, below: cursor
                    )
                }
                if let error = limit?.error {
                    // Ended as its scan would end it: no results, the error.
                    record.failure = .tooExpensive(error.message)
                    record.scanCursor = nil
                    record.pending = [:]
                    record.members = EntrySet()
                    _ = record.mailbox.post(.snapshot([], isFresh: false), tick: clock.tick)
                    record.problems.insert(record.failure!, at: 0)
                    if record.mailbox.post(.problems(record.problems), tick: clock.tick) {
                        woken.append(record.mailbox)
                    }
                }
                continue
            }
            if !batch.isEmpty || (record.viewer != nil && !accessChanged.isEmpty) {
                var judged = record.viewer == nil ? touched : touchedForViewers
                if reresolveAnchors(of: record) {
                    lostScope = true
                    // A scope its user opened moved or went: what it showed
                    // is judged again (and so removed).
                    var seen = Set(judged)
                    record.members.forEach { if seen.insert($0).inserted { judged.append($0) } }
                }
                var added: [EntrySnapshot] = []
                var changed: [EntrySnapshot] = []
                var removed: [UInt64] = []
                var conflicts = ConflictCache()
                let context = record.makeContext(content: content)
                var visibility = record.viewer.map { Visibility(viewer: $0, starts: record.anchors.map(\.entry)) }
                for id in batch.removed where record.members.contains(id) {
                    record.members.remove(id)
                    removed.append(index.identity(of: id))
                }
                for id in judged {
                    let matches =
                        isInScope(id, anchors: record.anchors)
                        && visibility?.allows(id, in: index) != false
                        && record.evaluator.matches(IndexSubject(index: index, id: id, context: context))
                    switch (record.members.contains(id), matches) {
                    case (false, true):
                        record.members.insert(id)
                        added.append(
                            snapshot(id, conflicts: &conflicts, fetching: record.fetching, reader: record.viewer))
                    case (true, true):
                        if accessOnly.contains(id) { break }
                        changed.append(
                            snapshot(id, conflicts: &conflicts, fetching: record.fetching, reader: record.viewer))
                    case (true, false):
                        record.members.remove(id)
                        removed.append(index.identity(of: id))
                    case (false, false):
                        break
                    }
                }
                if let error = limit?.error {
                    record.failure = .tooExpensive(error.message)
                    record.problems.insert(record.failure!, at: 0)
                    if record.mailbox.post(.problems(record.problems), tick: clock.tick) {
                        woken.append(record.mailbox)
                    }
                    continue
                }
                if !added.isEmpty || !changed.isEmpty || !removed.isEmpty {
                    wake =
                        record.mailbox.post(
                            .changes(added: added, changed: changed, removed: removed), tick: clock.tick) || wake
                }
            }
            if problemsDirty || lostScope {
                let problems = problems(for: record, watchLimit: watchLimit)
                if problems != record.problems {
                    record.problems = problems
                    wake = record.mailbox.post(.problems(problems), tick: clock.tick) || wake
                }
            }
            if wake { woken.append(record.mailbox) }
        }
        releaseRemovedIDs()
        return woken
    }

    /// Applies a batch of changes to the first snapshot a sliced scan is
    /// building, for the ids it has scanned already.
    private func updatePending(_ record: SubscriptionRecord, batch: IndexChanges, touched: [UInt32], below cursor: Int)
    {
        reresolveAnchors(of: record)
        var conflicts = ConflictCache()
        let context = record.makeContext(content: content)
        var visibility = record.viewer.map { Visibility(viewer: $0, starts: record.anchors.map(\.entry)) }
        for id in batch.removed where Int(id) < cursor && record.members.contains(id) {
            record.members.remove(id)
            record.pending[id] = nil
        }
        for id in touched where Int(id) < cursor {
            let matches =
                isInScope(id, anchors: record.anchors)
                && visibility?.allows(id, in: index) != false
                && record.evaluator.matches(IndexSubject(index: index, id: id, context: context))
            if matches {
                record.members.insert(id)
                record.pending[id] = snapshot(
                    id, conflicts: &conflicts, fetching: record.fetching, reader: record.viewer)
            } else if record.members.contains(id) {
                record.members.remove(id)
                record.pending[id] = nil
            }
        }
    }

    /// What a subscriber needs to know of an entry: with the values of the
    /// imported attributes in `fetching`, read from the content indexer's
    /// store (none when it has no import of the file, or when `reader`, the
    /// user it is for, may not read the file).
    func snapshot(
        _ id: UInt32, conflicts: inout ConflictCache, fetching: Set<MetadataAttribute>, reader: Viewer?
    ) -> EntrySnapshot {
        var snapshot = EntrySnapshot(
            entry: index.identity(of: id), pathBytes: pathBytes(of: id), kind: index.kind(of: EntryID(id)),
            metadata: index.metadata(of: EntryID(id)), hasUnresolvedConflicts: conflicts.hasCopies(id, in: index),
            conflictOriginalPathBytes: index.conflictOriginal(of: id).map { pathBytes(of: $0) })
        if !fetching.isEmpty, let content, let key = index.fileKey(of: EntryID(id)),
            reader?.mayRead(id, in: index) ?? true,
            let values = content.values(for: key, text: fetching.contains(.textContent))
        {
            snapshot.imported = values.restricted(to: fetching)
        }
        return snapshot
    }

    /// Whether `id` lies inside one of `anchors` under that scope's rules. A
    /// scope's own folder is not one of its results.
    ///
    /// - Complexity: O(depth × anchors).
    func isInScope(_ id: UInt32, anchors: [Anchor]) -> Bool {
        var walk = ScopeWalk()
        return isInScope(id, anchors: anchors, walk: &walk)
    }

    /// `isInScope(_:anchors:)` for many entries at one moment: whether each
    /// folder opens onto its scope is remembered in `walk`, so a match
    /// costs a test of its own name and a lookup, not a walk to the scope
    /// (a glob's 100,000 matches share a few thousand folders). `walk`
    /// stands for the index as it is while one lock is held.
    func isInScope(_ id: UInt32, anchors: [Anchor], walk: inout ScopeWalk) -> Bool {
        guard index.contains(EntryID(id)), !index.isRoot(EntryID(id)),
            let parent = index.parent(of: EntryID(id))
        else { return false }
        for (k, anchor) in anchors.enumerated() where anchor.entry.rawValue != id {
            let admitted = index.withName(of: EntryID(id)) { name in
                anchor.rules.admits(name, isRootChild: parent == anchor.entry)
            }
            guard admitted else { continue }
            if parent == anchor.entry || opens(parent.rawValue, onto: anchor, k, walk: &walk) { return true }
        }
        return false
    }

    /// Whether everything from `folder` up to the anchor's folder (not
    /// included) is admitted and descended into by the anchor's rules: its
    /// contents are then in scope, their own names permitting.
    private func opens(_ folder: UInt32, onto anchor: Anchor, _ k: Int, walk: inout ScopeWalk) -> Bool {
        // The folders up to one already judged, or to the anchor, or to a
        // root (the anchor is not above): judged from the top down.
        var chain: [UInt32] = []
        var current = folder
        var known: Bool?
        while true {
            if let found = walk.opens[ScopeWalk.key(current, k)] {
                known = found
                break
            }
            chain.append(current)
            guard let parent = index.parent(of: EntryID(current)) else {
                known = false
                chain.removeLast()
                walk.opens[ScopeWalk.key(current, k)] = false
                break
            }
            if parent == anchor.entry { break }
            current = parent.rawValue
        }
        var result = known ?? true
        for id in chain.reversed() {
            if result {
                let isRootChild = index.parent(of: EntryID(id)) == anchor.entry
                result = index.withName(of: EntryID(id)) { name in
                    anchor.rules.admits(name, isRootChild: isRootChild) && anchor.rules.descends(into: name)
                }
            }
            walk.opens[ScopeWalk.key(id, k)] = result
        }
        return result
    }

    /// Points anchors whose folder was deleted and made again (a new entry)
    /// at the folder's entry now.
    ///
    /// Not for a user of the system index who opened the scope's folder
    /// (`Viewer.reachedScopes`): that folder is what they may search, and
    /// another one at its path is not; once it moves or goes, the scope is
    /// answered by nothing (its entry none, so a later entry given its id
    /// is never taken for it).
    ///
    /// - Returns: whether such a scope was lost just now.
    @discardableResult
    func reresolveAnchors(of record: SubscriptionRecord) -> Bool {
        var lost = false
        for (i, anchor) in record.anchors.enumerated()
        where !index.contains(anchor.entry) || index.path(of: anchor.entry) != anchor.path {
            if record.viewer?.reachedScopes == true {
                if anchor.entry.rawValue != FileIndex.none {
                    record.anchors[i].entry = EntryID(FileIndex.none)
                    lost = true
                }
                continue
            }
            if let root = roots.first(where: { !$0.value.missing && lists(anchor.path, in: $0.key) })?.key,
                let entry = entry(at: anchor.path, from: root)
            {
                record.anchors[i].entry = entry
            }
        }
        return lost
    }

    /// The problems inside a record's scopes.
    ///
    /// A user of the system index is told only of folders they may see
    /// (`Visibility`), and nothing of watches; a scope folder they opened
    /// that moved or went is gone for them (`reresolveAnchors`), said so:
    /// their client opens the folder at its path again once it is back.
    func problems(for record: SubscriptionRecord, watchLimit: Int) -> [EngineProblem] {
        guard let viewer = record.viewer else {
            return problems(inside: record.anchors.map(\.path), watchLimit: watchLimit)
        }
        var visibility = Visibility(viewer: viewer, starts: record.anchors.map(\.entry))
        let lost = record.anchors.filter { $0.entry.rawValue == FileIndex.none }.map {
            EngineProblem.missingScope($0.path)
        }
        return
            (problems(inside: record.anchors.map(\.path), watchLimit: watchLimit) { folder in
                visibility.allows(folder, in: index)
            } + lost).filter {
                if case .watchLimit = $0 { return false }
                return true
            }.sorted { $0.path.bytes.lexicographicallyPrecedes($1.path.bytes) }
    }

    /// The problems of folders inside `scopes` (all when nil), ordered by
    /// path: folders that cannot be read or watched, the watch limit
    /// (summed up once), scope roots that are gone.
    func problems(
        inside scopes: [FilePath]?, watchLimit: Int, shown: (UInt32) -> Bool = { _ in true }
    ) -> [EngineProblem] {
        func inside(_ path: FilePath) -> Bool { scopes?.contains { path.starts(with: $0) } ?? true }
        var result: [EngineProblem] = []
        var unwatched = 0
        var example: [UInt8]?
        for (folder, problem) in folderProblems where index.contains(EntryID(folder)) && shown(folder) {
            let bytes = pathBytes(of: folder)
            let path = FilePath.fromBytes(bytes)
            guard inside(path) else { continue }
            switch problem {
            case .unreadable(let error): result.append(.unreadableFolder(path, error))
            case .unwatchable(.noSpace):
                unwatched += 1
                if example.map({ bytes.lexicographicallyPrecedes($0) }) ?? true { example = bytes }
            case .unwatchable(let error): result.append(.unwatchableFolder(path, error))
            }
        }
        for root in roots.values where root.missing && inside(root.path) {
            result.append(.missingScope(root.path))
        }
        result.sort { $0.path.bytes.lexicographicallyPrecedes($1.path.bytes) }
        if let example {
            result.insert(
                .watchLimit(unwatched: unwatched, example: FilePath.fromBytes(example), limit: watchLimit), at: 0)
        }
        return result
    }
}
