/// The commands of the daemon protocol (`Documentation/protocol.md#commands`),
/// one vocabulary for the daemon that serves them and the clients that send
/// them.
package enum DaemonCommand: String, Sendable, CaseIterable {
    case hello
    case status
    case indexList = "index.list"
    case indexAdd = "index.add"
    case indexRemove = "index.remove"
    case query
    /// A search across hosts, answered by the system index for its user
    /// when it searches the shared index (`SEARCH`).
    case searchHosts = "search-hosts"
    /// The hosts of the shared index, from the system index when it
    /// searches it (`SEARCH`).
    case hosts
    case subscribe
    /// Only inside a subscription: ends it.
    case unsubscribe
    case follow
    case stop

    /// The fields of a `search-hosts` request after its `command`: the
    /// query as typed (`command-line`, or `name` for `--name`), `count` or
    /// `paths`, the hosts (nil for every one) and the limit.
    package static func searchHostsFields(
        _ text: [UInt8], isName: Bool = false, counting: Bool, hosts: [String]?, limit: Int?, into out: inout JSONWriter
    ) {
        out.raw(isName ? #""syntax":"name","predicate":"# : #""syntax":"command-line","predicate":"#)
        out.string(text)
        out.raw(counting ? #","output":"count""# : #","output":"paths""#)
        if let hosts {
            out.raw(#","hosts":["#)
            for (i, name) in hosts.enumerated() {
                if i > 0 { out.raw(",") }
                out.string(Array(name.utf8))
            }
            out.raw("]")
        } else {
            out.raw(#","allHosts":true"#)
        }
        if let limit {
            out.raw(#","limit":"#)
            out.integer(limit)
        }
    }

    /// Whether a user of the system index may give it (root manages the
    /// index).
    package var isForUsersOfTheSystemIndex: Bool {
        switch self {
        case .indexAdd, .indexRemove, .stop: false
        default: true
        }
    }
}
