import Glibc
package import SystemPackage

/// Where the daemons' sockets are, and whether one may be trusted before a
/// byte is sent to it: stated once, for the library (`DaemonPaths`,
/// `UnixSocket.connectToOwnDaemon`, `connectToSystemIndex`) and for the
/// front (`mdq`), which links nothing else of the library.
package enum DaemonSocket {
    /// The longest socket path `sockaddr_un` holds.
    package static let pathLimit = 107

    /// This user's daemon's folders: its state (`$MDQ_STATE_DIR`, else
    /// `$XDG_STATE_HOME/mdq`, else `~/.local/state/mdq`) and the folder of
    /// its socket (`$MDQ_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/mdq`, else
    /// `run` in the state folder, or, when that path is too long for a
    /// socket, the folder recorded in the state folder's `runtime-folder`).
    ///
    /// - Parameter variable: the environment (a variable set and not empty).
    package static func ownFolders(variable: (String) -> String?) -> (
        state: FilePath, runtime: FilePath, recorded: Bool
    ) {
        let state: FilePath
        if let override = variable("MDQ_STATE_DIR") {
            state = FilePath(override)
        } else if let xdg = variable("XDG_STATE_HOME") {
            state = FilePath(xdg).appending("mdq")
        } else {
            state = FilePath(variable("HOME") ?? "/").appending(".local/state/mdq")
        }
        if let override = variable("MDQ_RUNTIME_DIR") { return (state, FilePath(override), false) }
        if let xdg = variable("XDG_RUNTIME_DIR") { return (state, FilePath(xdg).appending("mdq"), false) }
        let inState = state.appending("run")
        if socketPathLength(inState) <= pathLimit { return (state, inState, false) }
        return (state, recordedRuntime(state) ?? inState, true)
    }

    /// The system index's socket folder: `$MDQ_SYSTEM_RUNTIME_DIR`, else
    /// `/run/mdq`.
    package static func systemRuntime(variable: (String) -> String?) -> FilePath {
        FilePath(variable("MDQ_SYSTEM_RUNTIME_DIR") ?? "/run/mdq")
    }

    /// What the checks made before connecting found.
    package enum Verdict: Equatable, Sendable {
        case trusted
        /// Nothing there (the `errno` of the failed look).
        case absent(Int32)
        /// Something there that is not to be trusted, and why.
        case untrusted(String)
    }

    /// Whether this user's daemon's socket may be connected to: its folder
    /// a real folder of this user's that no other may enter, the socket a
    /// socket of this user's or root's. Checked without following a link.
    package static func checkOwn(socket path: FilePath, uid: UInt32 = getuid()) -> Verdict {
        let folder = path.removingLastComponent()
        var info = stat()
        guard folder.withPlatformString({ lstat($0, &info) }) == 0 else { return .absent(errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            return .untrusted("its folder \(folder.string) is not a folder (a symlink?)")
        }
        guard info.st_uid == uid else { return .untrusted("its folder \(folder.string) belongs to uid \(info.st_uid)") }
        guard info.st_mode & 0o077 == 0 else {
            let mode = String(info.st_mode & 0o777, radix: 8)
            return .untrusted("its folder \(folder.string) is open to other users (mode 0\(mode))")
        }
        guard path.withPlatformString({ lstat($0, &info) }) == 0 else { return .absent(errno) }
        guard info.st_mode & S_IFMT == S_IFSOCK else { return .untrusted("\(path.string) is not a socket") }
        guard info.st_uid == uid || info.st_uid == 0 else {
            return .untrusted("\(path.string) belongs to uid \(info.st_uid)")
        }
        return .trusted
    }

    /// Whether the system index's socket may be connected to: its folder a
    /// real folder of root's that no other may write.
    package static func checkSystem(socket path: FilePath) -> Verdict {
        let folder = path.removingLastComponent()
        var info = stat()
        guard folder.withPlatformString({ lstat($0, &info) }) == 0 else { return .absent(errno) }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == 0, info.st_mode & 0o022 == 0 else {
            return .untrusted("its folder \(folder.string) is not root's alone")
        }
        return .trusted
    }

    /// Whether the process behind a connected socket (its uid, from
    /// `SO_PEERCRED`) is one to talk to: this user or root for this user's
    /// daemon, root for the system index.
    package static func peerIsTrusted(_ peer: UInt32, system: Bool, uid: UInt32 = getuid()) -> Bool {
        system ? peer == 0 : peer == uid || peer == 0
    }

    private static func socketPathLength(_ folder: FilePath) -> Int {
        folder.appending("daemon.sock").withPlatformString { strlen($0) }
    }

    /// The runtime folder recorded in the state folder (`runtime-folder`):
    /// an absolute path, at most 4 KiB, spaces around it ignored.
    private static func recordedRuntime(_ state: FilePath) -> FilePath? {
        let file = state.appending("runtime-folder").withPlatformString { Glibc.open($0, O_RDONLY | O_CLOEXEC) }
        guard file >= 0 else { return nil }
        defer { _ = Glibc.close(file) }
        var bytes = [UInt8](repeating: 0, count: 4097)
        let length = bytes.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, 4097) }
        guard length > 0, length <= 4096 else { return nil }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let text = Array(bytes[..<length].drop(while: isSpace).reversed().drop(while: isSpace).reversed())
        guard text.first == UInt8(ascii: "/"), !text.contains(0) else { return nil }
        return (text.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
            FilePath(platformString: $0.baseAddress!)
        }
    }
}
