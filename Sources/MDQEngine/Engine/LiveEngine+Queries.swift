package import MDQCore
package import MDQLive
package import MDQSystem
package import SystemPackage

/// What a one-shot query over the live index returns.
package enum OneShotOutput: Sendable {
    /// The number of matches only.
    case count
    /// The matching paths, each followed by a NUL byte.
    case paths
    /// Every matching entry with its attributes.
    case entries
}

/// A one-shot query's answer from the live index.
package struct OneShotAnswer: Sendable {
    package var count = 0
    /// For `.paths`: NUL-terminated paths, in index order.
    package var paths: [UInt8] = []
    /// For `.entries`.
    package var entries: [EntrySnapshot] = []
    /// Some scope was restored from a snapshot and is not yet checked
    /// against the disk: the answer may be out of date.
    package var stale = false
    /// Files whose import was still to come when the answer was made (a
    /// predicate on imported attributes): it may miss some of them.
    package var importing = 0
}

extension LiveEngine {
    /// Answers a query from the live index, without crawling or watching
    /// anything new.
    ///
    /// The scan runs in slices of slot ids, taking the engine's lock for one
    /// slice at a time, so a slow query never holds the index (and every
    /// other client, and the watcher's updates) for longer than a slice:
    /// cheap queries cover the whole index in one slice of 16 chunks (as
    /// fast as one scan), an expensive one (`MATCHES`, imported attributes,
    /// many terms: `CompiledPredicate.isExpensive`) starts at a few slots and
    /// keeps its slices near 0.5 to 2 ms (`SliceTurns.nextLength`). Between
    /// slices the budget and the client are checked, and
    /// slices of concurrent queries take turns (`SliceTurns`).
    ///
    /// Consistency: each entry is judged as it is when its slice is scanned,
    /// the rule a crawl follows; an entry created behind the cursor while
    /// the scan runs is left out, one deleted ahead of it is not reported.
    ///
    /// - Returns: the answer, or the first scope the live roots do not
    ///   cover (not indexed, gone, or indexed under stricter rules: fewer
    ///   hidden items, more exclusions); the caller crawls that instead.
    /// - Throws: `MetadataError.tooExpensive` once the query is past its
    ///   budget (`budget`: the default `QueryLimit` when nil), or cancelled.
    /// - Complexity: one scan of the index on every core; a scope filter per
    ///   match (skipped when the scopes are exactly the live roots); a path
    ///   per match for `.paths` and `.entries`; a store read per entry for
    ///   the imported attributes in `fetching` (`.entries`).
    ///
    /// Streaming: with `stream`, `.paths` answers are handed over a slice
    /// at a time (`streamSliceSlots`, two chunks), outside the lock, so the
    /// caller sends one slice's paths while the next is scanned; the paths
    /// and count of each part go to `stream` (false stops the query, as a
    /// client gone does) and the returned answer holds only the total count.
    ///
    /// With `entries`, `.entries` answers are handed over a slice at a time
    /// the same way (false stops the query): what waits in memory is one
    /// slice's, however many entries match.
    ///
    /// With `viewer` (the system index answering a user), only entries that
    /// user may see are answered, counted or streamed (`Viewer`).
    ///
    /// With `admits`, an `.entries` match it refuses (by its kind,
    /// metadata and name, and its path only when it asks for it) is
    /// counted but not answered: the caller keeping the first few in an
    /// order by a name, a size or a date (`FirstInOrder`) pays a snapshot
    /// for those alone, not for every match.
    package func answer(
        scopes: [ScopeRequest], predicate: MetadataPredicate, output: OneShotOutput, limit: Int? = nil,
        budget: QueryLimit? = nil, fetching: Set<MetadataAttribute> = [], viewer: Viewer? = nil,
        admits: (
            (_ kind: EntryKind, _ metadata: EntryMetadata, _ name: UnsafeRawBufferPointer, _ path: () -> [UInt8])
                -> Bool
        )? = nil,
        progress: ((_ scanned: Int, _ of: Int) -> Void)? = nil,
        stream: ((_ paths: [UInt8], _ count: Int) -> Bool)? = nil,
        entries entryStream: ((_ entries: [EntrySnapshot]) -> Bool)? = nil
    ) throws(MetadataError) -> Result<OneShotAnswer, ScopeNotCovered> {
        let budget = budget ?? QueryLimit()
        let compiled = CompiledPredicate(predicate)
        let limit = limit ?? Int.max
        var answer = OneShotAnswer()
        var conflicts = ConflictCache()
        let streaming = (stream != nil && output == .paths) || (entryStream != nil && output == .entries)
        var candidates: (key: [Int], value: ScanCandidates?)?
        let whole = streaming ? max(1, streamSliceSlots.withLock { $0 }) : 16 * ChunkScanner.chunkSize
        var streamed = 0
        // Patterns and store reads are slow per entry: start with short
        // slices.
        let expensive = compiled.isExpensive
        // Sizes, dates and what is read from inside files: not there yet in
        // a root whose first crawl read names first (`EngineRoot.filling`).
        let needsAttributes =
            output == .entries || !compiled.requirements.isDisjoint(with: SubjectRequirements.readByStat)
        // A few results wanted (`--limit 100`): a first slice of 64 slots a
        // result (at least 4,096, at most a chunk), which often holds them,
        // not the whole index, each entry judged for the user; sparser
        // matches double it slice by slice.
        var sliceLength =
            expensive
            ? SliceTurns.firstExpensiveLength
            : limit <= 1000 ? min(whole, max(4096, min(ChunkScanner.chunkSize, limit * 64))) : whole
        var cursor = 0
        var slots = 0
        // The files the full-text index says may match, looked up once.
        // (Only a predicate on the text needs it: the engine's lock, held by
        // another query's slice, is not waited for otherwise.)
        let acceleration =
            compiled.importedAttributes.contains(.textContent)
            ? state.withLock { $0.content }?.acceleration(for: compiled) : nil
        while true {
            if budget.shouldStop() {
                throw budget.error ?? .tooExpensive("the query was cancelled")
            }
            // How long this slice held the lock, which sizes the next
            // (`SliceTurns.nextLength`); waiting behind another client's
            // slice or the trigram builder is not this slice's cost.
            var held = Duration.zero
            let step = sliceTurns.withTurn(for: viewer?.user ?? 0) {
                state.withLock { s -> Result<Bool, ScopeNotCovered> in
                    let started = ContinuousClock.now
                    defer { held = ContinuousClock.now - started }
                    var anchors: [Anchor] = []
                    for scope in scopes {
                        guard let anchor = s.coveringAnchor(for: scope, needsAttributes: needsAttributes) else {
                            return .failure(
                                ScopeNotCovered(
                                    scope: scope, gap: s.coverageGap(for: scope, needsAttributes: needsAttributes)))
                        }
                        anchors.append(anchor)
                    }
                    if cursor == 0 {
                        if compiled.requirements.contains(.imported) { answer.importing = s.content?.pendingCount ?? 0 }
                        answer.stale = anchors.contains {
                            s.unverifiedRoots.contains(s.index.root(of: $0.entry).rawValue)
                        }
                    }
                    // Nothing can match: the scopes checked, nothing to scan
                    // (a client asks so whether the index holds them).
                    if case .constant(false) = predicate.node { return .success(true) }
                    // The scopes are the index's roots themselves, admitting
                    // all they hold: every match but a root is in scope. (A
                    // root still gathered holds entries too: a scope that
                    // leaves it out filters.)
                    let wholeRoots =
                        Set(anchors.map(\.entry.rawValue)) == Set(s.index.rootPaths.keys)
                        && anchors.allSatisfy { anchor in
                            s.roots[anchor.entry.rawValue].map { anchor.rules.covers($0.rules) } ?? false
                        }
                    let end = min(s.index.slotCount, cursor + sliceLength)
                    var scan = IndexScan(index: s.index, predicate: compiled)
                    scan.content = s.content
                    scan.acceleration = acceleration
                    scan.limit = budget
                    scan.slots = cursor..<end
                    if let grams = s.index.nameGrams, grams.covered > 0 {
                        // Looked up again only when the index or the lists
                        // changed since the last slice.
                        let key = [s.index.generation, grams.covered, grams.epoch]
                        if candidates?.key != key {
                            let plan = NameGramPlan(compiled, grams: grams, slots: s.index.slotCount)
                            candidates = (
                                key, plan.map { $0.candidates(grams) }
                            )
                        }
                        scan.candidates = candidates?.value
                    }
                    var siblings = FileIndex.SiblingPaths()
                    // What the user may not see is left out before any test.
                    scan.visibility = viewer.flatMap {
                        $0.isRoot ? nil : Visibility(viewer: $0, starts: anchors.map(\.entry))
                    }
                    if output == .count && wholeRoots {
                        // The scan leaves roots out already.
                        answer.count = min(limit, answer.count + scan.matchCount())
                    } else {
                        var walk = ScopeWalk()
                        for (n, id) in scan.matchingEntries().enumerated() {
                            guard answer.count < limit else { break }
                            // Each match costs a walk per scope: the budget
                            // bounds a slice's matches too.
                            if n & 1023 == 1023 && budget.isStopped { break }
                            if wholeRoots
                                ? s.index.isRoot(EntryID(id)) : !s.isInScope(id, anchors: anchors, walk: &walk)
                            {
                                continue
                            }
                            answer.count += 1
                            switch output {
                            case .count: break
                            case .paths:
                                s.index.appendPath(of: id, to: &answer.paths, siblings: &siblings)
                                answer.paths.append(0)
                            case .entries:
                                // Counted, but not made into a snapshot (its
                                // path read) when the caller would drop it.
                                if let admits {
                                    let entry = EntryID(id)
                                    let kind = s.index.kind(of: entry)
                                    let metadata = s.index.metadata(of: entry)
                                    let admitted = s.index.withName(of: entry) { name in
                                        admits(kind, metadata, name) { s.pathBytes(of: id) }
                                    }
                                    guard admitted else { break }
                                }
                                answer.entries.append(
                                    s.snapshot(id, conflicts: &conflicts, fetching: fetching, reader: viewer))
                            }
                        }
                    }
                    cursor = end
                    slots = s.index.slotCount
                    return .success(end >= s.index.slotCount || answer.count >= limit)
                }
            }
            switch step {
            case .failure(let uncovered): return .failure(uncovered)
            case .success(let finished):
                if budget.isStopped { throw budget.error ?? .tooExpensive("the query was cancelled") }
                if let entryStream, streaming, !answer.entries.isEmpty {
                    guard entryStream(answer.entries) else { throw .tooExpensive("the query was cancelled") }
                    answer.entries.removeAll(keepingCapacity: true)
                }
                if let stream, streaming, !answer.paths.isEmpty || finished {
                    let part = answer.count - streamed
                    if part > 0 || !answer.paths.isEmpty {
                        guard stream(answer.paths, part) else { throw .tooExpensive("the query was cancelled") }
                    }
                    streamed = answer.count
                    answer.paths.removeAll(keepingCapacity: true)
                }
                if finished { return .success(answer) }
            }
            progress?(cursor, slots)
            // A test's slowed slice (outside the lock: events apply meanwhile).
            sliceHook.withLock { $0 }?()
            sliceLength = SliceTurns.nextLength(after: held, length: sliceLength, whole: whole, expensive: expensive)
        }
    }

    /// Keeps a scope live without a subscription (the daemon's indexed
    /// scopes): crawls and watches what is not live yet.
    ///
    /// - Throws: `MetadataError` naming the scope when it cannot be opened.
    ///
    /// With `namesFirst`, a scope crawled anew is answerable for names as
    /// soon as its folders are read, as `updatedb` reads them; its files'
    /// sizes and dates are read next, on a thread of their own (`fill`;
    /// `isFilling`, `waitUntilFilled`).
    package func retain(_ scope: ScopeRequest, namesFirst: Bool = false) throws(MetadataError) -> RetainedScope {
        RetainedScope(anchor: try acquire(scope, progress: nil, namesFirst: namesFirst))
    }

    /// Whether a live or restored root already holds everything `scope`
    /// asks for (keeping it live needs no crawl).
    package func holds(_ scope: ScopeRequest) -> Bool {
        state.withLock { s in
            let path = scope.path.lexicallyNormalized()
            return s.roots.contains { id, root in
                guard !root.missing && s.lists(path, in: id) else { return false }
                var needed = scope.rules
                if path != root.path {
                    needed.excludedRootChildNames = root.rules.excludedRootChildNames
                    needed = needed.withPrunes(of: root.rules)
                }
                // Prunes held exactly: what is no longer pruned is crawled,
                // what is newly pruned is dropped.
                return root.rules.covers(needed) && root.rules.prunesAlike(needed)
            }
        }
    }

    /// The device and inode of the live root at `path`, as it was crawled.
    func rootIdentity(at path: FilePath) -> (DeviceNumber, UInt64)? {
        state.withLock { s in
            s.roots.values.first { $0.path == path && !$0.missing }.map { ($0.device, $0.inode) }
        }
    }

    /// Whether the index holds, at `path`, the folder `status` was read
    /// from (a descriptor's, `fstat`'d): the same device, inode and birth.
    /// No disk is read: a path a user gives is only looked up in the index.
    package func holdsFolder(at path: FilePath, as status: FileStatus) -> Bool {
        let normalized = path.lexicallyNormalized()
        return state.withLock { s in
            guard let root = s.deepestRoot(listing: normalized), let entry = s.entry(at: normalized, from: root),
                s.index.folderDevice(of: entry) == status.device
            else { return false }
            return s.isEntry(entry.rawValue, status)
        }
    }

    /// Whether a live root already answers `scope` (a subscription to it
    /// would crawl and watch nothing new).
    package func covers(_ scope: ScopeRequest) -> Bool {
        state.withLock { $0.coveringAnchor(for: scope) != nil }
    }

    /// Gives back a retained scope.
    package func release(_ scope: RetainedScope) {
        release(scope.anchor)
    }
}

/// A scope the engine keeps live for its owner (`LiveEngine.retain`).
package struct RetainedScope: Sendable {
    let anchor: Anchor
}

/// A scope the live index does not cover.
package struct ScopeNotCovered: Error, Sendable {
    package var scope: ScopeRequest
    /// What the index leaves out that the scope asks for, when an indexed
    /// scope holds its folder (`EngineState.coverageGap(for:)`).
    package var gap: String?

    /// How a gap's sentence starts, with what it names after it (the
    /// daemon's `not-covered` message is the gap when there is one, marked
    /// `"gap":true`).
    package static let indexes = "the daemon indexes "
    package static let stillIndexing = "the daemon is still indexing "
    package static let stillFilling = "the daemon is still reading the sizes and dates in "
}

extension EngineState {
    /// An anchor for `scope` in a live root whose rules cover its own, or
    /// nil. A root whose files' attributes are still being read (`filling`)
    /// covers only what `needsAttributes` nothing but names, kinds and
    /// folders.
    func coveringAnchor(for scope: ScopeRequest, needsAttributes: Bool = false) -> Anchor? {
        let path = scope.path.lexicallyNormalized()
        for (id, root) in roots
        where !root.missing && !root.gathering && !(root.lacksAttributes && needsAttributes) && root.users > 0
            && lists(path, in: id)
        {
            var needed = scope.rules
            if path != root.path { needed.excludedRootChildNames = root.rules.excludedRootChildNames }
            // What the index prunes is not in it for any query.
            needed = needed.withPrunes(of: root.rules)
            guard root.rules.covers(needed), let entry = entry(at: path, from: id) else { continue }
            return Anchor(entry: entry, path: path, rules: scope.rules)
        }
        return nil
    }

    /// Why an indexed scope holding `scope`'s folder does not answer it
    /// (`coveringAnchor` gave none): what the scope asks for that the index
    /// leaves out, or that it is still being gathered. nil when no live
    /// scope holds the folder at all.
    func coverageGap(for scope: ScopeRequest, needsAttributes: Bool = false) -> String? {
        let path = scope.path.lexicallyNormalized()
        for (id, root) in roots where !root.missing && root.users > 0 && lists(path, in: id) {
            let shown = root.path.string
            if root.gathering { return ScopeNotCovered.stillIndexing + shown }
            if root.lacksAttributes && needsAttributes { return ScopeNotCovered.stillFilling + shown }
            var needed = scope.rules
            if path != root.path { needed.excludedRootChildNames = root.rules.excludedRootChildNames }
            needed = needed.withPrunes(of: root.rules)
            if needed.includeHidden && !root.rules.includeHidden {
                return ScopeNotCovered.indexes
                    + "\(shown) without hidden items (mdq index add --hidden \(shown) adds them)"
            }
            let excluded = root.rules.excludedFolderNames.subtracting(needed.excludedFolderNames)
                .union(root.rules.excludedRootChildNames.subtracting(needed.excludedRootChildNames))
            if let name = excluded.sorted(by: { $0.lexicographicallyPrecedes($1) }).first {
                return ScopeNotCovered.indexes
                    + "\(shown) without the folders named \(String(decoding: name, as: UTF8.self))"
            }
            if root.rules.stayOnFileSystem && !needed.stayOnFileSystem {
                return ScopeNotCovered.indexes + "\(shown) without other filesystems mounted inside it"
            }
        }
        return nil
    }
}
