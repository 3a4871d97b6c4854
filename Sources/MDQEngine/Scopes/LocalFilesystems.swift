import MDQCore
import MDQSystem
package import SystemPackage

/// The filesystems the system index covers when none are named: every
/// local, persistent filesystem mounted now (`/proc/self/mountinfo`), as
/// `updatedb` picks them: disk filesystems only (no network, pseudo or
/// memory ones), each device once (bind mounts of part of it left out),
/// and none at or under a pruned path (`SystemConfiguration`).
package enum LocalFilesystems {
    /// Filesystem types kept on a disk.
    static let persistentTypes: Set<String> = [
        "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "nilfs2", "bcachefs", "zfs",
    ]
    /// `/proc/self/mountinfo`'s text, or nil when it cannot be read.
    package static func mountTable() -> String? {
        guard let bytes = try? readWholeFile("/proc/self/mountinfo", limit: 1 << 24) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One line of the mount table.
    package struct Mount: Sendable {
        /// The mount's id (a new one each time something is mounted).
        package var id: String
        /// The filesystem's device (`major:minor`).
        package var device: String
        /// The folder of the filesystem mounted (`/` unless a bind mount of part of it).
        package var root: String
        package var point: String
        /// The filesystem type; nil on a line without one.
        package var type: String?
    }

    /// The lines of `mountinfo` text, in order.
    package static func mounts(_ mountinfo: String) -> [Mount] {
        mountinfo.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 4 else { return nil }
            let separator = fields.firstIndex(of: "-")
            let type = separator.flatMap { $0 >= 5 && $0 + 1 < fields.count ? String(fields[$0 + 1]) : nil }
            return Mount(
                id: String(fields[0]), device: String(fields[2]), root: String(fields[3]), point: unescape(fields[4]),
                type: type)
        }
    }

    /// The mount in effect at each mount point (the last one there).
    package static func inEffect(_ mountinfo: String) -> [String: Mount] {
        var mounts: [String: Mount] = [:]
        for mount in Self.mounts(mountinfo) { mounts[mount.point] = mount }
        return mounts
    }

    /// The mount points of `mountinfo` text worth indexing under
    /// `configuration`'s prunes.
    package static func parse(
        _ mountinfo: String, configuration: SystemConfiguration = .standard
    ) -> [FilePath] {
        var devices: Set<String> = []
        var points: [FilePath] = []
        for mount in mounts(mountinfo) {
            guard let type = mount.type, persistentTypes.contains(type), !configuration.prunedTypes.contains(type),
                mount.root == "/"
            else { continue }
            guard !configuration.prunes(mount.point) else { continue }
            guard devices.insert(mount.device).inserted else { continue }
            points.append(FilePath(mount.point))
        }
        return points
    }

    /// Every mount point of `mountinfo` text, whatever its filesystem.
    package static func mountPoints(_ mountinfo: String) -> [String] {
        mounts(mountinfo).map(\.point)
    }

    /// Whether some filesystem is mounted strictly inside `folder`, among
    /// `mountPoints` (then a search of it crosses into other filesystems;
    /// else staying on its own filesystem changes nothing).
    package static func hasMounts(inside folder: FilePath, among mountPoints: [String]) -> Bool {
        let prefix = folder.string == "/" ? "/" : folder.string + "/"
        return mountPoints.contains { $0.hasPrefix(prefix) && $0 != folder.string }
    }

    /// mountinfo's octal escapes (`\040` for a space).
    private static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3,
                let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
