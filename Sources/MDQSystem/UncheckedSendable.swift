/// A value handed to worker threads that the compiler cannot prove safe to
/// share: a pointer or buffer each thread writes its own part of, or an
/// object the threads only read while its owner waits for them
/// (`WorkerThreads.run`, `concurrentPerform`). The caller vouches for it.
package struct UncheckedSendable<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
