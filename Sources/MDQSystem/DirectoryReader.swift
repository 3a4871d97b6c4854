import CLinuxSyscalls
import Glibc
package import SystemPackage

/// Reads a folder's entries with `getdents64` into one large reusable buffer.
///
/// One reader per crawler thread; `forEachEntry` hands out each name as a
/// NUL-terminated pointer into the buffer, valid only during the callback, so
/// listing allocates nothing per entry.
package struct DirectoryReader: ~Copyable {
    private let buffer: UnsafeMutableRawPointer
    private let capacity: Int

    /// - Parameter capacity: bytes per `getdents64` call; 256 KiB lists most
    ///   folders in one call.
    package init(capacity: Int = 256 * 1024) {
        self.capacity = capacity
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
    }

    deinit {
        buffer.deallocate()
    }

    /// One raw directory entry, valid during the callback only.
    package struct Entry {
        /// NUL-terminated name.
        package var name: UnsafePointer<CChar>
        package var nameLength: Int
        /// `d_type`.
        package var type: UInt8
        /// `d_ino`: the inode number a `statx` of it would give, on the
        /// filesystems whose numbers are stable (ext4, xfs, tmpfs; an
        /// overlay's may differ).
        package var inode: UInt64
    }

    /// Calls `body` for every entry of `directory` except `.` and `..`.
    ///
    /// - Returns: `.success` when the listing is complete, or the `Errno` that
    ///   ended it (entries already passed to `body` stay valid results).
    package mutating func forEachEntry(
        of directory: FileDescriptor,
        _ body: (Entry) -> Void
    ) -> Result<Void, Errno> {
        while true {
            let result = syscallResult { mdq_getdents64(directory.rawValue, buffer, capacity) }
            let count: Int
            switch result {
            case .success(let n): count = n
            case .failure(let error): return .failure(error)
            }
            if count == 0 { return .success(()) }
            var offset = 0
            while offset < count {
                // struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name[]
                let record = buffer + offset
                let recordLength = Int(record.loadUnaligned(fromByteOffset: 16, as: UInt16.self))
                let type = record.load(fromByteOffset: 18, as: UInt8.self)
                let inode = record.loadUnaligned(as: UInt64.self)
                let name = UnsafePointer<CChar>((record + 19).assumingMemoryBound(to: CChar.self))
                offset += recordLength
                let length = strlen(name)
                if name[0] == 0x2E && (length == 1 || (length == 2 && name[1] == 0x2E)) { continue }
                body(Entry(name: name, nameLength: length, type: type, inode: inode))
            }
        }
    }
}
