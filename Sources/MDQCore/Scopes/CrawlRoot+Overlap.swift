public import MDQSystem
import SystemPackage

extension CrawlRoot {
    /// Removes roots another root already covers, so every entry is reported
    /// once when scopes overlap (`--onlyin A --onlyin A/B`).
    ///
    /// Paths are compared lexically after normalisation; a root covers
    /// another below it unless the branch leading there is one it excludes.
    /// Two equal roots keep only the exclusions both share.
    public static func removingOverlaps(_ roots: [CrawlRoot]) -> [CrawlRoot] {
        var result: [CrawlRoot] = []
        for var root in roots {
            root.path = root.path.lexicallyNormalized()
            if let same = result.firstIndex(where: { $0.path == root.path }) {
                result[same].excludedChildNames.formIntersection(root.excludedChildNames)
                continue
            }
            result.append(root)
        }
        return result.filter { inner in
            !result.contains { outer in outer.path != inner.path && outer.covers(inner.path) }
        }
    }

    /// Whether `path` lies inside this root's crawl.
    func covers(_ path: FilePath) -> Bool {
        guard path.starts(with: self.path), path != self.path else { return path == self.path }
        let rest = Array(path.components.dropFirst(self.path.components.count))
        guard let first = rest.first else { return true }
        return !excludedChildNames.contains(FilePath(root: nil, [first]).bytes)
    }
}

extension CrawlRoot {
    /// Checks the root can be opened as a folder.
    ///
    /// - Throws: `MetadataError` (`.scopeNotFound`, `.scopeUnreadable`,
    ///   `.scopeNotFolder`) naming the path.
    public func checkAccessible() throws(MetadataError) {
        if case .failure(let error) = DirectoryHandle.open(path: path) {
            throw MetadataError.scope(error, path: path)
        }
    }
}
