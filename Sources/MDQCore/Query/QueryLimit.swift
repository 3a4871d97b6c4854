import Foundation
package import MDQSystem
import Synchronization

/// One running query's budget: a deadline, a cap on the backtracking of a
/// `MATCHES` pattern on any one name, and a way to cancel it.
///
/// Why a budget at all: a pattern such as `(a+)+b` backtracks
/// exponentially in the name's length, so one query could otherwise run
/// for hours, holding a scan thread (and, in the daemon, the index lock
/// slice by slice) and never answering. Past its budget a query ends with
/// `MetadataError.tooExpensive`, never with a silent "no match".
///
/// The scan threads find the limit of the query they run through a
/// thread-local (`withCurrent`), so the regex matcher deep in a predicate
/// evaluation consults it without a parameter threaded through every
/// evaluator; code that installs no limit evaluates as before, unbounded.
package final class QueryLimit: @unchecked Sendable {
    /// The default time budget of a query, in seconds (`--budget`, the
    /// protocol's `budget`): far above any sane query over millions of
    /// names (which take milliseconds), short enough that a runaway
    /// pattern is reported rather than waited on.
    package static let defaultSeconds: Double = 30

    /// ICU calls the matcher back about every 10,000 backtracking steps
    /// (a "tick", about 0.15 ms here). A name may take this many ticks,
    /// about 2.5 million steps or 40 ms: a name is at most 255 bytes, and
    /// a pattern that needs more on one name is exponential, not slow.
    package static let ticksPerName = 256

    private let deadline: ContinuousClock.Instant
    /// 0 running, 1 past the budget, 2 cancelled.
    private let state = Atomic<Int>(0)
    private let reasonLock = Mutex<String?>(nil)
    /// Polled between slices: true when whoever asked has gone away.
    private let isAbandoned: (@Sendable () -> Bool)?

    package init(seconds: Double = QueryLimit.defaultSeconds, isAbandoned: (@Sendable () -> Bool)? = nil) {
        let clamped = min(max(seconds, 0), 1e9)
        deadline = ContinuousClock.now + .nanoseconds(Int64(clamped * 1e9))
        self.isAbandoned = isAbandoned
    }

    /// Whether the query must stop now (past its deadline, over a cap, or
    /// cancelled). Cheap enough to call per slice and per regex tick.
    package var isStopped: Bool {
        if state.load(ordering: .relaxed) != 0 { return true }
        if ContinuousClock.now >= deadline {
            exceed("it ran past its time budget")
            return true
        }
        return false
    }

    /// Like `isStopped`, and also asks whether the client went away (a
    /// poll of its connection): called between slices only.
    package func shouldStop() -> Bool {
        if isStopped { return true }
        if let isAbandoned, isAbandoned() {
            cancel()
            return true
        }
        return false
    }

    /// Marks the query as past its budget for `reason` (the first reason wins).
    func exceed(_ reason: String) {
        reasonLock.withLock { if $0 == nil { $0 = reason } }
        _ = state.compareExchange(expected: 0, desired: 1, ordering: .relaxed)
    }

    /// Stops the query: nobody wants its answer any more.
    package func cancel() {
        _ = state.compareExchange(expected: 0, desired: 2, ordering: .relaxed)
    }

    package var isCancelled: Bool { state.load(ordering: .relaxed) == 2 }

    /// The error to end the query with, once it stopped over its budget.
    package var error: MetadataError? {
        guard state.load(ordering: .relaxed) == 1 else { return nil }
        return .tooExpensive(reasonLock.withLock { $0 } ?? "it ran past its budget")
    }

    private static let key = "mdq.QueryLimit"

    /// The limit of the query this thread evaluates, if any.
    static var current: QueryLimit? {
        Thread.current.threadDictionary[key] as? QueryLimit
    }

    /// Sets this thread's current limit (nil clears it), for callers that
    /// cannot wrap their work in a closure (`withCurrent`).
    package static func setCurrent(_ limit: QueryLimit?) {
        Thread.current.threadDictionary[key] = limit
    }

    /// Runs `body` with `limit` as this thread's current limit.
    static func withCurrent<R>(_ limit: QueryLimit?, _ body: () throws -> R) rethrows -> R {
        guard let limit else { return try body() }
        let dictionary = Thread.current.threadDictionary
        let previous = dictionary[key]
        dictionary[key] = limit
        defer { dictionary[key] = previous }
        return try body()
    }
}
