import CLinuxSyscalls
import Glibc
package import SystemPackage

/// A pipe that wakes a thread waiting in `poll` on other descriptors too:
/// `signal` from any thread makes `descriptor` readable until `drain`.
/// Both ends are non-blocking and closed on exec from the start.
package final class WakePipe: Sendable {
    /// The end to poll.
    package let descriptor: Int32
    private let writer: Int32

    package init() throws(Errno) {
        var ends: [Int32] = [-1, -1]
        _ = try syscallResult { mdq_wake_pipe(&ends) }.get()
        descriptor = ends[0]
        writer = ends[1]
    }

    deinit {
        close(descriptor)
        close(writer)
    }

    /// Makes `descriptor` readable (a full pipe already is).
    package func signal() {
        var byte: UInt8 = 1
        _ = syscallResult { write(writer, &byte, 1) }
    }

    /// Empties the pipe.
    package func drain() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while case .success(let count) = syscallResult({ read(descriptor, &bytes, bytes.count) }), count > 0 {}
    }
}
