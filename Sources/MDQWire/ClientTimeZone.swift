import Glibc

/// The time zone a client names to a daemon (`"timeZone"` in a request
/// whose query a daemon reads): mdfind's `$time.today` and its kin are the
/// user's days, not the daemon's (the system index runs in its own zone).
package enum ClientTimeZone {
    /// This process's zone as an IANA name (`Europe/Paris`), as the C
    /// library finds it: `$TZ` (a name, or a file under a `zoneinfo`
    /// folder), else `/etc/localtime`'s link; nil when neither names one
    /// (the daemon then reads in its own zone).
    package static func identifier() -> String? {
        if let value = getenv("TZ") {
            var zone = String(cString: value)
            if zone.hasPrefix(":") { zone.removeFirst() }
            guard !zone.isEmpty else { return "UTC" }
            return zone.hasPrefix("/") ? named(byFile: zone) : zone
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/etc/localtime", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return named(byFile: String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// The zone a tz file's path names: what follows its `zoneinfo/`.
    private static func named(byFile path: String) -> String? {
        let bytes = Array(path.utf8)
        let marker = Array("zoneinfo/".utf8)
        guard bytes.count > marker.count,
            let start = (0...(bytes.count - marker.count)).last(where: {
                bytes[$0..<($0 + marker.count)].elementsEqual(marker)
            })
        else { return nil }
        let name = bytes[(start + marker.count)...]
        return name.isEmpty ? nil : String(decoding: name, as: UTF8.self)
    }
}
