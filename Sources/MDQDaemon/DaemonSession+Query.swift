import Foundation
import MDQCore
import MDQEngine
import MDQLive
import MDQSystem
import MDQWire
import SystemPackage

extension DaemonSession {
    /// `query`: answered from the live index, or refused as `not-covered`.
    func query(_ request: JSONValue, id: [UInt8], descriptors: [ReceivedDescriptor]) throws(ProtocolError)
        -> Bool
    {
        // Counted before anything is parsed: a request refused costs nothing.
        try beginQuery()
        defer { daemon.end(.query, for: user) }
        let (predicate, scopes, words, other, viewer) = try predicateAndScopes(request, descriptors: descriptors)
        let output: OneShotOutput
        switch request["output"]?.string ?? "items" {
        case "count": output = .count
        case "paths": output = .paths
        case "items": output = .entries
        case let other: throw ProtocolError(code: .badRequest, message: "unknown output \"\(other)\"")
        }
        let limit = request["limit"]?.integer.map { Int(clamping: max(0, $0)) }
        // With a limit, the first items in an order (the client sorts
        // them): gathered whole, then cut to those and their ties.
        let order = try DaemonProtocol.order(request)
        let firstInOrder =
            output == .entries ? order.flatMap { order in limit.flatMap { $0 > 0 ? (order, $0) : nil } } : nil
        // Those first, and their ties, as the slices pass: no more of the
        // matches waits in memory.
        let first = firstInOrder.map {
            FirstInOrder(order: $0.0, count: $0.1, thenByPath: DaemonProtocol.ordersTiesByPath(request))
        }
        let fetching = try DaemonProtocol.attributes(request)
        let seconds = try allowedSeconds(request)
        // The client's connection is polled between slices: one that went
        // away (Ctrl-C, a timeout) stops its query at once.
        let budget = QueryLimit(seconds: seconds, isAbandoned: { [socket] in socket.peerHasGone() })
        let answered: Result<OneShotAnswer, ScopeNotCovered>
        var clock: EngineClock?
        // Free text's paths come ranked: gathered as entries (name and
        // dates), ranked, then cut to the limit. Other paths go out a
        // slice at a time, each part a `paths` line and its bytes, while
        // the next slice is scanned.
        let ranked = words != nil && output == .paths
        let streamsPaths = output == .paths && !ranked
        var sent = true
        // A long answer is not silence: a `progress` line each second
        // (clients skip lines they do not know), which also keeps the
        // client's idle limit from running out; the count of free text's
        // words after it too.
        var lastProgress = ContinuousClock.now
        let progress = { (scanned: Int, total: Int) in
            let now = ContinuousClock.now
            guard now - lastProgress >= .seconds(1) else { return }
            lastProgress = now
            var out = JSONWriter()
            DaemonProtocol.begin(id, &out)
            // A user of the system index learns how far, not how many
            // entries the index holds.
            let (done, of) = self.viewer == nil ? (scanned, total) : (scanned * 1000 / max(1, total), 1000)
            out.raw("\"progress\":{\"scanned\":")
            out.integer(done)
            out.raw(",\"of\":")
            out.integer(of)
            out.raw("}}\n")
            if !self.send(out.bytes) { budget.cancel() }
        }
        do {
            let stream: (([UInt8], Int) -> Bool)? =
                streamsPaths
                ? { [self] paths, count in
                    var header = JSONWriter()
                    DaemonProtocol.pathsHeader(id, paths: count, bytes: paths.count, &header)
                    sent = send(header.bytes) && send(paths)
                    return sent
                } : nil
            // Items go out a slice at a time too, as `item` lines: a
            // million matches never wait in the daemon's memory at once.
            let entries: (([EntrySnapshot]) -> Bool)? =
                first.map { $0.offer }
                ?? (output == .entries
                    ? { [self] entries in
                        sent = sendItems(entries, id: id)
                        return sent
                    } : nil)
            // Taken before the scan: whatever changes while it runs is
            // after this clock, so a subscription resumed from it misses
            // nothing.
            clock = daemon.engine.clock
            answered = try daemon.engine.answer(
                scopes: scopes, predicate: predicate, output: ranked ? .entries : output,
                limit: ranked || firstInOrder != nil ? nil : limit,
                budget: budget,
                fetching: fetching, viewer: viewer,
                admits: first.map { $0.admits },
                progress: progress, stream: stream, entries: entries)
        } catch {
            if budget.isCancelled || !sent {
                daemon.state.withLock { $0.cancelledQueries += 1 }
                return false
            }
            if let asked = request["budget"]?.double, asked > seconds {
                // The client asked for more than any query may have.
                throw ProtocolError(
                    code: .tooExpensive,
                    message:
                        "query too expensive: it ran past \(TextFormat.seconds(seconds)), the most this daemon allows "
                        + "any query\(daemon.isSystem ? " (MAX_QUERY_SECONDS)" : ""); narrow the query or its scope")
            }
            throw ProtocolError(code: .tooExpensive, message: error.message)
        }
        var answer: OneShotAnswer
        switch answered {
        case .failure(let uncovered):
            throw ProtocolError(
                code: .notCovered,
                message: uncovered.gap ?? "the daemon does not index \(uncovered.scope.path.string)",
                gap: uncovered.gap != nil)
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
            DaemonProtocol.pathsHeader(id, paths: answer.count, bytes: answer.paths.count, &out)
            guard send(out.bytes), send(answer.paths) else { return false }
            out = JSONWriter()
        case .entries where first != nil:
            guard sendItems(first?.kept ?? [], id: id) else { return false }
        case .entries:
            break  // sent as it was scanned
        }
        // Free text that matched nothing as one piece: how many names hold
        // each of its words (mdfind's reading), said in a note.
        var note: String?
        if answer.count == 0, let other,
            case .success(let counted)? = try? daemon.engine.answer(
                scopes: scopes, predicate: other.predicate, output: .count, limit: nil, budget: budget, fetching: [],
                viewer: viewer, progress: progress, stream: nil),
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
        if let clock {
            out.raw(",\"clock\":")
            out.string(clock.description)
        }
        out.raw("}\n")
        return send(out.bytes)
    }

    /// Sends `entries` as `item` lines of the answer to `id`, 64 kB at a
    /// time; false when the client is gone.
    private func sendItems(_ entries: [EntrySnapshot], id: [UInt8]) -> Bool {
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
        return out.bytes.isEmpty || send(out.bytes)
    }
}

/// The first `count` entries in `order`, and every entry tied with the
/// last of them, kept as the slices of an answer pass (`offer`): what a
/// client that sorts the results and cuts them needs, in as little memory
/// as that. A class: the engine's scan asks it (`admits`) between the
/// slices it is offered.
final class FirstInOrder {
    let order: MetadataSortDescriptor
    let count: Int
    /// Ties ordered by path: exactly the first `count` are kept, not the
    /// entries tied with the last of them.
    let thenByPath: Bool
    private(set) var kept: [EntrySnapshot] = []
    /// The last kept, once `count` are, for an order read from the entry
    /// alone (a name, a kind, a size, a date): what comes after it is not
    /// offered.
    private var threshold: MetadataSortDescriptor.Threshold?
    /// With `thenByPath`, the last kept's path: a tie with it that comes
    /// after it by path is not offered either.
    private var lastPath: [UInt8]?

    init(order: MetadataSortDescriptor, count: Int, thenByPath: Bool = false) {
        self.order = order
        self.count = count
        self.thenByPath = thenByPath
    }

    /// Keeps the first of what it kept and `entries`; true (the scan goes
    /// on), as the engine's `entries` stream takes it.
    func offer(_ entries: [EntrySnapshot]) -> Bool {
        let candidates = kept + entries
        let items = candidates.map { MetadataItem(daemonEntry: $0, container: nil) }
        let positions = items.positionsOfFirst(count, by: order, thenByPath: thenByPath)
        kept = positions.map { candidates[$0] }
        guard kept.count >= count,
            let last = positions.lazy.map({ items[$0] }).max(by: { a, b in
                switch order.compare(a, b) {
                case .orderedAscending: true
                case .orderedDescending: false
                case .orderedSame: thenByPath && a.pathBytes.lexicographicallyPrecedes(b.pathBytes)
                }
            })
        else { return true }
        threshold = MetadataSortDescriptor.Threshold(order, last: last)
        lastPath = thenByPath ? last.pathBytes : nil
        return true
    }

    /// Whether an entry named `name`, of `kind`, with `metadata`, may be
    /// among the first: not when it comes after the last of `count` kept
    /// (by `path`, read only for a tie, with `thenByPath`). Asked before
    /// the entry's snapshot is made: most matches of a broad search never
    /// are.
    func admits(
        kind: EntryKind, metadata: EntryMetadata, name: UnsafeRawBufferPointer, path: () -> [UInt8]
    ) -> Bool {
        guard let threshold else { return true }
        switch threshold.place(kind: kind, metadata: metadata, name: name) {
        case .orderedAscending: return true
        case .orderedDescending: return false
        case .orderedSame: return lastPath.map { path().lexicographicallyPrecedes($0) } ?? true
        }
    }
}
