import ArgumentParser
import MetadataIndex

/// How to print results.
struct OutputOptions: ParsableArguments {
    @Flag(
        name: [.customShort("0"), .customLong("null")],
        help: "End each path with NUL instead of a newline (for xargs -0).")
    var nullTerminated = false

    @Flag(
        name: .long,
        help: """
            Print one JSON object per result: path, name, displayName, kind, size, modified and created \
            (UTC to the second, as jq's fromdate reads), modifiedEpoch and createdEpoch (exact seconds since 1970).
            """)
    var json = false

    @Flag(name: .long, help: "Print only the number of matches (with --live, each new count).")
    var count = false

    @Flag(
        name: .long,
        help:
            "Keep the query live: print the results, then every change (+ added, - removed, ~ changed) until interrupted."
    )
    var live = false

    // `.unconditional`, so `--interval -1` reaches the range check instead
    // of being taken for an option.
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "With --live, merge changes over this many seconds (default 1; 0 = at once).", valueName: "SECONDS"))
    var interval: Double?

    @Option(
        name: .customLong("attr"),
        help: ArgumentHelp(
            "Also print this attribute (repeatable): a tab-separated column in text, a field in --json.",
            valueName: "KEY"),
        completion: AttributeKeys.completion)
    var attributes: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Sort by this attribute (repeatable; first is primary), names like Finder; add :desc to reverse.",
            valueName: "KEY[:desc]"),
        completion: AttributeKeys.sortCompletion)
    var sort: [String] = []

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Print the number of results per value of this attribute instead of paths.", valueName: "KEY"),
        completion: AttributeKeys.completion)
    var group: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Stop after N results: the search ends as soon as they are found (with --sort, the first N in order).",
            valueName: "N"))
    var limit: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only entries of this kind (repeatable): f (files), d (folders), l (symlinks).", valueName: "f|d|l"))
    var type: [EntryType] = []

    @Flag(name: .customLong("no-warnings"), help: "Do not print warnings (folders that cannot be read, ...).")
    var noWarnings = false

    @Flag(
        name: .customLong("show-errors"),
        help: "Print every folder that cannot be read (by default the first 5, then one line counting the rest).")
    var showErrors = false

    enum EntryType: String, ExpressibleByArgument, CaseIterable {
        case file = "f"
        case folder = "d"
        case symlink = "l"

        init?(argument: String) {
            switch argument {
            case "f", "file": self = .file
            case "d", "dir", "directory", "folder": self = .folder
            case "l", "symlink": self = .symlink
            default: return nil
            }
        }

        var kind: EntryKind {
            switch self {
            case .file: .file
            case .folder: .folder
            case .symlink: .symlink
            }
        }
    }

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

    /// The kinds `--type` allows; nil for all.
    var kinds: Set<EntryKind>? { type.isEmpty ? nil : Set(type.map(\.kind)) }

    /// Checks that the options go together and name known attributes.
    func check() throws {
        for key in attributes + sortDescriptors.map(\.key) + (group.map { [$0] } ?? [])
        where !AttributeKeys.isKnown(key) {
            throw ValidationError("unknown attribute '\(key)' (mdq --list-attributes prints them all)")
        }
        if group != nil && (count || live || json || nullTerminated) {
            throw ValidationError(
                "--group prints counts per value; it does not combine with --count, --live, --json or -0")
        }
        if count && (json || nullTerminated) {
            throw ValidationError("--count prints a number; it does not combine with --json or -0")
        }
        if let interval {
            guard interval >= 0 && interval.isFinite else {
                throw ValidationError("--interval must be 0 or more seconds")
            }
            guard live else { throw ValidationError("--interval applies to --live") }
        }
        if let limit {
            guard limit >= 0 else { throw ValidationError("--limit must be 0 or more") }
            if live || group != nil { throw ValidationError("--limit applies to one-shot queries without --group") }
        }
        if live && !type.isEmpty { throw ValidationError("--type applies to one-shot queries") }
    }

    var format: ResultPrinter.Format {
        if json { return .json }
        return nullTerminated ? .nullTerminated : .lines
    }
}
