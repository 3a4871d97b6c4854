/// A file's identity for the content index, stable across renames: its
/// device and inode.
package struct FileKey: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64

    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// One word hashed, not two: full-text queries look a key up in
    /// sets for every entry they test.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(inode ^ (device &* 0x9E37_79B9_7F4A_7C15))
    }
}

/// What a file looked like when imported: a change to either means the
/// import is stale.
package struct FileStamp: Hashable, Sendable {
    package var modification: Int64
    package var size: UInt64

    package init(modification: Int64, size: UInt64) {
        self.modification = modification
        self.size = size
    }
}
