import CLinuxSyscalls
package import Glibc
package import SystemPackage

/// Starts a program that outlives its caller: in a session of its own (no
/// controlling terminal, untouched by the caller's Ctrl-C), standard input
/// from /dev/null, standard output and error appended to a log file.
package enum DetachedProcess {
    /// This process's executable (to start another mode of itself).
    package static var currentExecutable: FilePath {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return FilePath(CommandLine.arguments[0]) }
        return FilePath(String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Starts `executable` with `arguments`; returns its process id.
    ///
    /// - Throws: the `Errno` of opening the log or of `posix_spawn`.
    package static func start(_ executable: FilePath, arguments: [String], log: FilePath) throws(Errno) -> Int32 {
        try spawn(executable, arguments: arguments, newSession: true) { (actions) throws(Errno) in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            let opened = log.withPlatformString { path in
                posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            }
            guard opened == 0 else { throw Errno(rawValue: opened) }
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
    }

    /// Starts `executable` with `arguments` and the standard descriptors
    /// `setUp` arranges; every other descriptor of the caller is closed in
    /// the child (a program that started `mdq daemon start` and waits for
    /// its pipes or sockets to close would otherwise wait for the daemon's
    /// whole life), and no blocked signal is inherited.
    ///
    /// - Parameters:
    ///   - newSession: start a session of its own (no controlling
    ///     terminal, untouched by the caller's Ctrl-C).
    ///   - addingEnvironment: `NAME=value` entries added to (and winning
    ///     over) this process's environment.
    /// - Returns: the child's process id.
    /// - Throws: `setUp`'s error or `posix_spawn`'s.
    package static func spawn(
        _ executable: FilePath, arguments: [String], newSession: Bool, addingEnvironment: [String] = [],
        setUp: (inout posix_spawn_file_actions_t) throws(Errno) -> Void
    ) throws(Errno) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        try setUp(&actions)
        _ = mdq_spawn_close_from(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        let flags = POSIX_SPAWN_SETSIGMASK | (newSession ? 0x80 /* POSIX_SPAWN_SETSID */ : 0)
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let argv = ([executable.string] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc: Int32
        if addingEnvironment.isEmpty {
            rc = executable.withPlatformString { path in posix_spawn(&pid, path, &actions, &attributes, argv, environ) }
        } else {
            let names = addingEnvironment.map { String($0.prefix { $0 != "=" }) + "=" }
            var inherited: [UnsafeMutablePointer<CChar>?] = []
            var entry = environ
            while let variable = entry.pointee {
                if !names.contains(where: { name in strncmp(variable, name, name.utf8.count) == 0 }) {
                    inherited.append(variable)
                }
                entry += 1
            }
            let added = addingEnvironment.map { strdup($0) }
            defer { for pointer in added { free(pointer) } }
            let envp = inherited + added + [nil]
            rc = executable.withPlatformString { path in posix_spawn(&pid, path, &actions, &attributes, argv, envp) }
        }
        guard rc == 0 else { throw Errno(rawValue: rc) }
        return pid
    }

    /// Whether a process is still alive (signal 0).
    package static func isAlive(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }
}
