import CLinuxSyscalls
import Glibc
package import SystemPackage

/// Process facts the library and the `mdq` command need, read through one
/// place.
///
/// `package`, not public: this is command-line plumbing (signals, exit,
/// terminals, raw arguments), not part of the library's API. It stays in
/// `System/` because that is the one folder that calls C, and threads start
/// through `WorkerThreads` only.
package enum ProcessEnvironment {
    /// The current working directory, as raw bytes (it need not be UTF-8).
    package static var currentDirectory: FilePath {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        while true {
            if getcwd(&buffer, buffer.count) != nil {
                return buffer.withUnsafeBufferPointer { FilePath(platformString: $0.baseAddress!) }
            }
            guard errno == ERANGE else { return "/" }
            buffer = [CChar](repeating: 0, count: buffer.count * 2)
        }
    }

    /// Values that stand in for environment variables in this process, by
    /// name; an empty value counts as unset. For tests that need another
    /// containers root or state folder while other threads run: changing
    /// the real environment then is unsafe (glibc's `setenv` may free the
    /// array a concurrent `getenv` is reading).
    package static let overrides = Locked<[String: String]>([:])

    /// An environment variable (or its override), if set and non-empty.
    /// The machine's host name up to its first dot (`nas` for
    /// `nas.example.org`); nil when it cannot be read.
    package static var shortHostName: String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return nil }
        let full = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return full.split(separator: ".").first.map(String.init)
    }

    package static func variable(_ name: String) -> String? {
        if let value = overrides.withLock({ $0[name] }) { return value.isEmpty ? nil : value }
        guard let value = getenv(name) else { return nil }
        let string = String(cString: value)
        return string.isEmpty ? nil : string
    }

    /// Whether the descriptor is a terminal.
    /// Whether `path` is a file this process may execute.
    package static func isExecutable(_ path: FilePath) -> Bool {
        path.withPlatformString { access($0, X_OK) == 0 }
    }

    package static func isTerminal(_ descriptor: FileDescriptor) -> Bool {
        isatty(descriptor.rawValue) == 1
    }

    /// Makes writes to a closed pipe fail with `EPIPE` instead of killing the
    /// process, so `mdq ... | head -1` can stop quietly.
    package static func ignoreBrokenPipe() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// The raw bytes of every command-line argument, exactly as given (the
    /// decoded `CommandLine.arguments` replace bytes that are not UTF-8).
    package static var rawArguments: [[UInt8]] {
        (0..<Int(CommandLine.argc)).map { i in
            guard let pointer = CommandLine.unsafeArgv[i] else { return [] }
            return Array(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
        }
    }
}

extension ProcessEnvironment {
    /// Ends the process at once with a status.
    ///
    /// `_exit`, not `exit`: mdq writes through descriptors, never stdio
    /// buffers, so there is nothing to flush, and `exit`'s teardown of the
    /// runtime can stall for seconds while other threads are parked.
    package static func exitImmediately(_ status: Int32) -> Never {
        Glibc._exit(status)
    }

    /// Writes a line to standard error directly (no buffering).
    package static func writeToStandardError(_ text: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

}

extension ProcessEnvironment {
    /// SIGINT and SIGTERM, the signals a live command ends on.
    private static var interruptSignals: sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        return set
    }

    /// Blocks SIGINT and SIGTERM in the calling thread and every thread it
    /// starts afterwards, so `onInterrupt` can take them with `sigwait`.
    /// Call first thing in `main`, before any thread exists.
    package static func blockInterruptSignals() {
        var set = interruptSignals
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Undoes `blockInterruptSignals` for the calling thread (a one-shot
    /// query dies on Ctrl-C as usual; threads started later inherit this).
    package static func unblockInterruptSignals() {
        var set = interruptSignals
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Runs `body` once, on a dedicated thread, with the signal's number
    /// when the process gets SIGINT or SIGTERM (blocked beforehand with
    /// `blockInterruptSignals`), instead of dying mid-line: commands stop,
    /// finish the line being written and exit.
    package static func onInterrupt(_ body: @escaping @Sendable (Int32) -> Void) {
        WorkerThreads.detach {
            var set = interruptSignals
            var number: Int32 = 0
            while sigwait(&set, &number) != 0 {}
            body(number)
        }
    }

    /// A capability a process may keep (`capabilities(7)`).
    package enum Capability: UInt64, Sendable {
        /// `CAP_DAC_READ_SEARCH`: read every folder and search through it.
        case readAndSearchAnything = 2
        /// `CAP_SETGID`, `CAP_SETUID`: an import worker started by root
        /// becomes `nobody` (`WorkerChannel.leaveRoot`).
        case setGroupID = 6
        case setUserID = 7
        /// `CAP_SYS_ADMIN`: fanotify filesystem marks.
        case systemAdministration = 21
    }

    /// Drops every capability but `keep`, for good (bounding set too), for
    /// the calling thread and the threads it starts from now on: Linux
    /// keeps capabilities per thread, so this is called before any other
    /// thread starts.
    ///
    /// - Throws: `MetadataError` `.daemon` when the kernel refuses.
    package static func keepOnlyCapabilities(_ keep: Set<Capability>) throws(MetadataError) {
        let mask = keep.reduce(UInt64(0)) { $0 | 1 << $1.rawValue }
        guard mdq_keep_only_capabilities(mask) == 0 else {
            throw MetadataError.daemon("cannot drop capabilities", underlying: Errno(rawValue: errno))
        }
    }
}
