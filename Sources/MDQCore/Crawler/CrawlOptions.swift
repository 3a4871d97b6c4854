import MDQSystem

/// How a one-shot crawl runs: which entries belong to it (its
/// `ScopeRules`, the one statement of them the live engine and queries
/// apply too) and how it reads them (stat or not, how many threads).
public struct CrawlOptions: Sendable, Equatable {
    /// Which entries below each root belong to the crawl. A root's own
    /// excluded children (`CrawlRoot.excludedChildNames`) are added to
    /// them for that root (`rules(for:)`).
    public var rules: ScopeRules
    /// Whether every entry is stat'ed (size, times, inode). A one-shot name
    /// query turns this off and stats only what it prints.
    public var statEntries: Bool
    /// With `statEntries` off, whether folders are stat'ed all the same:
    /// a names-first crawl reads every folder's identity, owner and mode
    /// with its parent's listing (who may see what is inside, and that the
    /// folder opened next is the one listed), and leaves files for later.
    package var statFolders = false
    /// Crawler threads; by default one per core, at least 2, so listing
    /// overlaps with stat calls.
    public var threadCount: Int
    /// Whether the crawl's threads yield to the rest of the process
    /// (`WorkerThreads.Priority.background`): a check no one waits for.
    package var inBackground = false

    /// Include entries whose names start with `.` and everything below hidden
    /// folders. Off by default, as Spotlight leaves them out (`rules`).
    public var includeHidden: Bool {
        get { rules.includeHidden }
        set { rules.includeHidden = newValue }
    }
    /// Do not descend into folders on another filesystem than their root
    /// (`find -xdev`). Such folders are still reported as entries (`rules`).
    public var stayOnFileSystem: Bool {
        get { rules.stayOnFileSystem }
        set { rules.stayOnFileSystem = newValue }
    }
    /// Folder names never descended into, anywhere (the folders themselves are
    /// still reported; `rules`).
    public var excludedFolderNames: Set<[UInt8]> {
        get { rules.excludedFolderNames }
        set { rules.excludedFolderNames = newValue }
    }

    public init(
        includeHidden: Bool = false,
        statEntries: Bool = true,
        stayOnFileSystem: Bool = false,
        excludedFolderNames: Set<[UInt8]> = [],
        threadCount: Int? = nil
    ) {
        self.init(
            rules: ScopeRules(
                includeHidden: includeHidden, excludedFolderNames: excludedFolderNames,
                stayOnFileSystem: stayOnFileSystem),
            statEntries: statEntries, threadCount: threadCount)
    }

    /// A crawl under `rules` (prunes included).
    public init(rules: ScopeRules, statEntries: Bool = true, threadCount: Int? = nil) {
        self.rules = rules
        self.statEntries = statEntries
        self.threadCount = max(1, threadCount ?? max(2, ProcessLimits.processorCount))
    }
}

extension CrawlOptions {
    var threadPriority: WorkerThreads.Priority { inBackground ? .background : .normal }
}
