import Glibc
import MDQCore
import MDQSystem

/// Held while a query posts a notification, so `stop()` from another
/// thread waits until the post is over (and nothing is posted after
/// `stop()` returns), while an observer that calls `stop()` from inside the
/// notification, on the posting thread, goes straight through.
final class PostingGate: Sendable {
    private struct Holder {
        var thread: pthread_t?
        var depth = 0
    }

    private let holder = ConditionLocked(Holder())

    /// Waits until no other thread is inside, then enters (again, for the
    /// thread already inside).
    func enter() {
        let me = pthread_self()
        holder.wait(until: { $0.thread.map { pthread_equal($0, me) != 0 } ?? true }) { holder in
            holder.thread = me
            holder.depth += 1
        }
    }

    func leave() {
        holder.mutateAndBroadcast { holder in
            holder.depth -= 1
            if holder.depth == 0 { holder.thread = nil }
        }
    }

    func withGate<Result>(_ body: () throws -> Result) rethrows -> Result {
        enter()
        defer { leave() }
        return try body()
    }
}
