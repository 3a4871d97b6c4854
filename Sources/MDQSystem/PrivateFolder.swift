import Glibc
package import SystemPackage

/// The process's user.
package enum ProcessIdentity {
    package static var userID: UInt32 { getuid() }
    package static var processID: Int32 { getpid() }

    /// The process's resident memory in bytes (`/proc/self/statm`).
    package static var residentBytes: Int {
        guard let bytes = try? readWholeFile("/proc/self/statm", limit: 4096) else { return 0 }
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// A folder only its owner may enter.
package enum PrivateFolder {
    /// Creates `folder` (and its parents) with mode 0700 if missing, then
    /// checks it is a real folder (not a symlink) owned by this user that
    /// nobody else may enter.
    ///
    /// - Throws: `MetadataError` `.daemon` naming the folder and what is wrong.
    package static func ensure(_ folder: FilePath) throws(MetadataError) {
        var prefix = FilePath(root: folder.root)
        for component in folder.components {
            prefix.append(component)
            let rc = prefix.withPlatformString { mkdir($0, 0o700) }
            if rc != 0 && errno != EEXIST {
                throw MetadataError.daemon("cannot create folder", path: prefix, underlying: Errno(rawValue: errno))
            }
        }
        var info = stat()
        guard folder.withPlatformString({ lstat($0, &info) }) == 0 else {
            throw MetadataError.daemon("cannot read folder", path: folder, underlying: Errno(rawValue: errno))
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw MetadataError.daemon("not a folder (a symlink?); refusing to use it", path: folder)
        }
        guard info.st_uid == getuid() else {
            throw MetadataError.daemon("folder belongs to another user; refusing to use it", path: folder)
        }
        if info.st_mode & 0o077 != 0 {
            // Ours but open to others: close it rather than expose the socket.
            guard folder.withPlatformString({ chmod($0, 0o700) }) == 0 else {
                throw MetadataError.daemon(
                    "folder is open to other users and cannot be closed", path: folder,
                    underlying: Errno(rawValue: errno))
            }
        }
    }

    /// Checks, changing nothing, that `folder` is a real folder owned by
    /// this user that nobody else may enter.
    ///
    /// - Throws: `MetadataError` `.daemon` saying what is wrong.
    static func check(_ folder: FilePath) throws(MetadataError) {
        var info = stat()
        guard folder.withPlatformString({ lstat($0, &info) }) == 0 else {
            throw MetadataError.daemon("cannot read folder", path: folder, underlying: Errno(rawValue: errno))
        }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o077 == 0 else {
            throw MetadataError.daemon("not a private folder of this user", path: folder)
        }
    }

    /// A new folder in `/tmp` with an unguessable name (`mkdtemp`: created
    /// 0700, failing rather than reusing one that exists), for a socket
    /// whose usual folder's path is too long for a socket address.
    ///
    /// - Throws: `MetadataError` `.daemon` when it cannot be made.
    static func makeUnguessable() throws(MetadataError) -> FilePath {
        var template = Array("/tmp/mdq-\(getuid())-XXXXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw MetadataError.daemon("cannot create a runtime folder in /tmp", underlying: Errno(rawValue: errno))
        }
        return FilePath(String(cString: made))
    }
}
