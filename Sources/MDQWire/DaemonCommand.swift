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
    /// A live search across hosts, run by the system index for its user
    /// when it searches the shared index (`SEARCH`).
    case subscribeHosts = "subscribe-hosts"
    /// Only inside a subscription: ends it.
    case unsubscribe
    case follow
    case stop

    /// The most folders of hosts (`--onlyin NAME:/path`), and hosts by
    /// name, one search across hosts takes: as the shared index's
    /// `mdq.scope_errors` takes them.
    package static let mostHostFolders = 64

    /// The longest silence a client takes from the system index answering
    /// a `search-hosts`, in seconds: its budget (the system index's own,
    /// 30 s, when none is asked) bounds the whole search, the database's
    /// part and this host's, and a margin covers connecting and sending;
    /// a system index stopped or hung is then said, not waited for.
    package static func searchHostsSilence(budget: Double?) -> Double {
        min(max(budget ?? 30, 0), 86_400) + 30
    }

    /// `"attributes":["kMDItemTitle",…]`, sorted: the imported attributes
    /// whose values a request wants with its items.
    package static func writeAttributes(_ names: [String], to out: inout JSONWriter) {
        out.key("attributes")
        out.raw("[")
        for (i, name) in names.sorted().enumerated() {
            if i > 0 { out.raw(",") }
            out.string(Array(name.utf8))
        }
        out.raw("]")
    }

    /// The fields of a `search-hosts` request after its `command`: the
    /// query as typed (`command-line`, or `name` for `--name`), `count`,
    /// `paths` or `items`, the hosts (nil for every one), folders of hosts
    /// (`--onlyin NAME:/path`, UTF-8), the limit, the budget and, with
    /// `items`, the imported attributes whose values each item brings.
    /// `opened`: how many of the first folders (this host's) the client
    /// opened and passes with the request, each its `descriptor`.
    package static func searchHostsFields(
        _ text: [UInt8], isName: Bool = false, counting: Bool, items: Bool = false, hosts: [String]?,
        folders: [(host: String, path: [UInt8])] = [], opened: Int = 0, limit: Int?, budget: Double? = nil,
        order: (key: String, ascending: Bool)? = nil, attributes: [String] = [], into out: inout JSONWriter
    ) {
        out.raw(isName ? #""syntax":"name","predicate":"# : #""syntax":"command-line","predicate":"#)
        out.string(text)
        out.raw(counting ? #","output":"count""# : items ? #","output":"items""# : #","output":"paths""#)
        if items && !attributes.isEmpty {
            out.raw(",")
            writeAttributes(attributes, to: &out)
        }
        if !folders.isEmpty {
            out.raw(#","folders":["#)
            for (i, folder) in folders.enumerated() {
                if i > 0 { out.raw(",") }
                out.raw(#"{"host":"#)
                out.string(Array(folder.host.utf8))
                out.raw(#","path":"#)
                out.string(folder.path)
                if i < opened {
                    out.raw(#","descriptor":"#)
                    out.integer(i)
                }
                out.raw("}")
            }
            out.raw("]")
            if opened > 0 {
                out.raw(#","descriptors":"#)
                out.integer(opened)
            }
        }
        if let budget {
            out.raw(#","budget":"#)
            out.double(budget)
        }
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
        if let order { orderField(order, into: &out) }
    }

    /// The fields of a `subscribe-hosts` request after its `command`: the
    /// query as `search-hosts` takes it, the hosts left out (`excluded`),
    /// and `check` to be refused or told `done` without a subscription.
    package static func subscribeHostsFields(
        _ text: [UInt8], hosts: [String]?, folders: [(host: String, path: [UInt8])], excluded: [String],
        budget: Double?, check: Bool, protocol version: Int, attributes: [String] = [], into out: inout JSONWriter
    ) {
        out.raw(#""protocol":"#)
        out.integer(version)
        out.raw(#","interval":0,"#)
        searchHostsFields(
            text, counting: false, items: true, hosts: hosts, folders: folders, limit: nil, budget: budget,
            attributes: attributes, into: &out)
        if !excluded.isEmpty {
            out.raw(#","excluded":["#)
            for (i, name) in excluded.enumerated() {
                if i > 0 { out.raw(",") }
                out.string(Array(name.utf8))
            }
            out.raw("]")
        }
        if check { out.raw(#","check":true"#) }
        // It takes a refused folder as final (an older client would ask
        // again for ever: it is sent `invalid-argument`).
        out.raw(#","folderErrors":true"#)
    }

    /// `,"order":{"key":…,"ascending":…}`: the order a client sorts the
    /// results by (`search-hosts`, `query`).
    /// With `thenByPath`, the client orders ties by path and needs the
    /// first `limit` alone, not their ties (`query`).
    package static func orderField(
        _ order: (key: String, ascending: Bool), thenByPath: Bool = false, into out: inout JSONWriter
    ) {
        out.raw(#","order":{"key":"#)
        out.string(Array(order.key.utf8))
        out.raw(#","ascending":"#)
        out.bool(order.ascending)
        if thenByPath { out.raw(#","thenByPath":true"#) }
        out.raw("}")
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
