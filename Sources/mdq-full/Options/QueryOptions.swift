import ArgumentParser

/// What to find: the query (or `--name`) and the folders after it.
struct QueryOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Find names containing TEXT, ignoring case and diacritics; with * or ?, a whole-name wildcard match "
                + "(then every positional argument is a DIR).",
            valueName: "TEXT"))
    var name: String?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Read QUERY in mdfind's syntax: kMDItemFSName == \"*.png\"cd && kMDItemFSContentChangeDate >= $time.today(-7) "
                + "(a query only that syntax reads, with * or ? after ==, a \"…\"cd suffix, $time. or InRange(, is read in it "
                + "without --spotlight)")
    )
    var spotlight = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Stop a one-shot query after SECONDS (default 30) with a too-expensive error.", valueName: "seconds"))
    var budget: Double?

    @Flag(name: .customLong("list-attributes"), help: "Print every attribute key a query, --attr or --sort takes.")
    var listAttributes = false

    @Argument(
        help: ArgumentHelp(
            "A name, a glob or a predicate (- reads it from standard input).", valueName: "query"))
    var query: String?

    @Argument(help: ArgumentHelp("Folders to search (as --onlyin).", valueName: "dir"), completion: .directory)
    var folders: [String] = []
}
