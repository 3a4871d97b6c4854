import Foundation
import MDQCore
import MDQEngine
import MDQImport
import MDQSystem
import MDQWire
import SystemPackage

/// One client connection to the daemon, served on its own thread.
final class DaemonSession: Sendable {
    let daemon: IndexDaemon
    let socket: UnixSocket
    /// The user the system index answers (nil: root, or the user daemon's
    /// own user, who may see everything it indexes).
    let viewer: Viewer?
    /// The user at the other end (`SO_PEERCRED`), whose limits count what
    /// this session holds (`ServiceLimits`).
    let user: UInt32

    /// A session counted against `user`'s connections (`IndexDaemon.begin`),
    /// given back when it ends.
    init(daemon: IndexDaemon, socket: UnixSocket, user: UInt32, viewer: Viewer? = nil) {
        self.daemon = daemon
        self.socket = socket
        self.user = user
        self.viewer = viewer
    }

    func run() {
        defer { daemon.end(.connection, for: user) }
        let key = ObjectIdentifier(self)
        let stopping = daemon.state.withLock { s -> Bool in
            s.connections += 1
            s.sessions[key] = socket
            return s.stopping
        }
        defer {
            daemon.state.withLock { s in
                s.connections -= 1
                s.sessions[key] = nil
            }
        }
        guard !stopping else { return }
        var reader = LineReader(
            socket: socket, maximum: DaemonProtocol.maximumRequest, timeout: daemon.requestTimeout,
            descriptorCapacity: viewer == nil ? 0 : DaemonProtocol.maximumDescriptors)
        while true {
            switch reader.next() {
            case .end:
                return
            case .failure(let error):
                send(error.line(id: Array("null".utf8)))
                return
            case .line(let line):
                let keepGoing = handle(line, reader: &reader)
                if !keepGoing { return }
            }
        }
    }

    /// Writes a response (a client gone is the end of the session).
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        withBytes(of: bytes) { socket.write($0) }.isSuccess
    }

    /// Serves one request; false ends the session.
    private func handle(_ line: [UInt8], reader: inout LineReader) -> Bool {
        let request: JSONValue
        do {
            request = try JSONValue.parse(line)
        } catch {
            return send(ProtocolError(code: "bad-request", message: "not JSON: \(error)").line(id: Array("null".utf8)))
        }
        let id = Self.encodeID(request["id"])
        do throws(ProtocolError) {
            // Folders the client opened for this request (its scopes), sent
            // with its bytes; a request that names more than came is refused.
            let passed = Int(clamping: request["descriptors"]?.integer ?? 0)
            let taken =
                passed >= 0 && passed <= DaemonProtocol.maximumDescriptors
                ? reader.takeDescriptors(viewer == nil ? 0 : passed) : nil
            // Descriptors no request claims are not kept (a client sends
            // one request at a time, its descriptors with it).
            reader.dropDescriptors()
            guard let descriptors = taken else {
                throw ProtocolError(
                    code: "bad-request",
                    message: "the request names descriptors (\"descriptors\") that did not come with it")
            }
            // A user of the system index asks; root manages it.
            if viewer != nil, let command = request["command"]?.string,
                ["index.add", "index.remove", "stop"].contains(command)
            {
                throw ProtocolError(code: "forbidden", message: "only root manages the system index (\(command))")
            }
            switch request["command"]?.string {
            case "hello":
                var out = JSONWriter()
                DaemonProtocol.begin(id, &out)
                out.raw("\"protocol\":")
                out.integer(DaemonProtocol.version)
                out.raw(",\"pid\":")
                out.integer(ProcessIdentity.processID)
                out.raw("}\n")
                return send(out.bytes)
            case "status":
                var out = JSONWriter()
                DaemonProtocol.begin(id, &out)
                out.raw("\"status\":{")
                daemon.status(into: &out, for: viewer)
                out.raw("}}\n")
                return send(out.bytes)
            case "index.list":
                var out = JSONWriter()
                DaemonProtocol.begin(id, &out)
                out.key("scopes")
                DaemonProtocol.write(daemon.scopeList, namesOnly: daemon.namesOnlyScopes, to: &out)
                out.raw("}\n")
                return send(out.bytes)
            case "index.add":
                guard let value = request["scope"] else {
                    throw ProtocolError(code: "bad-request", message: "index.add needs a \"scope\"")
                }
                let scope = try DaemonProtocol.scope(value)
                do {
                    try daemon.addScope(scope, content: value["content"]?.bool ?? true)
                } catch {
                    throw ProtocolError(code: "scope", message: error.description)
                }
                var out = JSONWriter()
                DaemonProtocol.begin(id, &out)
                out.raw("\"added\":")
                DaemonProtocol.write(scope, to: &out)
                out.raw(",\"entries\":")
                out.integer(daemon.engine.entryCount)
                out.raw("}\n")
                return send(out.bytes)
            case "index.remove":
                guard let path = request.bytesField("path"), path.first == 0x2F else {
                    throw ProtocolError(code: "bad-request", message: "index.remove needs an absolute \"path\"")
                }
                let removed: Int
                do {
                    removed = try daemon.removeScopes(at: FilePath.fromBytes(path))
                } catch {
                    throw ProtocolError(code: "scope", message: error.description)
                }
                var out = JSONWriter()
                DaemonProtocol.begin(id, &out)
                out.raw("\"removed\":")
                out.integer(removed)
                out.raw("}\n")
                return send(out.bytes)
            case "query":
                return try query(request, id: id, descriptors: descriptors)
            case "subscribe":
                return try subscribe(request, id: id, descriptors: descriptors, reader: &reader)
            case "follow":
                return try follow(request, id: id, descriptors: descriptors, reader: &reader)
            case "stop":
                var out = JSONWriter()
                DaemonProtocol.begin(id, &out)
                out.raw("\"stopping\":true}\n")
                send(out.bytes)
                let daemon = self.daemon
                WorkerThreads.detach(name: "mdq-stop") { daemon.stop() }
                return false
            case let other?:
                throw ProtocolError(code: "unknown-command", message: "unknown command \"\(other)\"")
            case nil:
                throw ProtocolError(code: "bad-request", message: "a request needs a \"command\"")
            }
        } catch {
            return send(error.line(id: id))
        }
    }

    /// The seconds a query may run: what the client asks (`budget`, the
    /// default when it says nothing), at most what the daemon allows any
    /// query (`ServiceLimits.maxBudget`).
    private func allowedSeconds(_ request: JSONValue) throws(ProtocolError) -> Double {
        guard let asked = request["budget"]?.double else {
            return min(QueryLimit.defaultSeconds, daemon.limits.maxBudget)
        }
        guard asked > 0 else { throw ProtocolError(code: "bad-request", message: "\"budget\" must be positive") }
        return min(asked, daemon.limits.maxBudget)
    }

    /// Seconds as said in messages: `30 s`, `2.5 s`.
    static func shown(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e15 ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    /// The request's id, echoed as JSON (a number or a string; null otherwise).
    static func encodeID(_ value: JSONValue?) -> [UInt8] {
        var out = JSONWriter()
        switch value {
        case .integer(let n): out.integer(n)
        case .string(let bytes): out.string(bytes)
        default: out.raw("null")
        }
        return out.bytes
    }

    /// The predicate and scopes of a `query` or `subscribe` request, and
    /// the free text when the predicate searches words (paths answers are
    /// then ranked by it).
    ///
    /// Syntaxes: `predicate` (NSPredicate's), `spotlight` (mdfind's),
    /// `words` (free text over names and text; content indexing only),
    /// `name` (`mdq --name`), and `command-line`: what `mdq QUERY` reads,
    /// interpreted here so that a client needs no parser (free text is
    /// `words` when content is indexed, a name search otherwise).
    ///
    /// A user of the system index names each scope by a folder they opened
    /// (`reachedScope`); the viewer answered is then one whose walk starts
    /// at those folders (`Viewer.reachedScopes`).
    private func predicateAndScopes(
        _ request: JSONValue, descriptors: [ReceivedDescriptor]
    ) throws(ProtocolError) -> (
        predicate: MetadataPredicate, scopes: [ScopeRequest], words: [UInt8]?,
        other: CommandLineQuery.OtherReading?, viewer: Viewer?
    ) {
        guard let text = request["predicate"]?.bytes else {
            throw ProtocolError(code: "bad-request", message: "a query needs a \"predicate\"")
        }
        let predicate: MetadataPredicate
        var words: [UInt8]?
        var other: CommandLineQuery.OtherReading?
        do {
            switch request["syntax"]?.string ?? "predicate" {
            case "predicate": predicate = try MetadataPredicate(formatBytes: text)
            case "spotlight": predicate = try MetadataPredicate(spotlightQueryBytes: text)
            case "name": predicate = try MetadataPredicate.nameMatching(text)
            case "command-line" where daemon.content != nil && CommandLineQuery.isFreeText(text):
                predicate = try MetadataPredicate.words(text)
                words = text
            case "command-line":
                predicate = try CommandLineQuery.predicate(text, spotlight: false)
                other = CommandLineQuery.otherReading(of: text)
            case "words":
                // mdfind's free text, over names and text: only where the
                // text is indexed (else the client searches names).
                guard daemon.content != nil else {
                    throw ProtocolError(
                        code: "not-covered",
                        message: "the daemon does not index what is inside files (content indexing is off)")
                }
                predicate = try MetadataPredicate.words(text)
                words = text
            case let other: throw ProtocolError(code: "bad-request", message: "unknown syntax \"\(other)\"")
            }
        } catch let error as ProtocolError {
            throw error
        } catch let error as MetadataError {
            throw ProtocolError(code: "query-syntax", message: error.message, offset: error.offset)
        } catch {
            throw ProtocolError(code: "query-syntax", message: "\(error)")
        }
        if !predicate.importedAttributes.isEmpty && daemon.content == nil {
            // Without content indexing the index keeps names and stat data
            // only: the client reads inside the files itself.
            throw ProtocolError(
                code: "not-covered", message: "the daemon does not index what is inside files (content indexing is off)"
            )
        }
        var scopes: [ScopeRequest] = []
        var asker = viewer
        if let list = request["scopes"]?.array {
            // Each scope costs a walk per match: a query names a few.
            guard list.count <= DaemonProtocol.maximumScopes else {
                throw ProtocolError(
                    code: "bad-request", message: "a query names at most \(DaemonProtocol.maximumScopes) scopes")
            }
            asker?.reachedScopes = true
            for item in list {
                var scope = try DaemonProtocol.scope(item)
                // The folder as this user reached it, before anything is
                // looked at on the disk (with root's rights) for it.
                let opened = try viewer == nil ? nil : reachedScope(scope, item, descriptors)
                // The system index keeps each filesystem apart: a folder
                // with no other filesystem mounted inside it is the same
                // search on its own filesystem.
                if daemon.isSystem && !scope.rules.stayOnFileSystem
                    && !LocalFilesystems.hasMounts(inside: scope.path, among: daemon.mountPoints.withLock { $0 })
                {
                    scope.rules.stayOnFileSystem = true
                }
                // A folder another filesystem is mounted on: the index holds
                // only the folder beneath, which the path does not show.
                if daemon.isSystem, let device = daemon.engine.rootDevice(holding: scope.path),
                    case .success(let status) = opened.map(Result.success) ?? FileStatus.of(pathBytes: scope.path.bytes),
                    status.device != device
                {
                    throw ProtocolError(
                        code: "not-covered",
                        message: "\(scope.path.string) is on a filesystem the system index does not index")
                }
                if !scopes.contains(scope) { scopes.append(scope) }
            }
        } else {
            scopes = daemon.scopeList.filter(\.live).map(\.scope)
            if scopes.isEmpty {
                throw ProtocolError(code: "not-covered", message: "the daemon indexes nothing yet")
            }
            // Everything indexed, under the query's own rules when it gives them.
            if let rules = request["rules"] {
                let query = try DaemonProtocol.rules(rules)
                for i in scopes.indices { scopes[i].rules = scopes[i].rules.narrowed(by: query) }
            }
        }
        return (predicate, scopes, words, other, asker)
    }

    /// The folder a user of the system index opened for `scope` (the
    /// scope object `item` names it by its place among `descriptors`), as
    /// the status of that very folder: the service never resolves a path a
    /// user gives it (its rights would reach where the user's do not). The
    /// kernel's own path of the folder must be the scope's path, and the
    /// index must hold that folder there; else the scope is answered as any
    /// folder the index does not hold (the client then searches it itself,
    /// with its own rights), which tells the user nothing they could not
    /// learn by opening it.
    ///
    /// - Throws: `bad-request` without a descriptor, or when it is not a
    ///   folder's; `not-covered` as said.
    private func reachedScope(
        _ scope: ScopeRequest, _ item: JSONValue, _ descriptors: [ReceivedDescriptor]
    ) throws(ProtocolError) -> FileStatus {
        guard let number = item["descriptor"]?.integer, number >= 0, number < descriptors.count else {
            throw ProtocolError(
                code: "bad-request",
                message: "the system index takes each scope as a descriptor of its folder, opened by the client "
                    + "and passed with the request (\"descriptor\", SCM_RIGHTS)")
        }
        let opened = descriptors[Int(number)]
        let notCovered = ProtocolError(
            code: "not-covered", message: "the system index does not index \(scope.path.string)")
        // Where the kernel says the folder is, and through which mount, are
        // read without asking the folder's filesystem anything (a user's
        // own FUSE mount could make that wait); a folder shown at the path
        // by a mount namespace of the user's own has another mount.
        guard case .success(let path) = opened.kernelPath, path == scope.path.bytes,
            case .success(let mount) = opened.mountID, daemon.isIndexedMount(mount, holding: scope.path)
        else { throw notCovered }
        guard case .success(let status) = FileStatus.of(descriptor: opened.descriptor, acl: false),
            status.kind == .folder
        else {
            throw ProtocolError(code: "bad-request", message: "the descriptor passed for a scope is not a folder's")
        }
        guard daemon.engine.holdsFolder(at: scope.path, as: status) else { throw notCovered }
        return status
    }

    /// `query`: answered from the live index, or refused as `not-covered`.
    private func query(_ request: JSONValue, id: [UInt8], descriptors: [ReceivedDescriptor]) throws(ProtocolError)
        -> Bool
    {
        // Counted before anything is parsed: a request refused costs nothing.
        guard daemon.begin(.query, for: user) else {
            throw ProtocolError(
                code: "busy",
                message: "too many queries at once: this daemon runs \(daemon.limits.queriesPerUser) per user"
                    + (daemon.isSystem ? " (MAX_QUERIES_PER_USER)" : "") + ", \(daemon.limits.queriesInAll) in all")
        }
        defer { daemon.end(.query, for: user) }
        let (predicate, scopes, words, other, viewer) = try predicateAndScopes(request, descriptors: descriptors)
        let output: OneShotOutput
        switch request["output"]?.string ?? "items" {
        case "count": output = .count
        case "paths": output = .paths
        case "items": output = .entries
        case let other: throw ProtocolError(code: "bad-request", message: "unknown output \"\(other)\"")
        }
        let limit = request["limit"]?.integer.map { Int(clamping: max(0, $0)) }
        let fetching = try DaemonProtocol.attributes(request)
        let seconds = try allowedSeconds(request)
        // The client's connection is polled between slices: one that went
        // away (Ctrl-C, a timeout) stops its query at once.
        let budget = QueryLimit(seconds: seconds, isAbandoned: { [socket] in socket.peerHasGone() })
        let answered: Result<OneShotAnswer, ScopeNotCovered>
        // Free text's paths come ranked: gathered as entries (name and
        // dates), ranked, then cut to the limit. Other paths go out a
        // slice at a time, each part a `paths` line and its bytes, while
        // the next slice is scanned.
        let ranked = words != nil && output == .paths
        let streamsPaths = output == .paths && !ranked
        var sent = true
        do {
            // A long answer is not silence: a `progress` line each second
            // (clients skip lines they do not know), which also keeps the
            // client's idle limit from running out.
            var lastProgress = ContinuousClock.now
            let stream: (([UInt8], Int) -> Bool)? =
                streamsPaths
                ? { [self] paths, count in
                    var header = JSONWriter()
                    DaemonProtocol.begin(id, &header)
                    header.raw("\"paths\":")
                    header.integer(count)
                    header.raw(",\"bytes\":")
                    header.integer(paths.count)
                    header.raw("}\n")
                    sent = send(header.bytes) && send(paths)
                    return sent
                } : nil
            // Items go out a slice at a time too, as `item` lines: a
            // million matches never wait in the daemon's memory at once.
            let entries: (([EntrySnapshot]) -> Bool)? =
                output == .entries
                ? { [self] entries in
                    var out = JSONWriter(capacity: 1 << 16)
                    for entry in entries {
                        DaemonProtocol.begin(id, &out)
                        out.raw("\"item\":")
                        DaemonProtocol.writeItem(entry, to: &out)
                        out.raw("}\n")
                        if out.bytes.count >= 1 << 16 {
                            guard send(out.bytes) else { return false }
                            out = JSONWriter(capacity: 1 << 16)
                        }
                    }
                    sent = out.bytes.isEmpty || send(out.bytes)
                    return sent
                } : nil
            answered = try daemon.engine.answer(
                scopes: scopes, predicate: predicate, output: ranked ? .entries : output, limit: ranked ? nil : limit,
                budget: budget,
                fetching: fetching, viewer: viewer,
                progress: { scanned, total in
                    let now = ContinuousClock.now
                    guard now - lastProgress >= .seconds(1) else { return }
                    lastProgress = now
                    var out = JSONWriter()
                    DaemonProtocol.begin(id, &out)
                    // A user of the system index learns how far, not how
                    // many entries the index holds.
                    let (done, of) = self.viewer == nil ? (scanned, total) : (scanned * 1000 / max(1, total), 1000)
                    out.raw("\"progress\":{\"scanned\":")
                    out.integer(done)
                    out.raw(",\"of\":")
                    out.integer(of)
                    out.raw("}}\n")
                    if !self.send(out.bytes) { budget.cancel() }
                },
                stream: stream, entries: entries)
        } catch {
            if budget.isCancelled || !sent {
                daemon.state.withLock { $0.cancelledQueries += 1 }
                return false
            }
            if let asked = request["budget"]?.double, asked > seconds {
                // The client asked for more than any query may have.
                throw ProtocolError(
                    code: "too-expensive",
                    message: "query too expensive: it ran past \(Self.shown(seconds)), the most this daemon allows "
                        + "any query\(daemon.isSystem ? " (MAX_QUERY_SECONDS)" : ""); simplify the MATCHES pattern "
                        + "or narrow the scope")
            }
            throw ProtocolError(code: "too-expensive", message: error.message)
        }
        var answer: OneShotAnswer
        switch answered {
        case .failure(let uncovered):
            throw ProtocolError(
                code: "not-covered",
                message: uncovered.gap ?? "the daemon does not index \(uncovered.scope.path.string)")
        case .success(let value): answer = value
        }
        if let words, ranked {
            let items = answer.entries.map { MetadataItem(daemonEntry: $0, container: nil) }
            var ranked = MetadataPredicate.rankWords(items, text: words)
            if let limit, ranked.count > limit { ranked.removeLast(ranked.count - limit) }
            answer.entries = []
            answer.count = ranked.count
            for item in ranked {
                answer.paths += item.pathBytes
                answer.paths.append(0)
            }
        }
        var out = JSONWriter(capacity: 1 << 16)
        switch output {
        case .count:
            break
        case .paths where streamsPaths:
            break  // sent as it was scanned
        case .paths:
            DaemonProtocol.begin(id, &out)
            out.raw("\"paths\":")
            out.integer(answer.count)
            out.raw(",\"bytes\":")
            out.integer(answer.paths.count)
            out.raw("}\n")
            guard send(out.bytes), send(answer.paths) else { return false }
            out = JSONWriter()
        case .entries:
            break  // sent as it was scanned
        }
        // Free text that matched nothing as one piece: how many names hold
        // each of its words (mdfind's reading), said in a note.
        var note: String?
        if answer.count == 0, let other,
            case .success(let counted)? = try? daemon.engine.answer(
                scopes: scopes, predicate: other.predicate, output: .count, limit: nil, budget: budget, fetching: [],
                viewer: viewer, progress: { _, _ in }, stream: nil),
            counted.count > 0
        {
            note = other.note(counted.count)
        }
        DaemonProtocol.begin(id, &out)
        out.raw("\"done\":true,\"count\":")
        out.integer(answer.count)
        out.raw(",\"stale\":")
        out.bool(answer.stale)
        if let note {
            out.raw(",\"note\":")
            out.string(Array(note.utf8))
        }
        if answer.importing > 0 {
            out.raw(",\"importing\":")
            out.integer(answer.importing)
        }
        out.raw("}\n")
        return send(out.bytes)
    }

    /// `subscribe`: a live query on the daemon's engine, its events
    /// forwarded until the client sends `unsubscribe` or goes away.
    private func subscribe(
        _ request: JSONValue, id: [UInt8], descriptors: [ReceivedDescriptor], reader: inout LineReader
    ) throws(ProtocolError) -> Bool {
        guard daemon.begin(.subscription, for: user) else {
            throw ProtocolError(
                code: "busy",
                message: "too many live queries: this daemon keeps \(daemon.limits.subscriptionsPerUser) per user"
                    + (daemon.isSystem ? " (MAX_SUBSCRIPTIONS_PER_USER)" : "")
                    + ", \(daemon.limits.subscriptionsInAll) in all")
        }
        defer { daemon.end(.subscription, for: user) }
        let (predicate, scopes, _, _, viewer) = try predicateAndScopes(request, descriptors: descriptors)
        // A user of the system index follows what it indexes; it never
        // makes root's index crawl or watch anything new.
        if viewer != nil, let uncovered = scopes.first(where: { !daemon.engine.covers($0) }) {
            throw ProtocolError(
                code: "not-covered", message: "the system index does not index \(uncovered.path.string)")
        }
        let query = MetadataQuery(engineProvider: { [engine = daemon.engine] in engine })
        query.predicate = predicate
        query.fetchedAttributes = try DaemonProtocol.attributes(request).map(\.rawValue)
        if let container = request.bytesField("container"), container.first == 0x2F {
            var named = UbiquityContainer(path: FilePath.fromBytes(container))
            if viewer != nil {
                // The system index reads no user's registry with its own
                // rights: the client says its container's external folders
                // (they only mark which of its own results are external).
                named.knownExternalFolders = (request["externalFolders"]?.array ?? []).prefix(64).compactMap {
                    $0.bytes.flatMap { $0.first == 0x2F && !$0.contains(0) ? FilePath.fromBytes($0) : nil }
                }
            }
            query.container = named
        }
        query.notificationBatchingInterval = max(0, request["interval"]?.double ?? 0.1)
        query.budget = try allowedSeconds(request)
        query.state.withLock { [viewer] in
            $0.configuration.scopeRequests = scopes
            $0.configuration.viewer = viewer
        }
        // What may wait for a client that reads slowly, at most 16 MiB for a
        // user of the system index (256 MiB for a daemon's own user): past
        // it, the client is told to resynchronise.
        let ceiling = viewer == nil ? 1 << 28 : 16 << 20
        let capacity = min(ceiling, max(1 << 12, Int(clamping: request["capacity"]?.integer ?? (16 << 20))))
        let forwarder = SubscriptionForwarder(query: query, id: id, socket: socket, capacity: capacity)
        query.state.withLock { s in s.eventHandler = { event in forwarder.forward(event) } }
        guard WorkerThreads.start(name: "mdq-subscriber", { forwarder.writeLoop() }) != nil else {
            throw ProtocolError(code: "busy", message: "the daemon cannot take more subscriptions")
        }
        query.start()
        defer {
            query.stop()
            forwarder.close()
        }
        // Only `unsubscribe` is read now; the stream ends with the connection.
        while true {
            switch reader.next(idle: -1) {
            case .end, .failure:
                return false
            case .line(let line):
                guard let value = try? JSONValue.parse(line), value["command"]?.string == "unsubscribe" else {
                    let queued = forwarder.enqueue(
                        ProtocolError(
                            code: "bad-request", message: "only unsubscribe is accepted during a subscription"
                        )
                        .line(id: Self.encodeID((try? JSONValue.parse(line))?["id"])))
                    // A client that writes without reading loses its
                    // subscription, not the daemon its memory (nor a
                    // thread blocked writing to it).
                    if !queued {
                        forwarder.close()
                        socket.shutdown()
                        return false
                    }
                    continue
                }
                query.stop()
                var out = JSONWriter()
                DaemonProtocol.begin(id, &out)
                out.raw("\"event\":\"ended\"}\n")
                forwarder.enqueue(out.bytes)
                forwarder.drainAndClose()
                return true
            }
        }
    }
}

extension DaemonSession {
    /// `follow`: the events the engine applies in a folder it keeps live,
    /// as the inotify events a watch on each folder would give, with the
    /// folder's file handle and path (`EventFollower`), until the client
    /// goes away. Another daemon follows this one so (a user's daemon
    /// following the system index: `SystemIndexFeed`) instead of watching
    /// the folders itself.
    /// Only a folder the index lists, on the filesystem of its root.
    func follow(
        _ request: JSONValue, id: [UInt8], descriptors: [ReceivedDescriptor], reader: inout LineReader
    ) throws(ProtocolError) -> Bool {
        guard let value = request["scope"] else {
            throw ProtocolError(code: "bad-request", message: "follow needs a \"scope\"")
        }
        let scope = try DaemonProtocol.scope(value)
        let path = scope.path
        // A user follows a folder they opened (`reachedScope`).
        let opened = try viewer == nil ? nil : reachedScope(scope, value, descriptors)
        let engine = daemon.engine
        let whole = ScopeRequest(path: path, rules: ScopeRules(includeHidden: true, stayOnFileSystem: true))
        guard engine.covers(whole) || engine.covers(ScopeRequest(path: path, rules: ScopeRules(includeHidden: true)))
        else {
            throw ProtocolError(code: "not-covered", message: "\(path.string) is not kept live here")
        }
        // A filesystem mounted there is another one: nothing would be told.
        guard let device = engine.rootDevice(holding: path),
            case .success(let status) = opened.map(Result.success) ?? FileStatus.of(pathBytes: path.bytes),
            status.device == device
        else {
            throw ProtocolError(code: "not-covered", message: "\(path.string) is on another filesystem")
        }
        guard engine.followsByHandle(path) else {
            throw ProtocolError(code: "not-covered", message: "\(path.string) is watched folder by folder here")
        }
        var asker = viewer
        asker?.reachedScopes = true
        let follower = EventFollower(scope: path.bytes, device: device, viewer: asker)
        // Each follower costs the engine a check per event it applies.
        guard daemon.begin(.follower, for: user) else {
            throw ProtocolError(
                code: "busy",
                message: "too many followers: this daemon tells \(daemon.limits.followersPerUser) folders per user, "
                    + "\(daemon.limits.followersInAll) in all")
        }
        defer { daemon.end(.follower, for: user) }
        guard case .success = engine.follow(follower) else {
            throw ProtocolError(code: "not-covered", message: "\(path.string) is not kept live here")
        }
        defer { engine.unfollow(follower) }
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.raw("\"event\":\"following\"}\n")
        guard send(out.bytes) else { return false }
        guard
            WorkerThreads.start(
                name: "mdq-follower",
                { [socket] in
                    while true {
                        var line = JSONWriter(capacity: 4096)
                        switch follower.next() {
                        case .closed:
                            // Ended by the engine (its folder moved or left)
                            // or by the session: the client learns it.
                            socket.shutdown()
                            return
                        case .overflow:
                            line.raw("{\"event\":\"overflow\"}\n")
                        case .events(let events):
                            line.raw("{\"event\":\"events\",\"events\":[")
                            for (i, event) in events.enumerated() {
                                if i > 0 { line.raw(",") }
                                line.raw("{")
                                line.bytesField("folder", event.folder)
                                line.raw(",")
                                line.bytesField("handle", event.handle)
                                line.raw(",\"mask\":")
                                line.integer(Int(event.mask))
                                line.raw(",\"cookie\":")
                                line.integer(Int(event.cookie))
                                line.raw(",")
                                line.bytesField("name", event.name)
                                line.raw("}")
                            }
                            line.raw("]}\n")
                        }
                        guard case .success = withBytes(of: line.bytes, { socket.write($0) }) else {
                            follower.close()
                            socket.shutdown()
                            return
                        }
                    }
                }) != nil
        else {
            throw ProtocolError(code: "busy", message: "the daemon cannot take more followers")
        }
        // Nothing more is read; the stream ends with the connection.
        while true {
            switch reader.next(idle: -1) {
            case .end, .failure: return false
            case .line: continue
            }
        }
    }
}

/// Forwards a daemon-side query's events to its client through a bounded
/// outbox written by a thread of its own: a client that reads slowly never
/// blocks the engine or other clients. Past `capacity` bytes queued, the
/// queue is replaced by a `resynchronize` event and a fresh copy of the
/// results: memory stays bounded by the result set, whatever the churn.
final class SubscriptionForwarder: Sendable {
    let query: MetadataQuery
    let id: [UInt8]
    let socket: UnixSocket
    let capacity: Int
    private let outbox = ConditionLocked(Outbox())

    private struct Outbox {
        var chunks: [[UInt8]] = []
        var bytes = 0
        var closed = false
        var closing = false
        /// The queue overflowed: events are dropped until the client has
        /// read what was sent, then it gets a fresh copy of the results.
        var resynchronizing = false
        /// The fresh copy is being made (on the query's delivery queue).
        var copying = false
    }

    init(query: MetadataQuery, id: [UInt8], socket: UnixSocket, capacity: Int) {
        self.query = query
        self.id = id
        self.socket = socket
        self.capacity = capacity
    }

    /// Encodes an event (on the query's delivery queue, so the results read
    /// here are those the event leaves).
    func forward(_ event: MetadataQuery.Event) {
        // Nothing is encoded for a client that is to resynchronise.
        if outbox.withLock({ $0.resynchronizing || $0.closed }) { return }
        var out = JSONWriter(capacity: 1024)
        switch event {
        case .didStartGathering:
            line(&out) { $0.raw("\"event\":\"didStartGathering\"") }
        case .gatheringProgress(let gathered):
            line(&out) {
                $0.raw("\"event\":\"gatheringProgress\",\"gathered\":")
                $0.integer(gathered)
            }
        case .didFinishGathering:
            snapshot(fresh: false, into: &out)
        case .didUpdate(let update):
            line(&out) { out in
                out.raw("\"event\":\"didUpdate\",\"added\":[")
                for (i, item) in update.added.enumerated() {
                    if i > 0 { out.raw(",") }
                    DaemonProtocol.writeItem(item, to: &out)
                }
                out.raw("],\"changed\":[")
                for (i, item) in update.changed.enumerated() {
                    if i > 0 { out.raw(",") }
                    DaemonProtocol.writeItem(item, previousPath: update.previousPathBytes[item.id], to: &out)
                }
                out.raw("],\"removed\":[")
                for (i, item) in update.removed.enumerated() {
                    if i > 0 { out.raw(",") }
                    DaemonProtocol.writeItem(item, to: &out)
                }
                out.raw("]")
            }
        case .problem:
            let problems = query.state.withLock { $0.problems }
            line(&out) { out in
                out.raw("\"event\":\"problems\",\"problems\":[")
                for (i, problem) in problems.enumerated() {
                    if i > 0 { out.raw(",") }
                    DaemonProtocol.write(problem, to: &out)
                }
                out.raw("]")
            }
        }
        outbox.mutateAndBroadcast { box in
            guard !box.closed, !box.resynchronizing else { return }
            box.chunks.append(out.bytes)
            box.bytes += out.bytes.count
            if box.bytes > capacity {
                // Past the bound: what is queued is dropped, and the client
                // gets one fresh copy once it has read what is on its way
                // (`writeLoop`), however many events come meanwhile.
                box.chunks = []
                box.bytes = 0
                box.resynchronizing = true
            }
        }
    }

    /// The `resynchronize` line and a fresh copy of every result, made on
    /// the query's delivery queue (after every event dropped meanwhile, so
    /// the copy holds what they did), then queued.
    private func sendFreshCopy() {
        query.deliveryQueue.async { [self] in
            var fresh = JSONWriter(capacity: 1 << 16)
            line(&fresh) { $0.raw("\"event\":\"resynchronize\"") }
            snapshot(fresh: true, into: &fresh)
            outbox.mutateAndBroadcast { box in
                box.copying = false
                box.resynchronizing = false
                guard !box.closed else { return }
                box.chunks = [fresh.bytes]
                box.bytes = fresh.bytes.count
            }
        }
    }

    /// Every current result as a `result` line, then `didFinishGathering`.
    private func snapshot(fresh: Bool, into out: inout JSONWriter) {
        let results = query.results
        let engine = query.state.withLock { $0.engine as? LiveEngine }
        let stale = engine?.isVerifying ?? false
        // Files still to be imported, for a predicate that reads imported
        // attributes: their matches arrive as updates when they land.
        let reads = query.predicate.map { !$0.importedAttributes.isEmpty } ?? false
        let importing = reads ? engine?.state.withLock({ $0.content })?.pendingCount ?? 0 : 0
        for item in results {
            line(&out) { out in
                out.raw("\"event\":\"result\",\"item\":")
                DaemonProtocol.writeItem(item, to: &out)
            }
        }
        line(&out) { out in
            out.raw("\"event\":\"didFinishGathering\",\"count\":")
            out.integer(results.count)
            out.raw(",\"fresh\":")
            out.bool(fresh)
            out.raw(",\"stale\":")
            out.bool(stale)
            if importing > 0 {
                out.raw(",\"importing\":")
                out.integer(importing)
            }
        }
    }

    private func line(_ out: inout JSONWriter, _ body: (inout JSONWriter) -> Void) {
        DaemonProtocol.begin(id, &out)
        body(&out)
        out.raw("}\n")
    }

    /// Queues a line as is; false (nothing queued) when the queue is past
    /// its bound: a client that writes without reading is not answered
    /// into the daemon's memory.
    @discardableResult
    func enqueue(_ bytes: [UInt8]) -> Bool {
        outbox.mutateAndBroadcast { box in
            guard !box.closed, box.bytes + bytes.count <= capacity else { return false }
            box.chunks.append(bytes)
            box.bytes += bytes.count
            return true
        }
    }

    /// Writes queued lines until closed; a write failure (the client went
    /// away) ends it.
    func writeLoop() {
        while true {
            let next = outbox.wait(until: {
                !$0.chunks.isEmpty || $0.closed || $0.closing || ($0.resynchronizing && !$0.copying)
            }) { box -> [[UInt8]]? in
                if box.chunks.isEmpty && (box.closed || box.closing) {
                    box.closed = true
                    return nil
                }
                if box.chunks.isEmpty {
                    // All that was on its way is read: now the fresh copy.
                    box.copying = true
                    return []
                }
                defer {
                    box.chunks.removeAll()
                    box.bytes = 0
                }
                return box.chunks
            }
            guard let chunks = next else {
                // Closed inside the wait, which wakes nobody: `drainAndClose`
                // waits for it.
                outbox.mutateAndBroadcast { _ in }
                return
            }
            if chunks.isEmpty {
                sendFreshCopy()
                continue
            }
            for chunk in chunks {
                if case .failure = withBytes(of: chunk, { socket.write($0) }) {
                    close()
                    socket.shutdown()
                    return
                }
            }
        }
    }

    /// Lets what is queued go out, then stops.
    func drainAndClose() {
        outbox.mutateAndBroadcast { $0.closing = true }
        outbox.wait(until: { $0.closed }) { _ in }
    }

    /// Stops at once, dropping what is queued.
    func close() {
        outbox.mutateAndBroadcast { box in
            box.closed = true
            box.chunks.removeAll()
        }
    }
}

/// Reads newline-terminated lines (and binary payloads) from a socket,
/// bounded in line length and in the time a line may take once begun.
struct LineReader {
    let socket: UnixSocket
    let maximum: Int
    let timeout: Int32
    /// Bytes received and not consumed: `storage[start...]`.
    private var storage: [UInt8] = []
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    /// How many descriptors passed with requests (`SCM_RIGHTS`) are kept
    /// until a request takes them (0: none; any that come are closed).
    let descriptorCapacity: Int
    /// Descriptors received and not yet taken, in the order they came.
    private var descriptors: [ReceivedDescriptor] = []
    /// More came than `descriptorCapacity`: the next request that takes
    /// any is refused.
    private var descriptorsDropped = false

    init(socket: UnixSocket, maximum: Int, timeout: Int32, descriptorCapacity: Int = 0) {
        self.socket = socket
        self.maximum = maximum
        self.timeout = timeout
        self.descriptorCapacity = descriptorCapacity
    }

    /// Closes every descriptor received and not taken.
    mutating func dropDescriptors() {
        descriptors.removeAll()
        descriptorsDropped = false
    }

    /// The first `count` descriptors received, for the request just read
    /// (a client sends a request's descriptors with its bytes, so they
    /// are here once its line is); nil when fewer came, or some were
    /// dropped.
    mutating func takeDescriptors(_ count: Int) -> [ReceivedDescriptor]? {
        guard count > 0 else { return [] }
        defer { descriptorsDropped = false }
        guard !descriptorsDropped, count <= descriptors.count else {
            descriptors.removeAll()
            return nil
        }
        defer { descriptors.removeFirst(count) }
        return Array(descriptors.prefix(count))
    }

    enum Outcome {
        case line([UInt8])
        case end
        case failure(ProtocolError)
    }

    private enum Received { case data, timedOut, end }

    private var pending: Int { storage.count - start }

    private mutating func receive(wait: Int32) -> Received {
        if start > 0 && start >= storage.count / 2 {
            storage.removeSubrange(..<start)
            start = 0
        }
        let room = descriptorCapacity - descriptors.count
        let result = scratch.withUnsafeMutableBytes {
            socket.read(into: $0, timeout: wait, capacity: max(0, room))
        }
        switch result {
        case .failure: return .end
        case .success(nil): return .timedOut
        case .success(let received?):
            descriptors += received.descriptors
            if received.truncated { descriptorsDropped = true }
            guard received.count > 0 else { return .end }
            storage.append(contentsOf: scratch[..<received.count])
            return .data
        }
    }

    /// The next line (without its newline). Waits up to `idle` ms for a line
    /// to begin (-1: forever), then `timeout` ms for it to end.
    mutating func next(idle: Int32 = 600_000) -> Outcome {
        // Bytes after `start` already searched for a newline (compaction
        // moves `start`, not what follows it).
        var scanned = 0
        while true {
            if let newline = storage[(start + scanned)...].firstIndex(of: 0x0A) {
                let line = Array(storage[start..<newline])
                start = newline + 1
                scanned = 0
                if line.isEmpty || line == [0x0D] { continue }
                return .line(line)
            }
            guard pending <= maximum else {
                return .failure(ProtocolError(code: "too-large", message: "a request is limited to \(maximum) bytes"))
            }
            scanned = pending
            let began = pending > 0
            switch receive(wait: began ? timeout : idle) {
            case .data:
                continue
            case .timedOut:
                if !began { return .end }
                return .failure(ProtocolError(code: "timeout", message: "the request was not finished in time"))
            case .end:
                if began {
                    return .failure(ProtocolError(code: "bad-request", message: "the connection ended mid-request"))
                }
                return .end
            }
        }
    }

    /// Exactly `count` bytes after the last line read (a binary payload),
    /// or nil when the stream ends first.
    mutating func read(exactly count: Int) -> [UInt8]? {
        while pending < count {
            guard case .data = receive(wait: timeout) else { return nil }
        }
        let payload = Array(storage[start..<start + count])
        start += count
        return payload
    }
}
