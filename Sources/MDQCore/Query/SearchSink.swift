import Foundation
package import MDQSystem
import Synchronization
package import SystemPackage

/// The one-shot search's crawl sink: evaluates the predicate as entries are
/// listed and streams matches out in batches, with no index built.
///
/// A folder is known by its full path (built once per folder, never per
/// entry). Entries are stat'ed only when the caller wants metadata, and then
/// only those that match. A predicate on the ubiquitous keys gets each
/// folder's ubiquity, worked out once per folder from the container; one on
/// conflicts gets the folder's listing, gathered once per folder.
package final class SearchSink: CrawlSink, @unchecked Sendable {
    package struct Folder: Sendable {
        var path: [UInt8]
        /// Where the folder's entries lie relative to the container (only
        /// when the predicate reads the ubiquitous keys).
        var ubiquity: MetadataItem.Ubiquity?
    }

    /// What happens to matches.
    package enum Delivery {
        /// Only counted.
        case count
        /// Handed over in batches, one call at a time.
        case batches(@Sendable (SearchResultBatch) -> Void)
        /// Formatted on the crawler thread that found them, into that
        /// thread's buffer; whole buffers are written one at a time.
        case formatted(
            format: @Sendable (SearchResult, inout [UInt8]) -> Void, write: @Sendable ([UInt8]) -> Void)
    }

    package struct Worker {
        let evaluator: PredicateEvaluator
        var batch = SearchResultBatch()
        var count = 0
        /// Entries listed since progress was last reported.
        var unreportedEntries = 0
        /// Formatted results not yet written.
        var output: [UInt8] = []
    }

    private let predicate: CompiledPredicate
    /// The container, when the predicate reads the ubiquitous keys.
    private let ubiquity: UbiquityContext?
    private let delivery: Delivery
    private let wantsMetadata: Bool
    private let batchSize = 512
    private let outputSize = 1 << 16
    private let limit: Int?
    /// Bit `kind.rawValue` set for each kind that may match.
    private let kindMask: UInt8
    private let exclusion: FolderExclusion
    // `matchCount` and `warnings` are guarded by `lock`; `onBatch`, `write`
    // and `onWarning` are called under it, so callers see one call at a time.
    private let lock = NSLock()
    private var matchCount = 0
    private var warnings: [CrawlWarning] = []
    private let onWarning: (@Sendable (CrawlWarning) -> Void)?
    /// Imports a file for the predicate's imported attributes (nil when it
    /// reads none).
    private let importer: (@Sendable (FilePath) -> ImportedValues)?
    private let onProgress: (@Sendable (Int) -> Void)?
    /// Matches handed out, with a limit (so exactly `limit` are).
    private let accepted = Atomic<Int>(0)
    private let finished = Atomic<Bool>(false)
    private let listedEntries = Atomic<Int>(0)
    private let listedFolders = Atomic<Int>(0)

    package init(
        search: OneShotSearch, delivery: Delivery,
        onWarning: (@Sendable (CrawlWarning) -> Void)?, onProgress: (@Sendable (Int) -> Void)?,
        importer: (@Sendable (FilePath) -> ImportedValues)? = nil
    ) {
        let predicate = CompiledPredicate(search.predicate)
        self.predicate = predicate
        self.importer = importer
        queryLimit = predicate.usesRegex ? QueryLimit(seconds: search.budget ?? QueryLimit.defaultSeconds) : nil
        // The container's registry is read only when a term needs it.
        self.ubiquity =
            predicate.requirements.contains(.ubiquity) ? search.container.map { UbiquityContext(container: $0) } : nil
        self.delivery = delivery
        self.wantsMetadata = search.includeMetadata
        self.limit = search.limit.map { max(0, $0) }
        self.kindMask = (search.kinds ?? Set(EntryKind.allCases)).reduce(0) { $0 | 1 << $1.rawValue }
        self.exclusion = FolderExclusion(
            patterns: search.excludedFolderPatterns, skipsPseudoFileSystems: search.skipsPseudoFileSystems)
        self.onWarning = onWarning
        self.onProgress = onProgress
        if limit == 0 { finished.store(true, ordering: .relaxed) }
    }

    package var isFinished: Bool { finished.load(ordering: .relaxed) || queryLimit?.isStopped == true }

    /// The search's budget, made current on crawler threads while they
    /// evaluate a predicate with `MATCHES` (the only test whose cost per
    /// name is not bounded by the name); nil for other predicates.
    package let queryLimit: QueryLimit?

    package func makeWorker() -> Worker {
        Worker(evaluator: predicate.makeEvaluator())
    }

    package func beginRoot(_ root: CrawlRoot, status: FileStatus) -> Folder {
        folder(path: root.path.bytes)
    }

    private func folder(path: [UInt8]) -> Folder {
        Folder(path: path, ubiquity: ubiquity?.ubiquity(ofChildOf: path))
    }

    package func willList(_ folder: Folder, directory: FileDescriptor, worker: inout Worker) -> Bool { true }

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
        let statFailure: StatFailure
        let importer: (@Sendable (FilePath) -> ImportedValues)?

        /// Stat'ed only when a term needs it (the evaluator caches it per entry).
        func metadata() -> EntryMetadata? {
            if let status { return EntryMetadata(status) }
            return statFailure.metadata(of: cName, in: directory)
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

        func imported() -> ImportedValues? {
            guard let importer else { return nil }
            var bytes: [UInt8] = []
            appendPath(to: &bytes)
            return importer(FilePath.fromBytes(bytes))
        }

        func hasUnresolvedConflicts() -> Bool { listing?.hasCopies(name) ?? false }

        func conflictOriginalPath() -> [UInt8]? {
            listing?.original(of: name).map { original in
                folder + (folder.last == 0x2F ? [] : [0x2F]) + original
            }
        }
    }

    package func didList(
        _ folder: Folder, batch: borrowing CrawlBatch, directory: FileDescriptor,
        worker: inout Worker, subfolders: inout [Folder?]
    ) {
        listedFolders.add(1, ordering: .relaxed)
        if let queryLimit { QueryLimit.setCurrent(queryLimit) }
        defer { if queryLimit != nil { QueryLimit.setCurrent(nil) } }
        var listing: ConflictListing?
        if predicate.requirements.contains(.conflicts) {
            var names = ConflictListing()
            for entry in batch.entries { batch.withName(of: entry) { names.insert($0) } }
            listing = names
        }
        let statFailure = StatFailure()
        for entry in batch.entries {
            batch.withName(of: entry) { name in
                batch.withCName(of: entry) { cName in
                    if kindMask & (1 << entry.kind.rawValue) != 0 && !isFinished {
                        let subject = Subject(
                            folder: folder.path, name: name, isASCII: entry.isASCIIName, kind: entry.kind,
                            status: entry.status, directory: directory, cName: cName,
                            ubiquityOfFolder: folder.ubiquity, listing: listing, statFailure: statFailure,
                            importer: importer)
                        if worker.evaluator.matches(subject) && accept() {
                            worker.count += 1
                            if case .count = delivery {
                            } else {
                                var metadata = entry.status.map(EntryMetadata.init)
                                if wantsMetadata && metadata == nil {
                                    metadata = statFailure.metadata(of: cName, in: directory)
                                }
                                worker.batch.append(
                                    folder: folder.path, name: name, kind: entry.kind, metadata: metadata)
                            }
                        }
                    }
                    guard entry.descend else { return }
                    if isFinished || (!exclusion.isEmpty && exclusion.excludes(name: name, parentPath: folder.path)) {
                        subfolders.append(nil)
                        return
                    }
                    var path = folder.path
                    if path.last != 0x2F { path.append(0x2F) }
                    path.append(contentsOf: name)
                    subfolders.append(self.folder(path: path))
                }
            }
        }
        if let error = statFailure.error {
            warn(
                CrawlWarning(operation: .statEntries, path: FilePath.fromBytes(folder.path), error: error),
                worker: &worker)
        }
        if let onProgress {
            worker.unreportedEntries += batch.entries.count
            if worker.unreportedEntries >= 4096 {
                onProgress(listedEntries.add(worker.unreportedEntries, ordering: .relaxed).newValue)
                worker.unreportedEntries = 0
            }
        }
        if worker.batch.count >= batchSize { flush(&worker, final: false) }
    }

    /// Takes one more match under the limit; false once it is reached.
    private func accept() -> Bool {
        guard let limit else { return true }
        let taken = accepted.add(1, ordering: .relaxed).newValue
        if taken >= limit { finished.store(true, ordering: .relaxed) }
        return taken <= limit
    }

    package func finish(worker: inout Worker) {
        flush(&worker, final: true)
    }

    private func flush(_ worker: inout Worker, final: Bool) {
        switch delivery {
        case .count:
            break
        case .batches(let onBatch):
            lock.lock()
            defer { lock.unlock() }
            if worker.batch.count > 0 { onBatch(worker.batch) }
        case .formatted(let format, let write):
            // Formatting runs here, on this crawler thread, outside the lock.
            for i in 0..<worker.batch.count { format(worker.batch[i], &worker.output) }
            if worker.output.count >= outputSize || (final && !worker.output.isEmpty) {
                lock.withLock { write(worker.output) }
                worker.output.removeAll(keepingCapacity: true)
            }
        }
        worker.batch.removeAll()
        if final {
            lock.withLock { matchCount += worker.count }
            worker.count = 0
        }
    }

    package func path(of folder: Folder, child name: UnsafeRawBufferPointer?) -> FilePath {
        var bytes = folder.path
        if let name {
            if bytes.last != 0x2F { bytes.append(0x2F) }
            bytes.append(contentsOf: name)
        }
        return FilePath.fromBytes(bytes)
    }

    package func warn(_ warning: CrawlWarning, worker: inout Worker) {
        lock.withLock {
            warnings.append(warning)
            onWarning?(warning)
        }
    }

    package var summary: SearchSummary {
        lock.withLock {
            SearchSummary(
                matchCount: matchCount, warnings: warnings,
                foldersListed: listedFolders.load(ordering: .relaxed),
                reachedLimit: limit.map { accepted.load(ordering: .relaxed) >= $0 } ?? false,
                unmatchedExclusions: exclusion.unmatchedPatterns)
        }
    }
}

/// The first reason an entry of one folder could not be stat'ed, if any:
/// such entries are results without size or dates (a folder listed but not
/// entered), reported once per folder rather than left silently bare.
private final class StatFailure {
    private(set) var error: Errno?

    /// The entry's attributes, or nil (the failure remembered). An entry
    /// gone since the listing is not a failure of the folder.
    package func metadata(of name: UnsafePointer<CChar>, in directory: FileDescriptor) -> EntryMetadata? {
        switch FileStatus.of(name, in: directory) {
        case .success(let status): return EntryMetadata(status)
        case .failure(.noSuchFileOrDirectory): return nil
        case .failure(let failure):
            if error == nil { error = failure }
            return nil
        }
    }
}
