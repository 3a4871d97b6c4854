import ArgumentParser
import MetadataIndex

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

    @Option(
        name: .customLong("attr"),
        help: ArgumentHelp(
            "Also print this attribute (repeatable): a tab-separated column in text, a field in --json.",
            valueName: "KEY"))
    var attributes: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Sort by this attribute (repeatable; first is primary), names like Finder; add :desc to reverse.",
            valueName: "KEY[:desc]"))
    var sort: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Print the number of results per value of this attribute instead of paths.", valueName: "KEY"))
    var group: String?

    /// The sort descriptors `--sort` asks for.
    var sortDescriptors: [MetadataSortDescriptor] {
        sort.map { spec in
            var key = spec
            var ascending = true
            for suffix in [":desc", ":descending"] where key.lowercased().hasSuffix(suffix) {
                key = String(key.dropLast(suffix.count))
                ascending = false
            }
            if key.lowercased().hasSuffix(":asc") { key = String(key.dropLast(4)) }
            return MetadataSortDescriptor(key: MetadataAttribute(key: key)?.rawValue ?? key, ascending: ascending)
        }
    }

    /// Whether results must be collected as items (attributes, sorting, grouping).
    var needsItems: Bool { !attributes.isEmpty || !sort.isEmpty || group != nil }

    /// Checks the attribute keys named by `--attr`, `--sort`, `--group`.
    func validateKeys() throws {
        for key in attributes + sortDescriptors.map(\.key) + (group.map { [$0] } ?? [])
        where !MetadataItem.knownKeys.contains(key) && MetadataAttribute(key: key) == nil {
            throw ValidationError("unknown attribute '\(key)'")
        }
    }

    var format: ResultPrinter.Format {
        if json { return .json }
        return nullTerminated ? .nullTerminated : .lines
    }
}
