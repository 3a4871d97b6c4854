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

    /// The mount points of `mountinfo` text worth indexing under
    /// `configuration`'s prunes.
    package static func parse(
        _ mountinfo: String, configuration: SystemConfiguration = .standard
    ) -> [FilePath] {
        var devices: Set<Substring> = []
        var mounts: [FilePath] = []
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let separator = fields.firstIndex(of: "-"), separator >= 5, separator + 1 < fields.count else {
                continue
            }
            let device = fields[2]
            let root = fields[3]
            let point = unescape(fields[4])
            let type = String(fields[separator + 1])
            guard persistentTypes.contains(type), !configuration.prunedTypes.contains(type), root == "/" else {
                continue
            }
            guard !configuration.prunes(point) else { continue }
            guard devices.insert(device).inserted else { continue }
            mounts.append(FilePath(point))
        }
        return mounts
    }

    /// Every mount point of `mountinfo` text, whatever its filesystem.
    package static func mountPoints(_ mountinfo: String) -> [String] {
        mountinfo.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            return fields.count > 4 ? unescape(fields[4]) : nil
        }
    }

    /// The filesystem type mounted at each mount point (the last mount
    /// there, the one in effect).
    package static func types(_ mountinfo: String) -> [String: String] {
        var types: [String: String] = [:]
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let separator = fields.firstIndex(of: "-"), separator >= 5, separator + 1 < fields.count else {
                continue
            }
            types[unescape(fields[4])] = String(fields[separator + 1])
        }
        return types
    }

    /// The device of the filesystem in effect at each mount point.
    package static func devices(_ mountinfo: String) -> [String: String] {
        var devices: [String: String] = [:]
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4 else { continue }
            devices[unescape(fields[4])] = String(fields[2])
        }
        return devices
    }

    /// The id of the mount in effect at each mount point (a new one each
    /// time something is mounted).
    package static func mountIDs(_ mountinfo: String) -> [String: String] {
        var ids: [String: String] = [:]
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 4 else { continue }
            ids[unescape(fields[4])] = String(fields[0])
        }
        return ids
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
