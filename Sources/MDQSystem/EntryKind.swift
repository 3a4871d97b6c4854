/// What an index entry is on disk.
public enum EntryKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case file = 1
    case folder = 2
    /// Recorded as an item, never followed.
    case symlink = 3
    /// FIFOs, sockets, device files.
    case other = 4

    public var description: String {
        switch self {
        case .file: "file"
        case .folder: "folder"
        case .symlink: "symlink"
        case .other: "other"
        }
    }
}
