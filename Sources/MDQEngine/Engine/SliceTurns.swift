import MDQCore
import MDQSystem

/// Turns at the engine's lock for the slices of scans (`LiveEngine.answer`,
/// a subscription's first gather, the trigram builder), shared fairly among
/// the users asking: the user served longest ago goes next, first come
/// first served within one user's; the trigram builder when no user waits.
///
/// Why: the engine's lock is a plain mutex, and a thread that releases it
/// and takes it again at once (a slow query going on to its next slice)
/// usually wins over a thread asleep waiting for it, so a slow query could
/// starve another client's. And with turns first come first served, one
/// user running many expensive queries at once would make another user's
/// query wait behind a slice of each of them, every slice. Here a user who
/// asks waits for at most one slice of each other user's, whatever how many
/// queries those users run: the system index serves every local user, and
/// one of them must not be able to spend it for the others. Slices are
/// short (`nextLength`), so that one slice is little to wait for.
final class SliceTurns: Sendable {
    /// Who the trigram builder's turns are counted as (no user's).
    static let indexOwner = UInt32.max

    private struct State {
        var nextTicket = 0
        /// The ticket allowed to run now, if any runs.
        var running: Int?
        /// Each waiting user's tickets, oldest first.
        var waiting: [UInt32: [Int]] = [:]
        /// When each waiting user's last turn was granted (a count of
        /// turns); a user with none granted while waiting comes first.
        var lastServed: [UInt32: Int] = [:]
        /// Turns granted so far.
        var granted = 0

        /// Lets the next ticket run: the oldest of the waiting user served
        /// longest ago. A user who asks while another runs many queries is
        /// next, after the slice that holds the engine now. The trigram
        /// builder goes only when no user waits: its lists make later
        /// answers fast, but an answer asked now comes first (at ten
        /// million names, a query taking turns with the builder took 6 to
        /// 10 s, where alone it takes about one).
        mutating func grantNext() {
            guard running == nil else { return }
            let users = waiting.count > 1 ? waiting.keys.filter { $0 != SliceTurns.indexOwner } : Array(waiting.keys)
            guard
                let user = users.min(by: {
                    (lastServed[$0] ?? -1, waiting[$0]![0]) < (lastServed[$1] ?? -1, waiting[$1]![0])
                })
            else { return }
            var tickets = waiting[user]!
            running = tickets.removeFirst()
            granted += 1
            if tickets.isEmpty {
                waiting[user] = nil
                lastServed[user] = nil
            } else {
                waiting[user] = tickets
                lastServed[user] = granted
            }
        }
    }
    private let state = ConditionLocked(State())

    /// Runs `body` on `user`'s next turn (the turns' lock is not held while
    /// it runs).
    func withTurn<Result>(for user: UInt32 = 0, _ body: () -> Result) -> Result {
        let ticket = state.mutateAndBroadcast { s -> Int in
            defer { s.nextTicket += 1 }
            s.waiting[user, default: []].append(s.nextTicket)
            s.grantNext()
            return s.nextTicket
        }
        state.wait(until: { $0.running == ticket }) { _ in }
        defer {
            state.mutateAndBroadcast { s in
                s.running = nil
                s.grantNext()
            }
        }
        return body()
    }

    /// Turns waiting now (for tests that line turns up).
    var waitingCount: Int {
        state.withLock { s in s.waiting.values.reduce(0) { $0 + $1.count } }
    }

    /// An expensive scan's first slice: a few names, since one may cost
    /// milliseconds; cheap names double it at once.
    static let firstExpensiveLength = 4

    /// The next slice's length after one that held the engine's lock for
    /// `held`. Only the time holding the lock counts: a slice that waited
    /// for its turn behind others is not slow itself.
    ///
    /// A slice of an expensive predicate (a `MATCHES` pattern, imported
    /// attributes: `expensive`) is halved past 2 ms (down to one slot) and
    /// doubled under 0.5 ms: another user's query waits for at most the
    /// slice that holds the lock when it asks, so its answer comes within
    /// a few milliseconds of its own however many such queries run (each
    /// name bounded by `QueryLimit.ticksPerName`); a slice costs a few
    /// microseconds to start, so the slow query pays about one percent.
    /// Other slices are halved past 20 ms (down to 16 slots) and doubled
    /// under 5 ms (up to `whole`): they cover much of the index each.
    static func nextLength(after held: Duration, length: Int, whole: Int, expensive: Bool = false) -> Int {
        if expensive {
            if held > .milliseconds(2) { return max(1, length / 2) }
            if held < .microseconds(500) { return min(whole, length * 2) }
            return length
        }
        if held > .milliseconds(20) { return max(16, length / 2) }
        if held < .milliseconds(5) { return min(whole, length * 2) }
        return length
    }
}
