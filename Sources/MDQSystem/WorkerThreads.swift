import CLinuxSyscalls
import Glibc

/// The one way the library starts threads: dedicated OS threads for
/// blocking work (crawling, reading inotify, applying events), never the
/// Swift cooperative pool. Threads carry names (`top -H`, `gdb`), and a
/// failure to start one is handled, never ignored.
package enum WorkerThreads {
    private final class Box: @unchecked Sendable {
        // Written before the thread starts and read only by that thread.
        let name: String
        let body: @Sendable () -> Void
        init(_ name: String, _ body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts `body` on a new thread called `name` (at most 15 bytes are
    /// shown by the kernel).
    ///
    /// - Parameter detached: the thread is never joined (it runs for the
    ///   life of its owner); otherwise the caller must pass the returned
    ///   handle to `join`.
    /// - Returns: the thread, or nil when the system refused one (`EAGAIN`:
    ///   the process or user thread limit); the body has not run then.
    @discardableResult
    package static func start(
        name: String, detached: Bool = true, _ body: @escaping @Sendable () -> Void
    ) -> Handle? {
        let box = Unmanaged.passRetained(Box(name, body))
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                mdq_set_thread_name(box.name)
                box.body()
                return nil
            }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            return nil
        }
        if detached { pthread_detach(thread) }
        return Handle(thread: thread)
    }

    /// A started thread.
    package struct Handle: Sendable {
        fileprivate let thread: pthread_t

        /// Waits for a thread started with `detached: false` to end.
        package func join() {
            pthread_join(thread, nil)
        }
    }

    /// Starts `body` on a detached thread; if no thread can be had, runs it
    /// on the calling thread instead, so the work is never lost.
    /// Long-lived threads (the inotify reader, the applier) use `start` and
    /// handle a refusal instead: run inline, they would never return.
    package static func detach(name: String = "mdq-worker", _ body: @escaping @Sendable () -> Void) {
        if start(name: name, body) == nil { body() }
    }

    /// Runs `body(0..<count)` on `count` threads (the caller's thread is
    /// number 0) and returns when all have finished (at once for a count
    /// of 0). A thread the system
    /// refuses has its share done on the calling thread. In the
    /// `.background`, the caller's thread only waits and every worker has a
    /// thread of its own, which lowers its priority first (a thread cannot
    /// raise its priority back).
    package static func run(
        count: Int, name: String = "mdq-worker", priority: Priority = .normal,
        _ body: @escaping @Sendable (Int) -> Void
    ) {
        guard count > 0 else { return }
        let background = priority == .background
        var threads: [Handle] = []
        for index in (background ? 0 : 1)..<count {
            let thread = start(name: "\(name)-\(index)", detached: false) {
                priority.apply()
                body(index)
            }
            if let thread { threads.append(thread) } else { body(index) }
        }
        if !background { body(0) }
        for thread in threads { thread.join() }
    }

    /// How threads of `run` compete for the processors.
    package enum Priority: Sendable {
        /// As the rest of the process.
        case normal
        /// At nice 10 and the lowest best-effort I/O priority: work no one
        /// waits for (checking a restored index against the disk) yields
        /// to the threads that answer queries, on a machine with no core
        /// to spare, yet still progresses on a busy one (nice 10 weighs a
        /// tenth of nice 0; idle scheduling could starve it for good).
        case background

        /// Puts the calling thread at this priority (for good).
        package func apply() {
            switch self {
            case .normal: break
            case .background: _ = mdq_lower_thread_priority(10)
            }
        }
    }
}

/// A thread of its own that runs one job at a time, handed over while the
/// caller prepares the next (the content indexer stores a batch while the
/// next is imported): at most one job waits or runs. Unlike a dispatch
/// queue, its thread can take a lower priority for good.
package final class HandoffThread: Sendable {
    private struct Slot {
        var job: (@Sendable () -> Void)?
        var stopping = false
    }

    private let slot = ConditionLocked(Slot())
    private let started: Bool

    /// Starts the thread (`name`), which first takes `priority`. If no
    /// thread can be had, jobs run on the caller's.
    package init(name: String, priority: WorkerThreads.Priority = .normal) {
        let slot = self.slot
        let thread = WorkerThreads.start(name: name) {
            priority.apply()
            while let job = slot.wait(until: { $0.job != nil || $0.stopping }, { $0.job }) {
                job()
                slot.mutateAndBroadcast { $0.job = nil }
            }
        }
        started = thread != nil
    }

    /// Waits for the job under way, if any, to end.
    package func wait() {
        slot.wait(until: { $0.job == nil }) { _ in }
    }

    /// Waits for the job under way, then hands `job` over and returns.
    package func run(_ job: @escaping @Sendable () -> Void) {
        guard started else { return job() }
        slot.wait(until: { $0.job == nil }) { s in
            s.job = job
        }
        slot.mutateAndBroadcast { _ in }
    }

    /// Ends the thread once the job under way is done.
    package func stop() {
        wait()
        slot.mutateAndBroadcast { $0.stopping = true }
    }

    deinit {
        slot.mutateAndBroadcast { $0.stopping = true }
    }
}

/// Runs `fire` once, on a thread of its own, `seconds` after it is made,
/// unless `finish()` comes first. `finish` says whether it fired (it may
/// still be running: what it acts on is the caller's to drop then, not to
/// reuse). Without a thread to wait on, nothing fires: the watchdog only
/// ever shortens a wait.
package final class Watchdog: Sendable {
    private let state = ConditionLocked<(finished: Bool, fired: Bool)>((false, false))

    package init(seconds: Double, _ fire: @escaping @Sendable () -> Void) {
        let deadline = ContinuousClock.now + .milliseconds(Int64(min(max(seconds, 0), 86_400) * 1000))
        let state = state
        WorkerThreads.start(name: "mdq-watchdog") {
            let firing = state.wait(until: { $0.finished }, deadline: deadline) { s -> Bool in
                guard !s.finished else { return false }
                s.fired = true
                return true
            }
            // Outside the lock: a cancel may wait on an unanswering server,
            // and `finish` must not wait with it.
            if firing { fire() }
        }
    }

    /// Stops the watchdog; whether it fired first.
    @discardableResult
    package func finish() -> Bool {
        state.mutateAndBroadcast { s in
            s.finished = true
            return s.fired
        }
    }
}
