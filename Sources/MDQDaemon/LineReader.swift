import Foundation
import MDQCore
package import MDQSystem
import SystemPackage

/// Reads newline-terminated lines (and binary payloads) from a socket,
/// bounded in line length and in the time a line may take once begun.
package struct LineReader {
    let socket: UnixSocket
    let maximum: Int
    let timeout: Int32
    /// Bytes received and not consumed: `storage[start...]`.
    private var storage: [UInt8] = []
    private var start = 0
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    /// How many descriptors passed with requests (`SCM_RIGHTS`) are kept
    /// until a request takes them (0: none; any that come are closed).
    let descriptorCapacity: Int
    /// Descriptors received and not yet taken, in the order they came.
    private var descriptors: [ReceivedDescriptor] = []
    /// More came than `descriptorCapacity`: the next request that takes
    /// any is refused.
    private var descriptorsDropped = false

    package init(socket: UnixSocket, maximum: Int, timeout: Int32, descriptorCapacity: Int = 0) {
        self.socket = socket
        self.maximum = maximum
        self.timeout = timeout
        self.descriptorCapacity = descriptorCapacity
    }

    /// Closes every descriptor received and not taken.
    mutating func dropDescriptors() {
        descriptors.removeAll()
        descriptorsDropped = false
    }

    /// The first `count` descriptors received, for the request just read
    /// (a client sends a request's descriptors with its bytes, so they
    /// are here once its line is); nil when fewer came, or some were
    /// dropped.
    mutating func takeDescriptors(_ count: Int) -> [ReceivedDescriptor]? {
        guard count > 0 else { return [] }
        defer { descriptorsDropped = false }
        guard !descriptorsDropped, count <= descriptors.count else {
            descriptors.removeAll()
            return nil
        }
        defer { descriptors.removeFirst(count) }
        return Array(descriptors.prefix(count))
    }

    package enum Outcome {
        case line([UInt8])
        case end
        case failure(ProtocolError)
    }

    private enum Received { case data, timedOut, end }

    private var pending: Int { storage.count - start }

    private mutating func receive(wait: Int32) -> Received {
        if start > 0 && start >= storage.count / 2 {
            storage.removeSubrange(..<start)
            start = 0
        }
        let room = descriptorCapacity - descriptors.count
        let result = scratch.withUnsafeMutableBytes {
            socket.read(into: $0, timeout: wait, capacity: max(0, room))
        }
        switch result {
        case .failure: return .end
        case .success(nil): return .timedOut
        case .success(let received?):
            descriptors += received.descriptors
            if received.truncated { descriptorsDropped = true }
            guard received.count > 0 else { return .end }
            storage.append(contentsOf: scratch[..<received.count])
            return .data
        }
    }

    /// The next line (without its newline). Waits up to `idle` ms for a line
    /// to begin (-1: forever), then `timeout` ms for it to end.
    package mutating func next(idle: Int32 = 600_000) -> Outcome {
        // Bytes after `start` already searched for a newline (compaction
        // moves `start`, not what follows it).
        var scanned = 0
        while true {
            if let newline = storage[(start + scanned)...].firstIndex(of: 0x0A) {
                let line = Array(storage[start..<newline])
                start = newline + 1
                scanned = 0
                if line.isEmpty || line == [0x0D] { continue }
                return .line(line)
            }
            guard pending <= maximum else {
                return .failure(ProtocolError(code: .tooLarge, message: "a request is limited to \(maximum) bytes"))
            }
            scanned = pending
            let began = pending > 0
            switch receive(wait: began ? timeout : idle) {
            case .data:
                continue
            case .timedOut:
                if !began { return .end }
                return .failure(ProtocolError(code: .timeout, message: "the request was not finished in time"))
            case .end:
                if began {
                    return .failure(ProtocolError(code: .badRequest, message: "the connection ended mid-request"))
                }
                return .end
            }
        }
    }

    /// Exactly `count` bytes after the last line read (a binary payload),
    /// or nil when the stream ends first.
    mutating func read(exactly count: Int) -> [UInt8]? {
        while pending < count {
            guard case .data = receive(wait: timeout) else { return nil }
        }
        let payload = Array(storage[start..<start + count])
        start += count
        return payload
    }
}
