import Glibc
package import MDQCore
package import MDQSystem
import Synchronization
package import SystemPackage

/// Imports files in worker processes, as Apple's `mdworker` does: a file
/// that crashes, hangs or exhausts an importer costs one worker, never the
/// caller.
///
/// Each worker is `mdq-import-worker`, confined when it starts (address
/// space, CPU time, no file writes, nice 19 and the idle I/O class, killed
/// with its parent), then sandboxed (`WorkerConfinement`: Landlock leaves
/// it no filesystem access, a seccomp filter no new process, exec or
/// socket); one started by root (the system index's) first becomes
/// `nobody` (`WorkerChannel.leaveRoot`). So the worker opens nothing: the pool opens each file itself
/// (a regular file only, symlinks not followed, never blocking on a FIFO or
/// device) and passes the descriptor with the request. A file gets
/// `timeout` seconds; past it, or when the worker dies or answers nonsense,
/// the worker is killed and replaced and the file's report says why
/// ("the importer crashed (signal 11)", "timed out after 10 s"). A worker
/// is replaced before its limits could fire on an innocent file: once it
/// has used three quarters of its address space or of its CPU time
/// (looked up every `usageInterval` files), or after `filesPerWorker`
/// files, so a slow leak in a C library cannot grow without bound, and a
/// worker otherwise lives long (starting one costs about what importing a
/// thousand small files does).
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
        /// `timeout` as a duration.
        var fileTime: Duration { .milliseconds(Int(timeout * 1000)) }
        /// `NAME=value` entries added to the workers' environment (tests
        /// set `MDQ_IMPORT_SANDBOX` and `MDQ_TEST_ESCAPE` this way).
        package var environment: [String] = []

        /// One worker, 10 s per file, 1 GiB of address space, 300 CPU
        /// seconds, 100,000 files; the executable is `$MDQ_IMPORT_WORKER`, else
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
                filesPerWorker: 100_000, limits: .standard)
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
        var started = 0
    }

    /// Workers started so far (each replacement counts).
    package var workersStarted: Int { idle.withLock { $0.started } }

    /// A worker and the files it has imported.
    fileprivate final class Worker: @unchecked Sendable {
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
        importFiles([path], wanted: wanted)[0]
    }

    /// Imports `paths` on up to `workers` workers at once, each lane taking
    /// the next file when it can, and answers their reports in order.
    ///
    /// Several small files are in flight to a worker at a time (up to
    /// `pipelineDepth`, and `pipelineBytes` of them by `sizes`): the worker
    /// goes from one to the next without waiting for this process, and a
    /// read here often brings several answers. Each file is asked for
    /// ahead (`POSIX_FADV_WILLNEED` on its first `prefetchBytes`) as it is
    /// sent, so the disk reads files already queued while the worker
    /// imports one. A file still gets `timeout` seconds from when the
    /// worker can start on it; a worker lost on a file costs that file
    /// only, and the files behind it go to the next worker.
    package func importFiles(
        _ paths: [FilePath], sizes: [UInt64]? = nil, wanted: Set<MetadataAttribute>? = nil
    ) -> [ImportReport] {
        var reports = paths.map { ImportReport(path: $0, typeByName: "") }
        guard !paths.isEmpty else { return reports }
        let next = Atomic<Int>(0)
        let lanes = max(1, min(configuration.workers, paths.count))
        reports.withUnsafeMutableBufferPointer { buffer in
            let out = UncheckedSendable(buffer)  // each lane writes the elements it took
            let lane = { @Sendable (_: Int) in
                var lane = Lane(pool: self, paths: paths, sizes: sizes, wanted: wanted)
                lane.run(next: next) { out.value[$0] = $1 }
            }
            // Threads of the caller's priority (a new thread inherits it).
            WorkerThreads.run(count: lanes, name: "mdq-import-lane", lane)
        }
        return reports
    }

    /// Files in flight to one worker at most.
    static let pipelineDepth = 8
    /// Bytes (by size) in flight to one worker at most, but for one file.
    static let pipelineBytes: UInt64 = 1 << 20
    /// What is asked of the disk ahead for each file sent.
    static let prefetchBytes: UInt64 = 128 << 10
    /// Answers between two looks at what a worker uses (`retire`).
    static let usageInterval = 64

    /// One caller's conversation with one worker at a time: opens the
    /// files it takes, sends them ahead, reads the answers in order, and
    /// replaces a worker that is lost or has used enough.
    private struct Lane {
        let pool: ImportWorkerPool
        let paths: [FilePath]
        let sizes: [UInt64]?
        let wanted: Set<MetadataAttribute>?

        /// A file opened for the worker.
        struct Sent {
            var index: Int
            var file: FileDescriptor
            var size: UInt64
            /// When it was opened; the worker may start on it no sooner
            /// than its previous answer (or its start).
            var sentAt: ContinuousClock.Instant
        }

        var worker: Worker?
        /// Sent to `worker`, not answered yet, in order.
        var flight: [Sent] = []
        var flightBytes: UInt64 = 0
        /// Opened and not sent (given back by a worker lost before them).
        var unsent: [Sent] = []
        /// When the worker answered last (or started).
        var lastAnswer = ContinuousClock.now
        /// The worker gets no more files; it is stopped once it answered
        /// those it has.
        var retiring = false

        init(pool: ImportWorkerPool, paths: [FilePath], sizes: [UInt64]?, wanted: Set<MetadataAttribute>?) {
            self.pool = pool
            self.paths = paths
            self.sizes = sizes
            self.wanted = wanted
        }

        mutating func run(next: borrowing Atomic<Int>, report: (Int, ImportReport) -> Void) {
            var exhausted = false
            while true {
                // Send ahead while the worker has room.
                while !retiring, flight.count < ImportWorkerPool.pipelineDepth,
                    flight.isEmpty || flightBytes < ImportWorkerPool.pipelineBytes
                {
                    let item: Sent
                    if !unsent.isEmpty {
                        item = unsent.removeFirst()
                    } else if !exhausted {
                        let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                        guard i < paths.count else {
                            exhausted = true
                            continue
                        }
                        switch ContentFile.openDescriptor(paths[i]) {
                        case .success(let file):
                            item = Sent(index: i, file: file, size: sizes?[i] ?? 0, sentAt: .now)
                        case .failure(let error):
                            report(i, fail(i, ImportReport.openFailure(error)))
                            continue
                        }
                    } else {
                        break
                    }
                    if worker == nil {
                        if let reason = start() {
                            report(item.index, fail(item.index, reason))
                            closeDescriptor(item.file.rawValue)
                            continue
                        }
                    }
                    guard let worker else { continue }
                    if flight.count > 0 || sizes != nil {
                        // Never a length of 0: to the kernel that is the
                        // whole file (and a size read earlier may be stale).
                        let ahead =
                            item.size > 0
                            ? min(item.size, ImportWorkerPool.prefetchBytes) : ImportWorkerPool.prefetchBytes
                        _ = posix_fadvise(item.file.rawValue, 0, off_t(ahead), POSIX_FADV_WILLNEED)
                    }
                    let request = ImportWire.request(
                        path: paths[item.index], limits: pool.configuration.limits, wanted: wanted)
                    if case .failure = worker.process.send(request, descriptor: item.file) {
                        if flight.isEmpty {
                            // Dead before it had anything of ours: this file
                            // is where it was lost.
                            report(
                                item.index,
                                fail(item.index, ImportFailure("the importer \(worker.process.reapAfterEnd())")))
                            closeDescriptor(item.file.rawValue)
                            lose()
                        } else {
                            // It died on a file before: that one's answer
                            // says so.
                            unsent.insert(item, at: 0)
                            retiring = true
                        }
                        break
                    }
                    flight.append(item)
                    flightBytes += item.size
                }
                guard !flight.isEmpty, let worker else {
                    if let worker { pool.giveBack(worker, retire: retiring) }
                    worker = nil
                    retiring = false
                    if unsent.isEmpty && exhausted { return }
                    continue
                }
                let head = flight.removeFirst()
                flightBytes -= head.size
                let deadline = max(head.sentAt, lastAnswer) + pool.configuration.fileTime
                let reason: String
                switch worker.process.receive(
                    deadline: deadline, limit: ImportWire.answerLimit(pool.configuration.limits))
                {
                case .frame(let body):
                    lastAnswer = .now
                    if let answer = ImportWire.decodeAnswer(body, path: paths[head.index]) {
                        closeDescriptor(head.file.rawValue)
                        report(head.index, answer)
                        worker.files += 1
                        if pool.shouldRetire(worker) { retiring = true }
                        continue
                    }
                    worker.process.terminate()
                    reason = "the importer answered nonsense"
                case .timedOut:
                    worker.process.terminate()
                    reason = "timed out after \(TextFormat.seconds(pool.configuration.timeout))"
                case .tooLarge:
                    worker.process.terminate()
                    reason = "the importer's answer was too large"
                case .ended:
                    reason = "the importer \(worker.process.reapAfterEnd())"
                }
                closeDescriptor(head.file.rawValue)
                report(head.index, fail(head.index, ImportFailure(reason)))
                lose()
            }
        }

        /// Takes a worker (waiting for one) and reads its hello; nil, or
        /// why there is none.
        mutating func start() -> ImportFailure? {
            switch pool.takeWorker() {
            case .success(let taken):
                // From when this lane has it (waiting for a worker busy in
                // another lane counts for no file).
                let started = ContinuousClock.now
                // A new worker's start-up counts within its first file's time.
                let deadline = started + pool.configuration.fileTime
                if !taken.greeted, let reason = pool.greet(taken, deadline: deadline) {
                    pool.giveBack(nil)
                    return ImportFailure(reason)
                }
                worker = taken
                lastAnswer = started
                retiring = false
                return nil
            case .failure(let error):
                return ImportFailure("cannot start an import worker: \(error.description)", isTransient: true)
            }
        }

        /// The worker is gone (killed or dead): its place is freed, and the
        /// files sent behind the one it was lost on go to the next.
        mutating func lose() {
            pool.giveBack(nil)
            worker = nil
            retiring = false
            unsent = flight + unsent
            flight = []
            flightBytes = 0
        }

        func fail(_ index: Int, _ failure: ImportFailure) -> ImportReport {
            var failed = ImportReport(path: paths[index], typeByName: ImportReport.typeByName(paths[index]))
            failed.failure = failure
            failed.values[.importError] = .text(Array(failure.reason.utf8))
            return failed
        }
    }

    /// Reads a new worker's hello and keeps the confinement it reports;
    /// nil, or why the worker is unusable (it is then stopped).
    fileprivate func greet(_ worker: Worker, deadline: ContinuousClock.Instant) -> String? {
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
            return "the import worker did not start within \(TextFormat.seconds(configuration.timeout))"
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

    fileprivate func takeWorker() -> Result<Worker, Errno> {
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
        case .success(let process):
            idle.withLock { $0.started += 1 }
            return .success(Worker(process))
        case .failure(let error):
            idle.mutateAndBroadcast { $0.running -= 1 }
            return .failure(error)
        }
    }

    /// Whether `worker` should import no more: it has imported
    /// `filesPerWorker` files, or used three quarters of its address space
    /// or CPU time (its limits would next fail a file that is not to blame).
    fileprivate func shouldRetire(_ worker: Worker) -> Bool {
        if worker.files >= configuration.filesPerWorker { return true }
        guard worker.files % Self.usageInterval == 0, let usage = worker.process.usage else { return false }
        return usage.virtualBytes > configuration.memoryBytes / 4 * 3
            || usage.cpuSeconds > Double(configuration.cpuSeconds) * 0.75
    }

    /// Returns a worker to the pool, or stops it (`retire`: `shouldRetire`
    /// said so), or (nil) frees the place of one that was killed.
    fileprivate func giveBack(_ worker: Worker?, retire: Bool = false) {
        if let worker, retire {
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
        if case .failure(let error) = WorkerChannel.leaveRoot() {
            exit(because: "cannot give up root: \(error.description)")
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
