import MDQSystem

/// How a crawl walks its roots.
public struct CrawlOptions: Sendable, Equatable {
    /// Include entries whose names start with `.` and everything below hidden
    /// folders. Off by default, as Spotlight leaves them out.
    public var includeHidden: Bool
    /// Whether every entry is stat'ed (size, times, inode). A one-shot name
    /// query turns this off and stats only what it prints.
    public var statEntries: Bool
    /// Do not descend into folders on another filesystem than their root
    /// (`find -xdev`). Such folders are still reported as entries.
    public var stayOnFileSystem: Bool
    /// Folder names never descended into, anywhere (the folders themselves are
    /// still reported).
    public var excludedFolderNames: Set<[UInt8]>
    /// Crawler threads; by default one per core, at least 2, so listing
    /// overlaps with stat calls.
    public var threadCount: Int

    public init(
        includeHidden: Bool = false,
        statEntries: Bool = true,
        stayOnFileSystem: Bool = false,
        excludedFolderNames: Set<[UInt8]> = [],
        threadCount: Int? = nil
    ) {
        self.includeHidden = includeHidden
        self.statEntries = statEntries
        self.stayOnFileSystem = stayOnFileSystem
        self.excludedFolderNames = excludedFolderNames
        self.threadCount = max(1, threadCount ?? max(2, ProcessLimits.processorCount))
    }
}
