import MDQSystem
import Synchronization

/// The crawl's shared work: folders not yet claimed by a thread.
///
/// Each thread walks depth-first from its own stack and only touches this
/// queue when its stack runs dry or another thread is idle (then it donates
/// its shallowest folders, the largest pieces of work). The crawl ends when
/// every thread is waiting and the queue is empty.
package final class CrawlQueue<Job: Sendable>: Sendable {
    private struct Shared {
        var jobs: [Job]
        /// Threads waiting for a job.
        var waiting = 0
        var finished = false
    }

    private let shared: ConditionLocked<Shared>
    private let workerCount: Int
    /// Threads waiting for work; read without the lock as a hint to donate.
    let idleWorkers = Atomic<Int>(0)
    /// Whether some thread waits for work (a hint: donate some).
    package var hasIdleWorkers: Bool { idleWorkers.load(ordering: .relaxed) > 0 }

    package init(jobs: [Job], workerCount: Int) {
        shared = ConditionLocked(Shared(jobs: jobs))
        self.workerCount = workerCount
    }

    /// The next job, waiting while other threads may still produce work;
    /// nil when the crawl is done.
    package func take() -> Job? {
        while true {
            // Either a job, the end, or this thread counts itself as waiting
            // (the last one to wait ends the crawl for all).
            let immediate = shared.mutateAndBroadcast { queue -> Job?? in
                if let job = queue.jobs.popLast() { return .some(job) }
                if queue.finished { return .some(nil) }
                queue.waiting += 1
                idleWorkers.store(queue.waiting, ordering: .relaxed)
                if queue.waiting == workerCount {
                    queue.finished = true
                    return .some(nil)
                }
                return nil
            }
            if let immediate { return immediate }
            let woken = shared.wait(until: { !$0.jobs.isEmpty || $0.finished }) { queue -> Job?? in
                queue.waiting -= 1
                idleWorkers.store(queue.waiting, ordering: .relaxed)
                if let job = queue.jobs.popLast() { return .some(job) }
                return queue.finished ? .some(nil) : nil
            }
            if let woken { return woken }
        }
    }

    /// Hands jobs to idle threads.
    package func donate(_ jobs: ArraySlice<Job>) {
        shared.mutateAndBroadcast { $0.jobs.append(contentsOf: jobs) }
    }
}
