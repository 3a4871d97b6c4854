import ArgumentParser

/// How to print results.
struct OutputOptions: ParsableArguments {
    @Flag(
        name: [.customShort("0"), .customLong("null")],
        help: "End each path with NUL instead of a newline (for xargs -0).")
    var nullTerminated = false

    @Flag(
        name: .long, help: "Print one JSON object per result: path, name, displayName, kind, size, modified, created.")
    var json = false

    @Flag(name: .long, help: "Print only the number of matches (with --live, each new count).")
    var count = false

    @Flag(
        name: .long,
        help:
            "Keep the query live: print the results, then every change (+ added, - removed, ~ changed) until interrupted."
    )
    var live = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With --live, merge changes over this many seconds (default 1; 0 = at once).", valueName: "SECONDS"))
    var interval: Double?

    var format: ResultPrinter.Format {
        if json { return .json }
        return nullTerminated ? .nullTerminated : .lines
    }
}
