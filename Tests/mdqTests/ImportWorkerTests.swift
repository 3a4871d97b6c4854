import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MetadataIndex

/// Imports in worker processes: a worker that crashes, hangs, floods or
/// talks nonsense costs that worker and the one file, with the reason; the
/// real worker is confined.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ImportWorkerTests {
    /// A stand-in worker that misbehaves by the name of the file it is
    /// asked about (`FakeImportWorker`).
    static let fakeWorker = TemporaryDirectory.Shared { temp in
        let path = try temp.file("fake-worker", contents: FakeImportWorker.script)
        #expect(chmod(path.string, 0o755) == 0)
    }

    /// The kernel's Landlock ABI, asked directly (not through the worker).
    static let landlockABI = WorkerConfinement.kernelLandlockABI()
    /// Whether the kernel has seccomp filters that can kill a process.
    static let hasSeccomp =
        (try? String(contentsOfFile: "/proc/sys/kernel/seccomp/actions_avail", encoding: .utf8))?
        .contains("kill_process") == true

    /// `mdq-import-worker`, beside `mdq` in the build folder.
    static let worker = URL(fileURLWithPath: MDQCommandTests.binary).deletingLastPathComponent()
        .appendingPathComponent("mdq-import-worker").path

    /// Imports one file in a worker of the test build, as the daemon and
    /// `mdq import` do (the importer suites' way in).
    static func importFile(_ path: FilePath) -> ImportReport {
        var configuration = ImportWorkerPool.Configuration.standard
        configuration.executable = FilePath(worker)
        let pool = ImportWorkerPool(configuration)
        defer { pool.shutdown() }
        return pool.importFile(at: path)
    }

    func pool(timeout: Double, workers: Int = 1) throws -> ImportWorkerPool {
        setenv("MDQ_REAL_WORKER", Self.worker, 1)
        var configuration = ImportWorkerPool.Configuration.standard
        configuration.executable = try Self.fakeWorker.path().appending("fake-worker")
        configuration.timeout = timeout
        configuration.workers = workers
        return ImportWorkerPool(configuration)
    }

    /// A worker started from a thread that then ends stays usable: the
    /// worker watches its channel, not its parent thread (the daemon's
    /// lanes are threads that come and go), and one that died while idle
    /// is replaced, not blamed on the next file.
    @Test func aWorkerOutlivesTheThreadThatStartedIt() throws {
        let temp = try TemporaryDirectory()
        let file = try temp.file("note.txt", contents: "invoice")
        var configuration = ImportWorkerPool.Configuration.standard
        configuration.executable = FilePath(Self.worker)
        let pool = ImportWorkerPool(configuration)
        defer { pool.shutdown() }
        let first = Locked<ImportReport?>(nil)
        let thread = WorkerThreads.start(name: "short-lived", detached: false) {
            first.withLock { $0 = pool.importFile(at: file) }
        }
        thread?.join()
        #expect(first.withLock { $0?.failure } == nil)
        for _ in 0..<3 {
            let report = pool.importFile(at: file)
            #expect(report.failure == nil, "\(report.failure?.reason ?? "")")
            #expect(report.values[.importError] == nil)
            #expect(report.values[.textContent] == .text(Array("invoice".utf8)))
        }
    }

    @Test func misbehavingWorkersCostOneFileEach() throws {
        let temp = try TemporaryDirectory()
        var files: [String: FilePath] = [:]
        for name in ["good", "crash", "hang", "nonsense", "flood", "after"] {
            files[name] = try temp.file("\(name).txt", contents: "text of \(name)")
        }
        let pool = try pool(timeout: 2)
        defer { pool.shutdown() }
        func reason(_ name: String) -> String? { pool.importFile(at: files[name]!).failure?.reason }
        #expect(pool.importFile(at: files["good"]!).values[.textContent] == .text(Array("text of good".utf8)))
        #expect(reason("crash") == "the importer crashed (signal 11)")
        #expect(reason("hang") == "timed out after 2 s")
        #expect(reason("nonsense") == "the importer answered nonsense")
        #expect(reason("flood") == "the importer's answer was too large")
        // A new worker takes over after each loss.
        let after = pool.importFile(at: files["after"]!)
        #expect(after.failure == nil)
        #expect(after.values[.textContent] == .text(Array("text of after".utf8)))
        #expect(after.values[.importError] == nil)
    }

    /// A batch sends several files ahead to each worker: a file that
    /// crashes, hangs, floods or garbles its worker costs that file alone,
    /// and the files sent behind it are imported by the next worker, each
    /// with its own answer.
    @Test(arguments: [1, 2])
    func aBatchInFlightCostsEachMisbehavingFileOnlyItself(workers: Int) throws {
        let temp = try TemporaryDirectory()
        let bad = ["crash", "hang", "nonsense", "flood"]
        var names: [String] = []
        for i in 0..<24 {
            names.append("good\(i)")
            if i % 5 == 2 { names.append(bad[(i / 5) % bad.count]) }
        }
        let paths = try names.map { try temp.file("\($0).txt", contents: "text of \($0)") }
        let pool = try pool(timeout: 2, workers: workers)
        defer { pool.shutdown() }
        let reports = pool.importFiles(paths, sizes: paths.map { _ in 12 })
        let expected = [
            "crash": "the importer crashed (signal 11)", "hang": "timed out after 2 s",
            "nonsense": "the importer answered nonsense", "flood": "the importer's answer was too large",
        ]
        for (name, report) in zip(names, reports) {
            #expect(report.path == temp.path.appending("\(name).txt"))
            if let reason = expected[name] {
                #expect(report.failure?.reason == reason, "\(name)")
            } else {
                #expect(report.failure == nil, "\(name): \(report.failure?.reason ?? "")")
                #expect(report.values[.textContent] == .text(Array("text of \(name)".utf8)), "\(name)")
            }
        }
        // Five workers lost, each its own. With one lane, one more imports
        // the file behind the last loss; with two, a lane's files may all
        // be done by workers that are lost later, so no worker need be
        // started after the last loss.
        #expect(pool.workersStarted >= (workers == 1 ? 5 + 1 : 5), "\(pool.workersStarted) workers")
    }

    /// A worker lives for many files, and is replaced before its own
    /// limits could fail a file that is not to blame: here its address
    /// space limit is set just above what it uses at rest, so it passes
    /// three quarters of it at once and is replaced after each look at its
    /// use (every `usageInterval` files); with the standard limit, one
    /// worker imports them all.
    @Test func aWorkerIsReplacedBeforeItsLimitsCouldFailAFile() throws {
        let temp = try TemporaryDirectory()
        let count = ImportWorkerPool.usageInterval * 3
        let paths = try (0..<count).map { try temp.file("f\($0).txt", contents: "content \($0)") }
        let probe = try WorkerProcess.spawn(
            FilePath(Self.worker), arguments: ["--memory", String(1 << 30), "--cpu", "60"]
        ).get()
        guard case .frame = probe.receive(deadline: .now + .seconds(10), limit: 1 << 16),
            let resting = probe.usage?.virtualBytes
        else {
            Issue.record("no hello from the worker")
            return
        }
        probe.terminate()
        for (memory, replaced) in [(UInt64(1) << 30, false), (resting + resting / 4, true)] {
            var configuration = ImportWorkerPool.Configuration.standard
            configuration.executable = FilePath(Self.worker)
            configuration.memoryBytes = memory
            let pool = ImportWorkerPool(configuration)
            defer { pool.shutdown() }
            let reports = pool.importFiles(paths, sizes: paths.map { _ in 10 })
            for (i, report) in reports.enumerated() {
                #expect(report.failure == nil, "\(report.failure?.reason ?? "")")
                #expect(report.values[.textContent] == .text(Array("content \(i)".utf8)))
            }
            if replaced {
                #expect(pool.workersStarted >= 3, "\(pool.workersStarted) workers for \(count) files")
            } else {
                #expect(pool.workersStarted == 1)
            }
        }
    }

    /// Several threads share a pool of two workers; each gets its own
    /// file's answer.
    @Test func concurrentCallersGetTheirOwnAnswers() throws {
        let temp = try TemporaryDirectory()
        let paths = try (0..<24).map { try temp.file("f\($0).txt", contents: "content \($0)") }
        let pool = try pool(timeout: 10, workers: 2)
        defer { pool.shutdown() }
        let answers = Locked<[Int: AttributeValue?]>([:])
        DispatchQueue.concurrentPerform(iterations: paths.count) { i in
            let value = pool.importFile(at: paths[i]).values[.textContent]
            answers.withLock { $0[i] = value }
        }
        for i in paths.indices {
            #expect(answers.withLock { $0[i] } == .text(Array("content \(i)".utf8)))
        }
    }

    /// The real worker lowers its priority, may not write files, dies
    /// with its parent, says first how it is sandboxed, and imports the
    /// file whose descriptor comes with a request.
    @Test func theWorkerConfinesItself() throws {
        let worker = try WorkerProcess.spawn(
            FilePath(Self.worker), arguments: ["--memory", "1073741824", "--cpu", "77"]
        ).get()
        defer { worker.terminate() }
        guard case .frame(let hello) = worker.receive(deadline: .now + .seconds(10), limit: 1 << 16),
            let confinement = ImportWire.decodeHello(hello)
        else {
            Issue.record("no hello")
            return
        }
        #expect(confinement.landlockABI == Self.landlockABI, "\(confinement)")
        #expect(confinement.seccomp == Self.hasSeccomp, "\(confinement)")
        // One request answered proves it is up and confined.
        let temp = try TemporaryDirectory()
        let file = try temp.file("a.txt", contents: "hello")
        let descriptor = try ContentFile.openDescriptor(file).get()
        defer { closeDescriptor(descriptor.rawValue) }
        #expect(throws: Never.self) {
            try worker.send(ImportWire.request(path: file, limits: .standard), descriptor: descriptor).get()
        }
        guard case .frame(let body) = worker.receive(deadline: .now + .seconds(10), limit: 1 << 22) else {
            Issue.record("no answer")
            return
        }
        #expect(ImportWire.decodeAnswer(body, path: file)?.values[.textContent] == .text(Array("hello".utf8)))
        let limits = try String(contentsOfFile: "/proc/\(worker.pid)/limits", encoding: .utf8)
        let line = { (name: String) in limits.split(separator: "\n").first { $0.hasPrefix(name) }.map(String.init) ?? ""
        }
        #expect(line("Max cpu time").contains("77"))
        #expect(line("Max file size").split(separator: " ").contains("0"))
        #expect(line("Max address space").contains("1073741824"))
        let stat = try String(contentsOfFile: "/proc/\(worker.pid)/stat", encoding: .utf8)
        // Field 19 is the nice value (after the parenthesised name).
        let fields = stat.split(separator: ")").last!.split(separator: " ")
        #expect(fields[16] == "19", "\(fields)")
        let status = try String(contentsOfFile: "/proc/\(worker.pid)/status", encoding: .utf8)
        #expect(status.contains("NoNewPrivs:\t1"))
        if Self.hasSeccomp { #expect(status.contains("Seccomp:\t2"), "\(status)") }
    }

    /// Answers from a worker are decoded defensively: truncations and
    /// absurd counts of every prefix are refused, not trapped on.
    @Test func malformedAnswersAreRefused() throws {
        var report = ImportReport(path: FilePath("/x.txt"), typeByName: "public.plain-text")
        report.values[.textContent] = .text(Array("body".utf8))
        report.values[.userTags] = .list(["a", "b"])
        report.steps = [ImportReport.Step(importer: "text", values: report.values, failure: nil)]
        let framed = ImportWire.answer(report)
        let body = Array(framed.dropFirst(4))
        #expect(ImportWire.decodeAnswer(body, path: FilePath("/x.txt"))?.values == report.values)
        for cut in 0..<body.count {
            #expect(ImportWire.decodeAnswer(Array(body.prefix(cut)), path: FilePath("/x.txt")) == nil)
        }
        var absurd = body
        for i in 0..<8 { absurd[i] = 0xFF }
        #expect(ImportWire.decodeAnswer(absurd, path: FilePath("/x.txt")) == nil)
    }
}
