import CLinuxSyscalls
import Glibc
import MDQWire
package import SystemPackage

/// A connected or listening Unix stream socket, closed when the last
/// reference goes away. The daemon's transport.
package final class UnixSocket: Sendable {
    package let descriptor: FileDescriptor

    package init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    deinit {
        closeDescriptor(descriptor.rawValue)
    }

    /// `sockaddr_un` for `path`, or ENAMETOOLONG (108 bytes at most).
    private static func withAddress<R>(
        _ path: FilePath, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R
    ) -> Result<R, Errno> {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = path.bytes
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return .failure(.fileNameTooLong) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return .success(
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
            })
    }

    private static func makeSocket() -> Result<UnixSocket, Errno> {
        syscallResult { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
            .map { UnixSocket(FileDescriptor(rawValue: $0)) }
    }

    /// Listens at `path` (which must not exist), readable and writable by
    /// the owner only.
    package static func listen(at path: FilePath, backlog: Int32 = 128) -> Result<UnixSocket, Errno> {
        makeSocket().flatMap { socket in
            let bound = withAddress(path) { address, length in
                syscallResult { bind(socket.descriptor.rawValue, address, length) }
            }.flatMap { $0 }
            if case .failure(let error) = bound { return .failure(error) }
            _ = path.withPlatformString { chmod($0, 0o600) }
            return syscallResult { Glibc.listen(socket.descriptor.rawValue, backlog) }.map { _ in socket }
        }
    }

    /// Connects to the socket at `path`.
    package static func connect(to path: FilePath) -> Result<UnixSocket, Errno> {
        makeSocket().flatMap { socket in
            withAddress(path) { address, length in
                syscallResult { Glibc.connect(socket.descriptor.rawValue, address, length) }
            }.flatMap { $0 }.map { _ in socket }
        }
    }

    /// Why a client would not talk to the socket at a path.
    package enum DaemonConnectFailure: Error {
        /// Nothing there, or nobody listening (a daemon that died).
        case absent(Errno)
        /// Something there this user must not trust: the reason, in words.
        case untrusted(String)
        /// Another failure of `connect`.
        case failed(Errno)
    }

    /// Connects to this user's daemon at `path`, having made sure it is
    /// this user's before a byte is sent: the socket's folder is a real
    /// folder owned by this user and closed to others, the socket file is
    /// this user's (or root's), and the process at the other end runs as
    /// this user or as root (`SO_PEERCRED`, checked after connecting: the
    /// authoritative check, which no swap of folders between the checks can
    /// fool).
    package static func connectToOwnDaemon(at path: FilePath) -> Result<UnixSocket, DaemonConnectFailure> {
        // The checks the front makes too (MDQWire's `DaemonSocket`).
        switch DaemonSocket.checkOwn(socket: path) {
        case .absent(let error): return .failure(.absent(Errno(rawValue: error)))
        case .untrusted(let reason): return .failure(.untrusted(reason))
        case .trusted: return connect(to: path, system: false, otherwise: "")
        }
    }

    /// Connects to `path` and checks the process at the other end
    /// (`SO_PEERCRED`): one whose uid `allowed` refuses is untrusted, said
    /// with `otherwise` after its uid.
    private static func connect(
        to path: FilePath, system: Bool, otherwise: String
    ) -> Result<UnixSocket, DaemonConnectFailure> {
        let socket: UnixSocket
        switch connect(to: path) {
        case .success(let connected): socket = connected
        case .failure(let error) where error == .noSuchFileOrDirectory || error == .connectionRefused:
            return .failure(.absent(error))
        case .failure(let error): return .failure(.failed(error))
        }
        switch socket.peer() {
        case .success(let peer) where DaemonSocket.peerIsTrusted(peer.uid, system: system):
            return .success(socket)
        case .success(let peer):
            return .failure(.untrusted("the process behind \(path.string) runs as uid \(peer.uid)\(otherwise)"))
        case .failure(let error):
            return .failure(.untrusted("cannot tell who is behind \(path.string) (\(error.description))"))
        }
    }

    /// The next connection (waits).
    package func accept() -> Result<UnixSocket, Errno> {
        syscallResult { Glibc.accept(descriptor.rawValue, nil, nil) }.map { fd in
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            return UnixSocket(FileDescriptor(rawValue: fd))
        }
    }

    /// The user id and process id at the other end.
    package func peer() -> Result<(uid: UInt32, pid: Int32), Errno> {
        var uid: UInt32 = 0
        var pid: Int32 = 0
        return syscallResult { mdq_peer_credentials(descriptor.rawValue, &uid, &pid) }.map { _ in (uid, pid) }
    }

    /// The groups of the process at the other end (primary and
    /// supplementary, as they were when it connected).
    package func peerGroups() -> Result<Set<UInt32>, Errno> {
        var primary: UInt32 = 0
        var groups = [UInt32](repeating: 0, count: 65_536)
        let count = groups.withUnsafeMutableBufferPointer { buffer in
            mdq_peer_groups(descriptor.rawValue, &primary, buffer.baseAddress, Int32(buffer.count))
        }
        guard count >= 0 else { return .failure(Errno(rawValue: errno)) }
        return .success(Set(groups.prefix(Int(count))).union([primary]))
    }

    /// Connects to the system index at `path`, having made sure it is the
    /// system's: the socket's folder is a real folder of root's that others
    /// may not write, and the process at the other end runs as root
    /// (`SO_PEERCRED`).
    package static func connectToSystemIndex(at path: FilePath) -> Result<UnixSocket, DaemonConnectFailure> {
        switch DaemonSocket.checkSystem(socket: path) {
        case .absent(let error): return .failure(.absent(Errno(rawValue: error)))
        case .untrusted(let reason): return .failure(.untrusted(reason))
        case .trusted: return connect(to: path, system: true, otherwise: ", not root")
        }
    }

    /// Reads what is there (waiting up to `timeout` milliseconds, -1
    /// forever): empty at the end of the stream, nil on timeout.
    package func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Int32) -> Result<Int?, Errno> {
        var poller = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        switch syscallResult({ poll(&poller, 1, timeout) }) {
        case .failure(let error): return .failure(error)
        case .success(0): return .success(nil)
        case .success: break
        }
        return syscallResult { recv(descriptor.rawValue, buffer.baseAddress, buffer.count, 0) }.map { $0 }
    }

    /// Like `read(into:timeout:)`, also taking the descriptors the peer
    /// sent with the bytes (`SCM_RIGHTS`): at most `capacity`, the rest
    /// closed unread (`truncated`).
    package func read(
        into buffer: UnsafeMutableRawBufferPointer, timeout: Int32, capacity: Int
    ) -> Result<(count: Int, descriptors: [ReceivedDescriptor], truncated: Bool)?, Errno> {
        var poller = pollfd(fd: descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        switch syscallResult({ poll(&poller, 1, timeout) }) {
        case .failure(let error): return .failure(error)
        case .success(0): return .success(nil)
        case .success: break
        }
        var raw = [Int32](repeating: -1, count: max(1, capacity))
        var received: Int32 = 0
        var truncated: Int32 = 0
        let count = syscallResult {
            raw.withUnsafeMutableBufferPointer { fds in
                mdq_receive_with_descriptors(
                    descriptor.rawValue, buffer.baseAddress, buffer.count, fds.baseAddress, Int32(capacity),
                    &received, &truncated)
            }
        }
        return count.map { count in
            (Int(count), raw.prefix(Int(received)).map(ReceivedDescriptor.init), truncated != 0)
        }
    }

    /// Writes all of `bytes` with `descriptors` attached to the first part
    /// (`SCM_RIGHTS`), waiting as long as the peer's buffer is full. Never
    /// raises SIGPIPE.
    package func write(_ bytes: UnsafeRawBufferPointer, passing descriptors: [FileDescriptor]) -> Result<Void, Errno> {
        guard !descriptors.isEmpty, bytes.count > 0 else { return write(bytes) }
        let raw = descriptors.map(\.rawValue)
        let sent = syscallResult {
            raw.withUnsafeBufferPointer { fds in
                mdq_send_with_descriptors(
                    descriptor.rawValue, bytes.baseAddress, bytes.count, fds.baseAddress, Int32(fds.count))
            }
        }
        switch sent {
        case .failure(let error): return .failure(error)
        case .success(let count):
            return write(UnsafeRawBufferPointer(rebasing: bytes[Int(count)...]))
        }
    }

    /// Whether the peer has closed or shut down its end (checked without
    /// waiting or reading): how a long request notices its client left.
    package func peerHasGone() -> Bool {
        // POLLRDHUP (Linux, 0x2000) is behind _GNU_SOURCE in Glibc's module.
        let POLLRDHUP: Int32 = 0x2000
        var poller = pollfd(fd: descriptor.rawValue, events: Int16(POLLRDHUP), revents: 0)
        guard case .success(let ready) = syscallResult({ poll(&poller, 1, 0) }), ready > 0 else { return false }
        return Int32(poller.revents) & (POLLRDHUP | POLLHUP | POLLERR) != 0
    }

    /// Writes all of `bytes`, waiting up to `timeout` milliseconds each time
    /// the peer's buffer is full (-1 forever). Never raises SIGPIPE.
    ///
    /// - Returns: `.timedOut` when the peer does not read in time; the error
    ///   of `send` otherwise (`EPIPE` once the peer is gone).
    package func write(_ bytes: UnsafeRawBufferPointer, timeout: Int32 = -1) -> Result<Void, Errno> {
        var done = 0
        while done < bytes.count {
            let sent = syscallResult {
                send(
                    descriptor.rawValue, bytes.baseAddress! + done, bytes.count - done,
                    Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            switch sent {
            case .success(let n): done += n
            case .failure(.resourceTemporarilyUnavailable):
                var poller = pollfd(fd: descriptor.rawValue, events: Int16(POLLOUT), revents: 0)
                switch syscallResult({ poll(&poller, 1, timeout) }) {
                case .failure(let error): return .failure(error)
                case .success(0): return .failure(.timedOut)
                case .success: continue
                }
            case .failure(let error): return .failure(error)
            }
        }
        return .success(())
    }

    /// Asks the kernel to hold at most about `bytes` written and not yet
    /// read by the peer (`SO_SNDBUF`; it keeps at least its own minimum and
    /// at most `wmem_max`): a writer blocks past it.
    package func limitSendBuffer(to bytes: Int) {
        var size = Int32(clamping: bytes)
        _ = syscallResult {
            setsockopt(descriptor.rawValue, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Shuts both directions down, waking a thread blocked reading it.
    package func shutdown() {
        _ = Glibc.shutdown(descriptor.rawValue, Int32(SHUT_RDWR))
    }

    /// The listening socket a service manager handed over (systemd socket
    /// activation: `LISTEN_PID` is this process, `LISTEN_FDS` is 1, the
    /// socket is descriptor 3), or nil.
    package static func inherited() -> UnixSocket? {
        guard let pid = getenv("LISTEN_PID").map({ String(cString: $0) }), Int32(pid) == getpid(),
            let count = getenv("LISTEN_FDS").map({ String(cString: $0) }), count == "1"
        else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        _ = fcntl(3, F_SETFD, FD_CLOEXEC)
        return UnixSocket(FileDescriptor(rawValue: 3))
    }
}

/// A descriptor another process passed over a socket (`SCM_RIGHTS`),
/// closed when the last reference goes.
package final class ReceivedDescriptor: Sendable {
    package let descriptor: FileDescriptor

    package init(_ raw: Int32) {
        descriptor = FileDescriptor(rawValue: raw)
    }

    deinit {
        closeDescriptor(descriptor.rawValue)
    }

    /// The id of the mount the file was reached through, as this
    /// process's `/proc/self/mountinfo` numbers them (a mount of another
    /// namespace has an id of its own).
    package var mountID: Result<Int, Errno> {
        syscallResult { mdq_descriptor_mount_id(descriptor.rawValue) }.map { Int($0) }
    }

    /// The path the kernel gives the open file (`/proc/self/fd/N`'s link,
    /// from the file itself, not from anything its sender said).
    package var kernelPath: Result<[UInt8], Errno> { descriptorPath(descriptor.rawValue) }
}

/// Folders a client opened to name them to the system index (one per
/// scope, passed with the request): opened with this process's rights,
/// `O_PATH` (reaching a folder needs the right to search those above it,
/// as any walk does; listing it is judged by the service), and closed
/// when the last reference goes.
package final class OpenedFolders: Sendable {
    package let descriptors: [FileDescriptor]

    private init(_ descriptors: [FileDescriptor]) {
        self.descriptors = descriptors
    }

    deinit {
        for descriptor in descriptors { closeDescriptor(descriptor.rawValue) }
    }

    /// A folder that could not be opened, and the kernel's reason.
    package struct Failure: Error {
        package var path: FilePath
        package var error: Errno
    }

    /// Opens each of `paths` as a folder.
    ///
    /// - Returns: the folders, or the first path that could not be opened
    ///   and why (the kernel's answer to this user).
    package static func open(_ paths: [FilePath]) -> Result<OpenedFolders, Failure> {
        var opened: [FileDescriptor] = []
        for path in paths {
            let result = path.withPlatformString { name in
                syscallResult { mdq_open_folder_path(name) }
            }
            switch result {
            case .success(let descriptor): opened.append(FileDescriptor(rawValue: descriptor))
            case .failure(let error):
                for descriptor in opened { closeDescriptor(descriptor.rawValue) }
                return .failure(Failure(path: path, error: error))
            }
        }
        return .success(OpenedFolders(opened))
    }
}

/// An exclusive lock on a file held for the life of the process (`flock`):
/// one daemon per user. Released by the kernel if the process dies.
package final class ProcessLock: Sendable {
    private let descriptor: FileDescriptor

    private init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    deinit {
        closeDescriptor(descriptor.rawValue)
    }

    /// Gives the lock back before the object goes (a daemon stopped in a
    /// process that goes on).
    package func release() {
        _ = flock(descriptor.rawValue, LOCK_UN)
    }

    /// Takes the lock on `path` (created 0600), or nil when another process
    /// holds it; writes this process's id into the file.
    package static func acquire(_ path: FilePath) -> Result<ProcessLock?, Errno> {
        let opened = path.withPlatformString { path in
            syscallResult { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        }
        switch opened {
        case .failure(let error): return .failure(error)
        case .success(let fd):
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let error = Errno(rawValue: errno)
                closeDescriptor(fd)
                return error == .wouldBlock ? .success(nil) : .failure(error)
            }
            _ = ftruncate(fd, 0)
            let pid = Array("\(getpid())\n".utf8)
            _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            return .success(ProcessLock(FileDescriptor(rawValue: fd)))
        }
    }

    /// The process id written in a lock file (the daemon holding it).
    package static func holder(of path: FilePath) -> Int32? {
        guard let bytes = try? readWholeFile(path, limit: 64) else { return nil }
        return Int32(String(decoding: bytes, as: UTF8.self).trimmingWhitespace())
    }
}

extension String {
    /// Without leading and trailing spaces and newlines.
    package func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...end])
    }
}
