import Glibc
package import SystemPackage

/// Who owns a user id: the user itself, or the user `/etc/subuid` gives it
/// to as a subordinate id (the ids a user's own user namespaces map to:
/// 65,536 of them each on Debian, Ubuntu and Fedora). Each of those ids
/// connects to a socket as a user of its own, so what one user may spend
/// of a service (`ServiceLimits`) is counted against the owner of the
/// id, or one user could have 65,536 times their share.
package struct SubordinateUsers: Sendable {
    private struct Range: Sendable {
        var owner: UInt32
        var first: UInt32
        var count: UInt32
    }
    private let ranges: [Range]

    /// The ranges of `/etc/subuid` (none when it cannot be read); names
    /// are looked up in the user database.
    package static func read(from path: FilePath = "/etc/subuid") -> SubordinateUsers {
        guard let bytes = try? readWholeFile(path, limit: 1 << 22) else { return SubordinateUsers(ranges: []) }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    /// Lines of `NAME_OR_ID:FIRST:COUNT`; others are skipped.
    package static func parse(_ text: String, lookUp: (String) -> UInt32? = userID(named:)) -> SubordinateUsers {
        var ranges: [Range] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, let first = UInt32(fields[1]), let count = UInt32(fields[2]), count > 0 else {
                continue
            }
            let name = String(fields[0])
            guard let owner = UInt32(name) ?? lookUp(name) else { continue }
            ranges.append(Range(owner: owner, first: first, count: count))
        }
        return SubordinateUsers(ranges: ranges)
    }

    /// The user whose share `user` spends.
    package func owner(of user: UInt32) -> UInt32 {
        for range in ranges where user >= range.first && UInt64(user) < UInt64(range.first) + UInt64(range.count) {
            return range.owner
        }
        return user
    }

    /// A user's id by name (getpwnam_r), or nil.
    package static func userID(named name: String) -> UInt32? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        let status = getpwnam_r(name, &entry, &buffer, buffer.count, &found)
        guard status == 0, found != nil else { return nil }
        return entry.pw_uid
    }
}
