import CLinuxSyscalls
import Glibc

/// Process-wide resource limits the crawler depends on.
package enum ProcessLimits {
    /// Raises the soft open-file limit to the hard limit, once.
    ///
    /// The crawler keeps one descriptor open per folder on each thread's
    /// current path plus queued work; a deep tree on a 1024-descriptor default
    /// could otherwise fail with `EMFILE`.
    package static let raisedOpenFileLimit: Void = {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_CONSTANT, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(RLIMIT_NOFILE_CONSTANT, &limit)
    }()

    private static var RLIMIT_NOFILE_CONSTANT: __rlimit_resource_t {
        __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    }

    /// The number of processors online, at least 1.
    package static var processorCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}

/// The process's heap.
package enum ProcessMemory {
    /// Gives the heap's free pages back to the kernel: a crawl's buffers
    /// (per thread, per folder) are freed in the middle of the heap, where
    /// glibc keeps them resident until asked. Only worth it after work
    /// that grew the index by `entries` or more: trimming walks every
    /// arena under its lock, which costs more than it returns after a
    /// small crawl (and a query's crawl may be one of many in a process).
    /// Returns whether it trimmed.
    @discardableResult
    package static func releaseFreePages(after entries: Int, threshold: Int = 50_000) -> Bool {
        guard entries >= threshold else { return false }
        mdq_release_free_memory()
        return true
    }

    /// For a long-running daemon: at most `arenas` malloc arenas, so memory
    /// freed by short-lived threads (crawls, import lanes) is reused instead
    /// of pinning pages in arenas of their own (glibc makes up to eight per
    /// core); and buffers of 1 MiB or more always mapped on their own, so
    /// they go back to the kernel when freed (glibc otherwise raises that
    /// threshold to the largest buffer freed, and a snapshot's buffer then
    /// stays in the heap). Call before threads start.
    package static func tuneForDaemon(arenas: Int) {
        mdq_tune_malloc_for_daemon(Int32(arenas))
    }
}
