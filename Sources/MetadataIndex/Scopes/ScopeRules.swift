/// Which entries below a scope's folder belong to the scope: the one
/// statement of the rules that the crawler, the live engine and queries
/// all apply.
///
/// An entry belongs when no component of its path below the scope folder
/// is hidden (unless hidden items are included), no folder above it (below
/// the scope folder) has an excluded name, and the scope folder's own child
/// on its path is not one of the excluded root children. An excluded
/// folder is itself an entry; only what is inside it is left out.
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

    public init(
        includeHidden: Bool = false, excludedFolderNames: Set<[UInt8]> = [],
        excludedRootChildNames: Set<[UInt8]> = [], stayOnFileSystem: Bool = false
    ) {
        self.includeHidden = includeHidden
        self.excludedFolderNames = excludedFolderNames
        self.excludedRootChildNames = excludedRootChildNames
        self.stayOnFileSystem = stayOnFileSystem
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
    /// the scope (not an excluded folder name).
    @inline(__always)
    public func descends(into name: UnsafeRawBufferPointer) -> Bool {
        excludedFolderNames.isEmpty || !excludedFolderNames.contains(Array(name))
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
            stayOnFileSystem: stayOnFileSystem && other.stayOnFileSystem)
    }

    /// Whether everything `other` admits is admitted by these rules.
    public func covers(_ other: ScopeRules) -> Bool {
        union(other) == self
    }

    /// These rules (an indexed scope's) under a query's own, for a query
    /// that names no scope and searches what is indexed: the query's
    /// choice of hidden items, its excluded names added, its filesystem
    /// boundary added; the scope's own root exclusions kept.
    package func narrowed(by query: ScopeRules) -> ScopeRules {
        ScopeRules(
            includeHidden: query.includeHidden,
            excludedFolderNames: excludedFolderNames.union(query.excludedFolderNames),
            excludedRootChildNames: excludedRootChildNames,
            stayOnFileSystem: stayOnFileSystem || query.stayOnFileSystem)
    }

    /// The rules for a folder inside the scope folder: the scope folder's
    /// own exclusions no longer apply.
    var belowRoot: ScopeRules {
        var rules = self
        rules.excludedRootChildNames = []
        return rules
    }
}

extension CrawlOptions {
    /// The scope rules a crawl of `root` with these options applies.
    public func rules(for root: CrawlRoot) -> ScopeRules {
        ScopeRules(
            includeHidden: includeHidden, excludedFolderNames: excludedFolderNames,
            excludedRootChildNames: root.excludedChildNames, stayOnFileSystem: stayOnFileSystem)
    }
}
