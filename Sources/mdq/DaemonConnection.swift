import CLinuxSyscalls
import Glibc
import MDQWire
import SystemPackage

/// A connection to this user's index daemon or the system index, found
/// and trusted by the code the library finds and trusts them with
/// (MDQWire's `DaemonSocket`, under `DaemonPaths.standard` and
/// `UnixSocket.connectToOwnDaemon`); QuickSearchTests check the two agree.
struct DaemonConnection {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// The longest silence taken, in milliseconds: a minute for a query
    /// (see `waitForData`); a search across hosts sends nothing while the
    /// database works, up to its budget
    /// (`DaemonCommand.searchHostsSilence`).
    var silence: Int32 = 60_000

    /// Connected to the user's own daemon, or nil: no daemon, or a socket
    /// or folder that is not the user's (nothing is sent to it; the full
    /// command says why). Found and checked by the library's own code
    /// (MDQWire's `DaemonSocket`).
    static func open() -> DaemonConnection? {
        let path = socketPath()
        guard path.count <= DaemonSocket.pathLimit, DaemonSocket.checkOwn(socket: PathBytes.path(path)) == .trusted
        else { return nil }
        return connect(path, system: false)
    }

    /// Connected to the system index (`mdq system`), or nil: none runs, or
    /// its folder is not root's alone, or root is not at the other end.
    static func openSystem() -> DaemonConnection? {
        let socket = DaemonSocket.systemRuntime(variable: variable).appending("daemon.sock")
        guard socket.bytes.count <= DaemonSocket.pathLimit, DaemonSocket.checkSystem(socket: socket) == .trusted
        else { return nil }
        return connect(socket.bytes, system: true)
    }

    /// A connection to the socket at `path` with a trusted process behind
    /// it (`SO_PEERCRED`), or nil.
    private static func connect(_ path: [UInt8], system: Bool) -> DaemonConnection? {
        guard let connection = connect(path) else { return nil }
        var peerUID: UInt32 = 0
        var peerPID: Int32 = 0
        guard mdq_peer_credentials(connection.descriptor, &peerUID, &peerPID) == 0,
            DaemonSocket.peerIsTrusted(peerUID, system: system)
        else {
            Glibc.close(connection.descriptor)
            return nil
        }
        return connection
    }

    /// A connection to the socket at `path`, or nil.
    private static func connect(_ path: [UInt8]) -> DaemonConnection? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.enumerated() { raw[i] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        return DaemonConnection(descriptor: descriptor)
    }

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Ends the connection.
    func close() {
        _ = Glibc.close(descriptor)
    }

    /// Sends all of `bytes`, with `descriptors` passed along with the
    /// first part (`SCM_RIGHTS`).
    func send(_ bytes: [UInt8], passing descriptors: [Int32] = []) -> Bool {
        var offset = 0
        if !descriptors.isEmpty {
            while true {
                let sent = bytes.withUnsafeBytes { raw in
                    descriptors.withUnsafeBufferPointer { fds in
                        mdq_send_with_descriptors(
                            descriptor, raw.baseAddress, raw.count, fds.baseAddress, Int32(fds.count))
                    }
                }
                if sent < 0 && errno == EINTR { continue }
                guard sent >= 0 else { return false }
                offset = sent
                break
            }
        }
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// The next line (without its newline), or nil at the end, on an error
    /// or after a minute without a byte (the daemon sends progress lines
    /// each second while it works).
    mutating func line() -> [UInt8]? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                return line
            }
            guard fill() else { return nil }
        }
    }

    /// Exactly `count` bytes, or nil when the stream ends first.
    mutating func read(exactly count: Int) -> [UInt8]? {
        let buffered = min(count, buffer.count - start)
        var bytes = Array(buffer[start..<start + buffered])
        start += buffered
        guard buffered < count else { return bytes }
        // The rest straight from the socket into the answer (a part can be
        // megabytes: no copy through the line buffer).
        bytes += repeatElement(0, count: count - buffered)
        var filled = buffered
        let complete = bytes.withUnsafeMutableBytes { destination -> Bool in
            while filled < count {
                guard waitForData() else { return false }
                let got = recv(descriptor, destination.baseAddress! + filled, count - filled, 0)
                if got < 0 && errno == EINTR { continue }
                guard got > 0 else { return false }
                filled += got
            }
            return true
        }
        return complete ? bytes : nil
    }

    private mutating func fill() -> Bool {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        guard waitForData() else { return false }
        let old = buffer.count
        buffer += repeatElement(0, count: 1 << 16)
        let got = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + old, 1 << 16, 0) }
        buffer.removeLast((1 << 16) - max(got, 0))
        return got > 0
    }

    /// Waits until the socket has bytes (or the end), at most `silence`:
    /// a daemon sends a progress line each second while it scans, so one
    /// silent for a minute is stopped or hung, and left to the full
    /// command, which says why. False when it times out or fails.
    private func waitForData() -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&poller, 1, silence)
            if ready > 0 { return true }
            if ready < 0 && errno == EINTR { continue }
            return false
        }
    }

    // MARK: Where the socket is

    /// The socket's path (`DaemonPaths.standard`'s, from the same code).
    static func socketPath() -> [UInt8] {
        DaemonSocket.ownFolders(variable: variable).runtime.appending("daemon.sock").bytes
    }

    /// An environment variable; unset when empty.
    private static func variable(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    /// A path as `FilePath` keeps it (runs of `/` made one, no trailing
    /// `/`), as `DaemonPaths` makes it.
    static func normalized(_ path: [UInt8]) -> [UInt8] {
        PathBytes.path(path).bytes
    }

    static func joined(_ folder: [UInt8], _ name: String) -> [UInt8] {
        PathBytes.path(folder).appending(name).bytes
    }

    /// The folder at `path`, opened to name it to the system index (with
    /// this user's rights: `mdq_open_folder_path`), or -1.
    static func openFolder(_ path: [UInt8]) -> Int32 {
        while true {
            let descriptor = withPath(path) { mdq_open_folder_path($0) }
            if descriptor < 0 && errno == EINTR { continue }
            return descriptor
        }
    }

    /// Calls `body` with the path as a C string (its bytes as they are).
    private static func withPath<T>(_ path: [UInt8], _ body: (UnsafePointer<CChar>) -> T) -> T {
        (path + [0]).withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { body($0.baseAddress!) }
        }
    }
}
