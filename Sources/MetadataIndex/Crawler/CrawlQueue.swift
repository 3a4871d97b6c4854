import Foundation
import Synchronization

/// The crawl's shared work: folders not yet claimed by a thread.
///
/// Each thread walks depth-first from its own stack and only touches this
/// queue when its stack runs dry or another thread is idle (then it donates
/// its shallowest folders, the largest pieces of work). The crawl ends when
/// every thread is waiting and the queue is empty.
final class CrawlQueue<Job: Sendable>: @unchecked Sendable {
    // `shared`, `waiting` and `finished` are guarded by `condition`.
    private let condition = NSCondition()
    private var shared: [Job]
    private var waiting = 0
    private var finished = false
    private let workerCount: Int
    /// Threads waiting for work; read without the lock as a hint to donate.
    let idleWorkers = Atomic<Int>(0)

    init(jobs: [Job], workerCount: Int) {
        shared = jobs
        self.workerCount = workerCount
    }

    /// The next job, waiting while other threads may still produce work;
    /// nil when the crawl is done.
    func take() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let job = shared.popLast() { return job }
            if finished { return nil }
            waiting += 1
            if waiting == workerCount {
                finished = true
                condition.broadcast()
                return nil
            }
            idleWorkers.store(waiting, ordering: .relaxed)
            condition.wait()
            waiting -= 1
            idleWorkers.store(waiting, ordering: .relaxed)
        }
    }

    /// Hands jobs to idle threads.
    func donate(_ jobs: ArraySlice<Job>) {
        condition.lock()
        shared.append(contentsOf: jobs)
        condition.broadcast()
        condition.unlock()
    }
}
