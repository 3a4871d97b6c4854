import Dispatch
import Foundation
import MDQCore
import MDQSystem

/// Whether the calling code runs on the main dispatch queue.
///
/// `Thread.isMainThread` is not the answer on Linux: after `dispatchMain()`
/// (an `async` `main`, the Swift Testing runner) the main thread exits and
/// worker threads drain the main queue, so main-actor code runs on other
/// threads, and swift-corelibs-foundation's `OperationQueue.current` is then
/// nil outside an operation. A dispatch-specific value set on the main queue
/// is seen wherever its work runs.
package enum MainQueue {
    private static let marker: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the caller runs on the main queue (or on the main thread,
    /// which libdispatch treats as the main queue's).
    package static var isCurrent: Bool {
        Thread.isMainThread || DispatchQueue.getSpecific(key: marker) == true
    }
}
