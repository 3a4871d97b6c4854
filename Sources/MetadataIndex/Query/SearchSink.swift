import Foundation
import SystemPackage

/// The one-shot search's crawl sink: evaluates the predicate as entries are
/// listed and streams matches out in batches, with no index built.
///
/// A folder is known by its full path (built once per folder, never per
/// entry). Entries are stat'ed only when the caller wants metadata, and then
/// only those that match. A predicate on the ubiquitous keys gets each
/// folder's ubiquity, worked out once per folder from the container; one on
/// conflicts gets the folder's listing, gathered once per folder.
final class SearchSink: CrawlSink, @unchecked Sendable {
    struct Folder: Sendable {
        var path: [UInt8]
        /// Where the folder's entries lie relative to the container (only
        /// when the predicate reads the ubiquitous keys).
        var ubiquity: MetadataItem.Ubiquity?
    }

    struct Worker {
        let evaluator: PredicateEvaluator
        var batch = SearchResultBatch()
        var count = 0
    }

    private let predicate: CompiledPredicate
    /// The container, when the predicate reads the ubiquitous keys.
    private let ubiquity: UbiquityContext?
    private let wantsResults: Bool
    private let wantsMetadata: Bool
    private let batchSize = 512
    // `matchCount` and `warnings` are guarded by `lock`; `onBatch` and
    // `onWarning` are called under it, so callers see one batch at a time.
    private let lock = NSLock()
    private var matchCount = 0
    private var warnings: [CrawlWarning] = []
    private let onBatch: @Sendable (SearchResultBatch) -> Void
    private let onWarning: (@Sendable (CrawlWarning) -> Void)?

    init(
        predicate: CompiledPredicate, ubiquity: UbiquityContext? = nil, wantsResults: Bool, wantsMetadata: Bool,
        onBatch: @escaping @Sendable (SearchResultBatch) -> Void,
        onWarning: (@Sendable (CrawlWarning) -> Void)?
    ) {
        self.predicate = predicate
        self.ubiquity = predicate.requirements.contains(.ubiquity) ? ubiquity : nil
        self.wantsResults = wantsResults
        self.wantsMetadata = wantsMetadata
        self.onBatch = onBatch
        self.onWarning = onWarning
    }

    func makeWorker() -> Worker {
        Worker(evaluator: predicate.makeEvaluator())
    }

    func beginRoot(_ root: CrawlRoot, status: FileStatus) -> Folder {
        folder(path: root.path.bytes)
    }

    private func folder(path: [UInt8]) -> Folder {
        Folder(path: path, ubiquity: ubiquity?.ubiquity(ofChildOf: path))
    }

    func willList(_ folder: Folder, directory: FileDescriptor, worker: inout Worker) {}

    private struct Subject: PredicateSubject {
        let folder: [UInt8]
        let name: UnsafeRawBufferPointer
        let isASCII: Bool
        let kind: EntryKind
        let status: FileStatus?
        let directory: FileDescriptor
        let cName: UnsafePointer<CChar>
        let ubiquityOfFolder: MetadataItem.Ubiquity?
        let listing: ConflictListing?

        /// Stat'ed only when a term needs it (the evaluator caches it per entry).
        func metadata() -> EntryMetadata? {
            if let status { return EntryMetadata(status) }
            return (try? FileStatus.of(cName, in: directory).get()).map(EntryMetadata.init)
        }

        func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R {
            body(name, isASCII)
        }

        func appendPath(to bytes: inout [UInt8]) {
            bytes.append(contentsOf: folder)
            if bytes.last != 0x2F { bytes.append(0x2F) }
            bytes.append(contentsOf: name)
        }

        func ubiquity() -> MetadataItem.Ubiquity? { ubiquityOfFolder }

        func hasUnresolvedConflicts() -> Bool { listing?.hasCopies(name) ?? false }

        func conflictOriginalPath() -> [UInt8]? {
            listing?.original(of: name).map { original in
                folder + (folder.last == 0x2F ? [] : [0x2F]) + original
            }
        }
    }

    func didList(
        _ folder: Folder, batch: borrowing CrawlBatch, directory: FileDescriptor,
        worker: inout Worker, subfolders: inout [Folder?]
    ) {
        var listing: ConflictListing?
        if predicate.requirements.contains(.conflicts) {
            var names = ConflictListing()
            for entry in batch.entries { batch.withName(of: entry) { names.insert($0) } }
            listing = names
        }
        for entry in batch.entries {
            batch.withName(of: entry) { name in
                batch.withCName(of: entry) { cName in
                    let subject = Subject(
                        folder: folder.path, name: name, isASCII: entry.isASCIIName, kind: entry.kind,
                        status: entry.status, directory: directory, cName: cName,
                        ubiquityOfFolder: folder.ubiquity, listing: listing)
                    if worker.evaluator.matches(subject) {
                        worker.count += 1
                        if wantsResults {
                            var metadata = entry.status.map(EntryMetadata.init)
                            if wantsMetadata && metadata == nil {
                                metadata = batch.withCName(of: entry) { cName in
                                    try? FileStatus.of(cName, in: directory).get()
                                }.map(EntryMetadata.init)
                            }
                            worker.batch.append(folder: folder.path, name: name, kind: entry.kind, metadata: metadata)
                        }
                    }
                    if entry.descend {
                        var path = folder.path
                        if path.last != 0x2F { path.append(0x2F) }
                        path.append(contentsOf: name)
                        subfolders.append(self.folder(path: path))
                    }
                }
            }
        }
        if worker.batch.count >= batchSize { flush(&worker) }
    }

    func finish(worker: inout Worker) {
        flush(&worker)
    }

    private func flush(_ worker: inout Worker) {
        lock.lock()
        defer { lock.unlock() }
        matchCount += worker.count
        worker.count = 0
        if worker.batch.count > 0 {
            onBatch(worker.batch)
            worker.batch.removeAll()
        }
    }

    func path(of folder: Folder, child name: UnsafeRawBufferPointer?) -> FilePath {
        var bytes = folder.path
        if let name {
            if bytes.last != 0x2F { bytes.append(0x2F) }
            bytes.append(contentsOf: name)
        }
        return FilePath.fromBytes(bytes)
    }

    func warn(_ warning: CrawlWarning, worker: inout Worker) {
        lock.withLock {
            warnings.append(warning)
            onWarning?(warning)
        }
    }

    var summary: SearchSummary {
        lock.withLock { SearchSummary(matchCount: matchCount, warnings: warnings) }
    }
}
