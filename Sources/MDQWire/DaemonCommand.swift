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
    case subscribe
    /// Only inside a subscription: ends it.
    case unsubscribe
    case follow
    case stop

    /// Whether a user of the system index may give it (root manages the
    /// index).
    package var isForUsersOfTheSystemIndex: Bool {
        switch self {
        case .indexAdd, .indexRemove, .stop: false
        default: true
        }
    }
}
