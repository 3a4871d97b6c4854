import Foundation
import MetadataIndex
import SystemPackage

/// Everything mdq prints on stdout goes through here.
enum StandardOutput {
    /// Held while bytes are written, so an interrupt can wait for the write
    /// under way (buffers always end on a line).
    private static let writing = NSLock()

    /// Writes all of `bytes`. A closed pipe (`mdq ... | head -1`) ends the
    /// process quietly with status 0; any other failure says so and ends it
    /// with status 1.
    static func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        writing.lock()
        defer { writing.unlock() }
        do {
            _ = try FileDescriptor.standardOutput.writeAll(bytes)
        } catch Errno.brokenPipe {
            ProcessExit.exit(0)
        } catch {
            Diagnostics.error("cannot write results: \(error)")
            ProcessExit.exit(1)
        }
    }

    /// Writes the buffer and empties it.
    static func flush(_ buffer: inout [UInt8]) {
        write(buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes text and a newline.
    static func print(_ text: String) {
        write(Array((text + "\n").utf8))
    }
}

extension StandardOutput {
    /// Ends a one-shot command on SIGINT or SIGTERM: waits for the write
    /// under way (whole lines), then exits with 128 + the signal, as a
    /// process killed by it would report. A reader that stopped reading
    /// cannot hold the exit back for more than two seconds.
    static func exitOnInterrupt(signal: Int32) -> Never {
        _ = writing.lock(before: Date(timeIntervalSinceNow: 2))
        ProcessExit.exit(128 + signal)
    }
}
