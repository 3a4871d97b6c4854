import MDQSystem
public import SystemPackage

/// One folder tree to crawl.
public struct CrawlRoot: Sendable, Hashable {
    /// The folder's absolute path; it may itself be a symlink to a folder.
    public var path: FilePath
    /// Names of the root's own children to leave out (the data scope leaves
    /// out `Documents`).
    public var excludedChildNames: Set<[UInt8]>

    public init(path: FilePath, excludedChildNames: Set<[UInt8]> = []) {
        self.path = path
        self.excludedChildNames = excludedChildNames
    }
}
