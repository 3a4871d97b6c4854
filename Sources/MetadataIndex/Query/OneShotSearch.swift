/// A one-shot query: crawl the scopes, evaluate the predicate as entries are
/// listed, and stream the matches out. This is `mdq QUERY` without `--live`.
///
/// No index is built and nothing is stat'ed that is not printed, so a name
/// query costs little more than listing the folders.
public struct OneShotSearch: Sendable {
    /// The folders to search.
    public var roots: [CrawlRoot]
    public var predicate: MetadataPredicate
    /// Hidden entries, filesystem boundary, threads. `statEntries` is
    /// ignored: the search stats only matches, and only when
    /// `includeMetadata` is set.
    public var crawlOptions: CrawlOptions
    /// Stat each match for size, dates and inode.
    public var includeMetadata: Bool
    /// The ubiquity container the query runs against: entries inside it
    /// (or its external document folders) are ubiquitous for predicates on
    /// `NSMetadataItemIsUbiquitousKey` and the other ubiquitous keys. Nil:
    /// no entry is.
    public var container: UbiquityContainer?

    public init(
        roots: [CrawlRoot], predicate: MetadataPredicate, crawlOptions: CrawlOptions = CrawlOptions(),
        includeMetadata: Bool = false, container: UbiquityContainer? = nil
    ) {
        self.roots = roots
        self.predicate = predicate
        self.crawlOptions = crawlOptions
        self.includeMetadata = includeMetadata
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
    /// - Returns: the number of matches and the warnings.
    /// - Throws: `MetadataError` naming the first root that cannot be opened.
    @discardableResult
    public func run(
        onBatch: (@Sendable (SearchResultBatch) -> Void)? = nil,
        onWarning: (@Sendable (CrawlWarning) -> Void)? = nil
    ) throws(MetadataError) -> SearchSummary {
        let compiled = CompiledPredicate(predicate)
        // The container's registry is read only when a term needs it.
        let ubiquity =
            compiled.requirements.contains(.ubiquity) ? container.map { UbiquityContext(container: $0) } : nil
        let sink = SearchSink(
            predicate: compiled, ubiquity: ubiquity, wantsResults: onBatch != nil, wantsMetadata: includeMetadata,
            onBatch: onBatch ?? { _ in }, onWarning: onWarning)
        var options = crawlOptions
        options.statEntries = false
        try Crawler(sink: sink, options: options).crawl(roots)
        return sink.summary
    }
}
