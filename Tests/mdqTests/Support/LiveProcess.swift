import Foundation
import Glibc
import MetadataIndex
import TestSupport

/// A running `mdq --live`, read line by line as it writes.
final class LiveProcess: @unchecked Sendable {
    let process = Process()
    private let output = Buffer()
    private let errors = Buffer()

    /// The bytes read so far and the complete lines among them (split as
    /// they arrive, so polling a long stream costs only its new lines),
    /// shared with the pipe's reading handler.
    final class Buffer: Sendable {
        private struct State {
            var data = Data()
            var lines: [String] = []
            var lineStart = 0
        }
        private let state = Locked(State())

        func append(_ chunk: Data) {
            guard !chunk.isEmpty else { return }
            state.withLock { s in
                let scanFrom = s.data.count
                s.data.append(chunk)
                var index = scanFrom
                while let newline = s.data[index...].firstIndex(of: 0x0A) {
                    s.lines.append(String(decoding: s.data[s.lineStart..<newline], as: UTF8.self))
                    s.lineStart = newline + 1
                    index = newline + 1
                }
            }
        }

        var data: Data { state.withLock { $0.data } }
        var text: String { state.withLock { String(decoding: $0.data, as: UTF8.self) } }
        var lineCount: Int { state.withLock { $0.lines.count } }
        func lines(from start: Int = 0) -> ArraySlice<String> {
            state.withLock { $0.lines[min(start, $0.lines.count)...] }
        }
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
        process.environment = childEnvironment(environment ?? [:])
        process.standardOutput = pipe
        process.standardError = errorPipe
        process.standardInput = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [output] handle in
            output.append(handle.availableData)
        }
        errorPipe.fileHandleForReading.readabilityHandler = { [errors] handle in
            errors.append(handle.availableData)
        }
        try process.run()
    }

    /// Complete lines written so far.
    var lines: [String] { Array(output.lines()) }

    /// Everything written, complete or not.
    var rawOutput: Data { output.data }

    /// Waits (polling every 5 ms, up to `timeout`) for a line satisfying
    /// `condition`; each line is tested once.
    @discardableResult
    func waitForLine(timeout: Double = 20, _ condition: (String) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var checked = 0
        func check() -> Bool {
            let fresh = output.lines(from: checked)
            checked += fresh.count
            return fresh.contains(where: condition)
        }
        while Date() < deadline {
            if check() { return true }
            usleep(5_000)
        }
        return check()
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
        drain()
        return process.terminationStatus
    }

    /// Waits (up to `timeout`) for the process to end by itself; its exit
    /// status, with all it wrote read (its pipes can still hold the end
    /// of its output when it has exited), or nil while it runs.
    func waitForExit(timeout: Double = 20) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        guard !process.isRunning else { return nil }
        drain()
        return process.terminationStatus
    }

    /// Takes what is left in the pipes of an exited process.
    private func drain() {
        pipe.fileHandleForReading.readabilityHandler = nil
        errorPipe.fileHandleForReading.readabilityHandler = nil
        output.append(pipe.fileHandleForReading.readDataToEndOfFile())
        errors.append(errorPipe.fileHandleForReading.readDataToEndOfFile())
    }

    /// Everything written on stderr so far.
    var errorText: String {
        errors.text
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
