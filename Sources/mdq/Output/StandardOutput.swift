import MetadataIndex
import SystemPackage

/// Everything mdq prints on stdout goes through here.
enum StandardOutput {
    /// Writes all of `bytes`. A closed pipe (`mdq ... | head -1`) ends the
    /// process quietly with status 0; any other failure says so and ends it
    /// with status 1.
    static func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
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
}
