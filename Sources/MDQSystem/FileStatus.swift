package import CLinuxSyscalls
import Glibc
import Synchronization
package import SystemPackage

/// What one `statx` call says about an entry, without following symlinks.
package struct FileStatus: Sendable, Equatable {
    package var kind: EntryKind
    package var inode: UInt64
    package var size: UInt64
    package var modificationTime: Timestamp
    /// Absent where the filesystem keeps no birth time.
    package var birthTime: Timestamp?
    /// The last access (`st_atime`): under `relatime`, Linux's default, a
    /// read moves it only when it is older than the modification or a day old.
    package var accessTime: Timestamp
    package var device: DeviceNumber
    /// The permission bits and the owner, for permission checks.
    var mode: UInt32
    package var userID: UInt32
    var groupID: UInt32
    /// A folder's (or, where they are read, a file's) POSIX access ACL,
    /// when it has one beyond its mode bits.
    var acl: [EntryAccess.ACLEntry]?

    /// Whether folders' ACLs are read with their status: only the system
    /// index needs them (to judge what each user may see), so a process
    /// reads them once it serves other users (`readFolderACLs()`); until
    /// then a folder's status costs one `statx`, not a `getxattr` too.
    private static let readsFolderACLs = Atomic<Bool>(false)

    /// From now on, every folder's status carries its ACL.
    package static func readFolderACLs() { readsFolderACLs.store(true, ordering: .relaxed) }

    /// Whether regular files' ACLs are read too (a call more per file): the
    /// system index reads them when it imports what is inside files, whose
    /// words a user is shown only when the file's permissions, ACL
    /// included, let that user read it (`readFileACLs()`).
    private static let readsFileACLs = Atomic<Bool>(false)

    /// From now on, every folder's and regular file's status carries its
    /// ACL.
    package static func readFileACLs() {
        readsFolderACLs.store(true, ordering: .relaxed)
        readsFileACLs.store(true, ordering: .relaxed)
    }

    /// Whether the status of an entry of `kind` carries its ACL.
    private static func readsACL(of kind: EntryKind) -> Bool {
        switch kind {
        case .folder: readsFolderACLs.load(ordering: .relaxed)
        case .file: readsFileACLs.load(ordering: .relaxed)
        default: false
        }
    }

    package init(_ raw: mdq_file_status) {
        kind = EntryKind(mode: raw.mode)
        inode = raw.inode
        size = raw.size
        modificationTime = Timestamp(seconds: raw.modification_seconds, nanoseconds: raw.modification_nanoseconds)
        birthTime =
            raw.has_birth_time != 0
            ? Timestamp(seconds: raw.birth_seconds, nanoseconds: raw.birth_nanoseconds) : nil
        accessTime = Timestamp(seconds: raw.access_seconds, nanoseconds: raw.access_nanoseconds)
        device = DeviceNumber(major: raw.device_major, minor: raw.device_minor)
        mode = raw.mode
        userID = raw.uid
        groupID = raw.gid
    }

    /// `statx` of `name` relative to the open folder `directory`, never
    /// following a final symlink, so no full path is built and paths longer
    /// than `PATH_MAX` work.
    package static func of(
        _ name: UnsafePointer<CChar>, in directory: FileDescriptor
    ) -> Result<FileStatus, Errno> {
        var raw = mdq_file_status()
        return syscallResult { mdq_statx(directory.rawValue, name, 0, &raw) }.map { _ in
            var status = FileStatus(raw)
            if readsACL(of: status.kind) {
                status.acl = Self.acl(directory.rawValue, name)
            }
            return status
        }
    }

    /// A folder's ACL (`mdq_folder_acl`), nil when it has none beyond its
    /// mode bits. One that is there but cannot be read (or is too large
    /// for the size it had a moment before) closes the folder to all but
    /// its owner (`EntryAccess.ACLEntry.unreadable`): a visibility check
    /// never fails open.
    private static func acl(_ directory: CInt, _ name: UnsafePointer<CChar>) -> [EntryAccess.ACLEntry]? {
        var size = 4 + 8 * 64
        for _ in 0..<3 {
            let result = withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) {
                buffer -> Result<[EntryAccess.ACLEntry]?, Errno> in
                syscallResult { mdq_folder_acl(directory, name, buffer.baseAddress, buffer.count) }.map { length in
                    length == 0 ? nil : EntryAccess.acl(parsing: UnsafeRawBufferPointer(rebasing: buffer[..<length]))
                }
            }
            switch result {
            case .success(let acl): return acl
            case .failure(.noData), .failure(.notSupported), .failure(.noSuchFileOrDirectory): return nil
            case .failure(.outOfRange):
                // Larger than the buffer: ask its size, and read again.
                let needed = syscallResult { mdq_folder_acl(directory, name, nil, 0) }
                guard case .success(let length) = needed, length > 0, length <= 1 << 20 else {
                    return [EntryAccess.ACLEntry.unreadable]
                }
                size = length
            case .failure:
                return [EntryAccess.ACLEntry.unreadable]
            }
        }
        return [EntryAccess.ACLEntry.unreadable]
    }

    /// `statx` of an absolute path given as raw bytes, not following a final
    /// symlink; paths longer than `PATH_MAX` go through their open parent.
    package static func of(pathBytes: [UInt8]) -> Result<FileStatus, Errno> {
        if pathBytes.count < Int(PATH_MAX) - 1 {
            var terminated = pathBytes.map { CChar(bitPattern: $0) }
            terminated.append(0)
            return terminated.withUnsafeBufferPointer { of($0.baseAddress!, in: FileDescriptor(rawValue: AT_FDCWD)) }
        }
        guard let slash = pathBytes.lastIndex(of: 0x2F) else { return .failure(.invalidArgument) }
        switch DirectoryHandle.open(pathBytes: Array(pathBytes[..<slash])) {
        case .failure(let error):
            return .failure(error)
        case .success(let parent):
            var name = pathBytes[(slash + 1)...].map { CChar(bitPattern: $0) }
            name.append(0)
            return name.withUnsafeBufferPointer { of($0.baseAddress!, in: parent.descriptor) }
        }
    }

    /// `statx` of an open descriptor itself (`AT_EMPTY_PATH`). Without
    /// `acl`, a folder's ACL is not read even where folders' ACLs are (a
    /// check of which file is open needs only the kind, inode and birth).
    package static func of(descriptor: FileDescriptor, acl: Bool = true) -> Result<FileStatus, Errno> {
        var raw = mdq_file_status()
        return syscallResult { mdq_statx(descriptor.rawValue, "", 0x1000 /* AT_EMPTY_PATH */, &raw) }.map { _ in
            var status = FileStatus(raw)
            if acl && readsACL(of: status.kind) {
                status.acl = Self.acl(descriptor.rawValue, "")
            }
            return status
        }
    }
}

/// A device number (`st_dev`) split as the kernel reports it.
public struct DeviceNumber: Hashable, Sendable {
    public var major: UInt32
    public var minor: UInt32

    public init(major: UInt32, minor: UInt32) {
        self.major = major
        self.minor = minor
    }
}

extension EntryKind {
    package init(mode: UInt32) {
        switch mode & UInt32(S_IFMT) {
        case UInt32(S_IFREG): self = .file
        case UInt32(S_IFDIR): self = .folder
        case UInt32(S_IFLNK): self = .symlink
        default: self = .other
        }
    }

    /// The kind `getdents64` reports in `d_type`, or nil for `DT_UNKNOWN`
    /// (some filesystems never fill it in; the caller must stat).
    package init?(directoryEntryType type: UInt8) {
        switch Int(type) {
        case Int(DT_REG): self = .file
        case Int(DT_DIR): self = .folder
        case Int(DT_LNK): self = .symlink
        case Int(DT_UNKNOWN): return nil
        default: self = .other
        }
    }
}
