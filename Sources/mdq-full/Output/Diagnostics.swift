import MetadataIndex
import Synchronization
import SystemPackage

/// Messages on stderr, one line each, prefixed with the program's name
/// (`mdq:`, or `mdfind:`/`mdls:` when run by those names).
enum Diagnostics {
    /// The name messages start with.
    static let program = Personality.named(CommandLine.arguments.first ?? "") ?? "mdq"

    /// Set by `--no-warnings`: warnings are dropped, errors still print.
    static let warningsSilenced = Atomic<Bool>(false)
    /// Whether a status line is on the terminal now.
    private static let statusShown = Atomic<Bool>(false)

    static func error(_ message: String) {
        write(program + ": " + message + "\n")
    }

    /// A line of the daemon's log: the time, then the message.
    static func log(_ message: String) {
        var line: [UInt8] = []
        TextFormat.appendISO8601(Timestamp.now, fractionalSeconds: false, to: &line)
        write(String(decoding: line, as: UTF8.self) + " mdq daemon: " + message + "\n")
    }

    static func warn(_ message: String) {
        guard !warningsSilenced.load(ordering: .relaxed) else { return }
        write(program + ": warning: " + message + "\n")
    }

    /// Something the user may want to know that changes no result (why a
    /// search crawled instead of asking the index daemon); silenced with
    /// the warnings.
    static func note(_ message: String) {
        guard !warningsSilenced.load(ordering: .relaxed) else { return }
        write(program + ": note: " + message + "\n")
    }

    /// Set by `--show-errors`: every crawl warning prints.
    static let showsEveryWarning = Atomic<Bool>(false)
    /// Crawl warnings printed before the rest are only counted.
    static let crawlWarningsShown = 5
    private static let crawlWarnings = Locked(CrawlWarningCount())

    private struct CrawlWarningCount {
        var seen = 0
        /// Warnings held back, by what failed.
        var heldBack: [String: Int] = [:]
    }

    /// A crawl warning (a folder that cannot be read, ...): the first few
    /// print as they come, the rest are counted for `summarizeCrawlWarnings`
    /// (a search of `/tmp` as an ordinary user meets hundreds of private
    /// folders; one line each buries the results).
    static func crawlWarning(_ operation: String, _ message: String) {
        guard !warningsSilenced.load(ordering: .relaxed) else { return }
        let shown = showsEveryWarning.load(ordering: .relaxed)
        let printNow = crawlWarnings.withLock { count -> Bool in
            count.seen += 1
            if shown || count.seen <= crawlWarningsShown { return true }
            count.heldBack[operation, default: 0] += 1
            return false
        }
        if printNow { warn(message) }
    }

    /// One line for the crawl warnings held back, if any.
    static func summarizeCrawlWarnings() {
        let heldBack = crawlWarnings.withLock { count -> [String: Int] in
            defer { count.heldBack = [:] }
            return count.heldBack
        }
        let total = heldBack.values.reduce(0, +)
        guard total > 0 else { return }
        let kinds = heldBack.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        warn("\(total) more like these (\(kinds)); --show-errors lists them all")
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

    /// Text on stderr as is.
    static func write(_ text: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

    static func exit(_ status: Int32) -> Never {
        ProcessExit.exit(status)
    }
}
