import Foundation
public import SystemPackage

extension MetadataItem {
    /// A snapshot of the item at `path` (`mdls`): its own status (a
    /// symlink is described, not followed), conflict copies beside it from
    /// a listing of its folder, and ubiquity when it lies in `container`.
    ///
    /// - Throws: `MetadataError` (`.scopeNotFound`, `.scopeUnreadable`)
    ///   naming the path.
    public init(path: FilePath, container: UbiquityContainer? = nil) throws(MetadataError) {
        let absolute = path.isAbsolute ? path : ProcessEnvironment.currentDirectory.pushing(path)
        let normalized = absolute.lexicallyNormalized()
        let bytes = normalized.bytes
        let status: FileStatus
        switch FileStatus.of(pathBytes: bytes) {
        case .success(let found): status = found
        case .failure(.noSuchFileOrDirectory), .failure(.notDirectory):
            throw MetadataError(code: .scopeNotFound, message: "no such file or folder", path: normalized)
        case .failure(let error):
            throw MetadataError(code: .scopeUnreadable, message: "cannot read", path: normalized, underlying: error)
        }
        let ubiquity = container.flatMap { Ubiquity(path: bytes, container: $0) }
        var hasConflicts = false
        var original: [UInt8]?
        if let slash = bytes.lastIndex(of: 0x2F) {
            let folder = slash == 0 ? [UInt8(0x2F)] : Array(bytes[..<slash])
            let name = Array(bytes[(slash + 1)...])
            if let originalName = ConflictCopy.originalName(of: name) {
                let candidate = folder + (folder == [0x2F] ? [] : [0x2F]) + originalName
                if case .success = FileStatus.of(pathBytes: candidate) { original = candidate }
            }
            hasConflicts = Self.siblingConflictCopies(of: name, in: folder)
        }
        self.init(
            serial: 0, pathBytes: bytes, kind: status.kind, metadata: EntryMetadata(status), ubiquity: ubiquity,
            hasUnresolvedConflicts: hasConflicts, conflictOriginalPathBytes: original)
    }

    /// Whether `folder` holds a conflict copy of `name`.
    private static func siblingConflictCopies(of name: [UInt8], in folder: [UInt8]) -> Bool {
        guard case .success(let handle) = DirectoryHandle.open(pathBytes: folder) else { return false }
        var reader = DirectoryReader(capacity: 64 * 1024)
        var found = false
        _ = reader.forEachEntry(of: handle.descriptor) { entry in
            guard !found else { return }
            let sibling = UnsafeRawBufferPointer(start: entry.name, count: entry.nameLength)
            if let original = ConflictCopy.originalName(of: sibling), original == name { found = true }
        }
        return found
    }
}

extension MetadataItem {
    /// The item for a one-shot search result; ubiquity from `container`.
    /// Conflicts are not looked for (that needs the folder's listing: use
    /// `init(path:container:)` for items whose conflicts matter).
    public init(_ result: SearchResult, container: UbiquityContainer? = nil) {
        let bytes = Array(result.pathBytes)
        let ubiquity = container.flatMap { Ubiquity(path: bytes, container: $0) }
        self.init(
            serial: 0, pathBytes: bytes, kind: result.kind,
            metadata: result.metadata ?? EntryMetadata(kind: result.kind), ubiquity: ubiquity)
    }
}

extension Array where Element == MetadataItem {
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

extension MetadataItem.Ubiquity {
    /// Where `path` sits relative to `container`: inside it, or inside one
    /// of its registered external document folders; nil otherwise.
    init?(path: [UInt8], container: UbiquityContainer, externalFolders: [FilePath]? = nil) {
        func inside(_ folder: FilePath) -> Bool {
            let prefix = folder.lexicallyNormalized().bytes
            return path.count > prefix.count && path.starts(with: prefix) && path[prefix.count] == 0x2F
        }
        let name = container.path.lastComponent?.string ?? ""
        if inside(container.path) {
            self.init(containerDisplayName: name)
        } else if (externalFolders ?? container.externalDocumentFolders).contains(where: inside) {
            self.init(containerDisplayName: name, isExternalDocument: true)
        } else {
            return nil
        }
    }
}
