import MDQSystem

/// Which entries below a scope's folder belong to the scope: the one
/// statement of the rules that the crawler, the live engine and queries
/// all apply.
///
/// An entry belongs when no component of its path below the scope folder
/// is hidden (unless hidden items are included), no folder above it (below
/// the scope folder) has an excluded name, and the scope folder's own child
/// on its path is not one of the excluded root children. An excluded
/// folder is itself an entry; only what is inside it is left out.
///
/// Pruned names and paths (the system index's `PRUNENAMES` and
/// `PRUNEPATHS`) leave out folders' contents in the same way, but belong to
/// the index, not to a query: a query is answered without what they prune,
/// whatever its own rules (`withPrunes(of:)`).
public struct ScopeRules: Sendable, Hashable {
    /// Include names starting with `.` and everything below hidden folders.
    public var includeHidden: Bool
    /// Folder names whose contents are left out at any depth
    /// (`node_modules`); the folders themselves are entries.
    public var excludedFolderNames: Set<[UInt8]>
    /// Names of the scope folder's own children left out with everything
    /// inside them (the data scope leaves out `Documents`).
    public var excludedRootChildNames: Set<[UInt8]>
    /// Do not descend into folders on another filesystem than the scope
    /// folder (`find -xdev`); such folders are still entries.
    public var stayOnFileSystem: Bool
    /// Absolute paths of folders whose contents the index leaves out (the
    /// system index's `PRUNEPATHS`); the folders themselves are entries.
    public var prunedFolderPaths: Set<[UInt8]> {
        didSet { prunedPathNames = Self.lastNames(of: prunedFolderPaths) }
    }
    /// Folder names whose contents the index leaves out at any depth (the
    /// system index's `PRUNENAMES`); the folders themselves are entries.
    public var prunedFolderNames: Set<[UInt8]>
    /// The last component of each pruned path: a folder whose name is not
    /// among them needs no path built to be judged.
    private var prunedPathNames: Set<[UInt8]>

    public init(
        includeHidden: Bool = false, excludedFolderNames: Set<[UInt8]> = [],
        excludedRootChildNames: Set<[UInt8]> = [], stayOnFileSystem: Bool = false,
        prunedFolderPaths: Set<[UInt8]> = [], prunedFolderNames: Set<[UInt8]> = []
    ) {
        self.includeHidden = includeHidden
        self.excludedFolderNames = excludedFolderNames
        self.excludedRootChildNames = excludedRootChildNames
        self.stayOnFileSystem = stayOnFileSystem
        self.prunedFolderPaths = prunedFolderPaths
        self.prunedFolderNames = prunedFolderNames
        self.prunedPathNames = Self.lastNames(of: prunedFolderPaths)
    }

    /// These rules with the prunes of `index` (an indexed root's) instead
    /// of their own: what a query asks of that index.
    package func withPrunes(of index: ScopeRules) -> ScopeRules {
        var rules = self
        rules.prunedFolderPaths = index.prunedFolderPaths
        rules.prunedFolderNames = index.prunedFolderNames
        return rules
    }

    /// Whether both prune the same names and paths.
    package func prunesAlike(_ other: ScopeRules) -> Bool {
        prunedFolderPaths == other.prunedFolderPaths && prunedFolderNames == other.prunedFolderNames
    }

    private static func lastNames(of paths: Set<[UInt8]>) -> Set<[UInt8]> {
        Set(paths.map { path in Array(path.split(separator: 0x2F, omittingEmptySubsequences: true).last ?? []) })
    }

    /// Whether an entry called `name` is part of the scope, given that its
    /// folder is.
    ///
    /// - Parameter isRootChild: the entry sits directly in the scope folder.
    @inline(__always)
    public func admits(_ name: UnsafeRawBufferPointer, isRootChild: Bool) -> Bool {
        if !includeHidden && name.first == 0x2E { return false }
        if isRootChild && !excludedRootChildNames.isEmpty && excludedRootChildNames.contains(Array(name)) {
            return false
        }
        return true
    }

    /// Whether an entry called `name` is part of the scope, given that its
    /// folder is.
    public func admits(_ name: [UInt8], isRootChild: Bool) -> Bool {
        name.withUnsafeBytes { admits($0, isRootChild: isRootChild) }
    }

    /// Whether the contents of an admitted folder called `name` are part of
    /// the scope (not an excluded folder name). Excluded paths are not
    /// judged: see `descends(into:path:)`.
    @inline(__always)
    public func descends(into name: UnsafeRawBufferPointer) -> Bool {
        (excludedFolderNames.isEmpty || !excludedFolderNames.contains(Array(name)))
            && (prunedFolderNames.isEmpty || !prunedFolderNames.contains(Array(name)))
    }

    /// Whether the contents of an admitted folder called `name` are part of
    /// the scope: not an excluded name, nor an excluded path. `path` gives
    /// the folder's absolute path; it is only called for a folder whose
    /// name ends an excluded path.
    @inline(__always)
    package func descends(into name: UnsafeRawBufferPointer, path: () -> [UInt8]) -> Bool {
        guard descends(into: name) else { return false }
        guard !prunedPathNames.isEmpty, prunedPathNames.contains(Array(name)) else { return true }
        return !prunedFolderPaths.contains(path())
    }

    /// Whether the folder at the absolute `path`, or a folder above it, is
    /// an excluded path: then what is inside it is left out.
    package func excludesContents(ofFolderAt path: [UInt8]) -> Bool {
        guard !prunedFolderPaths.isEmpty else { return false }
        if prunedFolderPaths.contains(path) { return true }
        for (i, byte) in path.enumerated() where byte == 0x2F && i > 0 {
            if prunedFolderPaths.contains(Array(path[..<i])) { return true }
        }
        return false
    }

    /// Whether the contents of an admitted folder called `name` are part of the scope.
    public func descends(into name: [UInt8]) -> Bool {
        name.withUnsafeBytes { descends(into: $0) }
    }

    /// Whether an entry belongs, from the names on its path below the scope
    /// folder, outermost first (the entry's own name last).
    public func admits<Names: Collection>(path names: Names) -> Bool where Names.Element == [UInt8] {
        var isRootChild = true
        var remaining = names.count
        for name in names {
            remaining -= 1
            guard admits(name, isRootChild: isRootChild) else { return false }
            if remaining > 0 && !descends(into: name) { return false }
            isRootChild = false
        }
        return true
    }

    /// The loosest rules admitting everything either admits: what one crawl
    /// shared by two scopes must cover.
    public func union(_ other: ScopeRules) -> ScopeRules {
        ScopeRules(
            includeHidden: includeHidden || other.includeHidden,
            excludedFolderNames: excludedFolderNames.intersection(other.excludedFolderNames),
            excludedRootChildNames: excludedRootChildNames.intersection(other.excludedRootChildNames),
            stayOnFileSystem: stayOnFileSystem && other.stayOnFileSystem,
            prunedFolderPaths: prunedFolderPaths.intersection(other.prunedFolderPaths),
            prunedFolderNames: prunedFolderNames.intersection(other.prunedFolderNames))
    }

    /// Whether everything `other` admits is admitted by these rules.
    public func covers(_ other: ScopeRules) -> Bool {
        union(other) == self
    }

    /// These rules (an indexed scope's) under a query's own, for a query
    /// that names no scope and searches what is indexed: the query's
    /// choice of hidden items, its excluded names added, its filesystem
    /// boundary added; the scope's own root exclusions and prunes kept.
    package func narrowed(by query: ScopeRules) -> ScopeRules {
        ScopeRules(
            includeHidden: query.includeHidden,
            excludedFolderNames: excludedFolderNames.union(query.excludedFolderNames),
            excludedRootChildNames: excludedRootChildNames,
            stayOnFileSystem: stayOnFileSystem || query.stayOnFileSystem,
            prunedFolderPaths: prunedFolderPaths, prunedFolderNames: prunedFolderNames)
    }

    /// The rules for a folder inside the scope folder: the scope folder's
    /// own exclusions no longer apply.
    package var belowRoot: ScopeRules {
        var rules = self
        rules.excludedRootChildNames = []
        return rules
    }
}

extension CrawlOptions {
    /// The scope rules a crawl of `root` with these options applies.
    public func rules(for root: CrawlRoot) -> ScopeRules {
        var rules = self.rules
        rules.excludedRootChildNames.formUnion(root.excludedChildNames)
        return rules
    }
}
