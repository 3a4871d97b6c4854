import Foundation

/// Runs a program and collects its output; for tests only.
enum Shell {
    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: Data
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Output
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read stderr on another thread so a full stderr pipe cannot block stdout.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()  // written before group.leave(), read after wait()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: outData, stderr: errData)
    }

    /// The shared corpus generator, `../shared/corpus/make-tree.py`, if present.
    static var makeTreeScript: String? {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        let script = url.deletingLastPathComponent().appendingPathComponent("shared/corpus/make-tree.py").path
        return FileManager.default.fileExists(atPath: script) ? script : nil
    }
}
