import Glibc

/// The users this host knows (its name service: `/etc/passwd`, LDAP, …),
/// each with its number and every group it is in, as `login` would give
/// it: what the shared index tells other hosts a user of that name is
/// here.
package struct LocalUser: Hashable, Sendable {
    package var name: String
    package var uid: UInt32
    /// The primary group first, then the supplementary ones.
    package var groups: [UInt32]
}

package enum LocalUsers {
    /// The name of the user this process runs as; nil when the name
    /// service has none for its uid.
    package static var currentName: String? { name(of: getuid()) }

    /// The name of the user `uid`; nil when the name service has none.
    /// Safe from any thread (`getpwuid_r`).
    package static func name(of uid: UInt32) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 1 << 14)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name
        else { return nil }
        return String(cString: name)
    }

    /// Every user the name service lists (at most `limit`), in its order.
    /// The name service's enumeration is process-wide state: called from
    /// one thread at a time.
    package static func all(limit: Int = 100_000) -> [LocalUser] {
        var users: [LocalUser] = []
        setpwent()
        defer { endpwent() }
        while users.count < limit, let entry = getpwent() {
            let name = String(cString: entry.pointee.pw_name)
            users.append(
                LocalUser(
                    name: name, uid: entry.pointee.pw_uid, groups: groups(of: name, primary: entry.pointee.pw_gid)))
        }
        return users
    }

    /// The groups of the user `name` whose primary group is `primary`.
    package static func groups(of name: String, primary: UInt32) -> [UInt32] {
        var count: Int32 = 64
        while true {
            var list = [gid_t](repeating: 0, count: Int(count))
            let wanted = count
            if getgrouplist(name, primary, &list, &count) >= 0 {
                var result = [primary]
                for group in list.prefix(Int(count)) where group != primary { result.append(group) }
                return result
            }
            // Too small: `count` now says how many there are.
            guard count > wanted, count < 65_536 else { return [primary] }
        }
    }
}
