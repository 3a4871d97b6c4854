import Foundation
import MDQCore
import MDQEngine
import MDQLive
import MDQSystem
import MDQWire
import SystemPackage

/// One client connection to the daemon, served on its own thread: this
/// file reads requests and answers the small commands; `query`,
/// `subscribe` and `follow` have a file each (`DaemonSession+Query`,
/// `+Subscribe`, `+Follow`).
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
            s.connectionsServed += 1
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
            return send(ProtocolError(code: .badRequest, message: "not JSON: \(error)").line(id: Array("null".utf8)))
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
                    code: .badRequest,
                    message: "the request names descriptors (\"descriptors\") that did not come with it")
            }
            guard let name = request["command"]?.string else {
                throw ProtocolError(code: .badRequest, message: "a request needs a \"command\"")
            }
            guard let command = DaemonCommand(rawValue: name), command != .unsubscribe else {
                throw ProtocolError(code: .unknownCommand, message: "unknown command \"\(name)\"")
            }
            // A user of the system index asks; root manages it.
            if viewer != nil, !command.isForUsersOfTheSystemIndex {
                throw ProtocolError(code: .forbidden, message: "only root manages the system index (\(name))")
            }
            // One file per command (DaemonSession+Command.swift).
            switch command {
            case .hello: return hello(id: id)
            case .status: return status(id: id)
            case .indexList: return indexList(id: id)
            case .indexAdd: return try indexAdd(request, id: id)
            case .indexRemove: return try indexRemove(request, id: id)
            case .query: return try query(request, id: id, descriptors: descriptors)
            case .searchHosts: return try searchHosts(request, id: id, descriptors: descriptors)
            case .hosts: return try sharedHosts(id: id)
            case .subscribe: return try subscribe(request, id: id, descriptors: descriptors, reader: &reader)
            case .subscribeHosts: return try subscribeHosts(request, id: id, reader: &reader)
            case .follow: return try follow(request, id: id, descriptors: descriptors, reader: &reader)
            case .stop: return stop(id: id)
            case .unsubscribe: return true
            }
        } catch {
            return send(error.line(id: id))
        }
    }

    /// The seconds a query may run: what the client asks (`budget`, the
    /// default when it says nothing), at most what the daemon allows any
    /// query (`ServiceLimits.maxBudget`).
    func allowedSeconds(_ request: JSONValue) throws(ProtocolError) -> Double {
        guard let asked = request["budget"]?.double else {
            return min(QueryLimit.defaultSeconds, daemon.limits.maxBudget)
        }
        guard asked > 0 else { throw ProtocolError(code: .badRequest, message: "\"budget\" must be positive") }
        return min(asked, daemon.limits.maxBudget)
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
    func predicateAndScopes(
        _ request: JSONValue, descriptors: [ReceivedDescriptor]
    ) throws(ProtocolError) -> (
        predicate: MetadataPredicate, scopes: [ScopeRequest], words: [UInt8]?,
        other: CommandLineQuery.OtherReading?, viewer: Viewer?
    ) {
        guard let text = request["predicate"]?.bytes else {
            throw ProtocolError(code: .badRequest, message: "a query needs a \"predicate\"")
        }
        var words: [UInt8]?
        var other: CommandLineQuery.OtherReading?
        let zone = DaemonProtocol.timeZone(request)
        let predicate = try reading { () throws -> MetadataPredicate in
            switch request["syntax"]?.string ?? "predicate" {
            case "predicate": return try MetadataPredicate(formatBytes: text)
            case "spotlight": return try MetadataPredicate(spotlightQueryBytes: text, timeZone: zone)
            case "name": return try MetadataPredicate.nameMatching(text)
            case "command-line" where daemon.content != nil && CommandLineQuery.isFreeText(text):
                words = text
                return try MetadataPredicate.words(text)
            case "command-line":
                other = CommandLineQuery.otherReading(of: text)
                return try CommandLineQuery.predicate(text, spotlight: false, timeZone: zone)
            case "words":
                // mdfind's free text, over names and text: only where the
                // text is indexed (else the client searches names).
                guard daemon.content != nil else {
                    throw ProtocolError(code: .notCovered, message: DaemonProtocol.noContent)
                }
                words = text
                return try MetadataPredicate.words(text)
            case let other: throw ProtocolError(code: .badRequest, message: "unknown syntax \"\(other)\"")
            }
        }
        try checkContent(of: predicate)
        var scopes: [ScopeRequest] = []
        var asker = viewer
        if let list = request["scopes"]?.array {
            // Each scope costs a walk per match: a query names a few.
            guard list.count <= DaemonProtocol.maximumScopes else {
                throw ProtocolError(
                    code: .badRequest, message: "a query names at most \(DaemonProtocol.maximumScopes) scopes")
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
                        code: .notCovered,
                        message: "\(scope.path.string) is on a filesystem the system index does not index")
                }
                if !scopes.contains(scope) { scopes.append(scope) }
            }
        } else {
            // Everything indexed, under the query's own rules when it gives them.
            scopes = everythingIndexed(
                narrowedBy: try request["rules"].map { rules throws(ProtocolError) in
                    try DaemonProtocol.rules(rules)
                })
            if scopes.isEmpty {
                throw ProtocolError(code: .notCovered, message: "the daemon indexes nothing yet")
            }
        }
        return (predicate, scopes, words, other, asker)
    }

    /// The live scopes: everything indexed, under a query's own rules when
    /// it gives them.
    func everythingIndexed(narrowedBy query: ScopeRules?) -> [ScopeRequest] {
        var scopes = daemon.scopeList.filter(\.live).map(\.scope)
        if let query { for i in scopes.indices { scopes[i].rules = scopes[i].rules.narrowed(by: query) } }
        return scopes
    }

    /// Runs `body`, which reads a query: a mistake in it becomes a
    /// `query-syntax` error, with its offset.
    func reading<T>(_ body: () throws -> T) throws(ProtocolError) -> T {
        do {
            return try body()
        } catch let error as ProtocolError {
            throw error
        } catch let error as MetadataError {
            throw ProtocolError(code: .querySyntax, message: error.message, offset: error.offset)
        } catch {
            throw ProtocolError(code: .querySyntax, message: "\(error)")
        }
    }

    /// Refuses a predicate on what is inside files when this daemon does
    /// not index it: the index keeps names and stat data only, and the
    /// client reads inside the files itself. (One that does answers a user
    /// of the system index only for the files that user may read:
    /// `IndexSubject.Context.reader`.)
    func checkContent(of predicate: MetadataPredicate) throws(ProtocolError) {
        guard !predicate.importedAttributes.isEmpty && daemon.content == nil else { return }
        throw ProtocolError(code: .notCovered, message: DaemonProtocol.noContent)
    }

    /// Counts a query of this user's against the daemon's limits (ended
    /// by `daemon.end(.query, for: user)`): past them, refused as busy.
    func beginQuery() throws(ProtocolError) {
        guard daemon.begin(.query, for: user) else {
            throw ProtocolError(
                code: .busy,
                message: "too many queries at once: this daemon runs \(daemon.limits.queriesPerUser) per user"
                    + (daemon.isSystem ? " (MAX_QUERIES_PER_USER)" : "") + ", \(daemon.limits.queriesInAll) in all")
        }
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
    func reachedScope(
        _ scope: ScopeRequest, _ item: JSONValue, _ descriptors: [ReceivedDescriptor]
    ) throws(ProtocolError) -> FileStatus {
        guard let number = item["descriptor"]?.integer, number >= 0, number < descriptors.count else {
            throw ProtocolError(
                code: .badRequest,
                message: "the system index takes each scope as a descriptor of its folder, opened by the client "
                    + "and passed with the request (\"descriptor\", SCM_RIGHTS)")
        }
        let opened = descriptors[Int(number)]
        let notCovered = ProtocolError(
            code: .notCovered, message: "the system index does not index \(scope.path.string)")
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
            throw ProtocolError(code: .badRequest, message: "the descriptor passed for a scope is not a folder's")
        }
        guard daemon.engine.holdsFolder(at: scope.path, as: status) else { throw notCovered }
        return status
    }
}
