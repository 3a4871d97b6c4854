import MetadataIndex

/// Ends the process at once with a status, leaving the terminal clean.
///
/// Every exit of `mdq` goes through here: a progress line still on stderr
/// (a one-shot `--count`, a live query gathering) is cleared first, so
/// Ctrl-C never leaves it behind the shell's prompt.
enum ProcessExit {
    static func exit(_ status: Int32) -> Never {
        Diagnostics.clearStatus()
        ProcessEnvironment.exitImmediately(status)
    }
}
