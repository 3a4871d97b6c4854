import CLinuxSyscalls
package import Glibc
package import SystemPackage

/// A child process spoken to in length-prefixed frames (4 bytes,
/// little-endian, then the body) over its standard input and output: the
/// daemon's import workers.
///
/// The parent never trusts the child: a reply longer than the caller's
/// limit, a reply that does not come before the deadline, or a child that
/// dies ends the conversation (`kill` then reaps it), and the caller
/// records why. Not thread-safe: one owner talks to one worker at a time.
package final class WorkerProcess {
    package let pid: pid_t
    /// Our end of the socket pair that is the worker's standard input and
    /// output (a socket, so a write to a dead worker fails with `EPIPE`
    /// instead of raising SIGPIPE in an embedding process).
    private let channel: FileDescriptor
    private var reaped: WorkerExit?

    /// How a worker ended.
    package enum WorkerExit: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        /// How `waitpid` says the process ended (WIFEXITED, WEXITSTATUS
        /// and WTERMSIG, which Swift does not import).
        init(waitStatus status: Int32) {
            self = status & 0x7F == 0 ? .exited((status >> 8) & 0xFF) : .signaled(status & 0x7F)
        }

        package var description: String {
            switch self {
            case .exited(let status): return "exited with status \(status)"
            case .signaled(SIGKILL): return "was killed (SIGKILL: out of memory, or stopped by the daemon)"
            case .signaled(SIGXCPU): return "ran out of CPU time (SIGXCPU)"
            case .signaled(SIGSYS):
                return "was stopped by its sandbox (SIGSYS: a forbidden system call, such as a new process or a socket)"
            case .signaled(let number): return "crashed (signal \(number))"
            }
        }
    }

    /// What `receive` got.
    package enum Reply {
        case frame([UInt8])
        /// No whole reply before the deadline (the worker is still running).
        case timedOut
        /// A reply longer than allowed, or malformed framing.
        case tooLarge
        /// The worker closed its output (it died or exited).
        case ended
    }

    private init(pid: pid_t, channel: FileDescriptor) {
        self.pid = pid
        self.channel = channel
    }

    deinit {
        _ = terminate()
        scratch.deallocate()
    }

    /// Starts `executable` with `arguments` and `environment` (`NAME=value`
    /// entries added to ours), its standard input and output connected to
    /// this object, its standard error to ours.
    package static func spawn(
        _ executable: FilePath, arguments: [String], environment: [String] = []
    ) -> Result<WorkerProcess, Errno> {
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            return .failure(Errno(rawValue: errno))
        }
        let spawned = Result { () throws(Errno) -> pid_t in
            // No Swift crash backtracer: it would start a process and read
            // the worker's memory, which the sandbox forbids, so a crash
            // would read as a sandbox stop; without it a crash is the
            // signal that caused it.
            try DetachedProcess.spawn(
                executable, arguments: arguments, newSession: false,
                addingEnvironment: ["SWIFT_BACKTRACE=enable=no"] + environment
            ) { actions in
                posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
                posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
            }
        }
        closeDescriptor(pair[1])
        let pid: pid_t
        switch spawned {
        case .success(let started): pid = started
        case .failure(let error):
            closeDescriptor(pair[0])
            return .failure(error)
        }
        return .success(WorkerProcess(pid: pid, channel: FileDescriptor(rawValue: pair[0])))
    }

    /// Sends one framed message (a dead worker: `EPIPE`, no signal), with
    /// `descriptor` attached to its first byte (`SCM_RIGHTS`) when given:
    /// the worker then holds its own copy of that open file (ours stays
    /// the caller's to close).
    package func send(_ framed: [UInt8], descriptor: FileDescriptor? = nil) -> Result<Void, Errno> {
        var done = 0
        while done < framed.count {
            let result = framed.withUnsafeBytes { raw in
                syscallResult { () -> Int in
                    if let descriptor, done == 0 {
                        var passed = descriptor.rawValue
                        return mdq_send_with_descriptors(channel.rawValue, raw.baseAddress!, raw.count, &passed, 1)
                    }
                    return Glibc.send(
                        channel.rawValue, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL))
                }
            }
            switch result {
            case .success(let n): done += n
            case .failure(let error): return .failure(error)
            }
        }
        return .success(())
    }

    /// The next reply, waiting until `deadline`. Replies read past it
    /// (several requests in flight) are kept for the next calls, so one
    /// read often brings several.
    package func receive(deadline: ContinuousClock.Instant, limit: Int) -> Reply {
        while true {
            if let reply = takeFrame(limit: limit) { return reply }
            // What is there already, without a poll first (with requests
            // in flight, the next answer often is).
            switch readAvailable(wait: false) {
            case .success(true): continue
            case .success(false): break
            case .failure: return .ended
            }
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { return .timedOut }
            let (seconds, attoseconds) = remaining.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var poller = pollfd(fd: channel.rawValue, events: Int16(POLLIN), revents: 0)
            switch syscallResult({ poll(&poller, 1, milliseconds) }) {
            case .failure: return .ended
            case .success(0): continue
            case .success: break
            }
            if case .failure = readAvailable(wait: true) { return .ended }
        }
    }

    /// Bytes read from the worker and not yet returned as a reply, from
    /// `unreadStart`.
    private var unread: [UInt8] = []
    private var unreadStart = 0
    /// Where `recv` writes, allocated once.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)

    /// The first whole reply in `unread`, if there is one.
    private func takeFrame(limit: Int) -> Reply? {
        let available = unread.count - unreadStart
        guard available >= 4 else { return nil }
        let h = unreadStart
        let length = Int(unread[h]) | Int(unread[h + 1]) << 8 | Int(unread[h + 2]) << 16 | Int(unread[h + 3]) << 24
        guard length <= limit else { return .tooLarge }
        guard available >= 4 + length else {
            unread.reserveCapacity(unreadStart + 4 + length)
            return nil
        }
        let body = Array(unread[(h + 4)..<(h + 4 + length)])
        unreadStart += 4 + length
        if unreadStart == unread.count {
            unread.removeAll(keepingCapacity: unread.capacity <= 1 << 20)
            unreadStart = 0
        }
        return .frame(body)
    }

    /// Reads what the worker has sent (up to 64 KiB) onto `unread`: true
    /// when bytes came, false when none were there (`wait` false) ; a
    /// failure when the worker closed its end.
    private func readAvailable(wait: Bool) -> Result<Bool, Errno> {
        if unreadStart > 0 {
            unread.removeFirst(unreadStart)
            unreadStart = 0
        }
        let result = syscallResult {
            recv(channel.rawValue, scratch.baseAddress, scratch.count, wait ? 0 : Int32(MSG_DONTWAIT))
        }
        if case .success(let n) = result { unread.append(contentsOf: scratch.prefix(n)) }
        switch result {
        case .success(0): return .failure(.brokenPipe)
        case .success: return .success(true)
        case .failure(.resourceTemporarilyUnavailable) where !wait: return .success(false)
        case .failure(.interrupted): return .success(false)
        case .failure(let error): return .failure(error)
        }
    }

    /// The worker's address space and the CPU it has used so far (from
    /// `/proc`); nil once it has ended.
    package var usage: (virtualBytes: UInt64, cpuSeconds: Double)? {
        guard reaped == nil,
            let bytes = try? readWholeFile(FilePath("/proc/\(pid)/stat"), limit: 4096),
            case let stat = String(decoding: bytes, as: UTF8.self), let close = stat.lastIndex(of: ")")
        else { return nil }
        // After the name: state is field 3; utime, stime 14, 15; vsize 23.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 20, let user = Double(fields[11]), let system = Double(fields[12]),
            let virtual = UInt64(fields[20])
        else { return nil }
        return (virtual, (user + system) / Double(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// Whether the worker still runs (not ended, on its own or killed,
    /// since it last answered).
    package var isRunning: Bool {
        guard reaped == nil else { return false }
        var status: Int32 = 0
        let rc = waitpid(pid, &status, WNOHANG)
        if rc == 0 { return true }
        // Reaped now (or by someone else): recorded, so `terminate` never
        // signals the pid again (it may already be another process's).
        closeDescriptor(channel.rawValue)
        reaped = rc == pid ? WorkerExit(waitStatus: status) : .exited(-1)
        return false
    }

    /// Kills the worker (if it still runs) and reaps it; how it ended.
    @discardableResult
    package func terminate() -> WorkerExit {
        if let reaped { return reaped }
        closeDescriptor(channel.rawValue)
        _ = kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let exit = WorkerExit(waitStatus: status)
        reaped = exit
        return exit
    }

    /// How the worker ended, once it has: reaps it without killing when its
    /// output closed (it died on its own).
    package func reapAfterEnd() -> WorkerExit {
        if let reaped { return reaped }
        var status: Int32 = 0
        var rc: pid_t = -1
        for _ in 0..<200 {
            rc = waitpid(pid, &status, WNOHANG)
            if rc != 0 { break }
            usleep(5_000)
        }
        guard rc == pid else { return terminate() }
        closeDescriptor(channel.rawValue)
        let exit = WorkerExit(waitStatus: status)
        reaped = exit
        return exit
    }
}

/// The worker's own end of the conversation: frames (and the descriptors
/// that come with them) from standard input, frames to standard output
/// (the same socket), and the confinement it puts itself under.
package enum WorkerChannel {
    /// The user a worker started by root becomes (`nobody`).
    package static let unprivilegedUser: UInt32 = 65534

    /// Gives up root, when started as root (the system index's workers):
    /// a worker reads only the descriptors it is handed, so it needs no
    /// one's rights. It becomes `nobody` with no supplementary groups, and
    /// stays undumpable, so that no other process of `nobody`'s may trace
    /// it or take its descriptors through `/proc`. It checks that it took:
    /// a worker that cannot give root up exits (its pool does not check it
    /// again).
    package static func leaveRoot() -> Result<Void, Errno> {
        guard getuid() == 0 || geteuid() == 0 else { return .success(()) }
        let nobody = unprivilegedUser
        guard mdq_become_user(nobody, nobody) == 0 else { return .failure(Errno(rawValue: errno)) }
        guard getuid() == nobody, geteuid() == nobody, getgid() == nobody, getegid() == nobody else {
            return .failure(.notPermitted)
        }
        return .success(())
    }

    /// Puts this process under its resource limits (see
    /// `mdq_confine_worker`), before it loads anything for its importers.
    package static func limit(memoryBytes: UInt64, cpuSeconds: UInt) -> Result<Void, Errno> {
        syscallResult { mdq_confine_worker(memoryBytes, cpuSeconds) }.map { _ in () }
    }

    /// Ends this process when the process that asks it to import goes
    /// away, even mid-import: a thread watches the channel for the
    /// hang-up. Started once sandboxed, so that thread is sandboxed too.
    package static func watchParent() -> Result<Void, Errno> {
        guard WorkerThreads.start(name: "mdq-parent-watch", { mdq_exit_when_peer_hangs_up(0) }) != nil else {
            return .failure(.resourceTemporarilyUnavailable)
        }
        return .success(())
    }

    /// The next request body and the descriptors sent with it (this
    /// process's to close); nil at the end of input, on bad framing, or
    /// when more descriptors came than a request carries (those are
    /// closed).
    package static func readFrame(limit: Int) -> (body: [UInt8], descriptors: [FileDescriptor])? {
        var descriptors: [FileDescriptor] = []
        var refused = false
        defer { if refused { for fd in descriptors { closeDescriptor(fd.rawValue) } } }
        guard let header = readExactly(4, descriptors: &descriptors) else {
            refused = true
            return nil
        }
        let length = Int(header[0]) | Int(header[1]) << 8 | Int(header[2]) << 16 | Int(header[3]) << 24
        guard length <= limit, let body = length == 0 ? [] : readExactly(length, descriptors: &descriptors),
            descriptors.count <= 1
        else {
            refused = true
            return nil
        }
        return (body, descriptors)
    }

    package static func writeFrame(_ framed: [UInt8]) -> Bool {
        var done = 0
        while done < framed.count {
            let result = framed.withUnsafeBytes { raw in
                syscallResult { write(1, raw.baseAddress! + done, raw.count - done) }
            }
            guard case .success(let n) = result else { return false }
            done += n
        }
        return true
    }

    private static func readExactly(_ count: Int, descriptors: inout [FileDescriptor]) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        var fds: [Int32] = [0, 0, 0, 0]
        while done < count {
            var received: Int32 = 0
            var truncated: Int32 = 0
            let result = bytes.withUnsafeMutableBytes { raw in
                syscallResult {
                    mdq_receive_with_descriptors(
                        0, raw.baseAddress! + done, count - done, &fds, Int32(fds.count), &received, &truncated)
                }
            }
            descriptors += fds.prefix(Int(received)).map { FileDescriptor(rawValue: $0) }
            guard case .success(let n) = result, n > 0, truncated == 0 else { return nil }
            done += n
        }
        return bytes
    }
}
