public import MDQSystem
import SystemPackage

/// A crawl sink that inserts every entry into a `FileIndex`.
///
/// Crawler threads list and stat in parallel; insertion is serialised by one
/// lock taken once per folder, which is cheap next to the system calls.
final class IndexSink: CrawlSink, Sendable {
    private struct State {
        let index: FileIndex
        var warnings: [CrawlWarning] = []
    }

    private let state: Locked<State>
    private let onWarning: (@Sendable (CrawlWarning) -> Void)?

    package init(index: FileIndex, onWarning: (@Sendable (CrawlWarning) -> Void)?) {
        state = Locked(State(index: index))
        self.onWarning = onWarning
    }

    package func makeWorker() {}

    package func beginRoot(_ root: CrawlRoot, status: FileStatus) -> EntryID {
        state.withLock { $0.index.addRoot(path: root.path, metadata: EntryMetadata(status), device: status.device) }
    }

    package func willList(_ folder: EntryID, directory: FileDescriptor, worker: inout Void) -> Bool { true }

    package func didList(
        _ folder: EntryID, batch: borrowing CrawlBatch, directory: FileDescriptor,
        worker: inout Void, subfolders: inout [EntryID?]
    ) {
        state.withLock { state in
            let index = state.index
            // A folder that had no children cannot hold any of these names yet
            // (one listing never repeats a name), so the lookup is skipped.
            let fresh = index.hasNoChildren(folder)
            for entry in batch.entries {
                let metadata = entry.status.map(EntryMetadata.init) ?? EntryMetadata(kind: entry.kind)
                let id = batch.withName(of: entry) { name in
                    fresh
                        ? index.insertNew(name: name, in: folder, metadata: metadata, device: entry.status?.device)
                        : index.insert(name: name, in: folder, metadata: metadata, device: entry.status?.device)
                }
                if entry.descend { subfolders.append(id) }
            }
        }
    }

    package func path(of folder: EntryID, child name: UnsafeRawBufferPointer?) -> FilePath {
        state.withLock { state in
            var bytes: [UInt8] = []
            state.index.appendPath(of: folder.rawValue, to: &bytes)
            if let name {
                if bytes.last != 0x2F { bytes.append(0x2F) }
                bytes.append(contentsOf: name)
            }
            return FilePath.fromBytes(bytes)
        }
    }

    package func warn(_ warning: CrawlWarning, worker: inout Void) {
        state.withLock { $0.warnings.append(warning) }
        onWarning?(warning)
    }

    var collectedWarnings: [CrawlWarning] {
        state.withLock { $0.warnings }
    }
}

/// What a gather did.
public struct GatherSummary: Sendable {
    /// The index's scope roots, one per crawled root, in the order given.
    public var roots: [EntryID]
    /// Entries skipped along the way.
    public var warnings: [CrawlWarning]
}

extension FileIndex {
    /// Crawls `roots` into this index in parallel: every entry's name, kind,
    /// size, times and inode.
    ///
    /// - Parameters:
    ///   - roots: folders to crawl; each becomes a scope root of the index.
    ///   - options: hidden entries, stat policy, filesystem boundary, threads.
    ///   - onWarning: called (from crawler threads) for each skipped entry.
    /// - Throws: `MetadataError` (`.scopeNotFound`, `.scopeUnreadable`,
    ///   `.scopeNotFolder`) naming the first root that cannot be opened,
    ///   before anything is crawled.
    /// - Complexity: O(entries), spread over `options.threadCount` threads.
    @discardableResult
    public func gather(
        _ roots: [CrawlRoot],
        options: CrawlOptions = CrawlOptions(),
        onWarning: (@Sendable (CrawlWarning) -> Void)? = nil
    ) throws(MetadataError) -> GatherSummary {
        let sink = IndexSink(index: self, onWarning: onWarning)
        try Crawler(sink: sink, options: options).crawl(roots)
        #if MDQ_INVARIANTS
            _checkInvariants()
        #endif
        let rootIDs = roots.compactMap { root in rootPaths.first { $0.value == root.path }.map { EntryID($0.key) } }
        return GatherSummary(roots: rootIDs, warnings: sink.collectedWarnings)
    }
}
