import MDQCore
import MDQEngine
import MDQLive
import MDQSystem
import MDQWire

extension DaemonSession {
    /// `search-hosts`: a search across hosts for the user asking, answered
    /// by the system index when it searches the shared index (`SEARCH`):
    /// this host's part from the index, the others' from the database over
    /// a connection kept open. Any other daemon, or an answer it would not
    /// give whole, says so (`not-covered`, `bad-request`): the client then
    /// runs the full command, which searches itself and says why not.
    ///
    /// Request: `predicate` (as typed), `syntax` (`command-line` or
    /// `name`), `hosts` (names) or `allHosts`, `output` (`paths` or
    /// `count`), `limit`, `budget`. Reply: a `warning` line for each thing
    /// the user is told first, the paths (`paths`, `bytes`, then the bytes,
    /// each path ended by a NUL), then `done` with the `count`.
    func searchHosts(_ request: JSONValue, id: [UInt8]) throws(ProtocolError) -> Bool {
        try beginQuery()
        defer { daemon.end(.query, for: user) }
        guard daemon.isSystem, let service = daemon.hostSearch.withLock({ $0 }) else {
            throw ProtocolError(
                code: .notCovered, message: "this daemon does not search across hosts (SEARCH in system.conf)")
        }
        guard let text = request["predicate"]?.bytes else {
            throw ProtocolError(code: .badRequest, message: "a search needs a \"predicate\"")
        }
        let predicate = try reading { () throws -> MetadataPredicate in
            switch request["syntax"]?.string ?? "command-line" {
            case "command-line": return try CommandLineQuery.predicate(text, spotlight: false)
            case "name": return try MetadataPredicate.nameMatching(text)
            case let other: throw ProtocolError(code: .badRequest, message: "unknown syntax \"\(other)\"")
            }
        }
        try checkContent(of: predicate)
        var hosts: [String]?
        if request["allHosts"]?.bool != true {
            guard let names = request["hosts"]?.array?.compactMap(\.string), !names.isEmpty,
                names.count <= DaemonProtocol.maximumScopes
            else {
                throw ProtocolError(code: .badRequest, message: "a search across hosts names \"hosts\" or \"allHosts\"")
            }
            hosts = names
        }
        let counting: Bool
        switch request["output"]?.string ?? "paths" {
        case "count": counting = true
        case "paths": counting = false
        case let other: throw ProtocolError(code: .badRequest, message: "unknown output \"\(other)\"")
        }
        let limit = request["limit"]?.integer.map { Int(clamping: max(0, $0)) }
        let seconds = try allowedSeconds(request)
        // The user is judged by name on every host; one without a name
        // here is a stranger everywhere.
        var search = HostSearchRequest(predicate: predicate, user: LocalUsers.name(of: user) ?? "", counting: counting)
        search.hosts = hosts
        search.limit = limit
        search.budget = seconds
        search.askedBudget = request["budget"]?.double
        // This host's part: the whole index, hidden names included, as
        // this user may see it.
        let scopes = everythingIndexed(narrowedBy: ScopeRules(includeHidden: true))
        let budget = QueryLimit(seconds: seconds, isAbandoned: { [socket] in socket.peerHasGone() })
        let engine = daemon.engine
        let viewer = self.viewer
        let reply: HostSearchReply
        do {
            reply = try service.answer(search) { counting, limit in
                // As a query of this host alone would say it.
                guard !scopes.isEmpty else { throw MetadataError.daemon("the daemon indexes nothing yet") }
                switch try engine.answer(
                    scopes: scopes, predicate: predicate, output: counting ? .count : .entries, limit: limit,
                    budget: budget, viewer: viewer)
                {
                case .success(let answer):
                    return (answer.count, answer.entries.map { MetadataItem(daemonEntry: $0, container: nil) })
                case .failure(let uncovered):
                    throw MetadataError.daemon(
                        uncovered.gap ?? "the system index does not index \(uncovered.scope.path.string)")
                }
            }
        } catch {
            if budget.isCancelled { return false }
            let message = (error as? MetadataError)?.message ?? "\(error)"
            throw ProtocolError(code: .badRequest, message: message)
        }
        var out = JSONWriter(capacity: 1 << 16)
        for warning in reply.warnings {
            DaemonProtocol.begin(id, &out)
            out.raw("\"warning\":")
            out.string(Array(warning.utf8))
            out.raw("}\n")
        }
        if !counting {
            DaemonProtocol.pathsHeader(id, paths: reply.count, bytes: reply.paths.count, &out)
            guard send(out.bytes), send(reply.paths) else { return false }
            out = JSONWriter()
        }
        DaemonProtocol.begin(id, &out)
        out.raw("\"done\":true,\"count\":")
        out.integer(reply.count)
        out.raw("}\n")
        return send(out.bytes)
    }

    /// `hosts`: the hosts of the shared index, for `mdq hosts` run by a
    /// user who has no credential of their own, from the system index that
    /// searches it (`SEARCH`). Reply: a `host` line for each (the object
    /// `mdq hosts --json` prints), then `done`.
    func sharedHosts(id: [UInt8]) throws(ProtocolError) -> Bool {
        guard daemon.isSystem, let service = daemon.hostSearch.withLock({ $0 }) else {
            throw ProtocolError(
                code: .notCovered, message: "this daemon does not search across hosts (SEARCH in system.conf)")
        }
        let hosts: [[UInt8]]
        do {
            hosts = try service.hosts()
        } catch {
            throw ProtocolError(code: .badRequest, message: (error as? MetadataError)?.message ?? "\(error)")
        }
        var out = JSONWriter()
        for host in hosts {
            DaemonProtocol.begin(id, &out)
            out.raw("\"host\":")
            out.bytes += host
            out.raw("}\n")
        }
        DaemonProtocol.begin(id, &out)
        out.raw("\"done\":true}\n")
        return send(out.bytes)
    }
}
