package import MDQCore
package import MDQSystem
package import SystemPackage

/// Imports files in worker processes, as Apple's `mdworker` does: a file
/// that crashes, hangs or exhausts an importer costs one worker, never the
/// caller.
///
/// Each worker is `mdq-import-worker`, confined when it starts (address
/// space, CPU time, no file writes, nice 19 and the idle I/O class, killed
/// with its parent), then sandboxed (`WorkerConfinement`: Landlock leaves
/// it no filesystem access, a seccomp filter no new process, exec or
/// socket). So the worker opens nothing: the pool opens each file itself
/// (a regular file only, symlinks not followed, never blocking on a FIFO or
/// device) and passes the descriptor with the request. A file gets
/// `timeout` seconds; past it, or when the worker dies or answers nonsense,
/// the worker is killed and replaced and the file's report says why
/// ("the importer crashed (signal 11)", "timed out after 10 s"). Workers are
/// replaced after `filesPerWorker` files, so a slow leak in a C library
/// cannot grow without bound.
///
/// Thread-safe: callers on several threads share up to `workers` processes.
package final class ImportWorkerPool: Sendable {
    package struct Configuration: Sendable {
        /// The worker executable (`mdq-import-worker`).
        package var executable: FilePath
        package var workers: Int
        /// Seconds one file may take.
        package var timeout: Double
        /// A worker's address space.
        package var memoryBytes: UInt64
        /// A worker's CPU seconds over its life (a backstop to `timeout`).
        package var cpuSeconds: UInt
        var filesPerWorker: Int
        package var limits: ImportLimits
        /// `NAME=value` entries added to the workers' environment (tests
        /// set `MDQ_IMPORT_SANDBOX` and `MDQ_TEST_ESCAPE` this way).
        package var environment: [String] = []

        /// One worker, 10 s per file, 1 GiB of address space, 300 CPU
        /// seconds, 1,000 files; the executable is `$MDQ_IMPORT_WORKER`, else
        /// `mdq-import-worker` beside this process's executable (where
        /// `swift build` puts it), else in `../libexec/mdq/` from it (where
        /// `Scripts/install` puts it).
        package static var standard: Configuration {
            let folder = DetachedProcess.currentExecutable.removingLastComponent()
            let beside = folder.appending("mdq-import-worker")
            let installed = folder.removingLastComponent().appending("libexec/mdq/mdq-import-worker")
            let executable =
                ProcessEnvironment.variable("MDQ_IMPORT_WORKER").map { FilePath($0) }
                ?? (ProcessEnvironment.isExecutable(beside) || !ProcessEnvironment.isExecutable(installed)
                    ? beside : installed)
            return Configuration(
                executable: executable, workers: 1, timeout: 10, memoryBytes: 1 << 30, cpuSeconds: 300,
                filesPerWorker: 1000, limits: .standard)
        }

        package init(
            executable: FilePath, workers: Int, timeout: Double, memoryBytes: UInt64, cpuSeconds: UInt,
            filesPerWorker: Int, limits: ImportLimits
        ) {
            self.executable = executable
            self.workers = workers
            self.timeout = timeout
            self.memoryBytes = memoryBytes
            self.cpuSeconds = cpuSeconds
            self.filesPerWorker = filesPerWorker
            self.limits = limits
        }
    }

    package let configuration: Configuration
    private let idle = ConditionLocked(Idle())
    private let latestConfinement = Locked<WorkerConfinement?>(nil)

    private struct Idle {
        var workers: [Worker] = []
        var running = 0
    }

    /// A worker and the files it has imported.
    private final class Worker: @unchecked Sendable {
        // Used by one caller at a time (taken from and given back to `idle`).
        let process: WorkerProcess
        var files = 0
        /// Whether it said hello (with its confinement).
        var greeted = false

        init(_ process: WorkerProcess) { self.process = process }
    }

    package init(_ configuration: Configuration = .standard) {
        self.configuration = configuration
    }

    /// How the latest worker to start said it is confined; nil before one
    /// has started.
    package var confinement: WorkerConfinement? { latestConfinement.withLock { $0 } }

    /// Checks the worker executable is there, so a search that needs the
    /// importers says so at once rather than failing every file.
    ///
    /// - Throws: `MetadataError` `.importUnavailable`, naming the path tried.
    package func checkAvailable() throws(MetadataError) {
        guard ProcessEnvironment.isExecutable(configuration.executable) else {
            throw MetadataError.importUnavailable(configuration.executable)
        }
    }

    /// Imports the file at `path` in a worker (waiting for one when all are
    /// busy), with the importers filling an attribute of `wanted` (all when
    /// nil). The file is opened here and passed to the worker open.
    package func importFile(at path: FilePath, wanted: Set<MetadataAttribute>? = nil) -> ImportReport {
        var failed = ImportReport(path: path, typeByName: ImportReport.typeByName(path))
        func fail(_ failure: ImportFailure) -> ImportReport {
            failed.failure = failure
            failed.values[.importError] = .text(Array(failure.reason.utf8))
            return failed
        }
        let file: FileDescriptor
        switch ContentFile.openDescriptor(path) {
        case .success(let opened): file = opened
        case .failure(let error): return fail(ImportReport.openFailure(error))
        }
        defer { closeDescriptor(file.rawValue) }
        let worker: Worker
        switch takeWorker() {
        case .success(let taken): worker = taken
        case .failure(let error):
            return fail(ImportFailure("cannot start an import worker: \(error.description)", isTransient: true))
        }
        // The worker's start-up counts within the first file's time.
        let deadline = ContinuousClock.now + .milliseconds(Int(configuration.timeout * 1000))
        if !worker.greeted, let reason = greet(worker, deadline: deadline) {
            giveBack(nil)
            return fail(ImportFailure(reason))
        }
        let request = ImportWire.request(path: path, limits: configuration.limits, wanted: wanted)
        var reason: String
        if case .failure = worker.process.send(request, descriptor: file) {
            reason = "the importer \(worker.process.reapAfterEnd())"
        } else {
            switch worker.process.receive(deadline: deadline, limit: ImportWire.answerLimit(configuration.limits)) {
            case .frame(let body):
                if let report = ImportWire.decodeAnswer(body, path: path) {
                    worker.files += 1
                    giveBack(worker)
                    return report
                }
                worker.process.terminate()
                reason = "the importer answered nonsense"
            case .timedOut:
                worker.process.terminate()
                reason = "timed out after \(Self.seconds(configuration.timeout))"
            case .tooLarge:
                worker.process.terminate()
                reason = "the importer's answer was too large"
            case .ended:
                reason = "the importer \(worker.process.reapAfterEnd())"
            }
        }
        giveBack(nil)
        return fail(ImportFailure(reason))
    }

    /// Reads a new worker's hello and keeps the confinement it reports;
    /// nil, or why the worker is unusable (it is then stopped).
    private func greet(_ worker: Worker, deadline: ContinuousClock.Instant) -> String? {
        switch worker.process.receive(deadline: deadline, limit: 1 << 16) {
        case .frame(let body):
            guard let confinement = ImportWire.decodeHello(body) else {
                worker.process.terminate()
                return "the import worker speaks another protocol than \(ImportWire.protocolName)"
            }
            worker.greeted = true
            latestConfinement.withLock { $0 = confinement }
            return nil
        case .timedOut:
            worker.process.terminate()
            return "the import worker did not start within \(Self.seconds(configuration.timeout))"
        case .tooLarge:
            worker.process.terminate()
            return "the import worker speaks another protocol than \(ImportWire.protocolName)"
        case .ended:
            return "the import worker \(worker.process.reapAfterEnd()) as it started"
        }
    }

    /// Stops every idle worker (busy ones stop when given back).
    package func shutdown() {
        let workers = idle.mutateAndBroadcast { state -> [Worker] in
            defer { state.workers = [] }
            state.running -= state.workers.count
            return state.workers
        }
        for worker in workers { worker.process.terminate() }
    }

    deinit {
        shutdown()
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    private func takeWorker() -> Result<Worker, Errno> {
        let reused = idle.wait(until: { $0.workers.count > 0 || $0.running < configuration.workers }) {
            state -> Worker? in
            if let worker = state.workers.popLast() { return worker }
            state.running += 1
            return nil
        }
        if let reused {
            // One that ended while idle (killed by the OOM killer or a
            // person) is replaced rather than blamed on the next file.
            if reused.process.isRunning { return .success(reused) }
            reused.process.terminate()
            idle.mutateAndBroadcast { $0.running -= 1 }
            return takeWorker()
        }
        let arguments = ["--memory", String(configuration.memoryBytes), "--cpu", String(configuration.cpuSeconds)]
        switch WorkerProcess.spawn(
            configuration.executable, arguments: arguments, environment: configuration.environment)
        {
        case .success(let process): return .success(Worker(process))
        case .failure(let error):
            idle.mutateAndBroadcast { $0.running -= 1 }
            return .failure(error)
        }
    }

    /// Returns a worker to the pool, or (nil) frees the place of one that
    /// was killed.
    private func giveBack(_ worker: Worker?) {
        if let worker, worker.files >= configuration.filesPerWorker {
            worker.process.terminate()
            idle.mutateAndBroadcast { $0.running -= 1 }
            return
        }
        idle.mutateAndBroadcast { state in
            if let worker { state.workers.append(worker) } else { state.running -= 1 }
        }
    }
}

/// The import worker's main loop: limits itself, loads what its importers
/// need, sandboxes itself, says hello, then answers import requests on
/// standard input until it closes.
package enum ImportWorkerMain {
    /// Runs the worker with `arguments` (`--memory BYTES --cpu SECONDS`)
    /// and `importers`; never returns.
    package static func run(_ arguments: [String], importers: [any Importer]) -> Never {
        var memory: UInt64 = 1 << 30
        var cpu: UInt = 300
        var i = 0
        while i + 1 < arguments.count {
            switch arguments[i] {
            case "--memory": memory = UInt64(arguments[i + 1]) ?? memory
            case "--cpu": cpu = UInt(arguments[i + 1]) ?? cpu
            default: break
            }
            i += 2
        }
        if case .failure(let error) = WorkerChannel.limit(memoryBytes: memory, cpuSeconds: cpu) {
            // Unconfined work is refused rather than done.
            exit(because: "cannot confine itself: \(error.description)")
        }
        // Everything the importers would load lazily, while files can still
        // be opened; then none can (but their libraries' data folders).
        WorkerConfinement.preloadProcessData()
        for importer in importers { importer.prepareForConfinement() }
        let confinement = WorkerConfinement.confineThisProcess(readable: importers.flatMap(\.dataFolders))
        if case .failure(let error) = WorkerChannel.watchParent() {
            exit(because: "cannot watch its parent: \(error.description)")
        }
        guard WorkerChannel.writeFrame(ImportWire.hello(confinement)) else { ProcessEnvironment.exitImmediately(0) }
        while let (body, descriptors) = WorkerChannel.readFrame(limit: 1 << 20) {
            guard let (path, limits, wanted) = ImportWire.decodeRequest(body), let descriptor = descriptors.first
            else { break }
            var report: ImportReport
            switch ContentFile.adopting(descriptor, budget: limits.bytesRead) {
            case .success(let file):
                report = ImportReport.importFile(
                    from: file, path: path, limits: limits, importers: importers, wanted: wanted)
            case .failure(let error):
                var refused = ImportReport(path: path, typeByName: ImportReport.typeByName(path))
                refused.failure = ImportReport.openFailure(error)
                refused.values[.importError] = .text(Array(refused.failure!.reason.utf8))
                report = refused
            }
            #if MDQ_INVARIANTS
                report = EscapeProbe.attempt(on: report)
            #endif
            guard WorkerChannel.writeFrame(ImportWire.answer(report)) else { break }
        }
        ProcessEnvironment.exitImmediately(0)
    }

    private static func exit(because reason: String) -> Never {
        ProcessEnvironment.writeToStandardError("mdq-import-worker: \(reason)\n")
        ProcessEnvironment.exitImmediately(1)
    }
}
