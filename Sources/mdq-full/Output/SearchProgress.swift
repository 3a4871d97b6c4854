import MetadataIndex

/// The status line of a one-shot search that prints nothing until it ends
/// (`--count`, `--sort`, `--group`): entries listed so far, on stderr.
///
/// Only on a terminal that can erase a line (`Diagnostics.showsProgress`),
/// only once the crawl has run for a moment (a quick search shows nothing),
/// and at most ten times a second. Cleared when the search ends, and by
/// `ProcessExit` on Ctrl-C.
final class SearchProgress: Sendable {
    private let start = ContinuousClock.now
    /// When the line was last written; nil before the first time.
    private let lastShown = Locked<ContinuousClock.Instant?>(nil)
    private let enabled: Bool

    init(enabled: Bool = Diagnostics.showsProgress) {
        self.enabled = enabled
    }

    /// Called from crawler threads with the number of entries listed.
    func update(listed: Int) {
        guard enabled else { return }
        let now = ContinuousClock.now
        guard now - start >= .milliseconds(250) else { return }
        lastShown.withLock { last in
            if let last, now - last < .milliseconds(100) { return }
            last = now
            Diagnostics.status("searching… \(listed) entries")
        }
    }

    /// Clears the line before the result is printed.
    func finish() {
        lastShown.withLock { _ in Diagnostics.clearStatus() }
    }
}
