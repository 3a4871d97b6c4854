import Foundation

// Concurrency vocabulary of the library, and its lock order.
//
// - `Locked<State>`: a mutex that owns the state it guards; the only way to
//   reach the state is `withLock`, so "guarded by" is enforced by the type.
// - `ConditionLocked<State>`: the same with a condition variable, for
//   queues and rendezvous (`wait(until:)`, `signal`).
// - `Atomic` (Synchronization) for lone counters and flags read without a
//   lock.
// - `WorkerThreads` is the one way to start a thread; blocking C calls run
//   there, never on the Swift cooperative pool.
// - A query's notifications run on its serial `DispatchQueue` (an executor,
//   not a lock) or on the client's `OperationQueue`.
//
// Lock order (a thread holding one may take only those below it):
//
// 1. `MetadataQuery`'s state, then nothing of the engine: a query never
//    calls the engine while holding its own lock.
// 2. `LiveEngine`'s state lock. Held while applying events and while a
//    crawl inserts a folder's entries. Never held while calling client code
//    (subscribers are woken after it is released) or while waiting for the
//    watcher thread (adding a watch waits for it, and it takes this lock to
//    record the watch).
// 3. Leaves, taken last and released before anything else is taken: a
//    subscription's message queue, the engine's event queue, the watcher's
//    request queue and owner tables, crawl queues, output buffers.
//
// Both wrappers sit on pthread mutexes (through `NSLock`/`NSCondition`)
// rather than `Synchronization.Mutex`, whose Linux implementation waits on
// futexes directly: ThreadSanitizer does not see those as synchronisation
// and reports every access they guard as a race.

/// A value behind a mutex; the value is reachable only inside `withLock`.
package final class Locked<Value>: @unchecked Sendable {
    // `value` is only touched while `lock` is held.
    private var value: Value
    private let lock = NSLock()

    package init(_ value: Value) {
        self.value = value
    }

    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A value behind a mutex with a condition variable: for queues where a
/// consumer sleeps until a producer has put something in.
package final class ConditionLocked<Value>: @unchecked Sendable {
    // `value` is only touched while `condition` is locked.
    private var value: Value
    private let condition = NSCondition()

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value; wakes nobody.
    package func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body(&value)
    }

    /// Runs `body`, then wakes every waiter.
    package func mutateAndBroadcast<Result>(_ body: (inout Value) -> Result) -> Result {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(&value)
    }

    /// Waits until `ready` holds (or `deadline` passes; nil waits forever),
    /// then runs `body` with the value, under the lock throughout.
    package func wait<Result>(
        until ready: (Value) -> Bool, deadline: ContinuousClock.Instant? = nil, _ body: (inout Value) -> Result
    ) -> Result {
        condition.lock()
        defer { condition.unlock() }
        while !ready(value) {
            if let deadline {
                let remaining = ContinuousClock.now.duration(to: deadline)
                if remaining <= .zero { break }
                let (seconds, attoseconds) = remaining.components
                let limit = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18)
                _ = condition.wait(until: limit)
            } else {
                condition.wait()
            }
        }
        return body(&value)
    }
}
