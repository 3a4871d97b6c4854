import Glibc

/// Dedicated OS threads for blocking work (crawling), never the Swift
/// cooperative pool.
enum WorkerThreads {
    private final class Box: @unchecked Sendable {
        // Written before the thread starts and read only by that thread.
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread.
    static func detach(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body))
        var thread = pthread_t()
        let rc = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
                return nil
            }, box.toOpaque())
        if rc == 0 {
            pthread_detach(thread)
        } else {
            box.release()
        }
    }

    /// Runs `body(0..<count)` on `count` threads (the caller's thread is
    /// number 0) and returns when all have finished.
    static func run(count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        var threads: [pthread_t] = []
        for index in 1..<max(1, count) {
            let box = Unmanaged.passRetained(Box { body(index) })
            var thread = pthread_t()
            let rc = pthread_create(
                &thread, nil,
                { context in
                    let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                    box.body()
                    return nil
                }, box.toOpaque())
            if rc == 0 {
                threads.append(thread)
            } else {
                // No thread: do its share here rather than lose it.
                box.takeRetainedValue().body()
            }
        }
        body(0)
        for thread in threads { pthread_join(thread, nil) }
    }
}
