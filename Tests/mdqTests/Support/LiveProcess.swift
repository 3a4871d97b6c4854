import Foundation
import Glibc
import MetadataIndex

/// A running `mdq --live`, read line by line as it writes.
final class LiveProcess: @unchecked Sendable {
    let process = Process()
    private let output = Buffer()
    private let errors = Buffer()

    /// The bytes read so far, shared with the pipe's reading handler.
    final class Buffer: Sendable {
        private let data = Locked<Data>(Data())
        func withLock<R>(_ body: (inout Data) -> R) -> R { data.withLock { body(&$0) } }
    }
    private let pipe = Pipe()
    private let errorPipe = Pipe()

    init(
        _ executable: String, _ arguments: [String], unprivileged: Bool = false, environment: [String: String]? = nil
    ) throws {
        var executable = executable
        var arguments = arguments
        if unprivileged {
            // As "nobody", so folders can be unreadable (root reads them all).
            arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", executable] + arguments
            executable = "/usr/bin/setpriv"
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardOutput = pipe
        process.standardError = errorPipe
        process.standardInput = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            let chunk = handle.availableData
            output.withLock { $0.append(chunk) }
        }
        errorPipe.fileHandleForReading.readabilityHandler = { [errors] handle in
            let chunk = handle.availableData
            errors.withLock { $0.append(chunk) }
        }
        try process.run()
    }

    /// Complete lines written so far.
    var lines: [String] {
        output.withLock { data in
            let text = String(decoding: data, as: UTF8.self)
            var parts = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            parts.removeLast()  // what follows the last newline is not a line yet
            return parts
        }
    }

    /// Everything written, complete or not.
    var rawOutput: Data { output.withLock { $0 } }

    /// Waits (polling every 5 ms, up to `timeout`) for a line satisfying `condition`.
    @discardableResult
    func waitForLine(timeout: Double = 20, _ condition: (String) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if lines.contains(where: condition) { return true }
            usleep(5_000)
        }
        return lines.contains(where: condition)
    }

    /// Sends `signal` (SIGINT by default) and waits for the exit status.
    func interrupt(signal: Int32 = SIGINT, timeout: Double = 10) -> Int32? {
        kill(process.processIdentifier, signal)
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        guard !process.isRunning else {
            process.terminate()
            return nil
        }
        // Drain what is left in the pipe.
        let rest = pipe.fileHandleForReading.readDataToEndOfFile()
        output.withLock { $0.append(rest) }
        return process.terminationStatus
    }

    /// Everything written on stderr so far.
    var errorText: String {
        errors.withLock { String(decoding: $0, as: UTF8.self) }
    }

    /// Waits (polling every 20 ms, up to `timeout`) until `condition` holds.
    @discardableResult
    func waitUntil(timeout: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    /// Waits (polling every 5 ms, up to `timeout`) until stderr satisfies `condition`.
    @discardableResult
    func waitForErrors(timeout: Double = 20, _ condition: (String) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if condition(errorText) { return true }
            usleep(5_000)
        }
        return condition(errorText)
    }

    /// The inotify watches the process holds (from /proc/PID/fdinfo).
    var inotifyWatchCount: Int {
        let fdinfo = "/proc/\(process.processIdentifier)/fdinfo"
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: fdinfo) else { return 0 }
        return descriptors.reduce(0) { total, descriptor in
            let text = (try? String(contentsOfFile: "\(fdinfo)/\(descriptor)", encoding: .utf8)) ?? ""
            return total + text.split(separator: "\n").filter { $0.hasPrefix("inotify wd:") }.count
        }
    }
}
