import Foundation
import MDQCore
import MDQDaemon
import MDQLive
import MDQShared
import MDQSystem
import MDQWire
import SystemPackage

/// A live query's source when it runs against the index daemon: the
/// daemon's `subscribe` stream turned back into the messages an engine's
/// subscription carries (the daemon's item ids standing for entries), so
/// the query's bookkeeping, notifications and controls are the same.
///
/// The connection lives on a thread of its own. When the daemon cannot be
/// reached, or goes away, the query is told (`daemonUnreachable`, in
/// `errors`) and the source reconnects, backing off up to 2 s; a new
/// stream's results arrive as a fresh snapshot, which the query turns into
/// ordinary updates against what it had.
///
/// A query on the user's daemon that it cannot answer (it does not run, or
/// does not index the scopes) is answered by the system index (`fallback`)
/// when that indexes them; each reconnection asks the user's daemon first.
final class DaemonSource: QuerySource {
    let paths: DaemonPaths
    /// The system index, asked when the user's daemon cannot answer.
    let fallback: DaemonPaths?
    private let sessions = Locked<[UInt64: RemoteSession]>([:])
    private static let nextID = Locked<UInt64>(1)

    init(paths: DaemonPaths, fallback: DaemonPaths? = nil) {
        self.paths = paths
        self.fallback = paths.isSystem ? nil : fallback
    }

    var watchCount: Int { 0 }

    func subscribe(
        scopes: [ScopeRequest], predicate: MetadataPredicate, container: UbiquityContainer?, budget: Double?,
        capacity: Int, progress: (@Sendable (Int) -> Void)?, fetching: Set<MetadataAttribute>, viewer: Viewer?,
        wake: @escaping @Sendable () -> Void
    ) -> (Subscription, [MetadataError]) {
        // The daemon knows who asks (SO_PEERCRED): `viewer` is for an engine
        // serving someone else.
        let id = Self.nextID.withLock { id -> UInt64 in
            defer { id += 1 }
            return id
        }
        let mailbox = Subscription(id: id, capacity: capacity, wake: wake)
        let session = RemoteSession(
            paths: paths, fallback: fallback, mailbox: mailbox, scopes: scopes, predicate: predicate,
            container: container, budget: budget, fetching: fetching, progress: progress)
        sessions.withLock { $0[id] = session }
        if WorkerThreads.start(name: "mdq-remote", { session.run() }) == nil {
            if mailbox.post(.snapshot([], isFresh: false)) { mailbox.notify() }
            return (mailbox, [MetadataError.daemon("cannot start a thread for the daemon connection")])
        }
        return (mailbox, [])
    }

    func unsubscribe(_ subscription: Subscription) {
        subscription.close()
        sessions.withLock { $0.removeValue(forKey: subscription.id) }?.end()
    }

    func resynchronize(_ subscription: Subscription) {
        // The query fell behind its own mailbox: a new stream starts with a
        // fresh snapshot.
        sessions.withLock { $0[subscription.id] }?.reconnect()
    }

    /// A live search of other hosts that the system index at `paths` runs
    /// for this user (`subscribe-hosts`), as a subscription of this source.
    func subscribeHosts(
        _ hosts: HostsSubscription, predicate: MetadataPredicate, budget: Double?, capacity: Int,
        fetching: Set<MetadataAttribute> = [], wake: @escaping @Sendable () -> Void
    ) -> Subscription {
        let id = Self.nextID.withLock { id -> UInt64 in
            defer { id += 1 }
            return id
        }
        let mailbox = Subscription(id: id, capacity: capacity, wake: wake)
        let session = RemoteSession(
            paths: paths, mailbox: mailbox, scopes: [], predicate: predicate, container: nil, budget: budget,
            fetching: fetching, hosts: hosts, progress: nil)
        sessions.withLock { $0[id] = session }
        if WorkerThreads.start(name: "mdq-remote", { session.run() }) == nil {
            if mailbox.post(.snapshot([], isFresh: false)) { mailbox.notify() }
            if mailbox.post(.problems([.sharedIndex("cannot start a thread for the system index's connection")])) {
                mailbox.notify()
            }
        }
        return mailbox
    }
}

/// One remote subscription's connection and its reconnections.
final class RemoteSession: Sendable {
    let paths: DaemonPaths
    /// The system index, asked when `paths`' daemon cannot answer.
    let fallback: DaemonPaths?
    let mailbox: Subscription
    let scopes: [ScopeRequest]
    let predicate: MetadataPredicate
    /// For a predicate on the ubiquitous keys: the daemon evaluates it.
    let container: UbiquityContainer?
    /// The query's budget in seconds, sent with the request (nil: the daemon's default).
    let budget: Double?
    /// The imported attributes whose values the daemon sends with items.
    let fetching: Set<MetadataAttribute>
    /// A live search of other hosts (`subscribe-hosts`) in place of the
    /// scopes.
    let hosts: HostsSubscription?
    let progress: (@Sendable (Int) -> Void)?
    private let state = ConditionLocked(State())

    private struct State {
        var ended = false
        var socket: UnixSocket?
        /// Whether the query got its first results (later ones are fresh).
        var delivered = false
        /// Why the last connection was refused (not this user's daemon).
        var refusal: String?
        /// The clock of the last thing the daemon told: a new connection
        /// resumes from it (`since`), told only what changed after it.
        var clock: String?
        /// The query fell behind (its mailbox overflowed and dropped what
        /// came since): the next stream starts afresh, not from `clock`, so
        /// a fresh snapshot replaces what was dropped.
        var fresh = false
        /// Why the system index refused a search of other hosts: said, and
        /// not asked again.
        var hostsRefusal: EngineProblem?
        /// Why it turned the last attempt away for now (its searches all
        /// taken, the database away): said, and asked again.
        var hostsTrouble: String?
        /// Whether a thread waits for a scope folder that went to be back.
        var awaitingScopes = false
        /// The stream was ended on purpose (`reconnect`): a new one starts
        /// at once, nothing said.
        var reconnecting = false
    }

    init(
        paths: DaemonPaths, fallback: DaemonPaths? = nil, mailbox: Subscription, scopes: [ScopeRequest],
        predicate: MetadataPredicate, container: UbiquityContainer?, budget: Double? = nil,
        fetching: Set<MetadataAttribute> = [], hosts: HostsSubscription? = nil, progress: (@Sendable (Int) -> Void)?
    ) {
        self.fallback = fallback
        self.hosts = hosts
        self.container = container
        self.budget = budget
        self.fetching = fetching
        self.paths = paths
        self.mailbox = mailbox
        self.scopes = scopes
        self.predicate = predicate
        self.progress = progress
    }

    func end() {
        let socket = state.mutateAndBroadcast { s -> UnixSocket? in
            s.ended = true
            return s.socket
        }
        socket?.shutdown()
    }

    /// Starts a new stream whose results come whole (a fresh snapshot):
    /// the query fell behind.
    func reconnect() {
        state.withLock { s -> UnixSocket? in
            s.fresh = true
            s.reconnecting = true
            return s.socket
        }?.shutdown()
    }

    private func post(_ message: SubscriptionMessage) {
        if mailbox.post(message) { mailbox.notify() }
    }

    func run() {
        var backoff = 200
        // Routed as every search is (`SearchRouter`): the daemon asked for
        // first, then (for a user's daemon) the system index, each once per
        // attempt; a stream that ran counts as answered.
        let router = SearchRouter(requiresDaemon: true)
        while !state.withLock({ $0.ended }) {
            var outcome = Outcome.unreachable
            _ = router.route { destination -> SearchRouter.Reply<Outcome> in
                let target: DaemonPaths?
                switch destination {
                case .ownDaemon: target = paths
                case .systemIndex: target = fallback
                }
                guard let target, !state.withLock({ $0.ended }) else { return .unavailable(.unreachable) }
                let tried = stream(target)
                // What a later daemon says is what the query hears, unless
                // nothing listens there.
                if tried != .unreachable || destination == .ownDaemon { outcome = tried }
                return tried.reply
            }
            let streamed = outcome == .streamed
            if state.withLock({ $0.ended }) { return }
            // Ended on purpose after it ran: the next stream at once.
            if streamed,
                state.withLock({ s in
                    defer { s.reconnecting = false }; return s.reconnecting
                })
            {
                backoff = 200
                continue
            }
            if let refusal = state.withLock({ $0.hostsRefusal }) {
                // Said before the gathering it ends; results it gave stay
                // (a refusal is not their removal).
                post(.problems([refusal]))
                if !state.withLock({ $0.delivered }) { post(.snapshot([], isFresh: false)) }
                return
            }
            // Not reachable, or gone: say so (with no results yet, the
            // query still finishes gathering), then try again.
            let first = state.withLock { s -> Bool in
                defer { s.delivered = true }
                return !s.delivered
            }
            if first { post(.snapshot([], isFresh: false)) }
            let (refusal, trouble) = state.withLock { s in
                defer { s.hostsTrouble = nil }
                return (s.refusal, s.hostsTrouble)
            }
            if let trouble {
                post(.problems([.sharedIndex(SharedIndexError.said(trouble) + " (asked again shortly)")]))
            } else {
                post(.problems([refusal.map { .daemonRefused(paths.socket, $0) } ?? .daemonUnreachable(paths.socket)]))
            }
            if streamed { backoff = 200 }
            let deadline = ContinuousClock.now + .milliseconds(backoff)
            state.wait(until: { $0.ended }, deadline: deadline) { _ in }
            backoff = min(backoff * 2, 2000)
        }
    }

    /// How one connection's stream went.
    enum Outcome: Equatable {
        /// Nothing listens there.
        case unreachable
        /// Refused: not this user's daemon, or the subscription (`notCovered`:
        /// the daemon does not index the scopes).
        case refused(notCovered: Bool)
        /// It ended before its first results.
        case ended
        /// It got as far as its first results, then ended.
        case streamed

        /// As the router takes it: a daemon not reachable, or not to be
        /// trusted, or one that does not keep the scopes, passes the query
        /// on; a stream that ran answered it.
        var reply: SearchRouter.Reply<Outcome> {
            switch self {
            case .unreachable, .refused(notCovered: false): .unavailable(self)
            case .refused(notCovered: true): .declined(self, gap: nil)
            case .ended: .failed(self)
            case .streamed: .answered
            }
        }
    }

    /// One connection's stream to the daemon at `paths`.
    private func stream(_ paths: DaemonPaths) -> Outcome {
        let socket: UnixSocket
        switch paths.isSystem
            ? UnixSocket.connectToSystemIndex(at: paths.socket) : UnixSocket.connectToOwnDaemon(at: paths.socket)
        {
        case .success(let connected): socket = connected
        case .failure(.untrusted(let reason)):
            // Not this user's daemon: nothing is sent, and the query says why.
            state.withLock { $0.refusal = reason }
            return .refused(notCovered: false)
        case .failure: return .unreachable
        }
        state.withLock { $0.refusal = nil }
        state.withLock { s in
            s.socket = socket
            // A stream ended on purpose before this one began is not it.
            s.reconnecting = false
        }
        defer { state.withLock { $0.socket = nil } }
        if let hosts {
            var request = JSONWriter(capacity: 512)
            request.raw(#"{"id":1,"command":"subscribe-hosts","#)
            DaemonCommand.subscribeHostsFields(
                Array(predicate.description.utf8), hosts: hosts.hosts, folders: hosts.folders,
                excluded: hosts.excluded, budget: budget, check: false, protocol: DaemonProtocol.version,
                attributes: fetching.map(\.rawValue), into: &request)
            request.raw("}\n")
            guard case .success = withBytes(of: request.bytes, { socket.write($0) }) else { return .ended }
            // Not resumed: every result comes again on a new stream.
            return read(socket, since: nil)
        }
        var request = JSONWriter(capacity: 512)
        request.raw("{\"id\":1,\"command\":\"subscribe\",\"protocol\":")
        request.integer(DaemonProtocol.version)
        request.raw(",\"interval\":0,")
        let since = state.withLock { $0.delivered && !$0.fresh ? $0.clock : nil }
        if let since {
            request.raw("\"since\":")
            request.string(since)
            request.raw(",")
        }
        if let budget {
            request.raw("\"budget\":")
            request.double(budget)
            request.raw(",")
        }
        if !fetching.isEmpty {
            DaemonProtocol.writeAttributes(fetching, to: &request)
            request.raw(",")
        }
        request.raw("\"predicate\":")
        request.string(predicate.predicateFormat)
        if let container {
            request.raw(",")
            request.bytesField("container", container.path.bytes)
            if paths.isSystem {
                // Read here, with this user's rights (the system index
                // reads no user's registry).
                request.raw(",\"externalFolders\":[")
                let folders = container.externalDocumentFolders.filter {
                    String(validating: $0.bytes, as: UTF8.self) != nil
                }
                for (i, folder) in folders.enumerated() {
                    if i > 0 { request.raw(",") }
                    request.string(folder.bytes)
                }
                request.raw("]")
            }
        }
        // The system index is given the scopes' folders as this user
        // opened them; one this user cannot reach is searched here.
        var folders: OpenedFolders?
        if paths.isSystem {
            guard case .success(let opened) = OpenedFolders.open(scopes.map(\.path)) else {
                return .refused(notCovered: true)
            }
            folders = opened
        }
        request.raw(",")
        DaemonProtocol.writeScopes(scopes, passing: folders != nil, to: &request)
        request.raw("}\n")
        let written = withBytes(of: request.bytes) { socket.write($0, passing: folders?.descriptors ?? []) }
        guard case .success = written else { return .ended }
        return read(socket, since: since)
    }

    /// A scope folder of this query that the daemon says is gone (the
    /// system index follows the folder this user opened, not another one
    /// made at its path): once a folder is there again, a new stream opens
    /// it and gathers afresh, as a query that crawls its scopes finds
    /// them again.
    private func awaitReturn(of problems: [EngineProblem]) {
        let gone = problems.compactMap { problem -> FilePath? in
            guard case .missingScope(let path) = problem, scopes.contains(where: { $0.path == path }) else {
                return nil
            }
            return path
        }
        guard !gone.isEmpty,
            state.withLock({ s in
                defer { s.awaitingScopes = true }; return !s.awaitingScopes
            })
        else { return }
        let started = WorkerThreads.start(name: "mdq-scope-wait") { [self] in
            defer { state.withLock { $0.awaitingScopes = false } }
            while !state.withLock({ $0.ended }) {
                if gone.allSatisfy({ (try? DirectoryHandle.open(path: $0).get()) != nil }) {
                    reconnect()
                    return
                }
                let deadline = ContinuousClock.now + .milliseconds(250)
                state.wait(until: { $0.ended }, deadline: deadline) { _ in }
            }
        }
        if started == nil { state.withLock { $0.awaitingScopes = false } }
    }

    /// Reads a subscription's stream until it ends, posting its messages;
    /// `since` is the clock it resumed from.
    private func read(_ socket: UnixSocket, since: String?) -> Outcome {
        var reader = LineReader(socket: socket, maximum: 1 << 30, timeout: 120_000)
        var results: [EntrySnapshot] = []
        var gathered = false
        var problemsSent = false
        while true {
            guard case .line(let line) = reader.next(idle: -1), let value = try? JSONValue.parse(line) else {
                return gathered ? .streamed : .ended
            }
            if let error = value["error"] {
                // A search of other hosts refused: the reason is the
                // user's to read, and asking again would be refused again.
                // Anything else (the searches it runs all taken, its
                // connections busy, the database away) is tried again.
                if hosts != nil {
                    let message = error["message"]?.string ?? "the system index refused the search"
                    // Refused, or ended by itself (past its results or its
                    // budget), or a system index that does not search
                    // across hosts: asked again, the same.
                    if [.invalidArgument, .tooExpensive, .notCovered, .folder].contains(DaemonErrorCode(of: error)) {
                        let refusal = EngineProblem.hostsRefused(
                            DaemonErrorCode(of: error) == .folder
                                ? DaemonClient.error(error) : MetadataError.daemon(message))
                        state.withLock { $0.hostsRefusal = refusal }
                    } else if !gathered {
                        state.withLock { $0.hostsTrouble = message }
                    }
                }
                // The daemon refused the subscription: not live, said once.
                return gathered ? .streamed : .refused(notCovered: DaemonErrorCode(of: error) == .notCovered)
            }
            switch value["event"]?.string {
            case "gatheringProgress":
                progress?(Int(value["gathered"]?.integer ?? 0))
            case "result":
                if let item = value["item"], let snapshot = try? DaemonProtocol.item(item) { results.append(snapshot) }
            case "resynchronize":
                results = []
            case "didFinishGathering":
                let clock = value["clock"]?.string
                let fresh = state.withLock { s -> Bool in
                    defer {
                        s.delivered = true
                        s.clock = clock
                        s.fresh = false
                    }
                    return s.delivered
                }
                // Resumed (`since`, answered not fresh): the changes since
                // follow as an update; what the query has stands.
                if !(since != nil && value["fresh"]?.bool == false) {
                    post(.snapshot(results, isFresh: fresh))
                }
                // A new stream's problems are its own: none unless it sent
                // some before its results (a host offline from the start).
                if !problemsSent { post(.problems([])) }
                results = []
                gathered = true
            case "didUpdate":
                func snapshots(_ key: String) -> [EntrySnapshot] {
                    (value[key]?.array ?? []).compactMap { try? DaemonProtocol.item($0) }
                }
                post(
                    .changes(
                        added: snapshots("added"), changed: snapshots("changed"),
                        removed: (value["removed"]?.array ?? []).compactMap {
                            $0["id"]?.integer.map(UInt64.init(bitPattern:))
                        }))
                // Recorded once the update is posted: a connection lost
                // after this resumes from here.
                if let clock = value["clock"]?.string { state.withLock { $0.clock = clock } }
            case "problems":
                problemsSent = true
                let problems = (value["problems"]?.array ?? []).compactMap(DaemonProtocol.problem)
                post(.problems(problems))
                awaitReturn(of: problems)
            default:
                break
            }
        }
    }
}
