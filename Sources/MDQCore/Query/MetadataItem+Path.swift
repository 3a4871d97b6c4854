import Foundation
public import MDQSystem
public import SystemPackage

extension MetadataItem {
    /// A snapshot of the item at `path` (`mdls`): its own status (a
    /// symlink is described, not followed), conflict copies beside it from
    /// a listing of its folder, and ubiquity when it lies in `container`.
    /// For many items, use one `MetadataItemReader`.
    ///
    /// - Throws: `MetadataError` (`.itemNotFound`, `.itemUnreadable`)
    ///   naming the path.
    public init(path: FilePath, container: UbiquityContainer? = nil) throws(MetadataError) {
        self = try MetadataItemReader(container: container).item(atPath: path)
    }
}

/// Builds item snapshots outside any index (one-shot search results, `mdq
/// ls` paths): the container's external document folders are read once,
/// and each folder is listed at most once for conflict copies.
///
/// Not thread-safe: one reader per thread, or one behind a lock.
public final class MetadataItemReader {
    private let ubiquity: UbiquityContext?
    private let detectsConflicts: Bool
    /// Per folder: the names it holds, the names with a conflict copy
    /// beside them, and whether it could be listed.
    private var listings: [[UInt8]: (names: Set<[UInt8]>, withCopies: Set<[UInt8]>, listed: Bool)] = [:]

    /// - Parameters:
    ///   - container: items inside it (or its external document folders)
    ///     get the ubiquitous keys.
    ///   - detectsConflicts: look for conflict copies (lists folders).
    public init(container: UbiquityContainer? = nil, detectsConflicts: Bool = true) {
        ubiquity = container.map { UbiquityContext(container: $0) }
        self.detectsConflicts = detectsConflicts
    }

    /// Imports each file's contents for the items (files only); nil leaves
    /// items without imported values.
    package var importer: ((FilePath) -> ImportedValues)?

    /// The item for a one-shot search result (its metadata as the search
    /// read it).
    public func item(for result: SearchResult) -> MetadataItem {
        item(
            pathBytes: Array(result.pathBytes), kind: result.kind,
            metadata: result.metadata ?? EntryMetadata(kind: result.kind))
    }

    /// The item at `path`, stat'ed now (a symlink is described, not followed).
    ///
    /// - Throws: `MetadataError` (`.itemNotFound`, `.itemUnreadable`)
    ///   naming the path.
    public func item(atPath path: FilePath) throws(MetadataError) -> MetadataItem {
        let absolute = path.isAbsolute ? path : ProcessEnvironment.currentDirectory.pushing(path)
        let normalized = absolute.lexicallyNormalized()
        let bytes = normalized.bytes
        switch FileStatus.of(pathBytes: bytes) {
        case .success(let status):
            return item(pathBytes: bytes, kind: status.kind, metadata: EntryMetadata(status))
        case .failure(let error):
            throw .item(error, path: normalized)
        }
    }

    private func item(pathBytes bytes: [UInt8], kind: EntryKind, metadata: EntryMetadata) -> MetadataItem {
        let ubiquity = self.ubiquity?.ubiquity(ofPath: bytes)
        var hasConflicts = false
        var original: [UInt8]?
        if detectsConflicts, let slash = bytes.lastIndex(of: 0x2F) {
            let folder = slash == 0 ? [UInt8(0x2F)] : Array(bytes[..<slash])
            let name = Array(bytes[(slash + 1)...])
            let listing = self.listing(of: folder)
            hasConflicts = listing.withCopies.contains(name)
            if let originalName = ConflictCopy.originalName(of: name) {
                let candidate = folder + (folder == [0x2F] ? [] : [0x2F]) + originalName
                // A folder that cannot be listed may still be searchable.
                let exists =
                    listing.listed
                    ? listing.names.contains(originalName)
                    : { if case .success = FileStatus.of(pathBytes: candidate) { true } else { false } }()
                if exists { original = candidate }
            }
        }
        var item = MetadataItem(
            serial: 0, pathBytes: bytes, kind: kind, metadata: metadata, ubiquity: ubiquity,
            hasUnresolvedConflicts: hasConflicts, conflictOriginalPathBytes: original)
        if let importer, kind == .file { item.importedValues = importer(FilePath.fromBytes(bytes)) }
        return item
    }

    private func listing(of folder: [UInt8]) -> (names: Set<[UInt8]>, withCopies: Set<[UInt8]>, listed: Bool) {
        if let known = listings[folder] { return known }
        var names = Set<[UInt8]>()
        var withCopies = Set<[UInt8]>()
        var listed = false
        if case .success(let handle) = DirectoryHandle.open(pathBytes: folder) {
            var reader = DirectoryReader(capacity: 64 * 1024)
            listed = true
            _ = reader.forEachEntry(of: handle.descriptor) { entry in
                let name = UnsafeRawBufferPointer(start: entry.name, count: entry.nameLength)
                names.insert(Array(name))
                if let original = ConflictCopy.originalName(of: name) { withCopies.insert(original) }
            }
        }
        let listing = (names, withCopies, listed)
        listings[folder] = listing
        return listing
    }
}

extension Array where Element == MetadataItem {
    /// The positions of the first `count` items in `descriptor`'s order
    /// and of every item tied with the last of them, ascending: whichever
    /// items a sort by more keys, cut to `count`, keeps are among them.
    /// With `thenByPath`, ties are ordered by path and exactly the first
    /// `count` come (what a sort by this key alone, ties in path order,
    /// keeps). Each key is made once; for a few (at most 64), the first
    /// are kept as the items pass (most compared with the last kept
    /// alone), for more every position is sorted (keeping them would move
    /// each better item past them all).
    package func positionsOfFirst(
        _ count: Int, by descriptor: MetadataSortDescriptor, thenByPath: Bool = false
    ) -> [Int] {
        guard self.count > count else { return Swift.Array(indices) }
        guard count > 0 else { return [] }
        let keys = map { descriptor.sortKey($0) }
        func before(_ a: Int, _ b: Int) -> Bool {
            switch descriptor.order(keys[a], keys[b]) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: thenByPath && self[a].pathBytes.lexicographicallyPrecedes(self[b].pathBytes)
            }
        }
        let last: Int
        if count <= 64 {
            var kept: [Int] = []
            kept.reserveCapacity(count)
            for i in indices {
                if kept.count == count {
                    guard before(i, kept[count - 1]) else { continue }
                    kept.removeLast()
                }
                var (low, high) = (0, kept.count)
                while low < high {
                    let middle = (low + high) / 2
                    if before(i, kept[middle]) { high = middle } else { low = middle + 1 }
                }
                kept.insert(i, at: low)
            }
            last = kept[count - 1]
        } else {
            last = indices.sorted(by: before)[count - 1]
        }
        return indices.filter { !before(last, $0) }
    }

    /// The items ordered by `descriptors` (first key first), ties kept in
    /// their current order.
    public func sorted(by descriptors: [MetadataSortDescriptor]) -> [MetadataItem] {
        guard !descriptors.isEmpty else { return self }
        // Keys made once per item and descriptor, not per comparison.
        let keys = descriptors.map { descriptor in map { descriptor.sortKey($0) } }
        let order = indices.sorted { a, b in
            for (d, descriptor) in descriptors.enumerated() {
                switch descriptor.order(keys[d][a], keys[d][b]) {
                case .orderedAscending: return true
                case .orderedDescending: return false
                case .orderedSame: continue
                }
            }
            return a < b
        }
        return order.map { self[$0] }
    }
}
