// Running a one-shot search: the crawl and the per-entry tests are in
// MDQCore (`SearchSink`); a predicate on what is inside files also needs
// confined import workers, from MDQImport, which is why `run` lives here.

public import MDQCore
import MDQEngine
import MDQImport
import SystemPackage

extension OneShotSearch {
    /// Runs the search, blocking the calling thread.
    ///
    /// - Complexity: one listing of every folder in the scopes; a stat per
    ///   entry only when the predicate reads sizes or dates (then once per
    ///   entry) or metadata is asked for (once per match).
    /// - Parameters:
    ///   - onBatch: receives matches in batches, one call at a time (from
    ///     crawler threads), in crawl order. Pass nil to only count.
    ///   - onWarning: receives each skipped folder or entry.
    ///   - onProgress: receives the number of entries listed so far, every
    ///     few thousand entries, from crawler threads (possibly at once).
    /// - Returns: the number of matches, the warnings and what was crawled.
    /// - Throws: `MetadataError` naming the first root that cannot be opened.
    @discardableResult
    public func run(
        onBatch: (@Sendable (SearchResultBatch) -> Void)? = nil,
        onWarning: (@Sendable (CrawlWarning) -> Void)? = nil,
        onProgress: (@Sendable (Int) -> Void)? = nil
    ) throws(MetadataError) -> SearchSummary {
        try run(delivery: onBatch.map { .batches($0) } ?? .count, onWarning: onWarning, onProgress: onProgress)
    }

    /// Runs the search, each crawler thread formatting its own matches into
    /// its own buffer, so output is built in parallel; full buffers (whole
    /// results, about 64 KiB) go to `write`, one call at a time.
    ///
    /// - Parameters:
    ///   - format: appends one result's text; called concurrently from
    ///     crawler threads.
    ///   - write: receives formatted bytes, one call at a time.
    ///   - onWarning: receives each skipped folder or entry.
    ///   - onProgress: as in `run(onBatch:onWarning:onProgress:)`.
    /// - Returns: the number of matches, the warnings and what was crawled.
    /// - Throws: `MetadataError` naming the first root that cannot be opened.
    @discardableResult
    public func run(
        formattingWith format: @escaping @Sendable (SearchResult, inout [UInt8]) -> Void,
        write: @escaping @Sendable ([UInt8]) -> Void,
        onWarning: (@Sendable (CrawlWarning) -> Void)? = nil,
        onProgress: (@Sendable (Int) -> Void)? = nil
    ) throws(MetadataError) -> SearchSummary {
        try run(delivery: .formatted(format: format, write: write), onWarning: onWarning, onProgress: onProgress)
    }

    private func run(
        delivery: SearchSink.Delivery, onWarning: (@Sendable (CrawlWarning) -> Void)?,
        onProgress: (@Sendable (Int) -> Void)?
    ) throws(MetadataError) -> SearchSummary {
        // A predicate on what is inside files imports the entries that
        // pass its other terms, in confined workers, one per crawl thread.
        let compiled = CompiledPredicate(predicate)
        var pool: ImportWorkerPool?
        if compiled.requirements.contains(.imported) {
            var configuration = ImportWorkerPool.Configuration.standard
            configuration.workers = max(1, crawlOptions.threadCount)
            let made = ImportWorkerPool(configuration)
            try made.checkAvailable()
            pool = made
        }
        defer { pool?.shutdown() }
        let wanted = compiled.importedAttributes
        let importer = pool.map { pool in
            { @Sendable (path: FilePath) -> ImportedValues in pool.importFile(at: path, wanted: wanted).values }
        }
        let sink = SearchSink(
            search: self, delivery: delivery, onWarning: onWarning, onProgress: onProgress, importer: importer)
        var options = crawlOptions
        options.statEntries = false
        try Crawler(sink: sink, options: options).crawl(roots)
        if let error = sink.queryLimit?.error { throw error }
        return sink.summary
    }
}
