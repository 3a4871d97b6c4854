public import MDQSystem

/// What the index stores about an entry besides its name and place.
public struct EntryMetadata: Hashable, Sendable {
    public var kind: EntryKind
    /// Size in bytes (for symlinks, the length of the target); nil when the
    /// entry was not stat'ed. Folders have 0 here; `kMDItemFSSize` is absent
    /// for them.
    public var size: UInt64?
    public var modificationTime: Timestamp?
    /// nil where the filesystem keeps no birth time, or the entry was not stat'ed.
    public var birthTime: Timestamp?
    public var inode: UInt64
    /// Its permissions, owner and group, and a folder's ACL; nil when the
    /// entry was not stat'ed.
    public var access: EntryAccess?
    /// Whether `size`, `modificationTime` and `birthTime` come from a stat.
    public var isStatted: Bool { modificationTime != nil }

    public init(
        kind: EntryKind,
        size: UInt64? = nil,
        modificationTime: Timestamp? = nil,
        birthTime: Timestamp? = nil,
        inode: UInt64 = 0,
        access: EntryAccess? = nil
    ) {
        self.kind = kind
        self.size = size
        self.modificationTime = modificationTime
        self.birthTime = birthTime
        self.inode = inode
        self.access = access
    }

    package init(_ status: FileStatus) {
        let folder = status.kind == .folder
        self.init(
            kind: status.kind,
            size: folder ? 0 : status.size,
            modificationTime: status.modificationTime,
            birthTime: status.birthTime,
            inode: status.inode,
            access: EntryAccess(status)
        )
    }
}
