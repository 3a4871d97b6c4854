import Foundation

/// Polls `condition` until it holds or `timeout` seconds pass (never a
/// fixed sleep: it returns as soon as the condition holds), every `interval`
/// seconds (longer when each look starts a process); whether it held.
package func waitUntil(
    timeout: Double = 60, interval: Double = 0.005, _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = Date(timeIntervalSinceNow: timeout)
    while Date() < deadline {
        if try condition() { return true }
        usleep(UInt32(interval * 1_000_000))
    }
    return try condition()
}
