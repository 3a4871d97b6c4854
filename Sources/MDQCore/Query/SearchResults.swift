public import MDQSystem
public import SystemPackage

/// A batch of one-shot search results: paths as raw bytes, with kind and,
/// when asked for, metadata.
public struct SearchResultBatch: Sendable {
    var pathBytes: [UInt8] = []
    /// End offset of each path in `pathBytes`.
    var pathEnds: [Int] = []
    /// Offset of each path's last component.
    var nameStarts: [Int] = []
    var kinds: [EntryKind] = []
    package var metadata: [EntryMetadata?] = []

    /// Results in this batch.
    public var count: Int { pathEnds.count }

    mutating func removeAll() {
        pathBytes.removeAll(keepingCapacity: true)
        pathEnds.removeAll(keepingCapacity: true)
        nameStarts.removeAll(keepingCapacity: true)
        kinds.removeAll(keepingCapacity: true)
        metadata.removeAll(keepingCapacity: true)
    }

    package mutating func append(
        folder: [UInt8], name: UnsafeRawBufferPointer, kind: EntryKind, metadata: EntryMetadata?
    ) {
        pathBytes.append(contentsOf: folder)
        if folder.last != 0x2F { pathBytes.append(0x2F) }
        nameStarts.append(pathBytes.count)
        pathBytes.append(contentsOf: name)
        pathEnds.append(pathBytes.count)
        kinds.append(kind)
        self.metadata.append(metadata)
    }

    /// The `i`th result.
    public subscript(i: Int) -> SearchResult {
        let start = i == 0 ? 0 : pathEnds[i - 1]
        return SearchResult(
            path: pathBytes[start..<pathEnds[i]], nameStart: nameStarts[i], kind: kinds[i], metadata: metadata[i])
    }
}

/// One matching entry.
public struct SearchResult: Sendable {
    /// The absolute path's raw bytes (not necessarily UTF-8).
    public let pathBytes: ArraySlice<UInt8>
    let nameStart: Int
    public let kind: EntryKind
    /// Size, dates and inode, when the search was asked for metadata.
    public let metadata: EntryMetadata?

    package init(path: ArraySlice<UInt8>, nameStart: Int, kind: EntryKind, metadata: EntryMetadata?) {
        self.pathBytes = path
        self.nameStart = nameStart
        self.kind = kind
        self.metadata = metadata
    }

    /// The name's raw bytes.
    public var nameBytes: ArraySlice<UInt8> { pathBytes[nameStart...] }

    /// The display name's raw bytes (`kMDItemDisplayName`).
    public var displayNameBytes: [UInt8] { DisplayName.bytes(of: Array(nameBytes), isFolder: kind == .folder) }

    /// Calls `body` with the display name's bytes, without copying them.
    public func withDisplayName<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try pathBytes.withUnsafeBytes { path in
            let name = UnsafeRawBufferPointer(rebasing: path[(nameStart - pathBytes.startIndex)...])
            return try body(DisplayName.range(of: name, isFolder: kind == .folder))
        }
    }

    /// The path.
    public var path: FilePath { FilePath.fromBytes(Array(pathBytes)) }
}

/// What a one-shot search did.
public struct SearchSummary: Sendable {
    /// Matching entries (at most the search's `limit`).
    public var matchCount: Int
    /// Entries skipped (unreadable folders, vanished entries).
    public var warnings: [CrawlWarning]
    /// Folders whose entries were listed, roots included. Below the tree's
    /// folder count when the search stopped at its limit.
    public var foldersListed: Int
    /// Whether the search stopped because it found `limit` matches.
    public var reachedLimit: Bool
    /// The `excludedFolderPatterns` that matched no folder (only the first
    /// 64 patterns are tracked). Meaningful when the crawl was not cut short.
    public var unmatchedExclusions: [[UInt8]]
}
