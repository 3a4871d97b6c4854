import SystemPackage

/// An entry's permission bits, owner and group, as `stat` reports them,
/// and a folder's POSIX access ACL. The system index keeps one per folder
/// so that each user is answered only what `find` run as that user would
/// print (`Viewer`); every index keeps one per entry for its owner, group
/// and permission attributes (`kMDItemFSOwnerUserID`, ...).
///
/// The index interns them in a table of access classes and stores each
/// entry's class number: an index holds few distinct ones.
public struct EntryAccess: Hashable, Sendable {
    /// The permission bits, with set-user-id, set-group-id and sticky
    /// (`st_mode & 07777`).
    public var mode: UInt16
    public var owner: UInt32
    public var group: UInt32
    /// A folder's POSIX access ACL, when it has one: it decides instead
    /// of the group and other bits. A file's is read only by a system
    /// index that imports what is inside files (whose words a user is
    /// shown only when the file may be read: `FileStatus.readFileACLs`);
    /// other entries' never are.
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

        package init(tag: UInt16, permissions: UInt16, id: UInt32) {
            self.tag = tag
            self.permissions = permissions
            self.id = id
        }

        public static let ownerTag: UInt16 = 0x01
        public static let userTag: UInt16 = 0x02
        public static let owningGroupTag: UInt16 = 0x04
        public static let groupTag: UInt16 = 0x08
        public static let maskTag: UInt16 = 0x10
        public static let otherTag: UInt16 = 0x20
        /// Not the kernel's: an ACL that is there but could not be read or
        /// parsed, which closes the folder to everyone but its owner.
        public static let unreadableTag: UInt16 = 0x8000
        static let unreadable = ACLEntry(tag: unreadableTag, permissions: 0, id: 0)
    }

    /// An entry's access as `stat` (and a folder's ACL) reported it.
    package init(_ status: FileStatus) {
        self.init(
            mode: UInt16(truncatingIfNeeded: status.mode), owner: status.userID, group: status.groupID,
            acl: status.acl)
    }

    /// An ACL in the kernel's `system.posix_acl_access` format (a version
    /// word, then 8-byte entries), or nil when it holds only what the mode
    /// bits say (owner, owning group, other); a malformed one is
    /// `[ACLEntry.unreadable]` (closed to all but the owner).
    static func acl(parsing bytes: UnsafeRawBufferPointer) -> [ACLEntry]? {
        guard bytes.count >= 4, (bytes.count - 4) % 8 == 0, bytes.loadUnaligned(as: UInt32.self) == 2 else {
            return [ACLEntry.unreadable]
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
/// The rule is a walk done as that user, as `find` does it and as plocate
/// decides it (`access(R_OK|X_OK)` on every folder of a path): a name is
/// shown only when the user may list (read) and search (execute) every
/// folder from where the walk starts down to the name's folder. The walk
/// starts at the folders the user opened and passed as the query's scopes
/// (`reachedScopes`), which the kernel let that user reach; a query of
/// everything the index holds starts at `/`. Listing and searching are
/// judged separately, as the walk's own `opendir` and lookups are. Root
/// sees everything.
package struct Viewer: Hashable, Sendable {
    package var user: UInt32
    /// The primary group and the supplementary groups.
    package var groups: Set<UInt32>
    /// Whether the query's scopes are folders this user opened and handed
    /// over (a descriptor each): the walk starts at them, and what lies
    /// above them is not judged (the kernel judged it when the user opened
    /// them). Otherwise the walk starts at `/`.
    package var reachedScopes: Bool

    package init(user: UInt32, groups: Set<UInt32>, reachedScopes: Bool = false) {
        self.user = user
        self.groups = groups
        self.reachedScopes = reachedScopes
    }

    package var isRoot: Bool { user == 0 }

    /// Read permission, for listing a folder.
    package static let read: UInt16 = 4
    /// Execute permission, for searching (passing through) a folder.
    static let search: UInt16 = 1

    /// Whether this user may read a file with `access` (its text, what is
    /// imported from it), as the kernel decides it.
    package func mayRead(_ access: EntryAccess) -> Bool {
        may(Self.read, access)
    }

    /// Whether this user may both list and search a folder with `access`
    /// (two checks, as a walk makes two calls).
    package func mayWalk(_ access: EntryAccess) -> Bool {
        may(Self.read, access) && may(Self.search, access)
    }

    /// Whether this user has every permission in `want` (`read`, `search`)
    /// on a folder with `access`, exactly as the kernel decides it
    /// (`acl_permission_check`): the owner's bits for its owner, whatever
    /// the ACL says; the ACL when the folder has one and its group bits
    /// (which are then the ACL's mask) grant anything; else the group's
    /// bits for its members and the others' for the rest. An ACL whose
    /// mask is `---` is skipped, as Linux skips it.
    func may(_ want: UInt16, _ access: EntryAccess) -> Bool {
        if isRoot { return true }
        var mode = access.mode & 0o777
        if access.owner == user { return (mode >> 6) & want == want }
        if let acl = access.acl {
            // An ACL that could not be read grants nobody else anything.
            if acl.first?.tag == EntryAccess.ACLEntry.unreadableTag { return false }
            if mode & 0o070 != 0 { return aclGrants(want, access, acl) }
        }
        if want & (mode ^ (mode >> 3)) & 7 != 0 && groups.contains(access.group) { mode >>= 3 }
        return want & ~mode & 7 == 0
    }

    /// The kernel's `posix_acl_permission`, entry by entry in the ACL's
    /// (sorted) order: a named user's entry decides under the mask; the
    /// first group entry (owning or named) of the user's that grants all of
    /// `want` decides under the mask; a matching group entry that grants
    /// less denies once no group entry grants it; else the others' entry.
    private func aclGrants(_ want: UInt16, _ access: EntryAccess, _ acl: [EntryAccess.ACLEntry]) -> Bool {
        typealias Entry = EntryAccess.ACLEntry
        func masked(after index: Int) -> Bool {
            let permissions = acl[index].permissions
            guard let mask = acl[(index + 1)...].first(where: { $0.tag == Entry.maskTag }) else {
                return permissions & want == want
            }
            return permissions & mask.permissions & want == want
        }
        var found = false
        for (index, entry) in acl.enumerated() {
            switch entry.tag {
            case Entry.ownerTag:
                if access.owner == user { return entry.permissions & want == want }
            case Entry.userTag:
                if entry.id == user { return masked(after: index) }
            case Entry.owningGroupTag, Entry.groupTag:
                guard groups.contains(entry.tag == Entry.owningGroupTag ? access.group : entry.id) else { continue }
                found = true
                if entry.permissions & want == want { return masked(after: index) }
            case Entry.maskTag:
                continue
            case Entry.otherTag:
                return !found && entry.permissions & want == want
            default:
                return false  // the kernel's EIO: nothing granted
            }
        }
        return false
    }
}

/// The name `EntryAccess` had when only folders kept one.
@available(*, deprecated, renamed: "EntryAccess")
public typealias FolderAccess = EntryAccess
