package import Foundation

/// Runs a program and collects its output; for tests only.
package enum Shell {
    package struct Output {
        package var status: Int32
        package var stdout: Data
        package var stderr: Data
        package var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        package var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    }

    @discardableResult
    package static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        currentDirectory: String? = nil
    ) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        process.environment = childEnvironment(environment ?? [:])
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read stderr on a thread of its own so a full stderr pipe cannot
        // block stdout. Not a thread of Dispatch's pool: it has one per core,
        // and tests running programs at once would queue their readers
        // behind each other while their programs wait on full pipes.
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var errData = Data()  // written before signal(), read after wait()
        let reader = Thread {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            done.signal()
        }
        reader.start()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        done.wait()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: outData, stderr: errData)
    }

    /// The repository's corpus generator, `Benchmarks/make-tree.py` (nil if
    /// the tests run without their sources).
    package static var makeTreeScript: String? {
        // Tests/TestSupport/Shell.swift -> the repository root
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let script = url.appendingPathComponent("Benchmarks/make-tree.py").path
        return FileManager.default.fileExists(atPath: script) ? script : nil
    }
}

/// The environment a test gives a program it runs: this process's, less
/// what a test sets in it for the library alone (`MDQ_SHARED`: tests run
/// at once, and another test's database must not become this program's),
/// with `extra` over it.
package func childEnvironment(_ extra: [String: String]) -> [String: String] {
    var inherited = ProcessInfo.processInfo.environment
    inherited["MDQ_SHARED"] = nil
    return inherited.merging(extra) { $1 }
}
