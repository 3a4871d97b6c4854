import MDQCore
import MDQEngine
import MDQLive
import MDQSystem
import MDQWire
import SystemPackage

extension DaemonSession {
    /// `subscribe`: the engine's subscription itself, its messages written
    /// to the client as they come (`SubscriptionForwarder`), until the
    /// client sends `unsubscribe` or goes away. The client keeps its own
    /// results and batches its own notifications: nothing of a query is
    /// kept here but the engine's record of which entries match.
    func subscribe(
        _ request: JSONValue, id: [UInt8], descriptors: [ReceivedDescriptor], reader: inout LineReader
    ) throws(ProtocolError) -> Bool {
        try checkSubscriptionProtocol(request)
        var since: EngineClock?
        if let clock = request["since"] {
            guard let text = clock.string, let parsed = EngineClock(text) else {
                throw ProtocolError(code: .badRequest, message: "since is not a clock this daemon gave out")
            }
            since = parsed
        }
        try beginSubscription()
        defer { daemon.end(.subscription, for: user) }
        let (predicate, scopes, _, _, viewer) = try predicateAndScopes(request, descriptors: descriptors)
        // A user of the system index follows what it indexes; it never
        // makes root's index crawl or watch anything new.
        let engine = daemon.engine
        if viewer != nil, let uncovered = scopes.first(where: { !engine.covers($0) }) {
            throw ProtocolError(
                code: .notCovered, message: "the system index does not index \(uncovered.path.string)")
        }
        let fetching = Set(try DaemonProtocol.attributes(request))
        var container: UbiquityContainer?
        if let path = request.bytesField("container"), path.first == 0x2F {
            var named = UbiquityContainer(path: FilePath.fromBytes(path))
            if viewer != nil {
                // The system index reads no user's registry with its own
                // rights: the client says its container's external folders
                // (they only mark which of its own results are external).
                named.knownExternalFolders = (request["externalFolders"]?.array ?? []).prefix(64).compactMap {
                    $0.bytes.flatMap { $0.first == 0x2F && !$0.contains(0) ? FilePath.fromBytes($0) : nil }
                }
            }
            container = named
        }
        let budget = try allowedSeconds(request)
        // What may wait for a client that reads slowly, at most 16 MiB for a
        // user of the system index (256 MiB for a daemon's own user): in the
        // kernel, and in the engine's mailbox as entries of about 256 bytes.
        // Past it, the client is told to resynchronise.
        let ceiling = viewer == nil ? 1 << 28 : 16 << 20
        let bytes = min(ceiling, max(1 << 12, Int(clamping: request["capacity"]?.integer ?? (16 << 20))))
        socket.limitSendBuffer(to: bytes)
        let forwarder = SubscriptionForwarder(
            origin: .engine(engine, readsImported: !predicate.importedAttributes.isEmpty), id: id, socket: socket,
            interval: .nanoseconds(Int64(max(0, min(3600, request["interval"]?.double ?? 0.1)) * 1e9)),
            resuming: since != nil)
        forwarder.enqueue(forwarder.line { $0.raw("\"event\":\"didStartGathering\"") })
        guard WorkerThreads.start(name: "mdq-subscriber", { forwarder.run() }) != nil else {
            throw ProtocolError(code: .busy, message: "the daemon cannot take more subscriptions")
        }
        let (subscription, _) = engine.subscribe(
            scopes: scopes, predicate: predicate, container: container, budget: budget,
            capacity: max(16, bytes / 256),
            progress: { gathered in
                forwarder.enqueue(
                    forwarder.line {
                        $0.raw("\"event\":\"gatheringProgress\",\"gathered\":")
                        $0.integer(gathered)
                    })
            }, fetching: fetching, viewer: viewer, since: since, wake: { forwarder.wake() })
        forwarder.attach(subscription)
        defer {
            engine.unsubscribe(subscription)
            forwarder.close()
        }
        return streamUntilUnsubscribed(forwarder, reader: &reader) { engine.unsubscribe(subscription) }
    }

    /// Refuses a subscription asked in another protocol than the daemon's.
    func checkSubscriptionProtocol(_ request: JSONValue) throws(ProtocolError) {
        let asked = request["protocol"]?.integer ?? 1
        guard asked == Int64(DaemonProtocol.version) else {
            throw ProtocolError(
                code: .protocolVersion,
                message:
                    "this daemon speaks protocol \(DaemonProtocol.version) and the subscription protocol \(asked): "
                    + "use a client of the daemon's version")
        }
    }

    /// Counts a subscription of this user's (`end(.subscription, for:)`
    /// when it ends); refused past the daemon's limits.
    func beginSubscription() throws(ProtocolError) {
        guard daemon.begin(.subscription, for: user) else {
            throw ProtocolError(
                code: .busy,
                message: "too many live queries: this daemon keeps \(daemon.limits.subscriptionsPerUser) per user"
                    + (daemon.isSystem ? " (MAX_SUBSCRIPTIONS_PER_USER)" : "")
                    + ", \(daemon.limits.subscriptionsInAll) in all")
        }
    }

    /// Forwards a subscription's stream while reading the client's lines:
    /// only `unsubscribe` is taken (it calls `unsubscribe` and ends the
    /// stream with `ended`); the stream ends with the connection.
    func streamUntilUnsubscribed(
        _ forwarder: SubscriptionForwarder, reader: inout LineReader, unsubscribe: () -> Void
    ) -> Bool {
        while true {
            switch reader.next(idle: -1) {
            case .end, .failure:
                return false
            case .line(let line):
                guard let value = try? JSONValue.parse(line),
                    value["command"]?.string.flatMap(DaemonCommand.init(rawValue:)) == .unsubscribe
                else {
                    let queued = forwarder.enqueue(
                        ProtocolError(
                            code: .badRequest, message: "only unsubscribe is accepted during a subscription"
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
                unsubscribe()
                return forwarder.finish(with: forwarder.line { $0.raw("\"event\":\"ended\"") })
            }
        }
    }
}

/// Writes one subscription's engine messages to its client, from a thread
/// of its own, so a client that reads slowly never blocks the engine or
/// other clients: while it blocks in a write, the engine's bounded mailbox
/// fills, and past its capacity the client is sent `resynchronize` and a
/// fresh copy of the results (memory stays bounded by the result set).
///
/// Changes taken together, or within `interval` of the last update, are
/// merged per entry into one `didUpdate` (`WireDelta`); every update and
/// every end of gathering carries the clock of the engine's last batch in
/// it, from which the client may resume.
final class SubscriptionForwarder: Sendable {
    let origin: Origin
    let id: [UInt8]
    let socket: UnixSocket
    let interval: Duration
    /// The client asked to resume: an answer in full is `fresh`.
    let resuming: Bool
    /// Bytes of lines other than the engine's (progress, refusals) that
    /// may wait.
    static let controlCapacity = 1 << 20
    private let state = ConditionLocked(State())

    private struct State {
        var subscription: Subscription?
        var woken = false
        var control: [UInt8] = []
        /// The line that ends the stream once all before it is written.
        var finishing: [UInt8]?
        var closed = false
        var done = false
        var failed = false
    }

    /// Where the messages come from: what the stream says besides them.
    struct Origin: Sendable {
        /// The epoch of the clocks the stream gives out.
        var epoch: UInt64
        /// The subscriber fell behind: a fresh snapshot is to come.
        var resynchronize: @Sendable (Subscription) -> Void
        /// Whether the results may lag the disk (an index checking its
        /// snapshot against it).
        var isStale: @Sendable () -> Bool = { false }
        /// Files still to be imported, for a predicate that reads imported
        /// attributes: their matches arrive as updates when they land.
        var importing: @Sendable () -> Int = { 0 }

        /// An engine's subscription.
        static func engine(_ engine: LiveEngine, readsImported: Bool) -> Origin {
            Origin(
                epoch: engine.clock.epoch, resynchronize: { engine.resynchronize($0) },
                isStale: { engine.isVerifying },
                importing: { readsImported ? engine.state.withLock({ $0.content })?.pendingCount ?? 0 : 0 })
        }
    }

    init(origin: Origin, id: [UInt8], socket: UnixSocket, interval: Duration, resuming: Bool) {
        self.origin = origin
        self.id = id
        self.socket = socket
        self.interval = interval
        self.resuming = resuming
    }

    /// The engine queued a message (called outside its lock).
    func wake() {
        state.mutateAndBroadcast { $0.woken = true }
    }

    func attach(_ subscription: Subscription) {
        state.mutateAndBroadcast {
            $0.subscription = subscription
            $0.woken = true
        }
    }

    /// Queues a line of the forwarder's own; false (nothing queued) past
    /// `controlCapacity`: a client that writes without reading is not
    /// answered into the daemon's memory.
    @discardableResult
    func enqueue(_ line: [UInt8]) -> Bool {
        state.mutateAndBroadcast { s in
            guard !s.closed, s.finishing == nil, s.control.count + line.count <= Self.controlCapacity else {
                return false
            }
            s.control += line
            return true
        }
    }

    /// Writes what is waiting, then `last`, and stops; returns whether the
    /// client got it all.
    func finish(with last: [UInt8]) -> Bool {
        state.mutateAndBroadcast { $0.finishing = last }
        return state.wait(until: { $0.done }) { !$0.failed }
    }

    /// Stops at once, dropping what waits (the session is ending: a write
    /// blocked on a client that reads no more is cut short).
    func close() {
        let running = state.mutateAndBroadcast { s -> Bool in
            s.closed = true
            return !s.done
        }
        if running { socket.shutdown() }
        state.wait(until: { $0.done }) { _ in }
    }

    /// For a forwarder whose thread never started: nothing will be
    /// written, and `finish` and `close` return at once.
    func abandon() {
        state.mutateAndBroadcast { $0.done = true }
    }

    /// `{"id":…,` body `}` and a newline.
    func line(_ body: (inout JSONWriter) -> Void) -> [UInt8] {
        var out = JSONWriter()
        begin(&out)
        body(&out)
        out.raw("}\n")
        return out.bytes
    }

    private func begin(_ out: inout JSONWriter) {
        DaemonProtocol.begin(id, &out)
    }

    func run() {
        var delta = WireDelta()
        var gathered = false
        var tick: UInt64 = 0
        var lastUpdate: ContinuousClock.Instant?
        let epoch = origin.epoch
        while true {
            let due = delta.isEmpty ? nil : lastUpdate.map { $0 + interval }
            let (control, subscription, finishing, closed) = state.wait(
                until: { $0.woken || !$0.control.isEmpty || $0.finishing != nil || $0.closed }, deadline: due
            ) { s in
                defer {
                    s.woken = false
                    s.control = []
                }
                return (s.control, s.subscription, s.finishing, s.closed)
            }
            if closed { break }
            var out = JSONWriter(capacity: 1 << 12)
            out.bytes += control
            if let subscription {
                let (messages, stamped) = subscription.takeStamped()
                if !messages.isEmpty { tick = stamped }
                let clock = EngineClock(epoch: epoch, tick: tick)
                for message in messages {
                    switch message {
                    case .snapshot(let entries, let isFresh):
                        // A fresh copy replaces what the client had, and
                        // what waited for it.
                        delta = WireDelta()
                        if gathered && isFresh { out.bytes += line { $0.raw("\"event\":\"resynchronize\"") } }
                        for entry in entries {
                            begin(&out)
                            out.raw("\"event\":\"result\",\"item\":")
                            DaemonProtocol.writeItem(entry, to: &out)
                            out.raw("}\n")
                        }
                        finishGathering(count: entries.count, fresh: isFresh || resuming, clock: clock, to: &out)
                        gathered = true
                    case .resumed(let added, let changed, let removed, let count):
                        finishGathering(count: count, fresh: false, clock: clock, to: &out)
                        gathered = true
                        var resumed = WireDelta()
                        resumed.merge(added: added, changed: changed, removed: removed)
                        writeUpdates(resumed, clock: clock, to: &out)
                    case .changes(let added, let changed, let removed):
                        delta.merge(added: added, changed: changed, removed: removed)
                    case .resynchronize:
                        delta = WireDelta()
                        origin.resynchronize(subscription)
                    case .problems(let problems):
                        // In order: the changes before the problems first.
                        writeUpdates(delta, clock: clock, to: &out)
                        delta = WireDelta()
                        out.bytes += line { out in
                            out.raw("\"event\":\"problems\",\"problems\":[")
                            for (i, problem) in problems.enumerated() {
                                if i > 0 { out.raw(",") }
                                DaemonProtocol.write(problem, to: &out)
                            }
                            out.raw("]")
                        }
                    }
                }
                let now = ContinuousClock.now
                if !delta.isEmpty, finishing != nil || lastUpdate.map({ now >= $0 + interval }) ?? true {
                    writeUpdates(delta, clock: clock, to: &out)
                    delta = WireDelta()
                    lastUpdate = now
                }
            }
            if let finishing { out.bytes += finishing }
            if !out.bytes.isEmpty, case .failure = withBytes(of: out.bytes, { socket.write($0) }) {
                state.withLock { $0.failed = true }
                socket.shutdown()
                break
            }
            if finishing != nil { break }
        }
        state.mutateAndBroadcast { $0.done = true }
    }

    private func finishGathering(count: Int, fresh: Bool, clock: EngineClock, to out: inout JSONWriter) {
        let importing = origin.importing()
        begin(&out)
        out.raw("\"event\":\"didFinishGathering\",\"count\":")
        out.integer(count)
        out.raw(",\"fresh\":")
        out.bool(fresh)
        out.raw(",\"stale\":")
        out.bool(origin.isStale())
        if importing > 0 {
            out.raw(",\"importing\":")
            out.integer(importing)
        }
        out.raw(",\"clock\":")
        out.string(clock.description)
        out.raw("}\n")
    }

    /// `didUpdate` lines of at most 50,000 items each, the clock on each.
    private func writeUpdates(_ delta: WireDelta, clock: EngineClock, to out: inout JSONWriter) {
        guard !delta.isEmpty else { return }
        for part in delta.lines(limit: 50_000) {
            begin(&out)
            out.raw("\"event\":\"didUpdate\",\"added\":[")
            for (i, item) in part.added.enumerated() {
                if i > 0 { out.raw(",") }
                DaemonProtocol.writeItem(item, to: &out)
            }
            out.raw("],\"changed\":[")
            for (i, item) in part.changed.enumerated() {
                if i > 0 { out.raw(",") }
                DaemonProtocol.writeItem(item, to: &out)
            }
            out.raw("],\"removed\":[")
            for (i, identity) in part.removed.enumerated() {
                if i > 0 { out.raw(",") }
                out.raw("{\"id\":")
                out.integer(identity)
                out.raw("}")
            }
            out.raw("],\"clock\":")
            out.string(clock.description)
            out.raw("}\n")
        }
    }
}

/// The changes waiting for one `didUpdate`, merged per entry identity: an
/// entry added then changed is added (as it is now), added then removed is
/// nothing, changed then removed is removed.
struct WireDelta {
    private enum Change {
        case added(EntrySnapshot)
        case changed(EntrySnapshot)
        case removed
    }

    private var changes: [UInt64: Change] = [:]

    var isEmpty: Bool { changes.isEmpty }

    mutating func merge(added: [EntrySnapshot], changed: [EntrySnapshot], removed: [UInt64]) {
        for identity in removed {
            if case .added = changes[identity] {
                changes[identity] = nil
            } else {
                changes[identity] = .removed
            }
        }
        for item in added {
            if case .removed = changes[item.entry] {
                changes[item.entry] = .changed(item)
            } else {
                changes[item.entry] = .added(item)
            }
        }
        for item in changed {
            if case .added = changes[item.entry] {
                changes[item.entry] = .added(item)
            } else {
                changes[item.entry] = .changed(item)
            }
        }
    }

    /// The changes in update lines of at most `limit` items: added and
    /// changed items in path order (a folder before what is inside it),
    /// removed identities in increasing order.
    func lines(limit: Int) -> [(added: [EntrySnapshot], changed: [EntrySnapshot], removed: [UInt64])] {
        var added: [EntrySnapshot] = []
        var changed: [EntrySnapshot] = []
        var removed: [UInt64] = []
        for (identity, change) in changes {
            switch change {
            case .added(let item): added.append(item)
            case .changed(let item): changed.append(item)
            case .removed: removed.append(identity)
            }
        }
        added.sort { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) }
        changed.sort { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) }
        removed.sort()
        var result: [(added: [EntrySnapshot], changed: [EntrySnapshot], removed: [UInt64])] = []
        var part: (added: [EntrySnapshot], changed: [EntrySnapshot], removed: [UInt64]) = ([], [], [])
        var size = 0
        func next() {
            if size == limit {
                result.append(part)
                part = ([], [], [])
                size = 0
            }
            size += 1
        }
        // Removals first: a client applying line by line never holds two
        // items at one path.
        for identity in removed {
            next()
            part.removed.append(identity)
        }
        for item in changed {
            next()
            part.changed.append(item)
        }
        for item in added {
            next()
            part.added.append(item)
        }
        if size > 0 { result.append(part) }
        return result
    }
}
