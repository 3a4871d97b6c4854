import Glibc
public import SystemPackage

/// Process facts the library and the CLI need, read through one place.
public enum ProcessEnvironment {
    /// The current working directory, as raw bytes (it need not be UTF-8).
    public static var currentDirectory: FilePath {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        while true {
            if getcwd(&buffer, buffer.count) != nil {
                return buffer.withUnsafeBufferPointer { FilePath(platformString: $0.baseAddress!) }
            }
            guard errno == ERANGE else { return "/" }
            buffer = [CChar](repeating: 0, count: buffer.count * 2)
        }
    }

    /// An environment variable, if set and non-empty.
    public static func variable(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let string = String(cString: value)
        return string.isEmpty ? nil : string
    }

    /// Whether the descriptor is a terminal.
    public static func isTerminal(_ descriptor: FileDescriptor) -> Bool {
        isatty(descriptor.rawValue) == 1
    }

    /// Makes writes to a closed pipe fail with `EPIPE` instead of killing the
    /// process, so `mdq ... | head -1` can stop quietly.
    public static func ignoreBrokenPipe() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// The raw bytes of every command-line argument, exactly as given (the
    /// decoded `CommandLine.arguments` replace bytes that are not UTF-8).
    public static var rawArguments: [[UInt8]] {
        (0..<Int(CommandLine.argc)).map { i in
            guard let pointer = CommandLine.unsafeArgv[i] else { return [] }
            return Array(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
        }
    }
}

/// Ends the process at once with a status, flushing nothing (mdq writes
/// through descriptors, not stdio buffers).
public enum ProcessExit {
    public static func exit(_ status: Int32) -> Never {
        Glibc.exit(status)
    }
}
