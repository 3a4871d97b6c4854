import MDQCore
import MDQEngine
import MDQImport
import MDQLive
import MDQSystem

extension MetadataQuery {
    /// The query's events, for `for await`. Each call gives a new sequence
    /// that receives the events from then on; it ends when the query stops.
    ///
    /// A reader that falls behind never makes the query hold more than a
    /// bounded number of events: past `EventBuffer.capacity` queued events,
    /// the queued updates are merged into one (per item, as the
    /// notifications merge changes over the batching interval) and only the
    /// latest progress count is kept. Nothing is lost; memory grows at most
    /// with the number of distinct items changed.
    public var events: Events {
        let buffer = EventBuffer()
        let stopped = state.withLock { s -> Bool in
            if s.phase == .stopped { return true }
            s.streams[ObjectIdentifier(buffer)] = WeakEventBuffer(buffer: buffer)
            return false
        }
        if stopped { buffer.finish() }
        return Events(buffer: buffer)
    }

    /// The events of a query as an asynchronous sequence.
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = Event
        public typealias Failure = Never
        let buffer: EventBuffer

        public func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

        public struct Iterator: AsyncIteratorProtocol {
            public typealias Element = Event
            public typealias Failure = Never
            let buffer: EventBuffer

            public mutating func next() async -> Event? { await buffer.next() }

            public mutating func next(isolation actor: isolated (any Actor)?) async -> Event? {
                await buffer.next()
            }
        }
    }
}

/// A query's reference to a reader's buffer: weak, so a reader that stops
/// reading and drops its sequence costs the query nothing.
struct WeakEventBuffer: Sendable {
    weak var buffer: EventBuffer?
}

/// Events waiting for one reader, bounded (see `MetadataQuery.events`).
final class EventBuffer: Sendable {
    /// Events held before queued updates are merged.
    static let capacity = 256

    private struct Contents {
        var events: [MetadataQuery.Event] = []
        var waiter: CheckedContinuation<MetadataQuery.Event?, Never>?
        var finished = false
    }

    private let contents = Locked(Contents())

    /// Hands an event to the reader waiting for one, or queues it.
    func yield(_ event: MetadataQuery.Event) {
        let waiter = contents.withLock { c -> CheckedContinuation<MetadataQuery.Event?, Never>? in
            guard !c.finished else { return nil }
            if let waiter = c.waiter {
                c.waiter = nil
                return waiter
            }
            c.events.append(event)
            if c.events.count > Self.capacity { c.events = Self.compact(c.events) }
            return nil
        }
        waiter?.resume(returning: event)
    }

    /// Ends the sequence once the queued events are read.
    func finish() {
        let waiter = contents.withLock { c -> CheckedContinuation<MetadataQuery.Event?, Never>? in
            c.finished = true
            defer { c.waiter = nil }
            return c.waiter
        }
        waiter?.resume(returning: nil)
    }

    func next() async -> MetadataQuery.Event? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<MetadataQuery.Event?, Never>) in
                let ready = contents.withLock { c -> MetadataQuery.Event?? in
                    if !c.events.isEmpty { return .some(c.events.removeFirst()) }
                    if c.finished || Task.isCancelled { return .some(nil) }
                    c.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// The same events with runs of updates merged and only the last
    /// progress count of each run kept.
    ///
    /// A run is cut where merging would make one item stand for another
    /// (an item removed, then another added at its path): the reader knows
    /// both identities from the query, so each keeps its own update.
    static func compact(_ events: [MetadataQuery.Event]) -> [MetadataQuery.Event] {
        var result: [MetadataQuery.Event] = []
        var updates: [MetadataQuery.Update] = []
        var merged: MetadataQuery.Update?
        func flushUpdates() {
            if let merged, !(merged.added.isEmpty && merged.changed.isEmpty && merged.removed.isEmpty) {
                result.append(.didUpdate(merged))
            }
            updates.removeAll()
            merged = nil
        }
        for event in events {
            switch event {
            case .didUpdate(let update):
                let (candidate, transfers) = ResultDelta.update(ResultDelta.collapse(updates + [update]))
                if transfers.isEmpty {
                    updates.append(update)
                    merged = candidate
                } else {
                    flushUpdates()
                    updates = [update]
                    merged = update
                }
            case .gatheringProgress:
                flushUpdates()
                if case .gatheringProgress = result.last { result.removeLast() }
                result.append(event)
            default:
                flushUpdates()
                result.append(event)
            }
        }
        flushUpdates()
        return result
    }
}
