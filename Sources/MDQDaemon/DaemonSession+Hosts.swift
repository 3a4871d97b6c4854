import MDQCore
import MDQEngine
import MDQLive
import MDQSystem
import MDQWire
import SystemPackage

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
    ///
    /// This host's folders the client opened come with the request, each
    /// `descriptor` its number: searched as a local search's scopes are (a
    /// folder the user reaches, through folders they may not list, is
    /// theirs to search).
    func searchHosts(
        _ request: JSONValue, id: [UInt8], descriptors: [ReceivedDescriptor]
    ) throws(ProtocolError) -> Bool {
        try beginQuery()
        defer { daemon.end(.query, for: user) }
        guard daemon.isSystem, let service = daemon.hostSearch.withLock({ $0 }) else {
            throw ProtocolError(
                code: .notCovered, message: "this daemon does not search across hosts (SEARCH in system.conf)")
        }
        var search = try hostSearchRequest(request)
        let counting: Bool
        let items: Bool
        switch request["output"]?.string ?? "paths" {
        case "count": (counting, items) = (true, false)
        case "paths": (counting, items) = (false, false)
        case "items": (counting, items) = (false, true)
        case let other: throw ProtocolError(code: .badRequest, message: "unknown output \"\(other)\"")
        }
        let limit = request["limit"]?.integer.map { Int(clamping: max(0, $0)) }
        let order = try DaemonProtocol.order(request)
        if order != nil, !items {
            throw ProtocolError(
                code: .badRequest, message: "an order is for \"output\":\"items\" (the client sorts them)")
        }
        search.counting = counting
        search.items = items
        if items { search.attributes = try DaemonProtocol.attributes(request) }
        search.limit = limit
        search.order = order
        let predicate = search.predicate
        let fetching = search.attributes
        let seconds = search.budget ?? QueryLimit.defaultSeconds
        // This host's part: the whole index, hidden names included, as
        // this user may see it.
        let scopes = everythingIndexed(narrowedBy: ScopeRules(includeHidden: true))
        let budget = QueryLimit(seconds: seconds, isAbandoned: { [socket] in socket.peerHasGone() })
        let engine = daemon.engine
        let viewer = self.viewer
        // This host's folders as the user reached them: each one the index
        // holds, through the mount it indexes. One the user reaches
        // otherwise (another mount at that path, in a namespace of their
        // own) is judged by the index's records, as another host's is.
        var reaching: Set<[UInt8]> = []
        if viewer != nil {
            for item in request["folders"]?.array ?? [] where item["descriptor"] != nil {
                guard let path = item.bytesField("path") else { continue }
                do {
                    _ = try reachedScope(
                        ScopeRequest(path: FilePath.fromBytes(path), rules: ScopeRules(includeHidden: true)), item,
                        descriptors)
                    reaching.insert(path)
                } catch  where error.code == .notCovered {
                    continue
                }
            }
        }
        let reached = reaching
        // The host each folder was asked of, by path (this host's part is
        // given its paths alone).
        var hosts: [[UInt8]: String] = [:]
        for item in request["folders"]?.array ?? [] {
            if let path = item.bytesField("path"), let host = item["host"]?.string { hosts[path] = host }
        }
        let hostOfFolder = hosts
        let mountPoints = daemon.mountPoints.withLock { $0 }
        let importsContent = daemon.content != nil
        let reply: HostSearchReply
        do {
            reply = try service.answer(search) { folders, counting, limit, first in
                // As a query of this host alone would say it: the whole
                // index, or the folders asked for, each on its own
                // filesystem as the index keeps it (when no other is
                // mounted inside it).
                // This host's `/` is all of it, as a host searched whole.
                let asked =
                    folders.isEmpty || folders.contains(Array("/".utf8))
                    ? scopes
                    : folders.map { bytes in
                        let path = FilePath.fromBytes(bytes)
                        return ScopeRequest(
                            path: path,
                            rules: ScopeRules(
                                includeHidden: true,
                                stayOnFileSystem: !LocalFilesystems.hasMounts(inside: path, among: mountPoints)))
                    }
                guard !asked.isEmpty else { throw MetadataError.daemon("the daemon indexes nothing yet") }
                // Its files' insides, when it holds them (each file as the
                // user may read it); the other hosts' otherwise, said so.
                if !predicate.importedAttributes.isEmpty && !importsContent {
                    throw HostSearchRequest.OwnWithoutContent()
                }
                // Folders the user reached: judged as a local search's.
                var seeing = viewer
                if !folders.isEmpty, folders.allSatisfy(reached.contains) { seeing?.reachedScopes = true }
                // Sorted afterwards by an order whose first are enough: those
                // and their ties, chosen as the index is scanned, of all its
                // matches (not a capped part of them).
                let kept = first.flatMap { counting ? nil : FirstInOrder(order: $0.order, count: $0.count) }
                switch try engine.answer(
                    scopes: asked, predicate: predicate, output: counting ? .count : .entries,
                    limit: kept == nil ? limit : nil, budget: budget, fetching: counting ? [] : fetching,
                    viewer: seeing, admits: kept.map { $0.admits },
                    entries: kept.map { $0.offer })
                {
                case .success(let answer):
                    let entries = kept?.kept ?? answer.entries
                    return (answer.count, entries.map { MetadataItem(daemonEntry: $0, container: nil) })
                case .failure(let uncovered):
                    // A folder of this host asked for: said as another
                    // host's folder it does not index is, `NAME:/path`.
                    if uncovered.gap == nil, let host = hostOfFolder[uncovered.scope.path.bytes] {
                        throw MetadataError.hostScope(
                            "unindexed",
                            path: FilePath.onHost(host, uncovered.scope.path.bytes))
                    }
                    throw MetadataError.daemon(
                        uncovered.gap ?? "the system index does not index \(uncovered.scope.path.string)")
                }
            }
        } catch {
            if budget.isCancelled { return false }
            throw Self.hostSearchError(error)
        }
        var out = JSONWriter(capacity: 1 << 16)
        for warning in reply.warnings {
            DaemonProtocol.begin(id, &out)
            out.raw("\"warning\":")
            out.string(Array(warning.utf8))
            out.raw("}\n")
        }
        if items {
            for item in reply.items {
                DaemonProtocol.begin(id, &out)
                if let host = item.host {
                    out.raw("\"host\":")
                    out.string(host)
                    out.raw(",")
                }
                out.raw("\"stale\":")
                out.bool(item.stale)
                out.raw(",\"item\":")
                DaemonProtocol.writeItem(
                    id: 0, path: item.path, kind: item.kind, metadata: item.metadata, conflicts: false,
                    conflictOriginal: nil, imported: item.imported, to: &out)
                out.raw("}\n")
                if out.bytes.count >= 1 << 16 {
                    guard send(out.bytes) else { return false }
                    out = JSONWriter(capacity: 1 << 16)
                }
            }
        } else if !counting {
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

    /// `subscribe-hosts`: a live search of other hosts for the user asking,
    /// run by the system index when it searches the shared index (`SEARCH`),
    /// for users with no database credential of their own. Request: what
    /// `search-hosts` takes but `output`, `limit` and `order`; `excluded`,
    /// hosts left out (the client's own, which it follows in its system
    /// index); `capacity`, `interval` and `protocol` as `subscribe`; with
    /// `check`, refused or `done`, and nothing runs. The stream is
    /// `subscribe`'s (`result`, `didFinishGathering`, `didUpdate`,
    /// `problems`: a host offline, the shared index lost), items named
    /// `NAME:/path`, until `unsubscribe`; it does not resume (`since` is
    /// answered with every result, `fresh`).
    func subscribeHosts(_ request: JSONValue, id: [UInt8], reader: inout LineReader) throws(ProtocolError) -> Bool {
        guard daemon.isSystem, let service = daemon.hostSearch.withLock({ $0 }) else {
            throw ProtocolError(
                code: .notCovered, message: "this daemon does not search across hosts (SEARCH in system.conf)")
        }
        try checkSubscriptionProtocol(request)
        var search = try hostSearchRequest(request)
        search.items = true
        search.attributes = try DaemonProtocol.attributes(request)
        for name in request["excluded"]?.array ?? [] {
            guard let name = name.string, search.excludedHosts.count < DaemonProtocol.maximumScopes else {
                throw ProtocolError(code: .badRequest, message: "\"excluded\" names hosts")
            }
            search.excludedHosts.append(name)
        }
        if request["check"]?.bool == true {
            try beginQuery()
            defer { daemon.end(.query, for: user) }
            do {
                _ = try service.follow(search, capacity: 0, checkOnly: true, wake: {}, refused: { _ in })
            } catch {
                throw Self.hostSearchError(error, folderErrors: request["folderErrors"]?.bool == true)
            }
            var out = JSONWriter()
            DaemonProtocol.begin(id, &out)
            out.raw("\"done\":true}\n")
            return send(out.bytes)
        }
        try beginSubscription()
        defer { daemon.end(.subscription, for: user) }
        // What may wait for a client that reads slowly, as for `subscribe`.
        let bytes = min(16 << 20, max(1 << 12, Int(clamping: request["capacity"]?.integer ?? (16 << 20))))
        socket.limitSendBuffer(to: bytes)
        let running = Locked<(any HostFollowing)?>(nil)
        let forwarder = SubscriptionForwarder(
            origin: .init(
                epoch: .random(in: 1...UInt64.max),
                resynchronize: { _ in running.withLock { $0 }?.resynchronize() }),
            id: id, socket: socket,
            interval: .nanoseconds(Int64(max(0, min(3600, request["interval"]?.double ?? 0.1)) * 1e9)),
            resuming: request["since"] != nil)
        let following: any HostFollowing
        do {
            // A search that ends by itself (past its results or its
            // budget) ends the stream with why: asked again it would end
            // again.
            let socket = socket
            guard
                let started = try service.follow(
                    search, capacity: max(16, bytes / 256), checkOnly: false, wake: { forwarder.wake() },
                    refused: { reason in
                        _ = forwarder.finish(
                            with: ProtocolError(code: .tooExpensive, message: "query too expensive: \(reason)")
                                .line(id: id))
                        socket.shutdown()
                    })
            else { throw MetadataError.daemon("the live search did not start") }
            following = started
        } catch {
            throw Self.hostSearchError(error, folderErrors: request["folderErrors"]?.bool == true)
        }
        running.withLock { $0 = following }
        forwarder.enqueue(forwarder.line { $0.raw("\"event\":\"didStartGathering\"") })
        forwarder.attach(following.subscription)
        guard WorkerThreads.start(name: "mdq-subscriber", { forwarder.run() }) != nil else {
            forwarder.abandon()
            following.end()
            throw ProtocolError(code: .busy, message: "the daemon cannot take more subscriptions")
        }
        defer {
            following.end()
            forwarder.close()
        }
        return streamUntilUnsubscribed(forwarder, reader: &reader) { following.end() }
    }

    /// A search across hosts' error as the protocol says it: more than an
    /// answer holds or past its budget, a host unknown or a search refused,
    /// or anything else.
    /// - Parameter folderErrors: the client takes `folder` (a live
    ///   search's client of an older mdq would take it for trouble that
    ///   passes, and ask again for ever: it is sent `invalid-argument`).
    static func hostSearchError(_ error: any Error, folderErrors: Bool = true) -> ProtocolError {
        let metadataError = error as? MetadataError
        // A folder of another host the user may not search: the client
        // says it in a local search's words.
        if let metadataError, let path = metadataError.path, let problem = metadataError.hostScope {
            guard folderErrors else { return ProtocolError(code: .invalidArgument, message: metadataError.description) }
            var refusal = ProtocolError(code: .folder, message: metadataError.description)
            refusal.folder = (path.bytes, problem)
            return refusal
        }
        let code: DaemonErrorCode =
            switch metadataError?.code {
            case .tooExpensive?: .tooExpensive
            case .invalidArgument?: .invalidArgument
            default: .badRequest
            }
        return ProtocolError(code: code, message: metadataError?.message ?? "\(error)")
    }

    /// What a search across hosts asks (`search-hosts`, `subscribe-hosts`):
    /// `predicate` (as typed) in its `syntax` (`command-line` or `name`),
    /// `hosts` (names) or `allHosts`, `folders` of hosts, `budget`; the
    /// user asking, by name (as every host judges users; one without a
    /// name here is a stranger everywhere).
    func hostSearchRequest(_ request: JSONValue) throws(ProtocolError) -> HostSearchRequest {
        guard let text = request["predicate"]?.bytes else {
            throw ProtocolError(code: .badRequest, message: "a search needs a \"predicate\"")
        }
        let predicate = try reading { () throws -> MetadataPredicate in
            switch request["syntax"]?.string ?? "command-line" {
            case "command-line":
                return try CommandLineQuery.predicate(
                    text, spotlight: false, timeZone: DaemonProtocol.timeZone(request))
            case "name": return try MetadataPredicate.nameMatching(text)
            case let other: throw ProtocolError(code: .badRequest, message: "unknown syntax \"\(other)\"")
            }
        }
        var hosts: [String]?
        if request["allHosts"]?.bool != true {
            guard let names = request["hosts"]?.array?.compactMap(\.string), !names.isEmpty else {
                throw ProtocolError(code: .badRequest, message: "a search across hosts names \"hosts\" or \"allHosts\"")
            }
            guard names.count <= DaemonCommand.mostHostFolders else {
                throw ProtocolError(
                    code: .invalidArgument,
                    message: "a search across hosts names at most \(DaemonCommand.mostHostFolders) hosts; this one "
                        + "names \(names.count) (--all-hosts searches every one)")
            }
            hosts = names
        }
        let listed = request["folders"]?.array ?? []
        guard listed.count <= DaemonCommand.mostHostFolders else {
            throw ProtocolError(
                code: .invalidArgument,
                message: "a search across hosts names at most \(DaemonCommand.mostHostFolders) folders of hosts "
                    + "(--onlyin NAME:/path); this one names \(listed.count)")
        }
        var folders: [(host: String, path: [UInt8])] = []
        for folder in listed {
            guard let host = folder["host"]?.string, let path = folder["path"]?.bytes, path.first == UInt8(ascii: "/")
            else {
                throw ProtocolError(code: .badRequest, message: "a folder of a host is {\"host\":…,\"path\":\"/…\"}")
            }
            // As mdq's client sends them: UTF-8 (the database's scopes take
            // bytes only from a credential's own search), normalized.
            let components = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
            guard String(validating: path, as: UTF8.self) != nil,
                path == Array("/".utf8)
                    || !components.contains(where: {
                        $0.isEmpty || $0.elementsEqual([0x2E]) || $0.elementsEqual([0x2E, 0x2E])
                    })
            else {
                throw ProtocolError(
                    code: .badRequest,
                    message:
                        "a folder of a host is an absolute path of UTF-8, normalized (no //, . or .., no / at its end)")
            }
            folders.append((host, path))
        }
        var search = HostSearchRequest(predicate: predicate, user: LocalUsers.name(of: user) ?? "", counting: false)
        search.requester = user
        search.hosts = hosts
        search.folders = folders
        search.budget = try allowedSeconds(request)
        search.askedBudget = request["budget"]?.double
        return search
    }

    /// `hosts`: the hosts of the shared index, for `mdq hosts` run by a
    /// user who has no credential of their own, from the system index that
    /// searches it (`SEARCH`). Reply: a `host` line for each (the object
    /// `mdq hosts --json` prints), then `done`.
    func sharedHosts(id: [UInt8]) throws(ProtocolError) -> Bool {
        try beginQuery()
        defer { daemon.end(.query, for: user) }
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
