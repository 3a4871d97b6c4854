import Foundation
import MDQCore
import MDQEngine
import MDQSystem
import MDQWire
import SystemPackage

extension DaemonSession {
    /// `subscribe`: a live query on the daemon's engine, its events
    /// forwarded until the client sends `unsubscribe` or goes away.
    func subscribe(
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
