import Foundation
import Glibc
package import SystemPackage

/// A fresh ext4 filesystem of its own, in an image file mounted through a
/// loop device under a temporary folder: what fanotify's filesystem marks
/// are tested on (a mark covers a whole filesystem, so tests must not share
/// the machine's). Needs root, `mkfs.ext4` and loop devices; unmounted (and
/// its loop device freed) by `unmount()` or when released.
package final class LoopFilesystem {
    /// Where it is mounted.
    package let mountPoint: FilePath
    private let temp: TemporaryDirectory
    private var mounted = true
    /// The image file.
    package var image: String { temp.path.appending("image").string }

    /// Whether this machine can make one (root, mkfs.ext4, mount).
    package static var isAvailable: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/mkfs.ext4")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount")
    }

    /// Makes and mounts a filesystem of `megabytes` (ext4, few inodes per
    /// megabyte unless `inodes` says how many).
    package init(megabytes: Int = 64, inodes: Int? = nil) throws {
        temp = try TemporaryDirectory("mdq-loop")
        // Other users reach the mount point (permission tests ask as them).
        _ = chmod(temp.path.string, 0o755)
        let image = temp.path.appending("image").string
        mountPoint = temp.path.appending("mnt")
        try FileManager.default.createDirectory(atPath: mountPoint.string, withIntermediateDirectories: true)
        guard
            let file = FileHandle(forWritingAtPath: image)
                ?? {
                    FileManager.default.createFile(atPath: image, contents: nil)
                    return FileHandle(forWritingAtPath: image)
                }()
        else { throw Errno(rawValue: errno) }
        try file.truncate(atOffset: UInt64(megabytes) << 20)
        try file.close()
        var format = ["-q", "-F", "-O", "^has_journal", image]
        if let inodes { format.insert(contentsOf: ["-N", String(inodes)], at: 0) }
        try Self.check(Shell.run("/usr/sbin/mkfs.ext4", format), "mkfs.ext4")
        try Self.check(Shell.run("/usr/bin/mount", ["-o", "loop", image, mountPoint.string]), "mount")
    }

    deinit { unmount() }

    /// Mounts it again where it was, after `unmount()`.
    package func mountAgain() throws {
        guard !mounted else { return }
        try Self.check(Shell.run("/usr/bin/mount", ["-o", "loop", image, mountPoint.string]), "mount")
        mounted = true
    }

    /// Unmounts it (lazily if busy); the loop device goes with it.
    package func unmount() {
        guard mounted else { return }
        mounted = false
        if (try? Shell.run("/usr/bin/umount", [mountPoint.string]))?.status != 0 {
            _ = try? Shell.run("/usr/bin/umount", ["-l", mountPoint.string])
        }
    }

    private static func check(_ output: Shell.Output, _ what: String) throws {
        guard output.status == 0 else {
            throw NSError(
                domain: "LoopFilesystem", code: Int(output.status),
                userInfo: [NSLocalizedDescriptionKey: "\(what) failed: \(output.stderrText)"])
        }
    }
}
