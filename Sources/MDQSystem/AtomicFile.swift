import Glibc
package import SystemPackage

/// A file replaced atomically: written to a temporary beside it, flushed to
/// disk (`fsync`), renamed over the old one and the folder flushed, so a
/// crash at any moment leaves the old file or the new one, never a mix.
/// The file is private to its owner (mode 0600).
package struct AtomicFileWriter: ~Copyable {
    let destination: FilePath
    private let temporary: FilePath
    private let descriptor: FileDescriptor
    private var buffer: [UInt8] = []
    private var finished = false
    /// Bytes written so far (header included).
    package private(set) var offset: Int = 0

    /// Creates the temporary file beside `destination`.
    ///
    /// - Throws: the `Errno` of `open`.
    package init(replacing destination: FilePath) throws(Errno) {
        self.destination = destination
        temporary = FilePath(destination.string + ".tmp-\(getpid())")
        let opened = temporary.withPlatformString { path in
            syscallResult { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        }
        switch opened {
        case .success(let fd): descriptor = FileDescriptor(rawValue: fd)
        case .failure(let error): throw error
        }
        buffer.reserveCapacity(1 << 20)
    }

    deinit {
        if !finished {
            closeDescriptor(descriptor.rawValue)
            _ = temporary.withPlatformString { unlink($0) }
        }
    }

    /// Appends bytes (buffered).
    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        offset += bytes.count
        if buffer.count + bytes.count > buffer.capacity { try flush() }
        if bytes.count >= buffer.capacity {
            try writeAll(bytes)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// Overwrites bytes already written at `position` (a header patched
    /// once the payload's checksum is known).
    package mutating func overwrite(_ bytes: UnsafeRawBufferPointer, at position: Int) throws(Errno) {
        try flush()
        var done = 0
        while done < bytes.count {
            let rc = syscallResult {
                pwrite(descriptor.rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(position + done))
            }
            switch rc {
            case .success(let n): done += n
            case .failure(let error): throw error
            }
        }
    }

    /// Flushes, syncs and renames the file into place, then syncs its folder.
    package mutating func commit() throws(Errno) {
        try flush()
        if case .failure(let error) = syscallResult({ fsync(descriptor.rawValue) }) { throw error }
        closeDescriptor(descriptor.rawValue)
        finished = true
        let renamed = temporary.withPlatformString { from in
            destination.withPlatformString { to in syscallResult { rename(from, to) } }
        }
        if case .failure(let error) = renamed {
            _ = temporary.withPlatformString { unlink($0) }
            throw error
        }
        // The rename itself must reach the disk.
        let folder = destination.removingLastComponent()
        if case .success(let handle) = DirectoryHandle.open(path: folder.isEmpty ? "." : folder) {
            _ = fsync(handle.descriptor.rawValue)
        }
    }

    private mutating func flush() throws(Errno) {
        guard !buffer.isEmpty else { return }
        let pending = buffer
        buffer.removeAll(keepingCapacity: true)
        try withBytes(of: pending) { (bytes) throws(Errno) in try writeAll(bytes) }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < bytes.count {
            switch syscallResult({ Glibc.write(descriptor.rawValue, bytes.baseAddress! + done, bytes.count - done) }) {
            case .success(let n): done += n
            case .failure(let error): throw error
            }
        }
    }

    /// Removes temporaries a writer killed mid-write left beside `destination`.
    package static func removeLeftovers(of destination: FilePath) {
        let folder = destination.removingLastComponent()
        guard let name = destination.lastComponent?.string,
            case .success(let handle) = DirectoryHandle.open(path: folder)
        else { return }
        var reader = DirectoryReader(capacity: 64 * 1024)
        var stale: [String] = []
        _ = reader.forEachEntry(of: handle.descriptor) { entry in
            let entryName = String(
                decoding: UnsafeRawBufferPointer(start: entry.name, count: entry.nameLength), as: UTF8.self)
            if entryName.hasPrefix(name + ".tmp-") { stale.append(entryName) }
        }
        for entry in stale { _ = unlinkat(handle.descriptor.rawValue, entry, 0) }
    }
}

/// `path` opened read-only, and its status; the caller closes it.
private func openForReading(_ path: FilePath) throws(Errno) -> (CInt, stat) {
    let opened = path.withPlatformString { path in syscallResult { open(path, O_RDONLY | O_CLOEXEC) } }
    let fd: CInt
    switch opened {
    case .success(let value): fd = value
    case .failure(let error): throw error
    }
    var info = stat()
    if case .failure(let error) = syscallResult({ fstat(fd, &info) }) {
        closeDescriptor(fd)
        throw error
    }
    return (fd, info)
}

/// Calls `body` with the whole of a regular file mapped read-only, its
/// pages mapped from the page cache at once (`MAP_POPULATE`): no copy, and
/// none of the page clearing a buffer of that size costs (a snapshot of a
/// 10M-entry index is a gigabyte). The mapping ends when `body` returns.
///
/// For files in the caller's own private folder, replaced only by rename:
/// a file truncated by someone else while mapped would fault on access.
///
/// - Throws: the `Errno` of `open`, `fstat` or `mmap`; `EFBIG` past `limit`.
package func withMappedFile<T>(
    _ path: FilePath, limit: Int = 1 << 34, _ body: (UnsafeRawBufferPointer) throws(Errno) -> T
) throws(Errno) -> T {
    let (fd, info) = try openForReading(path)
    defer { closeDescriptor(fd) }
    guard info.st_mode & S_IFMT == S_IFREG else { throw Errno.invalidArgument }
    guard Int(info.st_size) <= limit else { throw Errno.fileTooLarge }
    let length = Int(info.st_size)
    guard length > 0 else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
    // mmap does not fail with EINTR; MAP_FAILED is (void *)-1.
    let mapped: UnsafeMutableRawPointer? = mmap(nil, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)
    guard let mapped, mapped != UnsafeMutableRawPointer(bitPattern: -1) else { throw Errno(rawValue: errno) }
    defer { munmap(mapped, length) }
    return try body(UnsafeRawBufferPointer(start: mapped, count: length))
}

/// Reads a whole file into memory.
///
/// - Throws: the `Errno` of `open`, `fstat` or `read`.
package func readWholeFile(_ path: FilePath, limit: Int = 1 << 34) throws(Errno) -> [UInt8] {
    let (fd, info) = try openForReading(path)
    defer { closeDescriptor(fd) }
    // Files under /proc say they are empty: read until the end either way.
    // One byte more than the size, so the read that meets the end needs
    // no growth; the buffer is not zeroed first (a snapshot is tens of
    // megabytes, read at every daemon start).
    guard Int(info.st_size) <= limit else { throw Errno.fileTooLarge }
    var capacity = max(Int(info.st_size) + 1, 4096)
    var failure: Errno?
    var done = 0
    var bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
        while done < capacity {
            let n = read(fd, buffer.baseAddress! + done, capacity - done)
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                failure = Errno(rawValue: errno)
                break
            }
            done += n
        }
        count = done
    }
    if let failure { throw failure }
    guard done == capacity else { return bytes }
    while true {
        if done == capacity {
            guard capacity < limit else { throw Errno.fileTooLarge }
            capacity = min(capacity * 2, limit)
            bytes += [UInt8](repeating: 0, count: capacity - bytes.count)
        }
        let result = bytes.withUnsafeMutableBytes { buffer in
            syscallResult { read(fd, buffer.baseAddress! + done, capacity - done) }
        }
        switch result {
        case .success(0):
            bytes.removeSubrange(done...)
            return bytes
        case .success(let n): done += n
        case .failure(let error): throw error
        }
    }
}
