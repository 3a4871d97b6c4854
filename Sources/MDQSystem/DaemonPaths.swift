import Foundation
import MDQWire
public import SystemPackage

/// Where the index daemon keeps its files.
///
/// - The socket and the lock live in a runtime folder only the user can
///   enter, the first of: `$MDQ_RUNTIME_DIR`; `$XDG_RUNTIME_DIR/mdq`
///   (systemd makes `$XDG_RUNTIME_DIR` private to the user); else `run` in
///   the state folder below. No fallback is a fixed name in a folder every
///   user may write (`/tmp/mdq-<uid>` was: another user could create it
///   first, receive every query and keep the daemon from starting). When
///   the state folder's path is too long for a socket address (107 bytes),
///   the daemon makes a folder with an unguessable name in `/tmp` (0700)
///   and records its path in the state folder (`runtime-folder`), where
///   clients read it.
/// - The snapshot, the list of indexed scopes, the import store and the log
///   live in a state folder: `$MDQ_STATE_DIR`, else `$XDG_STATE_HOME/mdq`,
///   else `~/.local/state/mdq`.
///
/// Both folders are created with mode 0700 and refused when another user
/// owns them or others may enter them; clients refuse a socket whose
/// folder is not so, or whose process is another user's (see
/// `DaemonClient.connect`).
public struct DaemonPaths: Sendable, Hashable {
    public var runtimeDirectory: FilePath
    public var stateDirectory: FilePath
    /// The runtime folder is the recorded one (see the type's discussion):
    /// `prepare` makes and records it when the record is missing or stale.
    var runtimeIsRecorded = false
    /// The system index's folders (`system`): clients trust its socket as
    /// root's (`UnixSocket.connectToSystemIndex`), not as their own.
    public var isSystem = false

    public init(runtimeDirectory: FilePath, stateDirectory: FilePath) {
        self.runtimeDirectory = runtimeDirectory
        self.stateDirectory = stateDirectory
    }

    /// The folders from the environment (see the type's discussion).
    public static var standard: DaemonPaths {
        // Found as the front finds it: one statement of it (MDQWire).
        let (state, runtime, recorded) = DaemonSocket.ownFolders(variable: ProcessEnvironment.variable)
        var paths = DaemonPaths(runtimeDirectory: runtime, stateDirectory: state)
        paths.runtimeIsRecorded = recorded
        return paths
    }

    /// The system index's folders: its state in `$MDQ_SYSTEM_STATE_DIR`,
    /// else `/var/lib/mdq` (root's alone, 0700), and its socket in
    /// `$MDQ_SYSTEM_RUNTIME_DIR`, else `/run/mdq` (root's, 0755: every user
    /// connects, nobody else writes there).
    public static var system: DaemonPaths {
        var paths = DaemonPaths(
            runtimeDirectory: DaemonSocket.systemRuntime(variable: ProcessEnvironment.variable),
            stateDirectory: FilePath(ProcessEnvironment.variable("MDQ_SYSTEM_STATE_DIR") ?? "/var/lib/mdq"))
        paths.isSystem = true
        return paths
    }

    /// Creates the system index's folders: the state folder private, the
    /// runtime folder root's and open for connecting only (0755).
    ///
    /// - Throws: `MetadataError` `.daemon` naming a folder that cannot be
    ///   made, or that another user owns or others may write.
    public func prepareSystem() throws(MetadataError) {
        try PrivateFolder.ensure(stateDirectory)
        try PrivateFolder.ensure(runtimeDirectory)
        guard runtimeDirectory.withPlatformString({ chmod($0, 0o755) }) == 0 else {
            throw MetadataError.daemon(
                "cannot open the socket's folder to other users", path: runtimeDirectory,
                underlying: Errno(rawValue: errno))
        }
    }

    /// Where the runtime folder's path is recorded when the state folder's
    /// path is too long for a socket.
    var runtimeRecord: FilePath { stateDirectory.appending("runtime-folder") }

    /// The socket clients connect to.
    public var socket: FilePath { runtimeDirectory.appending("daemon.sock") }
    /// The lock one daemon holds (its process id inside).
    public var lock: FilePath { runtimeDirectory.appending("daemon.lock") }
    /// The index snapshot.
    public var snapshot: FilePath { stateDirectory.appending("index.snapshot") }
    /// What the importers read from inside the indexed files.
    public var contentStore: FilePath { stateDirectory.appending("content.sqlite") }
    /// The indexed scopes (JSON), so a restart resumes them.
    public var scopes: FilePath { stateDirectory.appending("scopes.json") }
    /// Where `mdq daemon start` sends the daemon's messages.
    public var log: FilePath { stateDirectory.appending("daemon.log") }

    /// Creates both folders (0700) and checks they are private to this user.
    ///
    /// - Throws: `MetadataError` `.daemon` naming a folder that cannot be
    ///   made or that others own or may enter.
    public mutating func prepare() throws(MetadataError) {
        try PrivateFolder.ensure(stateDirectory)
        if runtimeIsRecorded {
            // The recorded folder must still be ours and private; a stale
            // or tampered record is replaced by a new folder.
            let usable =
                runtimeDirectory != stateDirectory.appending("run")
                && (try? PrivateFolder.check(runtimeDirectory)) != nil
            if !usable {
                runtimeDirectory = try PrivateFolder.makeUnguessable()
                let record = Array((runtimeDirectory.string + "\n").utf8)
                do {
                    var writer = try AtomicFileWriter(replacing: runtimeRecord)
                    try withBytes(of: record) { (bytes) throws(Errno) in try writer.write(bytes) }
                    try writer.commit()
                } catch {
                    throw MetadataError.daemon(
                        "cannot record the runtime folder", path: runtimeRecord, underlying: error)
                }
            }
        }
        try PrivateFolder.ensure(runtimeDirectory)
    }
}
