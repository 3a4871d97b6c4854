import SystemPackage

/// Who may list and search a folder: its permission bits, owner and group,
/// as `stat` reports them. The system index keeps one per folder, so that
/// each user is answered only what `find` run as that user would print
/// (`Viewer`).
///
/// The index stores it without growing: a folder has no size
/// (`kMDItemFSSize` is absent for folders), so a folder's size slot holds
/// the number of its access class, interned in the index.
public struct FolderAccess: Hashable, Sendable {
    /// The permission bits, with set-user-id, set-group-id and sticky
    /// (`st_mode & 07777`).
    public var mode: UInt16
    public var owner: UInt32
    public var group: UInt32
    /// The folder's POSIX access ACL, when it has one: it decides instead
    /// of the group and other bits.
    public var acl: [ACLEntry]?

    public init(mode: UInt16, owner: UInt32, group: UInt32, acl: [ACLEntry]? = nil) {
        self.mode = mode & 0o7777
        self.owner = owner
        self.group = group
        self.acl = acl
    }

    /// One entry of an access ACL, as the kernel stores it.
    public struct ACLEntry: Hashable, Sendable {
        public var tag: UInt16
        /// rwx as 4, 2, 1.
        public var permissions: UInt16
        /// The user or group, for `user` and `group` entries.
        public var id: UInt32

        public static let ownerTag: UInt16 = 0x01
        public static let userTag: UInt16 = 0x02
        public static let owningGroupTag: UInt16 = 0x04
        public static let groupTag: UInt16 = 0x08
        public static let maskTag: UInt16 = 0x10
        public static let otherTag: UInt16 = 0x20
    }

    /// A folder's access as `stat` (and its ACL) reported it.
    init(_ status: FileStatus) {
        self.init(
            mode: UInt16(truncatingIfNeeded: status.mode), owner: status.userID, group: status.groupID,
            acl: status.acl)
    }

    /// An ACL in the kernel's `system.posix_acl_access` format (a version
    /// word, then 8-byte entries), or nil when it is malformed or holds
    /// only what the mode bits say (owner, owning group, other).
    static func acl(parsing bytes: UnsafeRawBufferPointer) -> [ACLEntry]? {
        guard bytes.count >= 4, (bytes.count - 4) % 8 == 0, bytes.loadUnaligned(as: UInt32.self) == 2 else {
            return nil
        }
        var entries: [ACLEntry] = []
        var offset = 4
        while offset < bytes.count {
            entries.append(
                ACLEntry(
                    tag: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self),
                    permissions: bytes.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self) & 7,
                    id: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
            offset += 8
        }
        let extended = entries.contains {
            $0.tag == ACLEntry.userTag || $0.tag == ACLEntry.groupTag || $0.tag == ACLEntry.maskTag
        }
        return extended ? entries : nil
    }
}

/// A user asking the system index: only entries that user could see are
/// answered.
///
/// An entry is visible when the user may search (execute) every folder
/// above it, from `/` down, and list (read) its parent folder: what `find`
/// run by that user prints, the rule plocate applies. Root sees everything.
package struct Viewer: Hashable, Sendable {
    package var user: UInt32
    /// The primary group and the supplementary groups.
    package var groups: Set<UInt32>

    package init(user: UInt32, groups: Set<UInt32>) {
        self.user = user
        self.groups = groups
    }

    package var isRoot: Bool { user == 0 }

    /// Read permission, for listing a folder.
    static let read: UInt16 = 4
    /// Execute permission, for searching (passing through) a folder.
    static let search: UInt16 = 1

    /// Whether this user has `permission` (`read` or `search`) on a folder
    /// with `access`: the owner's bits for its owner, else the group's for
    /// its members, else the others' (POSIX's order: an owner denied by the
    /// owner bits is denied, whatever the group bits say).
    func may(_ permission: UInt16, _ access: FolderAccess) -> Bool {
        if isRoot { return true }
        if let acl = access.acl { return may(permission, access, acl) }
        let bits: UInt16
        if access.owner == user {
            bits = access.mode >> 6
        } else if groups.contains(access.group) {
            bits = access.mode >> 3
        } else {
            bits = access.mode
        }
        return bits & permission != 0
    }

    /// POSIX ACL checking (acl(5)): the owner's entry for the owner; a
    /// named user's entry, limited by the mask; else any matching group
    /// entry (the owning group's or a named group's, limited by the mask)
    /// that grants it, and none that matches denies it outright; else the
    /// others' entry.
    private func may(_ permission: UInt16, _ access: FolderAccess, _ acl: [FolderAccess.ACLEntry]) -> Bool {
        let mask = acl.first { $0.tag == FolderAccess.ACLEntry.maskTag }?.permissions ?? 7
        if access.owner == user {
            return (acl.first { $0.tag == FolderAccess.ACLEntry.ownerTag }?.permissions ?? 0) & permission != 0
        }
        if let named = acl.first(where: { $0.tag == FolderAccess.ACLEntry.userTag && $0.id == user }) {
            return named.permissions & mask & permission != 0
        }
        var inGroup = false
        for entry in acl {
            let matches =
                (entry.tag == FolderAccess.ACLEntry.owningGroupTag && groups.contains(access.group))
                || (entry.tag == FolderAccess.ACLEntry.groupTag && groups.contains(entry.id))
            guard matches else { continue }
            inGroup = true
            if entry.permissions & mask & permission != 0 { return true }
        }
        if inGroup { return false }
        return (acl.first { $0.tag == FolderAccess.ACLEntry.otherTag }?.permissions ?? 0) & permission != 0
    }
}

/// Which entries of an index one viewer may see (`Viewer`'s rule),
/// remembered per folder while one slice of a query holds the index.
struct Visibility {
    let viewer: Viewer
    /// Folders known to be reachable (every folder from `/` down to and
    /// including it searchable) or not.
    private var reachable: [UInt32: Bool] = [:]
    /// Scope roots whose folders above, outside the index, are all searchable.
    private var above: [UInt32: Bool] = [:]

    init(viewer: Viewer) {
        self.viewer = viewer
    }

    /// Whether the viewer may see entry `id`: its parent listable and
    /// reachable. A scope root's parent is outside the index: read from
    /// the disk.
    mutating func allows(_ id: UInt32, in index: FileIndex) -> Bool {
        if viewer.isRoot { return true }
        let parent = index.parentColumn[id]
        guard parent != FileIndex.none else { return outsideAllows(rootPath: index.rootPaths[id]) }
        guard let access = index.access(of: parent), viewer.may(Viewer.read, access) else { return false }
        return canReach(parent, in: index)
    }

    /// Whether the viewer may see what is inside `folder`: it is listable
    /// and reachable.
    mutating func allowsContents(of folder: UInt32, in index: FileIndex) -> Bool {
        if viewer.isRoot { return true }
        guard let access = index.access(of: folder), viewer.may(Viewer.read, access) else { return false }
        return canReach(folder, in: index)
    }

    /// Whether every folder from `/` down to `folder` is searchable.
    private mutating func canReach(_ folder: UInt32, in index: FileIndex) -> Bool {
        var chain: [UInt32] = []
        var current = folder
        var result: Bool
        while true {
            if let known = reachable[current] {
                result = known
                break
            }
            chain.append(current)
            guard let access = index.access(of: current), viewer.may(Viewer.search, access) else {
                result = false
                break
            }
            let parent = index.parentColumn[current]
            if parent == FileIndex.none {
                if let known = above[current] {
                    result = known
                } else {
                    result = outsideReaches(rootPath: index.rootPaths[current])
                    above[current] = result
                }
                break
            }
            current = parent
        }
        // Each folder walked is reachable exactly when the walk's end is:
        // all were searchable up to it, and the one that was not is in the
        // chain too.
        for walked in chain { reachable[walked] = result }
        return result
    }

    /// Whether the folders above a scope root (from `/` down to its parent)
    /// are searchable, read from the disk.
    private func outsideReaches(rootPath: FilePath?) -> Bool {
        guard let rootPath else { return false }
        var ancestor = rootPath
        var ancestors: [FilePath] = []
        while ancestor.removeLastComponent(), !ancestor.isEmpty { ancestors.append(ancestor) }
        return ancestors.allSatisfy { folder in
            guard case .success(let status) = FileStatus.of(pathBytes: folder.bytes) else { return false }
            return viewer.may(
                Viewer.search,
                FolderAccess(status))
        }
    }

    /// Whether a scope root itself is visible: its parent on the disk
    /// listable and everything above searchable.
    private func outsideAllows(rootPath: FilePath?) -> Bool {
        guard let rootPath else { return false }
        var parent = rootPath
        guard parent.removeLastComponent(), !parent.isEmpty else { return true }  // `/`
        guard case .success(let status) = FileStatus.of(pathBytes: parent.bytes),
            viewer.may(
                Viewer.read,
                FolderAccess(status))
        else { return false }
        return outsideReaches(rootPath: rootPath)
    }
}
