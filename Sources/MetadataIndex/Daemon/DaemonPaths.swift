import Foundation
public import SystemPackage

/// Where the index daemon keeps its files.
///
/// - The socket and the lock live in a runtime folder only the user can
///   enter: `$MDQ_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/mdq` (systemd makes
///   `$XDG_RUNTIME_DIR` private to the user), else `/tmp/mdq-<uid>`.
/// - The snapshot, the list of indexed scopes and the log live in a state
///   folder: `$MDQ_STATE_DIR`, else `$XDG_STATE_HOME/mdq`, else
///   `~/.local/state/mdq`.
///
/// Both folders are created with mode 0700 and refused when another user
/// owns them or others may enter them: no other user can reach the socket
/// or read the index.
public struct DaemonPaths: Sendable, Hashable {
    public var runtimeDirectory: FilePath
    public var stateDirectory: FilePath

    public init(runtimeDirectory: FilePath, stateDirectory: FilePath) {
        self.runtimeDirectory = runtimeDirectory
        self.stateDirectory = stateDirectory
    }

    /// The folders from the environment (see the type's discussion).
    public static var standard: DaemonPaths {
        let uid = ProcessIdentity.userID
        let runtime: FilePath
        if let override = ProcessEnvironment.variable("MDQ_RUNTIME_DIR") {
            runtime = FilePath(override)
        } else if let xdg = ProcessEnvironment.variable("XDG_RUNTIME_DIR") {
            runtime = FilePath(xdg).appending("mdq")
        } else {
            runtime = FilePath("/tmp/mdq-\(uid)")
        }
        let state: FilePath
        if let override = ProcessEnvironment.variable("MDQ_STATE_DIR") {
            state = FilePath(override)
        } else if let xdg = ProcessEnvironment.variable("XDG_STATE_HOME") {
            state = FilePath(xdg).appending("mdq")
        } else {
            state = FilePath(ProcessEnvironment.variable("HOME") ?? "/").appending(".local/state/mdq")
        }
        return DaemonPaths(runtimeDirectory: runtime, stateDirectory: state)
    }

    /// The socket clients connect to.
    public var socket: FilePath { runtimeDirectory.appending("daemon.sock") }
    /// The lock one daemon holds (its process id inside).
    public var lock: FilePath { runtimeDirectory.appending("daemon.lock") }
    /// The index snapshot.
    public var snapshot: FilePath { stateDirectory.appending("index.snapshot") }
    /// The indexed scopes (JSON), so a restart resumes them.
    public var scopes: FilePath { stateDirectory.appending("scopes.json") }
    /// Where `mdq daemon start` sends the daemon's messages.
    public var log: FilePath { stateDirectory.appending("daemon.log") }

    /// Creates both folders (0700) and checks they are private to this user.
    ///
    /// - Throws: `MetadataError` `.daemon` naming a folder that cannot be
    ///   made or that others own or may enter.
    public func prepare() throws(MetadataError) {
        for folder in [runtimeDirectory, stateDirectory] {
            try PrivateFolder.ensure(folder)
        }
    }
}
