import Glibc
package import SystemPackage

/// An open folder, closed when the last reference goes away.
///
/// The crawler opens each folder relative to its parent's descriptor
/// (`openat`), so a walk never builds a full path and works below `PATH_MAX`
/// limits; a queued child keeps its parent's handle alive until it is opened.
package final class DirectoryHandle: Sendable {
    package let descriptor: FileDescriptor

    private init(_ descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    deinit {
        closeDescriptor(descriptor.rawValue)
    }

    private static let openFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC

    /// Opens a scope root by path. The root itself may be a symlink to a
    /// folder (the user named it); nothing below it is ever followed.
    package static func open(path: FilePath) -> Result<DirectoryHandle, Errno> {
        path.withPlatformString { cPath in
            syscallResult { Glibc.open(cPath, openFlags) }.map { DirectoryHandle(FileDescriptor(rawValue: $0)) }
        }
    }

    /// Opens a folder by absolute path given as raw bytes, following no
    /// symlink below `/`, one component at a time when the path is longer
    /// than `PATH_MAX`.
    package static func open(pathBytes: [UInt8]) -> Result<DirectoryHandle, Errno> {
        if pathBytes.count < Int(PATH_MAX) - 1 {
            var terminated = pathBytes.map { CChar(bitPattern: $0) }
            terminated.append(0)
            return terminated.withUnsafeBufferPointer { cPath in
                syscallResult { Glibc.open(cPath.baseAddress!, openFlags | O_NOFOLLOW) }
                    .map { DirectoryHandle(FileDescriptor(rawValue: $0)) }
            }
        }
        var current: DirectoryHandle
        switch open(path: "/") {
        case .success(let root): current = root
        case .failure(let error): return .failure(error)
        }
        for component in pathBytes.split(separator: 0x2F) {
            var name = component.map { CChar(bitPattern: $0) }
            name.append(0)
            switch name.withUnsafeBufferPointer({ current.openChild($0.baseAddress!) }) {
            case .success(let next): current = next
            case .failure(let error): return .failure(error)
            }
        }
        return .success(current)
    }

    /// Opens the child folder `name` of this folder without following a
    /// symlink (`O_NOFOLLOW`): a symlink that replaced a folder since it was
    /// listed fails with `ELOOP`/`ENOTDIR` instead of leading out of scope.
    package func openChild(_ name: UnsafePointer<CChar>) -> Result<DirectoryHandle, Errno> {
        Self.openChild(name, of: descriptor)
    }

    /// Opens the child folder `name` of the folder open at `directory`,
    /// without following a symlink.
    package static func openChild(_ name: UnsafePointer<CChar>, of directory: FileDescriptor) -> Result<
        DirectoryHandle, Errno
    > {
        syscallResult { Glibc.openat(directory.rawValue, name, openFlags | O_NOFOLLOW) }
            .map { DirectoryHandle(FileDescriptor(rawValue: $0)) }
    }
}
