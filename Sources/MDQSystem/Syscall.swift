import CLinuxSyscalls
import Glibc
package import SystemPackage

/// The single errno policy for every system call mdq makes.
///
/// Calls returning -1 are retried while they fail with `EINTR` (never use this
/// for `close`, whose descriptor is gone after an interrupted call), and any
/// other failure is returned as the `Errno` the call left behind.
@inline(__always)
package func syscallResult<I: FixedWidthInteger>(
    retryOnInterrupt: Bool = true,
    _ call: () -> I
) -> Result<I, Errno> {
    while true {
        let value = call()
        if value != -1 { return .success(value) }
        let error = Errno(rawValue: errno)
        if retryOnInterrupt && error == .interrupted { continue }
        return .failure(error)
    }
}

/// Closes a descriptor exactly once, without retrying on `EINTR`: on Linux the
/// descriptor is released even when `close` reports an interruption.
@inline(__always)
package func closeDescriptor(_ descriptor: CInt) {
    _ = Glibc.close(descriptor)
}

extension Result {
    /// Whether the call succeeded, when only that matters.
    package var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}

/// The path the kernel gives an open file (`/proc/self/fd/N`'s link), read
/// from the descriptor itself.
package func descriptorPath(_ descriptor: CInt) -> Result<[UInt8], Errno> {
    var buffer = [UInt8](repeating: 0, count: 4096)
    return syscallResult {
        buffer.withUnsafeMutableBytes { raw in
            mdq_descriptor_path(descriptor, raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count)
        }
    }.map { Array(buffer.prefix(Int($0))) }
}
