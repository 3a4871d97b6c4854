public import MDQSystem
import SystemPackage

/// A one-shot query: crawl the scopes, evaluate the predicate as entries are
/// listed, and stream the matches out. This is `mdq QUERY` without `--live`.
///
/// No index is built and nothing is stat'ed that is not printed, so a name
/// query costs little more than listing the folders.
public struct OneShotSearch: Sendable {
    /// The folders to search.
    public var roots: [CrawlRoot]
    /// What an entry must match.
    public var predicate: MetadataPredicate
    /// Hidden entries, filesystem boundary, threads. `statEntries` is
    /// ignored: the search stats only matches, and only when
    /// `includeMetadata` is set.
    public var crawlOptions: CrawlOptions
    /// Stat each match for size, dates and inode.
    public var includeMetadata: Bool
    /// Stop after this many matches (`mdq --limit`): exactly this many are
    /// delivered (fewer if there are fewer), and the crawl opens no further
    /// folder once they are found. Nil for no limit.
    public var limit: Int?
    /// Only entries of these kinds match (`mdq --type`); nil for every kind.
    /// Folders of other kinds are still descended into.
    public var kinds: Set<EntryKind>?
    /// Folders whose name matches one of these shell globs (`*`, `?`,
    /// `[...]`, `\`; or an exact name) are reported but not descended into,
    /// at any depth (`mdq --exclude`). `SearchSummary.unmatchedExclusions`
    /// tells which matched no folder.
    public var excludedFolderPatterns: [[UInt8]]
    /// Do not descend into `/proc` and `/sys` when a root is `/`: they are
    /// pseudo-filesystems, huge and changing, with nothing a file search
    /// wants. A root inside them is still searched.
    public var skipsPseudoFileSystems: Bool
    /// The ubiquity container the query runs against: entries inside it
    /// (or its external document folders) are ubiquitous for predicates on
    /// `NSMetadataItemIsUbiquitousKey` and the other ubiquitous keys. Nil:
    /// no entry is.
    public var container: UbiquityContainer?
    /// The search's time budget in seconds (nil: `QueryLimit.defaultSeconds`,
    /// 30): past it, or when a `MATCHES` pattern backtracks too far on one
    /// name, `run` throws `MetadataError` `.tooExpensive` instead of running on.
    public var budget: Double?

    public init(
        roots: [CrawlRoot], predicate: MetadataPredicate, crawlOptions: CrawlOptions = CrawlOptions(),
        includeMetadata: Bool = false, limit: Int? = nil, kinds: Set<EntryKind>? = nil,
        excludedFolderPatterns: [[UInt8]] = [], skipsPseudoFileSystems: Bool = false,
        container: UbiquityContainer? = nil
    ) {
        self.roots = roots
        self.predicate = predicate
        self.crawlOptions = crawlOptions
        self.includeMetadata = includeMetadata
        self.limit = limit
        self.kinds = kinds
        self.excludedFolderPatterns = excludedFolderPatterns
        self.skipsPseudoFileSystems = skipsPseudoFileSystems
        self.container = container
    }

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
