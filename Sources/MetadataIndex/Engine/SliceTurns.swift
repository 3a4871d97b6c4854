/// First come, first served turns at the engine's lock for the slices of
/// one-shot scans (`LiveEngine.answer`).
///
/// Why: the engine's lock is a plain mutex, and a thread that releases it
/// and takes it again at once (a slow query going on to its next slice)
/// usually wins over a thread asleep waiting for it, so a slow query could
/// still starve another client's. Each slice takes a ticket first; a query
/// whose slice just ended queues behind every query that asked meanwhile.
final class SliceTurns: Sendable {
    private struct Tickets {
        var next = 0
        var serving = 0
    }
    private let tickets = ConditionLocked(Tickets())

    /// Runs `body` on this caller's turn (the ticket lock is not held
    /// while it runs).
    func withTurn<Result>(_ body: () -> Result) -> Result {
        let ticket = tickets.withLock { t in
            defer { t.next += 1 }
            return t.next
        }
        tickets.wait(until: { $0.serving == ticket }) { _ in }
        defer { tickets.mutateAndBroadcast { $0.serving += 1 } }
        return body()
    }

    /// The next slice's length after one that held the engine's lock for
    /// `held`: halved past 20 ms (down to 16 slots), doubled under 5 ms (up
    /// to `whole`). Only the time holding the lock counts: a slice that
    /// waited for its turn behind others is not slow itself.
    static func nextLength(after held: Duration, length: Int, whole: Int) -> Int {
        if held > .milliseconds(20) { return max(16, length / 2) }
        if held < .milliseconds(5) { return min(whole, length * 2) }
        return length
    }
}
