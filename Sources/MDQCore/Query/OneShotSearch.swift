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
}
