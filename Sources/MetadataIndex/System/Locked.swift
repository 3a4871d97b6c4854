import Foundation

/// A value behind a pthread mutex (`NSLock`).
///
/// Used instead of `Synchronization.Mutex`, whose Linux implementation
/// waits on futexes directly: ThreadSanitizer does not see those as
/// synchronisation and reports every access they guard as a race. A pthread
/// mutex costs the same uncontended and keeps `Scripts/sanitize` meaningful.
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
