import MDQCore
import MDQSystem

#if MDQ_INVARIANTS
    import Glibc
    import SystemPackage

    /// What an importer a hostile file took over would try, done on purpose by
    /// the import worker of a debug build when a test asks (`MDQ_TEST_ESCAPE`),
    /// for the tests that show the sandbox stops each attempt. Release builds
    /// have no such code: the variable means nothing to them.
    ///
    /// Only files whose name starts with `escape` are touched, so the next
    /// file in the same test imports as usual. `MDQ_TEST_ESCAPE` is one of:
    /// - `read:PATH`: opens PATH and puts its contents in the text (Landlock
    ///   refuses the open: the import fails with the reason);
    /// - `socket`: opens a TCP socket and says so in the text (seccomp kills);
    /// - `exec:MARKER`: runs `/bin/sh -c 'echo escaped > MARKER'` in place of
    ///   the worker (seccomp kills);
    /// - `fork:MARKER`: starts a child that writes MARKER (seccomp kills);
    /// - `whoami`: says whose rights the worker has, in the text
    ///   (`uid=U euid=E gid=G groups=N`).
    enum EscapeProbe {
        static let environmentVariable = "MDQ_TEST_ESCAPE"

        /// `report` after the attempt `MDQ_TEST_ESCAPE` names, as a step of
        /// its own: what it got in (the text), or why it failed.
        static func attempt(on report: ImportReport) -> ImportReport {
            guard let request = ProcessEnvironment.variable(environmentVariable),
                report.path.lastComponent?.string.hasPrefix("escape") == true
            else { return report }
            var report = report
            let kind = request.prefix { $0 != ":" }
            let argument = String(request.dropFirst(kind.count + 1))
            let outcome: Result<String, Errno>
            switch kind {
            case "read": outcome = read(argument)
            case "socket": outcome = openSocket()
            case "exec": outcome = exec(argument)
            case "fork": outcome = fork(argument)
            case "whoami":
                outcome = .success("uid=\(getuid()) euid=\(geteuid()) gid=\(getgid()) groups=\(getgroups(0, nil))")
            default: return report
            }
            switch outcome {
            case .success(let gotIn):
                var values = ImportedValues()
                var text: [UInt8] = []
                if case .text(let bytes)? = report.values[.textContent] { text = bytes + [0x0A] }
                values[.textContent] = .text(text + Array(gotIn.utf8))
                report.steps.append(ImportReport.Step(importer: "escape", values: values))
                report.values.merge(values)
            case .failure(let error):
                let failure = ImportFailure("\(request) failed: \(error.description)")
                report.steps.append(ImportReport.Step(importer: "escape", values: ImportedValues(), failure: failure))
                report.values[.importError] = .text(Array("escape: \(failure.reason)".utf8))
            }
            return report
        }

        private static func read(_ path: String) -> Result<String, Errno> {
            syscallResult { open(path, O_RDONLY | O_CLOEXEC) }.flatMap { fd in
                defer { closeDescriptor(fd) }
                var buffer = [UInt8](repeating: 0, count: 4096)
                return buffer.withUnsafeMutableBytes { raw in
                    syscallResult { Glibc.read(fd, raw.baseAddress, raw.count) }
                }.map { String(decoding: buffer.prefix($0), as: UTF8.self) }
            }
        }

        private static func openSocket() -> Result<String, Errno> {
            syscallResult { socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }.map { fd in
                closeDescriptor(fd)
                return "escaped: opened a socket"
            }
        }

        private static func exec(_ marker: String) -> Result<String, Errno> {
            let words: [String] = ["sh", "-c", "echo escaped > '\(marker)'"]
            let argv = words.map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            _ = execve("/bin/sh", argv, environ)
            return .failure(Errno(rawValue: errno))
        }

        private static func fork(_ marker: String) -> Result<String, Errno> {
            let child = Glibc.fork()
            if child == 0 {
                let fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                if fd >= 0 { _ = write(fd, "escaped\n", 8) }
                _exit(0)
            }
            guard child > 0 else { return .failure(Errno(rawValue: errno)) }
            var status: Int32 = 0
            _ = syscallResult { waitpid(child, &status, 0) }
            return .success("escaped: started process \(child)")
        }
    }
#endif
