import MDQCore
import MDQLive
import MDQSystem
import SystemPackage

extension LiveEngine {
    /// Makes a scope live (crawled and watched), sharing what is already
    /// watched: a scope inside a live root reuses its entries (the root's
    /// rules grow to cover the scope's, and what they newly admit is
    /// crawled); a scope that contains live roots absorbs them.
    ///
    /// A scope that overlaps a crawl still under way (another scope's first
    /// gather, or the crawl of what looser rules admit) waits for it to end
    /// before it shares or grafts that root. Sharing it earlier would hand
    /// the caller a partial index: the rest of a first gather is inserted
    /// without being recorded as changes, so a subscriber that took its
    /// snapshot mid-gather would never hear of it.
    ///
    /// - Parameter progress: receives the count of entries gathered so far.
    /// - Throws: `MetadataError` naming the scope when it cannot be opened.
    ///
    /// With `namesFirst`, a new root's crawl reads names (and folders'
    /// attributes) only; it returns as soon as they are all in, and its
    /// files' sizes and dates are read on a thread of their own (`fill`).
    func acquire(
        _ request: ScopeRequest, progress: ProgressCounter?, namesFirst: Bool = false
    ) throws(MetadataError) -> Anchor {
        let path = request.path.lexicallyNormalized()
        while true {
            switch state.withLock({ $0.claim(path, request: request, crawlsEnded: crawlsEnded) }) {
            case .wait(let ended):
                crawlsEnded.wait(until: { $0 != ended }) { _ in }
                continue
            case .shared(let anchor, loosened: let loosened):
                if let loosened {
                    // What the looser rules admit is crawled; other
                    // subscribers hear of it as additions (their own rules
                    // decide). The root counts as gathering meanwhile, so a
                    // newcomer waits for the crawl instead of missing it.
                    reconcile(root: loosened)
                    endCrawl(of: loosened)
                    publish()
                }
                return anchor
            case .absent:
                break
            }

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
            let made = state.withLock { s -> EntryID? in
                // Another scope may have started a crawl here while the
                // folder was being opened: decide again.
                guard !s.crawlOverlaps(path),
                    !s.roots.contains(where: { !$0.value.missing && s.lists(path, in: $0.key) })
                else { return nil }
                // Roots inside this one are grafted into it as the crawl meets
                // them, entries, ids and watches kept: its rules must cover
                // theirs below it, or their own subscribers would lose entries.
                var rules = request.rules
                let outer = EngineRoot(
                    path: path, rules: request.rules, device: status.device, inode: status.inode, users: 1)
                for inner in s.roots.values where inner.path != path && outer.lists(inner.path) {
                    rules = rules.union(inner.rules.belowRoot)
                }
                rules.excludedRootChildNames = request.rules.excludedRootChildNames
                let id = s.index.addRoot(path: path, metadata: EntryMetadata(status), device: status.device)
                s.roots[id.rawValue] = EngineRoot(
                    path: path, rules: rules, device: status.device, inode: status.inode, users: 1, gathering: true)
                return id
            }
            guard let id = made else { continue }
            let sink = LiveSink(engine: self, recording: false, progress: progress)
            let before = state.withLock { $0.index.count }
            crawl(handle: handle, folder: id, root: id.rawValue, sink: sink, namesOnly: namesFirst)
            let grown = state.withLock { $0.index.count - before }
            endCrawl(of: id.rawValue, filling: namesFirst)
            if namesFirst {
                let token = state.withLock { $0.roots[id.rawValue].map { ($0.path, $0.inode) } }
                // (With no thread to spare, the attributes are read right
                // here, as a crawl would have read them.)
                WorkerThreads.detach(name: "mdq-fill") { [self] in
                    fill(root: id.rawValue, path: token?.0, inode: token?.1)
                }
            } else {
                ProcessMemory.releaseFreePages(after: grown)
            }
            return Anchor(entry: id, path: path, rules: request.rules)
        }
    }

    /// Marks a root's crawl as over and wakes the scopes waiting for it;
    /// with `filling`, its names are in and its files' attributes are read
    /// next (`fill`, which ends with this too). Nothing is marked when
    /// `isCurrent` says the root is no longer the one crawled.
    func endCrawl(
        of root: UInt32, filling: Bool = false, isCurrent: (EngineState) -> Bool = { _ in true }
    ) {
        let gramsWanted = state.withLock { s in
            guard isCurrent(s) else { return false }
            s.roots[root]?.gathering = false
            s.roots[root]?.filling = filling
            crawlsEnded.mutateAndBroadcast { $0 &+= 1 }
            // Also while the fill runs (at a lower priority): name queries
            // answer from the lists from then on.
            return s.nameGramsNeedWork()
        }
        // The crawl's entries are added to the trigram lists now, in bulk,
        // not one by one while it ran.
        if gramsWanted { nameGramsWanted.mutateAndBroadcast { $0 = true } }
    }

    /// Gives a scope back; a root nobody uses any more is dropped with its
    /// watches, so idle scopes cost no watches.
    func release(_ anchor: Anchor) {
        state.withLock { s in
            guard let rootID = s.root(of: anchor), var info = s.roots[rootID] else { return }
            info.users -= 1
            if info.users > 0 {
                s.roots[rootID] = info
                return
            }
            s.endFollowers(touching: rootID)
            s.roots[rootID] = nil
            if let recovery = info.recoveryWatch {
                s.recoveryWatches[recovery] = nil
                if s.watchToFolder[recovery] == nil { removeWatch(recovery) }
            }
            s.dropWatches(under: rootID)
            s.index.remove(EntryID(rootID))
        }
    }

    /// Crawls an open folder that is already in the index, with the watch
    /// seam, then lets held-back events go.
    /// `namesOnly`: files are not stat'ed (`CrawlOptions.statFolders`).
    func crawl(
        handle: DirectoryHandle, folder: EntryID, root: UInt32, sink: LiveSink, inBackground: Bool = false,
        namesOnly: Bool = false
    ) {
        guard let info = state.withLock({ $0.roots[root] }) else { return }
        var options = CrawlOptions(statEntries: !namesOnly, threadCount: crawlThreads)
        options.statFolders = true
        options.inBackground = inBackground
        Crawler(sink: sink, options: options).crawl(
            folder: (handle, folder), isScopeRoot: folder.rawValue == root, rules: info.rules,
            rootDevice: info.device)
    }

    /// Opens a folder of the index by its path, checking it is that folder
    /// (`EngineState.isSameFile`), and stores its own attributes from the open folder.
    /// A stale path marks it dirty (rescanned once current); a folder it may
    /// not read becomes a problem, retried only when its entry changes.
    func openVerified(_ folder: UInt32) -> (DirectoryHandle, root: UInt32)? {
        let known = state.withLock { s -> ([UInt8], UInt32, EntryMetadata)? in
            guard s.index.contains(EntryID(folder)), s.index.kind(of: EntryID(folder)) == .folder else { return nil }
            return (
                s.pathBytes(of: folder), s.index.root(of: EntryID(folder)).rawValue,
                s.index.metadata(of: EntryID(folder))
            )
        }
        guard let (path, root, metadata) = known else { return nil }
        switch DirectoryHandle.open(pathBytes: path) {
        case .failure(let error) where error == .permissionDenied || error == .notPermitted:
            state.withLock { s in
                if s.pathIsCurrent(folder) {
                    s.folderProblems[folder] = .unreadable(error)
                } else {
                    s.dirtyFolders.insert(folder)
                }
            }
            return nil
        case .failure:
            // The path is stale while an ancestor's rename is not applied
            // yet, or it now names another folder: rescan later; giving up
            // here would leave it unlisted and unwatched for good.
            state.withLock { _ = $0.dirtyFolders.insert(folder) }
            return nil
        case .success(let handle):
            guard case .success(let status) = FileStatus.of(descriptor: handle.descriptor),
                EngineState.isSameFile(metadata, status)
            else {
                state.withLock { _ = $0.dirtyFolders.insert(folder) }
                return nil
            }
            state.withLock { s in
                if s.index.contains(EntryID(folder)) { s.update(folder, to: status) }
            }
            return (handle, root)
        }
    }

    /// Crawls a folder that appeared (created, moved in, readable again),
    /// recording changes. A folder whose name the rules exclude is only
    /// watched, for its own attributes.
    func crawlFolder(_ folder: UInt32) {
        guard let (handle, root) = openVerified(folder) else { return }
        if !state.withLock({ $0.descends(into: folder) }) {
            watchOnly(folder, handle: handle, recording: true)
            return
        }
        crawl(handle: handle, folder: EntryID(folder), root: root, sink: LiveSink(engine: self, recording: true))
        tellFollowersRelisted(folder)
    }

    /// Watches a folder whose contents are excluded: its own dates change
    /// when something inside it comes or goes, and it is a result. Its
    /// attributes are read again once the watch is in: those read before
    /// it miss an entry made inside in between, which sent no event.
    /// `recording`: the change is one for subscribers (not a first gather).
    /// A folder another root's filesystem is mounted on is not watched
    /// here (`EngineState.isMountedElsewhere`): its watch would be that
    /// root's top folder's.
    func watchOnly(_ folder: UInt32, handle: DirectoryHandle, recording: Bool) {
        guard !state.withLock({ $0.isMountedElsewhere(folder) }) else { return }
        crawlHook.withLock { $0 }?(EntryID(folder))
        switch addWatch(handle.descriptor, purpose: .folder(folder)) {
        case .success:
            let own = FileStatus.of(descriptor: handle.descriptor)
            state.withLock { s in
                if s.folderProblems[folder] != nil { s.folderProblems[folder] = nil }
                if case .success(let status) = own, status.kind == .folder, s.index.contains(EntryID(folder)),
                    EngineState.isSameFile(s.index.metadata(of: EntryID(folder)), status)
                {
                    s.update(folder, to: status, recording: recording)
                }
            }
        case .failure(let error):
            state.withLock { $0.recordWatchFailure(folder, error) }
        }
    }

    /// Rescans one folder's subtree: what the crawl does not see is removed.
    func reconcile(folder: UInt32) {
        state.withLock { $0.clearMarks(under: folder) }
        guard let (handle, root) = openVerified(folder) else { return }
        if !state.withLock({ $0.descends(into: folder) }) {
            watchOnly(folder, handle: handle, recording: true)
            return
        }
        crawl(handle: handle, folder: EntryID(folder), root: root, sink: LiveSink(engine: self, recording: true))
        state.withLock { $0.sweep(under: folder) }
        tellFollowersRelisted(folder)
    }

    /// Rescans a root and makes the index equal to the disk, recording only
    /// what differs (after an overflow, a root's return, looser rules);
    /// `inBackground`, yielding the processors to queries (`verify`).
    func reconcile(root: UInt32, inBackground: Bool = false) {
        let path: [UInt8]? = state.withLock { s in
            guard s.roots[root] != nil, s.index.contains(EntryID(root)) else { return nil }
            s.clearMarks(under: root)
            return s.pathBytes(of: root)
        }
        guard let path else { return }
        guard case .success(let handle) = DirectoryHandle.open(pathBytes: path) else {
            state.withLock { s in
                if s.roots[root] != nil && !(s.roots[root]?.missing ?? true) { s.rootGone(root) }
            }
            return
        }
        // A root is kept by its path: the folder there now is the root, even
        // one made again while nothing told of it. Its identity and dates
        // are that folder's, or every later check of the root's path
        // (`openVerified`) would find it stale and rescan it whole again.
        if case .success(let status) = FileStatus.of(descriptor: handle.descriptor), status.kind == .folder {
            state.withLock { s in
                guard s.roots[root] != nil, s.index.contains(EntryID(root)) else { return }
                s.adoptRootFolder(root, status)
            }
        }
        crawl(
            handle: handle, folder: EntryID(root), root: root, sink: LiveSink(engine: self, recording: true),
            inBackground: inBackground)
        // Unmarked entries were not seen by the rescan: gone.
        state.withLock { $0.sweep(under: root) }
        overflowFollowers()
    }

    func reconcileAll() {
        let roots = state.withLock { s -> [UInt32] in
            s.rescanCount += 1
            return s.roots.filter { !$0.value.missing }.map(\.key)
        }
        for root in roots { reconcile(root: root) }
    }

    /// Brings a missing root back if its folder exists again; otherwise
    /// watches its nearest existing ancestor for it to reappear.
    func recoverRoot(_ root: UInt32) {
        guard let info = state.withLock({ $0.roots[root] }), info.missing else { return }
        let path = info.path
        if case .success(let handle) = DirectoryHandle.open(path: path),
            case .success(let status) = FileStatus.of(descriptor: handle.descriptor)
        {
            state.withLock { s in
                s.roots[root]?.missing = false
                s.adoptRootFolder(root, status)
                s.problemsChanged = true
                if let recovery = s.roots[root]?.recoveryWatch {
                    s.recoveryWatches[recovery] = nil
                    s.roots[root]?.recoveryWatch = nil
                    if s.watchToFolder[recovery] == nil { removeWatch(recovery) }
                }
                s.clearMarks(under: root)
            }
            crawl(handle: handle, folder: EntryID(root), root: root, sink: LiveSink(engine: self, recording: true))
            return
        }
        // Watch the nearest ancestor that exists, for the next step back.
        var ancestor = path
        while ancestor.removeLastComponent(), !ancestor.isEmpty {
            guard case .success(let handle) = DirectoryHandle.open(path: ancestor) else { continue }
            if case .success(let watch) = addWatch(handle.descriptor, purpose: .missingRoot(root)) {
                state.withLock { s in
                    if let old = s.roots[root]?.recoveryWatch, old != watch {
                        s.recoveryWatches[old] = nil
                        if s.watchToFolder[old] == nil { removeWatch(old) }
                    }
                    s.roots[root]?.recoveryWatch = watch
                    s.recoveryWatches[watch] = root
                }
                // It may have come back before the watch was in place.
                if case .success = DirectoryHandle.open(path: path) { recoverRoot(root) }
            }
            return
        }
    }
}

/// What `acquire` found for a scope, under the lock.
enum ScopeClaim {
    /// A crawl overlapping the scope is under way: wait until the count of
    /// ended crawls moves past this value, then look again.
    case wait(Int)
    /// A live root lists the scope: its entry, and the root when the scope
    /// loosened its rules (the caller crawls what they now admit).
    case shared(Anchor, loosened: UInt32?)
    /// No root lists it: the caller makes one.
    case absent
}

extension EngineState {
    /// Whether a crawl that subscribers depend on (a root's first gather or
    /// fill, or the crawl of what looser rules admit) runs in a root that lists
    /// `path` or lies inside it.
    func crawlOverlaps(_ path: FilePath) -> Bool {
        roots.values.contains { root in
            root.isBusy && (path.starts(with: root.path) || root.path.starts(with: path))
        }
    }

    /// Takes a share of the live root that lists `path`, unless a crawl
    /// overlapping it is under way. A share that loosens the root's rules
    /// marks the root as gathering until the caller has crawled what they
    /// admit.
    func claim(_ path: FilePath, request: ScopeRequest, crawlsEnded: ConditionLocked<Int>) -> ScopeClaim {
        if crawlOverlaps(path) { return .wait(crawlsEnded.withLock { $0 }) }
        for (id, root) in roots where !root.missing && lists(path, in: id) {
            guard let entry = entry(at: path, from: id) else { continue }
            // Inside the root, the scope's own root-child exclusions are
            // about its folder, not the root's: the root crawls those
            // anyway.
            var needed = request.rules
            if path != root.path { needed.excludedRootChildNames = root.rules.excludedRootChildNames }
            // Prunes are the root's own (the system index's
            // configuration), never loosened by a share.
            needed = needed.withPrunes(of: root.rules)
            let rules = root.rules.union(needed)
            roots[id]!.users += 1
            let loosened = rules != root.rules
            if loosened {
                roots[id]!.rules = rules
                roots[id]!.gathering = true
            }
            return .shared(Anchor(entry: entry, path: path, rules: request.rules), loosened: loosened ? id : nil)
        }
        return .absent
    }

    /// A folder could not be watched: the watch limit (or a permission)
    /// keeps it from being live. The audit does not retry it; one refused
    /// for lack of watches is tried again from time to time
    /// (`LiveEngine.retryUnwatchedFolders`).
    func recordWatchFailure(_ folder: UInt32, _ error: Errno) {
        guard error == .noSpace || error == .permissionDenied || error == .notPermitted else { return }
        if folderProblems[folder] == nil { folderProblems[folder] = .unwatchable(error) }
        if error == .noSpace { lacksWatches = true }
    }

    /// A folder is watched now: what kept it from being is over.
    func recordWatched(_ folder: UInt32) {
        if case .unwatchable = folderProblems[folder] { folderProblems[folder] = nil }
    }
}
