import MDQSystem
public import SystemPackage

/// Something the crawler skipped and went on: an unreadable folder, an entry
/// that vanished mid-walk. Never fatal.
public struct CrawlWarning: Sendable, Hashable, CustomStringConvertible {
    /// What the crawler was doing.
    public enum Operation: String, Sendable, Hashable {
        case open = "cannot open folder"
        case list = "cannot list folder"
        /// Listed, then gone before it could be stat'ed; left out.
        case vanished = "vanished during the crawl:"
        /// A folder that could be listed but not entered (read without
        /// search permission): its entries are results with a name and a
        /// kind but no size or dates. One warning per folder.
        case statEntries = "cannot read the attributes of entries in"
    }

    /// What failed.
    public var operation: Operation
    /// The folder or entry it failed on.
    public var path: FilePath
    /// Why, as the system said.
    public var error: Errno

    /// A warning that `operation` on `path` failed with `error`.
    public init(operation: Operation, path: FilePath, error: Errno) {
        self.operation = operation
        self.path = path
        self.error = error
    }

    /// One line for people: what, where, why.
    public var description: String {
        "\(operation.rawValue) \(path.string): \(error.description)"
    }
}
