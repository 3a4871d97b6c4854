public import SystemPackage

/// Something the crawler skipped and went on: an unreadable folder, an entry
/// that vanished mid-walk. Never fatal.
public struct CrawlWarning: Sendable, Hashable, CustomStringConvertible {
    /// What the crawler was doing.
    public enum Operation: String, Sendable, Hashable {
        case open = "cannot open folder"
        case list = "cannot list folder"
        case stat = "cannot read attributes of"
        /// Listed, then gone before it could be stat'ed; left out.
        case vanished = "vanished during the crawl:"
    }

    public var operation: Operation
    public var path: FilePath
    public var error: Errno

    public init(operation: Operation, path: FilePath, error: Errno) {
        self.operation = operation
        self.path = path
        self.error = error
    }

    public var description: String {
        "\(operation.rawValue) \(path.string): \(error.description)"
    }
}
