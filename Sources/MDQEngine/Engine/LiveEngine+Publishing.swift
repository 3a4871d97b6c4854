package import MDQCore
package import MDQSystem
import SystemPackage

/// One entry as the shared index across hosts is told of it: what the
/// index holds, by identity (`FileIndex.identity(of:)`: stable across
/// renames and restarts, never reused).
package struct PublishedEntry: Sendable {
    package var identity: UInt64
    /// The folder it lies in; nil for a scope root.
    package var parent: UInt64?
    package var name: [UInt8]
    package var metadata: EntryMetadata
    /// For folders whose contents the index holds: the absolute path (a
    /// folder it prunes, or that another filesystem is mounted on, has
    /// none, and no folder row: nothing lies in it).
    package var path: [UInt8]?
    /// For folders: what a user must be allowed to list the folder's
    /// contents, outermost first, each kind once: the access of every
    /// folder from `/` down to this one (the folders above the index's
    /// root included) that does not let everyone list and search it. A
    /// folder whose access the index has not read yet appears as nil
    /// (nobody but root may list below it).
    package var listRestrictions: [EntryAccess?]?
    /// For files: where the content indexer keeps what was imported from
    /// it (`LiveEngine.importedContent`).
    package var fileKey: FileKey?
}

extension LiveEngine {
    /// What the content indexer imported from files, when this engine's
    /// daemon imports (`CONTENT`): a file's words are published from it,
    /// read as a local search reads them.
    package var importedContent: (any ImportedContent)? { state.withLock { $0.content } }

    /// What the publisher needs to know before it reads: the clock now,
    /// and whether every root's files are stat'ed (names-first roots are
    /// published once they are filled, so no folder is published without
    /// its permissions).
    package func publishingState() -> (clock: EngineClock, ready: Bool, slots: Int, entries: Int) {
        state.withLock { s in
            (
                s.clock.now, !s.roots.values.contains { $0.gathering || $0.lacksAttributes }, s.index.slotCount,
                s.index.count - s.roots.count
            )
        }
    }

    /// Entries read at one moment, for one batch.
    package struct PublishedRead: Sendable {
        package var entries: [PublishedEntry]
        /// Identities asked for that name no entry any more.
        package var removed: [UInt64]
        /// The folders inside the folders asked for with `below` (at any
        /// depth), read with the rest: their paths and list restrictions
        /// follow those folders'.
        package var inside: Set<UInt64> = []
    }

    /// What changed since a clock.
    package enum PublishedChanges: Sendable {
        /// The entries changed since the clock, read at one moment: applied
        /// to what was published as of the clock, exactly the index then
        /// (`now` or later).
        case batch(PublishedRead, now: EngineClock)
        /// More than a batch changed: their identities, to be read a batch
        /// at a time (each batch as it is when read).
        case backlog(identities: [UInt64], now: EngineClock)
        /// The index holds changes it has not journalled yet (a batch being
        /// applied, its crawls): asked again shortly.
        case busy
    }

    /// The changes since `clock`, up to `limit` of them read at once with
    /// the clock, with every folder inside the `below` folders, while the
    /// index holds nothing it has not journalled: so that a batch published
    /// whole shows the index as it was at one moment (entries read apart
    /// from the identities they were chosen by, or beside changes not
    /// journalled yet, show states those leave out: two entries at one
    /// path, one moved in and one moved away whose move the batch does not
    /// hold; or an entry no saved clock covers, which a crash would leave
    /// in the shared index). Nil when `clock` is not one this engine's
    /// history reaches back to (another index, or older than its journal):
    /// the whole index is to be published again.
    package func publishedChanges(since clock: EngineClock, limit: Int, below: Set<UInt64> = []) -> PublishedChanges? {
        state.withLock { s in
            guard let tick = s.clock.resolve(clock) else { return nil }
            guard s.changes.isEmpty else { return .busy }
            let identities = s.clock.changes(after: tick).identities
            guard identities.count <= limit else { return .backlog(identities: identities, now: s.clock.now) }
            return .batch(s.publishedRead(identities, below: below), now: s.clock.now)
        }
    }

    /// The entries with these identities as they are now, with every
    /// folder inside the `below` folders, at one moment.
    ///
    /// - Parameter ancestors: with every folder above them too. Entries
    ///   read later than the moment they were chosen at may lie in folders
    ///   made since, which the identities do not name: sent without them,
    ///   they would be rows whose folder the shared index lacks.
    package func publishedEntries(
        _ identities: some Collection<UInt64>, below: Set<UInt64> = [], ancestors: Bool = false
    ) -> PublishedRead {
        state.withLock { $0.publishedRead(identities, below: below, ancestors: ancestors) }
    }

    /// Which rows a full publish reads in one pass over the slots.
    package enum PublishedRows: Sendable {
        /// Every entry but the scope roots, without a folder's path and
        /// list restrictions.
        case entries
        /// Folders only, scope roots included, with their paths and list
        /// restrictions.
        case folders
    }

    /// The live entries among the slots in `slots` that `rows` asks for,
    /// for a full publish a slice at a time.
    package func publishedEntries(slots: Range<Int>, rows: PublishedRows) -> [PublishedEntry] {
        state.withLock { s in
            var restrictions = ListRestrictions()
            var entries: [PublishedEntry] = []
            for slot in slots.clamped(to: 0..<s.index.slotCount) {
                let id = EntryID(UInt32(slot))
                guard s.index.contains(id) else { continue }
                switch rows {
                case .entries:
                    guard !s.index.isRoot(id) else { continue }
                    entries.append(s.publishedEntry(id.rawValue, folderRow: false, restrictions: &restrictions))
                case .folders:
                    guard s.index.kind(of: id) == .folder, s.descends(into: id.rawValue) else { continue }
                    entries.append(s.publishedEntry(id.rawValue, folderRow: true, restrictions: &restrictions))
                }
            }
            return entries
        }
    }

}

/// The list restrictions of folders, remembered while one lock is held.
struct ListRestrictions {
    private var known: [UInt32: [EntryAccess?]] = [:]
    private var aboveRoots: [UInt32: [EntryAccess?]] = [:]

    /// Whether a folder with `access` may be listed and searched by every
    /// user: then it restricts no one and is left out.
    static func isOpenToAll(_ access: EntryAccess) -> Bool {
        access.acl == nil && access.mode & 0o555 == 0o555
    }

    mutating func of(_ folder: UInt32, in index: FileIndex) -> [EntryAccess?] {
        if let known = known[folder] { return known }
        var chain: [UInt32] = []
        var current = folder
        var base: [EntryAccess?]
        while true {
            if let found = known[current] {
                base = found
                break
            }
            chain.append(current)
            guard let parent = index.parent(of: EntryID(current)) else {
                base = above(root: current, in: index)
                break
            }
            current = parent.rawValue
        }
        for id in chain.reversed() {
            let access = index.metadata(of: EntryID(id)).access
            if let access, Self.isOpenToAll(access) {
                known[id] = base
            } else if !base.contains(access) {
                base.append(access)
                known[id] = base
            } else {
                known[id] = base
            }
        }
        return base
    }

    /// The restricting folders above a scope root, outside the index (as
    /// `Visibility` judges them).
    private mutating func above(root: UInt32, in index: FileIndex) -> [EntryAccess?] {
        if let known = aboveRoots[root] { return known }
        var result: [EntryAccess?] = []
        for access in index.accessAbove(root: root) ?? [] {
            if let access, Self.isOpenToAll(access) { continue }
            if !result.contains(access) { result.append(access) }
        }
        aboveRoots[root] = result
        return result
    }
}

extension EngineState {
    /// The entries with these identities (those that name no entry any
    /// more are `removed`), and every folder inside the `below` folders,
    /// in the index or in roots of their own below them.
    fileprivate func publishedRead(_ identities: some Collection<UInt64>, below: Set<UInt64>, ancestors: Bool = false)
        -> LiveEngine.PublishedRead
    {
        var restrictions = ListRestrictions()
        var read = LiveEngine.PublishedRead(entries: [], removed: [])
        func add(_ identity: UInt64) {
            guard let id = index.entry(identity: identity) else {
                read.removed.append(identity)
                return
            }
            read.entries.append(publishedEntry(id.rawValue, folderRow: true, restrictions: &restrictions))
        }
        for identity in identities { add(identity) }
        var seen = Set(identities)
        if ancestors {
            for entry in read.entries {
                var folder = entry.parent
                while let identity = folder, seen.insert(identity).inserted, let id = index.entry(identity: identity) {
                    read.entries.append(publishedEntry(id.rawValue, folderRow: true, restrictions: &restrictions))
                    folder = read.entries.last!.parent
                }
            }
        }
        guard !below.isEmpty else { return read }
        func addFolder(_ id: EntryID) {
            let inside = index.identity(of: id.rawValue)
            read.inside.insert(inside)
            if seen.insert(inside).inserted { add(inside) }
        }
        func addFolders(below id: EntryID) {
            index.forEachDescendant(of: id) { if index.kind(of: $0) == .folder { addFolder($0) } }
        }
        // Each subtree once: the folders inside another asked for are in
        // its walk.
        let folders = outermost(Set(below.compactMap { index.entry(identity: $0)?.rawValue }))
        var walkedRoots: Set<UInt32> = []
        for folder in folders {
            addFolders(below: EntryID(folder))
            // Roots below the folder's path (a filesystem mounted inside
            // it, indexed on its own): who may list their folders depends
            // on the folder too.
            let path = pathBytes(of: folder)
            let prefix = path.last == 0x2F ? path : path + [0x2F]
            for root in roots.keys where root != folder && index.contains(EntryID(root)) {
                guard !walkedRoots.contains(root), pathBytes(of: root).starts(with: prefix) else { continue }
                walkedRoots.insert(root)
                addFolder(EntryID(root))
                addFolders(below: EntryID(root))
            }
        }
        return read
    }

    /// - Parameter folderRow: for a folder, read what its folder row needs
    ///   too (its path and list restrictions).
    fileprivate func publishedEntry(_ id: UInt32, folderRow: Bool, restrictions: inout ListRestrictions)
        -> PublishedEntry
    {
        let entry = EntryID(id)
        let metadata = index.metadata(of: entry)
        var published = PublishedEntry(
            identity: index.identity(of: id), parent: index.parent(of: entry).map { index.identity(of: $0.rawValue) },
            name: index.name(of: entry), metadata: metadata)
        if metadata.kind == .file { published.fileKey = index.fileKey(of: entry) }
        if folderRow && metadata.kind == .folder && descends(into: id) {
            published.path = pathBytes(of: id)
            published.listRestrictions = restrictions.of(id, in: index)
        }
        return published
    }
}
