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

/// The import worker's sandbox: the worker opens nothing (its parent passes
/// the file as a descriptor), Landlock leaves it no filesystem access and a
/// seccomp filter no new process, exec or socket. A worker a hostile file
/// took over is played by the worker's escape probe (`EscapeProbe`, debug
/// builds only), which tries what such a worker would; each attempt is
/// stopped, the file fails with the reason, and the next file imports.
/// Tests of a kernel feature are skipped where the kernel lacks it.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ImportSandboxTests {
    static let landlockABI = ImportWorkerTests.landlockABI
    static let hasLandlock = landlockABI != nil
    static let hasSeccomp = ImportWorkerTests.hasSeccomp

    static let stopped =
        "the importer was stopped by its sandbox (SIGSYS: a forbidden system call, such as a new process or a socket)"

    /// A pool of the test build's worker, with `environment` added to it.
    func pool(_ environment: [String] = []) -> ImportWorkerPool {
        var configuration = ImportWorkerPool.Configuration.standard
        configuration.executable = FilePath(ImportWorkerTests.worker)
        configuration.environment = environment
        return ImportWorkerPool(configuration)
    }

    func text(_ report: ImportReport) -> String? {
        guard case .text(let bytes)? = report.values[.textContent] else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Every value a report holds, as text, to look for a secret anywhere.
    func everything(_ report: ImportReport) -> String {
        "\(report.values.values) \(report.steps.map { ($0.importer, $0.failure?.reason ?? "") })"
    }

    /// A file that sets the probe off, a secret beside it, and a file to
    /// import after.
    struct Scene {
        let temp: TemporaryDirectory
        let bait: FilePath
        let secret: FilePath
        let next: FilePath
        let marker: FilePath

        init() throws {
            temp = try TemporaryDirectory()
            bait = try temp.file("escape.txt", contents: "bait text")
            secret = try temp.file("private/secret.txt", contents: "the secret is 4711")
            next = try temp.file("next.txt", contents: "the next file")
            marker = temp.path.appending("escaped")
            // A worker started by root runs as nobody: what a probe would
            // get at is open to it, so that only the sandbox stops it.
            for (path, mode) in [
                (temp.path, 0o777), (secret.removingLastComponent(), 0o755), (secret, 0o644), (bait, 0o644),
                (next, 0o644),
            ] {
                _ = chmod(path.string, mode_t(mode))
            }
        }

        var markerExists: Bool { access(marker.string, F_OK) == 0 }
    }

    /// Landlock: a hijacked importer cannot open a file of the user's; the
    /// import fails with the reason, the secret reaches no answer, and the
    /// worker imports the next file.
    @Test(.enabled(if: hasLandlock)) func aHijackedImporterCannotReadAnotherFile() throws {
        let scene = try Scene()
        let pool = pool(["MDQ_TEST_ESCAPE=read:\(scene.secret.string)"])
        defer { pool.shutdown() }
        let report = pool.importFile(at: scene.bait)
        #expect(report.steps.last?.failure?.reason == "read:\(scene.secret.string) failed: Permission denied")
        #expect(report.values[.importError] != nil)
        #expect(!everything(report).contains("4711"), "\(everything(report))")
        let after = pool.importFile(at: scene.next)
        #expect(after.failure == nil)
        #expect(text(after) == "the next file")
    }

    /// seccomp: a hijacked importer that opens a socket, runs a program or
    /// starts a process is killed before the call runs; the file fails
    /// with that reason, nothing ran, and a fresh worker imports the next
    /// file.
    @Test(.enabled(if: hasSeccomp), arguments: ["socket", "exec", "fork"])
    func aHijackedImporterIsKilled(trying kind: String) throws {
        let scene = try Scene()
        let pool = pool(["MDQ_TEST_ESCAPE=\(kind):\(scene.marker.string)"])
        defer { pool.shutdown() }
        let report = pool.importFile(at: scene.bait)
        #expect(report.failure?.reason == Self.stopped)
        #expect(report.values[.importError] == .text(Array(Self.stopped.utf8)))
        #expect(text(report) == nil)
        #expect(!scene.markerExists)
        let after = pool.importFile(at: scene.next)
        #expect(after.failure == nil)
        #expect(text(after) == "the next file")
        #expect(pool.confinement?.seccomp == true)
    }

    /// A worker started by root (the system index's, `CONTENT`) gives root
    /// up before it reads anything: a hijacked importer has nobody's
    /// rights, no supplementary group, and still imports.
    @Test(.enabled(if: getuid() == 0)) func aWorkerStartedByRootRunsAsNobody() throws {
        let scene = try Scene()
        let pool = pool(["MDQ_IMPORT_SANDBOX=off", "MDQ_TEST_ESCAPE=whoami"])
        defer { pool.shutdown() }
        let report = pool.importFile(at: scene.bait)
        #expect(text(report) == "bait text\nuid=65534 euid=65534 gid=65534 groups=0", "\(everything(report))")
        #expect(text(pool.importFile(at: scene.next)) == "the next file")
    }

    /// The probes are real: with the sandbox turned off each gets out, as
    /// every test above would then fail.
    @Test func withoutTheSandboxEachProbeGetsOut() throws {
        let read = try Scene()
        let reading = pool(["MDQ_IMPORT_SANDBOX=off", "MDQ_TEST_ESCAPE=read:\(read.secret.string)"])
        defer { reading.shutdown() }
        #expect(text(reading.importFile(at: read.bait))?.contains("the secret is 4711") == true)
        #expect(reading.confinement?.description.hasPrefix("not sandboxed") == true)
        let socket = try Scene()
        let connecting = pool(["MDQ_IMPORT_SANDBOX=off", "MDQ_TEST_ESCAPE=socket"])
        defer { connecting.shutdown() }
        #expect(text(connecting.importFile(at: socket.bait))?.hasSuffix("escaped: opened a socket") == true)
        for kind in ["fork", "exec"] {
            let scene = try Scene()
            let escaping = pool(["MDQ_IMPORT_SANDBOX=off", "MDQ_TEST_ESCAPE=\(kind):\(scene.marker.string)"])
            defer { escaping.shutdown() }
            let report = escaping.importFile(at: scene.bait)
            // The marker is made (empty: the worker may write no file).
            #expect(scene.markerExists, "\(kind): \(everything(report))")
        }
    }

    /// Every fixture imports to the same values sandboxed as not.
    @Test func fixturesImportTheSameInsideTheSandbox() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: PDFImportTests.fixtures.path)
            .filter { !$0.hasSuffix(".sh") && !$0.hasSuffix(".py") }.sorted()
        #expect(names.count >= 20)
        let sandboxed = pool()
        let open = pool(["MDQ_IMPORT_SANDBOX=off"])
        defer {
            sandboxed.shutdown()
            open.shutdown()
        }
        for name in names {
            let path = OfficeImportTests.fixture(name)
            let inside = sandboxed.importFile(at: path)
            let outside = open.importFile(at: path)
            #expect(inside.values == outside.values, "\(name)")
            #expect(inside.steps.map(\.importer) == outside.steps.map(\.importer), "\(name)")
            #expect(inside.steps.map(\.failure) == outside.steps.map(\.failure), "\(name)")
            #expect(inside.failure == nil, "\(name)")
        }
        #expect(sandboxed.confinement?.isComplete == (Self.hasLandlock && Self.hasSeccomp))
        #expect(sandboxed.confinement?.landlockABI == Self.landlockABI)
        #expect(open.confinement?.landlockABI == nil)
        #expect(open.confinement?.seccomp == false)
    }

    /// The pool opens each file itself: a FIFO, a device, a folder or a
    /// symlink (even to a readable secret) is refused at once, never read,
    /// never waited on; the next file imports.
    @Test func specialFilesAndSymlinksNeverHangOrLeadOut() throws {
        let scene = try Scene()
        let temp = scene.temp
        #expect(mkfifo(temp.path.appending("pipe.txt").string, 0o600) == 0)
        #expect(symlink(scene.secret.string, temp.path.appending("link.txt").string) == 0)
        #expect(symlink("/dev/zero", temp.path.appending("zero.txt").string) == 0)
        try FileManager.default.createDirectory(
            atPath: temp.path.appending("folder.txt").string, withIntermediateDirectories: false)
        let pool = pool()
        defer { pool.shutdown() }
        let cases: [(FilePath, String)] = [
            (temp.path.appending("pipe.txt"), "not a regular file"),
            (FilePath("/dev/zero"), "not a regular file"),
            (FilePath("/dev/null"), "not a regular file"),
            (temp.path.appending("link.txt"), "a symlink (not followed)"),
            (temp.path.appending("zero.txt"), "a symlink (not followed)"),
            (temp.path.appending("folder.txt"), "cannot open: Is a directory"),
            (temp.path.appending("absent.txt"), "cannot open: No such file or directory"),
        ]
        for (path, reason) in cases {
            let report = pool.importFile(at: path)
            #expect(report.failure?.reason == reason, "\(path)")
            #expect(!everything(report).contains("4711"))
        }
        #expect(text(pool.importFile(at: scene.next)) == "the next file")
    }

    /// `mdq daemon status` says how the daemon's import worker is
    /// sandboxed, or what is missing and why.
    @Test func daemonStatusSaysHowTheImportWorkerIsSandboxed() throws {
        for off in [false, true] {
            let temp = try TemporaryDirectory()
            try temp.file("tree/note.txt", contents: "a note to import")
            let daemon = try MDQDaemonTests.Daemon(
                temp, environment: off ? ["MDQ_IMPORT_SANDBOX": "off"] : [:])
            let added = try daemon.mdq(["index", "add", temp.path.appending("tree").string])
            #expect(added.status == 0, "\(added.stderrText)")
            var status = ""
            let reported = waitUntil(timeout: 60, interval: 0.05) {
                status = (try? daemon.mdq(["daemon", "status"]).stdoutText) ?? ""
                return status.contains("import worker: ") && !status.contains("import worker: not started yet")
            }
            #expect(reported, "\(status)\n\(daemon.log)")
            if off {
                #expect(
                    status.contains(
                        "import worker: not sandboxed, resource limits only (no Landlock: turned off by "
                            + "MDQ_IMPORT_SANDBOX=off; no seccomp: turned off by MDQ_IMPORT_SANDBOX=off)"),
                    "\(status)")
            } else if let abi = Self.landlockABI, Self.hasSeccomp {
                #expect(status.contains("import worker: confined (Landlock ABI \(abi), seccomp)"), "\(status)")
            }
        }
    }

    /// `mdq import` says when the worker that read the files was not
    /// sandboxed, and says nothing when it was.
    @Test func mdqImportWarnsWhenTheWorkerIsNotSandboxed() throws {
        let temp = try TemporaryDirectory()
        let note = try temp.file("note.txt", contents: "hello")
        let off = try Shell.run(
            MDQCommandTests.binary, ["import", note.string], environment: ["MDQ_IMPORT_SANDBOX": "no-seccomp"])
        #expect(off.status == 0)
        #expect(off.stderrText.contains("the import worker is partly confined"), "\(off.stderrText)")
        #expect(off.stderrText.contains("no seccomp: turned off by MDQ_IMPORT_SANDBOX=no-seccomp"))
        if Self.hasLandlock && Self.hasSeccomp {
            let on = try Shell.run(MDQCommandTests.binary, ["import", note.string])
            #expect(on.status == 0)
            #expect(on.stderrText.isEmpty, "\(on.stderrText)")
        }
    }
}
