/// What a live search of other hosts asks the system index
/// (`subscribe-hosts`).
struct HostsSubscription: Sendable {
    /// Host names; nil for every host.
    var hosts: [String]?
    /// Folders of hosts (`--onlyin NAME:/path`).
    var folders: [(host: String, path: [UInt8])] = []
    /// Hosts left out: this one, which its system index answers for.
    var excluded: [String] = []
}
