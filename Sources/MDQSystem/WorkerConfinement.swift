import CLinuxSyscalls
import Glibc
package import SystemPackage

/// How an import worker is sandboxed beyond its resource limits, as it
/// reports it to its parent before it reads any file (so a worker a hostile
/// file took over cannot have lied about it): Landlock (no filesystem
/// access but the descriptors it holds, no TCP, no signal out) and a
/// seccomp filter (no new process, exec, socket or ptrace), or why not.
///
/// Where the kernel lacks one, or `MDQ_IMPORT_SANDBOX` turns it off, the
/// worker imports all the same and says so: `mdq daemon status` and
/// `mdq import` show it.
package struct WorkerConfinement: Sendable, Hashable, CustomStringConvertible {
    /// The Landlock ABI the worker restricted itself under; nil when it
    /// did not.
    package var landlockABI: Int?
    /// Why Landlock is not in force, when it is not.
    package var landlockProblem: String?
    /// Whether the seccomp filter is in force.
    package var seccomp: Bool
    /// Why the seccomp filter is not in force, when it is not.
    package var seccompProblem: String?

    package init(landlockABI: Int?, landlockProblem: String?, seccomp: Bool, seccompProblem: String?) {
        self.landlockABI = landlockABI
        self.landlockProblem = landlockProblem
        self.seccomp = seccomp
        self.seccompProblem = seccompProblem
    }

    /// Both Landlock and seccomp are in force.
    package var isComplete: Bool { landlockABI != nil && seccomp }

    /// "confined (Landlock ABI 7, seccomp)", or what is missing and why.
    package var description: String {
        let noLandlock = "no Landlock: \(landlockProblem ?? "not applied")"
        let noSeccomp = "no seccomp: \(seccompProblem ?? "not applied")"
        switch (landlockABI, seccomp) {
        case (let abi?, true): return "confined (Landlock ABI \(abi), seccomp)"
        case (let abi?, false): return "partly confined (Landlock ABI \(abi); \(noSeccomp))"
        case (nil, true): return "partly confined (seccomp; \(noLandlock))"
        case (nil, false): return "not sandboxed, resource limits only (\(noLandlock); \(noSeccomp))"
        }
    }

    /// The environment variable that turns parts off: `off`, `no-landlock`
    /// or `no-seccomp` (anything else: both on). For a kernel or library
    /// where the sandbox gets in the way, and for the tests that show each
    /// part is what stops an escape; what is off is reported, never silent.
    package static let environmentVariable = "MDQ_IMPORT_SANDBOX"

    /// The Landlock ABI the running kernel offers; nil when it has none
    /// (or has it turned off).
    package static func kernelLandlockABI() -> Int? {
        guard case .success(let abi) = syscallResult({ mdq_landlock_abi() }) else { return nil }
        return Int(abi)
    }

    /// Charsets the format libraries may convert text from: Exiv2 (UCS-2
    /// Windows tags, Latin-1 and JIS comments), GLib for Poppler (UTF-16
    /// strings), libxml2 (a part's declared encoding). Their converters are
    /// loaded before the sandbox, which leaves no gconv module to open.
    static let charsets = [
        "UTF-16", "UCS-2LE", "UCS-2BE", "ISO-8859-1", "ISO-8859-15", "WINDOWS-1252", "WINDOWS-1251", "ISO-2022-JP",
        "SHIFT_JIS", "EUC-JP", "GB18030", "BIG5", "EUC-KR", "KOI8-R",
    ]

    /// Loads what glibc would otherwise read from files while importing:
    /// the local time zone (read once, not at every `mktime`), and the
    /// charset converters of `charsets`.
    package static func preloadProcessData() {
        // Failing leaves TZ unset: times are then UTC inside the sandbox.
        _ = syscallResult { mdq_pin_local_time_zone() }
        var pointers = charsets.map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { names in
                _ = mdq_keep_charset_converters(names.baseAddress, Int32(names.count))
            }
        }
    }

    /// Sandboxes this process (an import worker that has set
    /// `PR_SET_NO_NEW_PRIVS` and loaded everything it will need): Landlock
    /// first, leaving only the folders of `readable` readable (data a
    /// library reads on demand and that cannot be loaded beforehand), then
    /// seccomp, each where the kernel has it and `MDQ_IMPORT_SANDBOX` does
    /// not turn it off. Call it while the process has one thread: Landlock
    /// restricts the calling thread and what it starts later, not threads
    /// already running.
    ///
    /// - Returns: what is in force, and why a part is not.
    package static func confineThisProcess(readable: [FilePath]) -> WorkerConfinement {
        let setting = ProcessEnvironment.variable(environmentVariable) ?? ""
        let turnedOff = "turned off by \(environmentVariable)=\(setting)"
        var confinement = WorkerConfinement(landlockABI: nil, landlockProblem: nil, seccomp: false, seccompProblem: nil)
        if setting == "off" || setting == "no-landlock" {
            confinement.landlockProblem = turnedOff
        } else {
            (confinement.landlockABI, confinement.landlockProblem) = restrictWithLandlock(readable: readable)
        }
        if setting == "off" || setting == "no-seccomp" {
            confinement.seccompProblem = turnedOff
        } else {
            switch syscallResult({ mdq_seccomp_restrict() }) {
            case .success: confinement.seccomp = true
            case .failure(.noFunction), .failure(.invalidArgument):
                confinement.seccompProblem = "the kernel has no seccomp filters"
            case .failure(.notSupported):
                confinement.seccompProblem = "no seccomp filter is written for this architecture"
            case .failure(let error): confinement.seccompProblem = "the kernel refused the filter: \(error.description)"
            }
        }
        return confinement
    }

    /// Restricts this process to no filesystem access under the newest
    /// Landlock ABI the kernel has: the ABI, or why not.
    private static func restrictWithLandlock(readable: [FilePath]) -> (abi: Int?, problem: String?) {
        let abi: Int32
        switch syscallResult({ mdq_landlock_abi() }) {
        case .success(let version): abi = version
        case .failure(.noFunction): return (nil, "the kernel has no Landlock")
        case .failure(.notSupported): return (nil, "Landlock is built in but not enabled (the kernel's lsm= list)")
        case .failure(let error): return (nil, "cannot ask for Landlock: \(error.description)")
        }
        // A thread started before would stay unrestricted, in the same
        // address space as what a hostile file takes over.
        switch syscallResult({ mdq_thread_count() }) {
        case .success(1): break
        case .success(let threads): return (nil, "\(threads) threads were running (Landlock restricts one)")
        case .failure(let error): return (nil, "cannot count threads: \(error.description)")
        }
        var folders = readable.map { strdup($0.string) }
        defer { for folder in folders { free(folder) } }
        let restricted = folders.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { names in
                syscallResult { mdq_landlock_restrict_self(abi, names.baseAddress, Int32(names.count)) }
            }
        }
        switch restricted {
        case .success: return (Int(abi), nil)
        case .failure(let error): return (nil, "the kernel refused: \(error.description)")
        }
    }
}
