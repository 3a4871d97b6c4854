import MetadataIndex
import SystemPackage

/// Messages on stderr, one line each, prefixed `mdq:`.
enum Diagnostics {
    static func error(_ message: String) {
        write("mdq: " + message + "\n")
    }

    static func warn(_ message: String) {
        write("mdq: warning: " + message + "\n")
    }

    /// A transient status line on stderr (a terminal only); nil clears it.
    static func status(_ text: String?) {
        write("\r\u{1B}[K" + (text ?? ""))
    }

    private static func write(_ text: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

    static func exit(_ status: Int32) -> Never {
        ProcessExit.exit(status)
    }
}
