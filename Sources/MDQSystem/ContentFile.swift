import CLinuxSyscalls
import Glibc
package import SystemPackage

/// A regular file opened for an importer to read its contents.
///
/// Opened without opening anything that is not a regular file (see
/// `mdq_open_regular_file`: the name is opened with `O_PATH` and checked
/// first, so a FIFO or device named `notes.txt` is never opened, and a
/// symlink is not followed), then read-only, `O_NOCTTY`, `O_NONBLOCK`;
/// its access time is left alone where the kernel allows (`O_NOATIME`,
/// the owner's files only), so indexing does not make every file look
/// recently used. Every read counts against a byte budget: an importer
/// cannot read more of a file than its limit, whatever the file claims
/// about itself.
///
/// The import worker opens nothing: its parent opens the file this way and
/// passes the descriptor (`adopting(_:budget:)`).
package final class ContentFile {
    package let descriptor: FileDescriptor
    /// The size `fstat` gave when the file was opened.
    package let size: Int64
    /// Bytes the importer may still read.
    package private(set) var budget: Int

    private init(descriptor: FileDescriptor, size: Int64, budget: Int) {
        self.descriptor = descriptor
        self.size = size
        self.budget = budget
    }

    deinit {
        closeDescriptor(descriptor.rawValue)
    }

    /// Opens the regular file at `path` read-only: the descriptor the
    /// import pool passes to a worker.
    ///
    /// - Returns: the descriptor (the caller closes it), or the error:
    ///   `ELOOP` for a symlink, `EISDIR` for a folder, `EINVAL` for any
    ///   other kind that is not a regular file (FIFO, socket, device), or
    ///   what `open` said.
    package static func openDescriptor(_ path: FilePath) -> Result<FileDescriptor, Errno> {
        path.withPlatformString { name in syscallResult { mdq_open_regular_file(name) } }.map {
            FileDescriptor(rawValue: $0)
        }
    }

    /// Opens `path` for reading at most `budget` bytes.
    ///
    /// - Returns: the file, or the error (as `openDescriptor`).
    package static func open(_ path: FilePath, budget: Int) -> Result<ContentFile, Errno> {
        openDescriptor(path).flatMap { adopting($0, budget: budget) }
    }

    /// The file open at `descriptor`, which it now owns (closed with it,
    /// also when this fails), for reading at most `budget` bytes.
    ///
    /// - Returns: the file, or `EISDIR` for a folder, `EINVAL` for any
    ///   other kind that is not a regular file, or what `fstat` said.
    package static func adopting(_ descriptor: FileDescriptor, budget: Int) -> Result<ContentFile, Errno> {
        switch FileStatus.of(descriptor: descriptor, acl: false) {
        case .failure(let error):
            closeDescriptor(descriptor.rawValue)
            return .failure(error)
        case .success(let status) where status.kind != .file:
            closeDescriptor(descriptor.rawValue)
            return .failure(status.kind == .folder ? .isDirectory : .invalidArgument)
        case .success(let status):
            return .success(ContentFile(descriptor: descriptor, size: Int64(status.size), budget: budget))
        }
    }

    /// The same open file with a budget of its own (each importer of a
    /// file reads within its own), through a duplicate descriptor.
    ///
    /// - Returns: the file, or the error `dup` gave (`EMFILE`).
    package func duplicate(budget: Int) -> Result<ContentFile, Errno> {
        syscallResult { fcntl(descriptor.rawValue, F_DUPFD_CLOEXEC, 0) }.map {
            ContentFile(descriptor: FileDescriptor(rawValue: $0), size: size, budget: budget)
        }
    }

    /// Up to `count` bytes from `offset` (fewer at the end of the file, or
    /// when the budget runs out: `exhaustedBudget` then says so).
    package func read(at offset: Int64, count: Int) -> Result<[UInt8], Errno> {
        let wanted = max(0, min(count, budget))
        guard wanted > 0, offset >= 0 else { return .success([]) }
        // The buffer is sized by what the file held when opened (one byte
        // more, to meet its end), not by the budget, and never zero-filled:
        // a text import asks for up to 16 MB, and clearing that much for
        // every small file was most of an import's time. A file that grew
        // since is read on in doubling parts, up to `wanted`.
        let left = size > offset ? Int(clamping: size - offset) : 0
        var part = min(wanted, left < Int.max ? left + 1 : left)
        var bytes: [UInt8] = []
        var failure: Errno?
        var ended = false
        while bytes.count < wanted && !ended {
            let start = bytes.count
            let room = min(wanted - start, max(part, 1))
            let read = [UInt8](unsafeUninitializedCapacity: room) { buffer, filled in
                filled = 0
                while filled < room {
                    let result = syscallResult {
                        pread(
                            descriptor.rawValue, buffer.baseAddress! + filled, room - filled,
                            off_t(offset) + off_t(start + filled))
                    }
                    switch result {
                    case .failure(let error):
                        failure = error
                        return
                    case .success(0):
                        ended = true
                        return
                    case .success(let n): filled += n
                    }
                }
            }
            if let failure { return .failure(failure) }
            if bytes.isEmpty { bytes = read } else { bytes += read }
            part = room * 2
        }
        budget -= bytes.count
        return .success(bytes)
    }

    /// A new descriptor for the same open file, for a library that reads
    /// it itself and closes what it is given (Poppler, libzip): such reads
    /// are bounded by the worker's confinement, not by the budget. Nil
    /// when the descriptor limit is reached.
    package func duplicateDescriptor() -> Int32? {
        guard case .success(let fd) = syscallResult({ fcntl(descriptor.rawValue, F_DUPFD_CLOEXEC, 0) }) else {
            return nil
        }
        return fd
    }

    /// Reads into `buffer` from `offset` (fewer bytes at the end of the
    /// file), outside the budget: for a library that seeks about a file
    /// through callbacks (libavformat), whose reads are bounded by its own
    /// limits and the worker's time and memory, as Poppler's are.
    ///
    /// - Returns: the bytes read (0 at the end), or the error.
    package func readOutsideBudget(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) -> Result<Int, Errno> {
        guard let base = buffer.baseAddress, buffer.count > 0, offset >= 0 else { return .success(0) }
        return syscallResult { pread(descriptor.rawValue, base, buffer.count, off_t(offset)) }
    }

    /// Calls `body` with the whole file mapped read-only (the size it had
    /// when opened), for a library that reads from memory (Exiv2): pages
    /// are read as it touches them, as Exiv2 maps a file it opens itself,
    /// outside the budget, within the worker's address-space limit.
    ///
    /// - Returns: what `body` returned, or the error `mmap` gave (`EINVAL`
    ///   for an empty file, `ENOMEM` past the address-space limit).
    package func withMappedBytes<T>(_ body: (UnsafeRawBufferPointer) -> T) -> Result<T, Errno> {
        guard size > 0, size <= Int64(Int.max) else { return .failure(.invalidArgument) }
        let length = Int(size)
        // mmap does not fail with EINTR; MAP_FAILED is (void *)-1.
        let mapped: UnsafeMutableRawPointer? = mmap(nil, length, PROT_READ, MAP_PRIVATE, descriptor.rawValue, 0)
        guard let mapped, mapped != UnsafeMutableRawPointer(bitPattern: -1) else {
            return .failure(Errno(rawValue: errno))
        }
        defer { munmap(mapped, length) }
        return .success(body(UnsafeRawBufferPointer(start: mapped, count: length)))
    }

    /// Whether a read stopped because the budget ran out.
    var exhaustedBudget: Bool { budget <= 0 }

    /// An extended attribute's value, at most `limit` bytes; nil when the
    /// file has none of that name (or the filesystem keeps none).
    package func extendedAttribute(_ name: String, limit: Int = 1 << 16) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: limit)
        let result = buffer.withUnsafeMutableBytes { raw in
            syscallResult { mdq_fgetxattr(descriptor.rawValue, name, raw.baseAddress, limit) }
        }
        guard case .success(let length) = result else { return nil }
        return Array(buffer.prefix(length))
    }

    /// The names of the file's extended attributes (those this process may
    /// read: `user.*`, and others for root).
    package func extendedAttributeNames() -> [String] {
        guard case .success(let length) = syscallResult({ mdq_flistxattr(descriptor.rawValue, nil, 0) }), length > 0
        else { return [] }
        var buffer = [CChar](repeating: 0, count: length)
        guard case .success(let filled) = syscallResult({ mdq_flistxattr(descriptor.rawValue, &buffer, length) })
        else { return [] }
        return buffer.prefix(filled).split(separator: 0).map {
            String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
