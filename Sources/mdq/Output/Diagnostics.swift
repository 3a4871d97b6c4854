import MetadataIndex
import Synchronization
import SystemPackage

/// Messages on stderr, one line each, prefixed `mdq:`.
enum Diagnostics {
    /// Set by `--no-warnings`: warnings are dropped, errors still print.
    static let warningsSilenced = Atomic<Bool>(false)
    /// Whether a status line is on the terminal now.
    private static let statusShown = Atomic<Bool>(false)

    static func error(_ message: String) {
        write("mdq: " + message + "\n")
    }

    /// A line of the daemon's log: the time, then the message.
    static func log(_ message: String) {
        var line: [UInt8] = []
        TextFormat.appendISO8601(Timestamp.now, fractionalSeconds: false, to: &line)
        write(String(decoding: line, as: UTF8.self) + " mdq daemon: " + message + "\n")
    }

    static func warn(_ message: String) {
        guard !warningsSilenced.load(ordering: .relaxed) else { return }
        write("mdq: warning: " + message + "\n")
    }

    /// A transient status line on stderr (a terminal only); nil clears it.
    static func status(_ text: String?) {
        statusShown.store(text != nil, ordering: .relaxed)
        write("\r\u{1B}[K" + (text ?? ""))
    }

    /// Clears the status line if one is shown.
    static func clearStatus() {
        if statusShown.exchange(false, ordering: .relaxed) { write("\r\u{1B}[K") }
    }

    /// Whether stderr should show progress: a terminal that understands
    /// the carriage return and erase-line codes (`TERM=dumb` does not).
    static var showsProgress: Bool {
        ProcessEnvironment.isTerminal(.standardError) && ProcessEnvironment.variable("TERM") != "dumb"
    }

    private static func write(_ text: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

    static func exit(_ status: Int32) -> Never {
        ProcessExit.exit(status)
    }
}
