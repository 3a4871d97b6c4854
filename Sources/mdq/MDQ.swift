import ArgumentParser
import MetadataIndex
import Synchronization
import SystemPackage

/// `mdq`: `mdfind` for Linux. Parses, calls the library, prints.
@main
struct MDQ: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mdq",
        abstract: "Find files by metadata query, like mdfind.",
        discussion: """
            QUERY is an NSPredicate-style predicate over kMDItemFSName, kMDItemDisplayName, \
            kMDItemPath, kMDItemURL (strings), kMDItemFSSize (a number), kMDItemFSCreationDate, \
            kMDItemFSContentChangeDate (dates; CAST(seconds since 2001, "NSDate")), also spelled \
            NSMetadataItemFSNameKey, ... Operators: == != < <= > >= BETWEEN {lo, hi} IN {a, b}, \
            and for strings LIKE BEGINSWITH ENDSWITH CONTAINS MATCHES, each with [c] (ignore case), \
            [d] (ignore diacritics) or [cd]; AND/&&, OR/||, NOT/!, parentheses, TRUEPREDICATE. \
            --spotlight reads mdfind's syntax instead.
            LIKE matches the whole name: * is any run, ? one character, \\ escapes.

            With no scope option, mdq searches the example container bundled with its source.

            Examples:
              mdq "kMDItemFSName LIKE[c] '*.png'"
              mdq --name report
              mdq --onlyin ~/src "kMDItemFSName ENDSWITH '.swift'"
              mdq --onlyin . "kMDItemPath CONTAINS '/docs/' && kMDItemFSName LIKE '*.md'"
              mdq --container ~/Sync --scope documents --count "kMDItemFSName LIKE '*.pdf'"
              mdq -0 "kMDItemFSName LIKE '*.tmp'" | xargs -0 rm --
              mdq --json "kMDItemDisplayName BEGINSWITH[cd] 'resume'"
              mdq "kMDItemFSSize > 1000000 AND kMDItemFSName ENDSWITH[c] '.mov'"
              mdq --spotlight 'kMDItemFSName == "*.png"cd && kMDItemFSContentChangeDate >= $time.today(-7)'
              mdq --live "kMDItemFSName LIKE '*.txt'"
              mdq ls photo.png              (every attribute of an item, like mdls; mdq ls --help)

            Exit status: 0 success, 1 runtime error (missing container or scope), \
            2 usage or query syntax error.
            """
    )

    @OptionGroup var scope: ScopeOptions
    @OptionGroup var output: OutputOptions

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Find names containing TEXT, ignoring case and diacritics; with * or ?, a whole-name wildcard match.",
            valueName: "TEXT"))
    var name: String?

    @Flag(
        name: .long,
        help:
            "Read QUERY in mdfind's syntax: kMDItemFSName == \"*.png\"cd && kMDItemFSContentChangeDate >= $time.today(-7)"
    )
    var spotlight = false

    @Argument(help: ArgumentHelp("The predicate, e.g. \"kMDItemFSName LIKE '*.png'\".", valueName: "QUERY"))
    var query: String?

    mutating func validate() throws {
        if scope.managesExternal {
            if name != nil || query != nil { throw ValidationError("registration commands take no QUERY") }
            return
        }
        if name == nil && query == nil {
            throw ValidationError("give a QUERY or --name TEXT")
        }
        if name != nil && query != nil {
            throw ValidationError("give either a QUERY or --name TEXT, not both")
        }
        try output.validateKeys()
        if output.group != nil && (output.count || output.live || output.json || output.nullTerminated) {
            throw ValidationError(
                "--group prints counts per value; it does not combine with --count, --live, --json or -0")
        }
        if output.count && (output.json || output.nullTerminated) {
            throw ValidationError("--count prints a number; it does not combine with --json or -0")
        }
        if let interval = output.interval {
            guard output.live else { throw ValidationError("--interval applies to --live") }
            guard interval >= 0 && interval.isFinite else {
                throw ValidationError("--interval must be 0 or more seconds")
            }
        }
    }

    func run() throws {
        // Early, while descriptors are low (libinotifytools uses select()).
        // A one-shot query does not watch, so a refusal here is not fatal.
        _ = try? MetadataEngine.initializeWatching()
        let raw = RawArguments()
        if scope.managesExternal {
            try scope.manageExternal(raw: raw)
            return
        }
        let predicate: MetadataPredicate
        if let name {
            predicate = try MetadataPredicate.nameMatching(raw.bytes(for: name))
        } else if spotlight {
            predicate = try MetadataPredicate(spotlightQueryBytes: raw.bytes(for: query ?? ""))
        } else {
            predicate = try MetadataPredicate(formatBytes: raw.bytes(for: query ?? ""))
        }
        let roots = try scope.crawlRoots(raw: raw)
        if output.live {
            // Fail like a one-shot query on a missing scope, before going live.
            for root in roots { try root.checkAccessible() }
            let (scopes, container) = try scope.searchScopes(raw: raw)
            ProcessEnvironment.ignoreBrokenPipe()
            let mode: LivePrinter.Mode =
                output.count ? .count : output.json ? .json : .lines(terminator: output.nullTerminated ? 0 : 0x0A)
            LiveSession(
                predicate: predicate, scopes: scopes, container: container, includeHidden: scope.hidden,
                sortDescriptors: output.sortDescriptors, excludedFolderNames: Set(scope.excludedFolders),
                interval: output.interval,
                printer: LivePrinter(
                    mode: mode, attributes: output.attributes,
                    showProgress: ProcessEnvironment.isTerminal(.standardError))
            ).run()
        }
        // Ctrl-C or SIGTERM mid-search: no half-written line, then the
        // status a killed process has.
        ProcessEnvironment.onInterrupt { signal in StandardOutput.exitOnInterrupt(signal: signal) }
        if output.needsItems && !output.count {
            try runCollecting(predicate: predicate, roots: roots, raw: raw)
            return
        }
        let search = OneShotSearch(
            roots: roots, predicate: predicate, crawlOptions: scope.crawlOptions,
            includeMetadata: output.json, container: try scope.searchScopes(raw: raw).1)
        ProcessEnvironment.ignoreBrokenPipe()
        let printer = ResultPrinter(format: output.format)
        let onBatch: (@Sendable (SearchResultBatch) -> Void)? =
            output.count ? nil : { @Sendable batch in printer.print(batch) }
        let summary = try search.run(
            onBatch: onBatch,
            onWarning: { warning in Diagnostics.warn(warning.description) })
        if output.count {
            printer.printCount(summary.matchCount)
        }
        printer.finish()
    }

    /// A one-shot search whose results are collected as items: printed
    /// with `--attr` columns, sorted by `--sort`, or counted per `--group`.
    private func runCollecting(predicate: MetadataPredicate, roots: [CrawlRoot], raw: RawArguments) throws {
        let (_, container) = try scope.searchScopes(raw: raw)
        let search = OneShotSearch(
            roots: roots, predicate: predicate, crawlOptions: scope.crawlOptions, includeMetadata: true,
            container: container)
        let conflictKeys: Set<String> = [MetadataItem.hasUnresolvedConflictsKey, MetadataItem.conflictOriginalPathKey]
        let needsListing = !conflictKeys.isDisjoint(
            with: output.attributes + output.sortDescriptors.map(\.key) + [output.group ?? ""])
        let collected = Collected(MetadataItemReader(container: container, detectsConflicts: needsListing))
        _ = try search.run(
            onBatch: { @Sendable batch in collected.append(batch) },
            onWarning: { warning in Diagnostics.warn(warning.description) })
        // Stable order first (the crawl's order depends on threads), then the sort keys.
        let items = collected.items.sorted { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) }
            .sorted(by: output.sortDescriptors)
        ProcessEnvironment.ignoreBrokenPipe()
        var out: [UInt8] = []
        if let group = output.group {
            var counts: [String: Int] = [:]
            var order: [String] = []
            for item in items {
                let key = AttributeText.column(item, key: group)
                if counts[key] == nil { order.append(key) }
                counts[key, default: 0] += 1
            }
            if output.sort.isEmpty { order.sort { counts[$0]! != counts[$1]! ? counts[$0]! > counts[$1]! : $0 < $1 } }
            for key in order { out += Array("\(key)\t\(counts[key]!)\n".utf8) }
            StandardOutput.flush(&out)
            return
        }
        for item in items {
            if output.json {
                AttributeText.appendJSON(item, attributes: output.attributes, to: &out)
                out.append(0x0A)
            } else {
                AttributeText.appendLine(item, attributes: output.attributes, to: &out)
                out.append(output.nullTerminated ? 0 : 0x0A)
            }
            if out.count >= 1 << 16 { StandardOutput.flush(&out) }
        }
        StandardOutput.flush(&out)
    }

    /// `mdq ls PATH...`, with the same exit statuses.
    static func runList(_ arguments: [String]) -> Never {
        ProcessEnvironment.unblockInterruptSignals()
        let command: ListCommand
        do {
            command = try ListCommand.parse(arguments)
        } catch {
            if ListCommand.exitCode(for: error) == .success { ListCommand.exit(withError: error) }
            Diagnostics.error(ListCommand.message(for: error) + "\n" + "Run 'mdq ls --help' for usage.")
            Diagnostics.exit(2)
        }
        do {
            try command.run()
        } catch let error as MetadataError {
            Diagnostics.error(error.description)
            Diagnostics.exit(1)
        } catch let error as ExitCode {
            Diagnostics.exit(error.rawValue)
        } catch {
            Diagnostics.error("\(error)")
            Diagnostics.exit(1)
        }
        Diagnostics.exit(0)
    }

    /// Runs the command with mdq's exit statuses: 0 success, 1 runtime error,
    /// 2 usage or query syntax error, each with a one-line message on stderr
    /// (plus the caret lines for a query error).
    static func main() {
        // Before any thread starts: SIGINT/SIGTERM are taken by a sigwait
        // thread in live mode, and restored to their default otherwise.
        ProcessEnvironment.blockInterruptSignals()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "ls" {
            runList(Array(arguments.dropFirst()))
        }
        let command: MDQ
        do {
            command = try parse()
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)
            }
            Diagnostics.error(message(for: error) + "\n" + "Run 'mdq --help' for usage and examples.")
            Diagnostics.exit(2)
        }
        do {
            try command.run()
        } catch let error as MetadataError {
            Diagnostics.error(error.description)
            Diagnostics.exit(error.code == .querySyntax || error.code == .invalidArgument ? 2 : 1)
        } catch let error as ValidationError {
            Diagnostics.error(error.message)
            Diagnostics.exit(2)
        } catch {
            Diagnostics.error("\(error)")
            Diagnostics.exit(1)
        }
        Diagnostics.exit(0)
    }
}

/// Items gathered from the search's batch callbacks.
private final class Collected: @unchecked Sendable {
    // The reader is used only while holding `storage`'s lock.
    private let reader: MetadataItemReader
    private let storage = Locked<[MetadataItem]>([])

    init(_ reader: MetadataItemReader) { self.reader = reader }

    func append(_ batch: SearchResultBatch) {
        storage.withLock { items in
            for i in 0..<batch.count { items.append(reader.item(for: batch[i])) }
        }
    }

    var items: [MetadataItem] { storage.withLock { $0 } }
}
