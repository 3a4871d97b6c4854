package import MDQSystem
import SystemPackage

extension Viewer {
    /// Whether this user may read the entry `id` of `index` (what is
    /// imported from a file: its permissions and ACL, as the kernel judges
    /// them). An entry whose permissions the index has not read is no
    /// one's but root's.
    package func mayRead(_ id: UInt32, in index: FileIndex) -> Bool {
        if isRoot { return true }
        guard let access = index.access(of: id) else { return false }
        return mayRead(access)
    }
}

/// Which entries of an index one viewer may see (`Viewer`'s walk),
/// remembered per folder and per access class while one slice of a query
/// (or one batch of changes) holds the index.
///
/// - Complexity: a name costs a look at its folder's remembered answer;
///   a folder not yet judged walks up to the first folder judged (or the
///   walk's start), so a slice judges each folder once. A folder's two
///   permission checks are made once per access class, not per folder.
package struct Visibility {
    let viewer: Viewer
    /// Where the walk starts: the scopes' folders the viewer opened, or
    /// nil for `/`.
    let starts: Set<UInt32>?
    /// Whether the viewer may list and search each folder and every folder
    /// from the walk's start down to it.
    private var walkable: [UInt32: Bool] = [:]
    /// Whether the viewer may list and search a folder of each access
    /// class (by its number in the index).
    private var classes: [UInt32: Bool] = [:]
    /// Scope roots whose folders above, outside the index, the viewer may
    /// all list and search (walks that start at `/`).
    private var above: [UInt32: Bool] = [:]
    /// The index's `accessGeneration` when the memory above was made: a
    /// folder moved or given other permissions since makes it stale.
    private var generation: UInt64?

    /// - Parameter starts: the entries of the scopes the viewer opened
    ///   (`Viewer.reachedScopes`); ignored otherwise.
    package init(viewer: Viewer, starts: [EntryID] = []) {
        self.viewer = viewer
        self.starts = viewer.reachedScopes ? Set(starts.map(\.rawValue)) : nil
    }

    /// Whether the viewer may see entry `id`: a folder the walk starts at,
    /// or a name in a folder the walk reaches and may list.
    package mutating func allows(_ id: UInt32, in index: FileIndex) -> Bool {
        if viewer.isRoot || starts?.contains(id) == true { return true }
        let parent = index.parentColumn[id]
        guard parent != FileIndex.none else {
            // A scope root: the walk from `/` reaches it through folders
            // outside the index.
            guard starts == nil else { return false }
            return outsideWalkable(root: id, in: index)
        }
        return allowsContents(of: parent, in: index)
    }

    /// Whether the viewer may see what is inside `folder`: the walk reaches
    /// it and may list it.
    package mutating func allowsContents(of folder: UInt32, in index: FileIndex) -> Bool {
        if viewer.isRoot { return true }
        if generation != index.accessGeneration {
            walkable.removeAll(keepingCapacity: true)
            classes.removeAll(keepingCapacity: true)
            generation = index.accessGeneration
        }
        var chain: [UInt32] = []
        var current = folder
        var result: Bool
        while true {
            if let known = walkable[current] {
                result = known
                break
            }
            chain.append(current)
            guard mayWalk(current, in: index) else {
                result = false
                break
            }
            if let starts {
                if starts.contains(current) {
                    result = true
                    break
                }
            }
            let parent = index.parentColumn[current]
            if parent == FileIndex.none {
                // A walk from a scope the viewer opened never leaves it; a
                // walk from `/` goes on through the folders above the root.
                result = starts == nil && outsideWalkable(root: current, in: index)
                break
            }
            current = parent
        }
        // Each folder walked is walkable exactly when the walk's end is:
        // all could be listed and searched up to it, and the one that could
        // not is in the chain too.
        for walked in chain { walkable[walked] = result }
        return result
    }

    /// Whether the viewer may list and search `folder` itself.
    private mutating func mayWalk(_ folder: UInt32, in index: FileIndex) -> Bool {
        let number = index.accessNumber(of: folder)
        if let known = classes[number] { return known }
        let allowed = index.access(of: folder).map(viewer.mayWalk) ?? false
        classes[number] = allowed
        return allowed
    }

    /// Whether every folder above the scope root `root`, from `/` down to
    /// its parent (outside the index), may be listed and searched: read
    /// from the disk, at paths the index's owner chose (its roots), never
    /// a path a user gave.
    private mutating func outsideWalkable(root: UInt32, in index: FileIndex) -> Bool {
        if let known = above[root] { return known }
        let result = index.accessAbove(root: root)?.allSatisfy { $0.map(viewer.mayWalk) ?? false } ?? false
        above[root] = result
        return result
    }
}

extension FileIndex {
    /// The access of each folder above the scope root `root`, outside the
    /// index, from `/` down to the root's parent: read from the disk at
    /// the path the index's owner chose for the root, never one a user
    /// gave (nil for a folder that cannot be read). Nil when `root` is not
    /// a root.
    package func accessAbove(root: UInt32) -> [EntryAccess?]? {
        guard var ancestor = rootPaths[root] else { return nil }
        var ancestors: [FilePath] = []
        while ancestor.removeLastComponent(), !ancestor.isEmpty { ancestors.append(ancestor) }
        return ancestors.reversed().map { folder in
            guard case .success(let status) = FileStatus.of(pathBytes: folder.bytes) else { return nil }
            return EntryAccess(status)
        }
    }
}
