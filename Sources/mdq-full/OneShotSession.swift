import Glibc
import MDQLive
import MetadataIndex
import SystemPackage

/// `mdq QUERY` without `--live`: one crawl, results printed as they are
/// found (or collected first for `--attr`, `--sort`, `--group`).
struct OneShotSession {
    let predicate: MetadataPredicate
    let scope: ResolvedScope
    let output: OutputOptions
    /// `--budget`: seconds the search may take (nil: the default).
    var budget: Double?
    /// The query as typed when it is free text: when nothing matches it
    /// as one piece, a note says how mdfind's reading (each word) does.
    var words: [UInt8]?

    func run() throws {
        // Ctrl-C or SIGTERM mid-search: no half-written line, then the
        // status a killed process has.
        DaemonAnswer.exitOnInterrupt()
        ProcessEnvironment.ignoreBrokenPipe()
        // Results streaming to the terminal are progress enough; a count,
        // a sort or a grouping prints nothing until the crawl ends.
        let progress = output.count || !output.sort.isEmpty || output.group != nil ? SearchProgress() : nil
        let onProgress = progress.map { progress in { @Sendable (listed: Int) in progress.update(listed: listed) } }
        let summary: SearchSummary
        if output.needsItems && !output.count {
            summary = try runCollecting(onProgress: onProgress)
        } else {
            let search = makeSearch(includeMetadata: output.json, limit: output.limit)
            if output.count {
                summary = try search.run(onWarning: Self.warn, onProgress: onProgress)
                progress?.finish()
                StandardOutput.print(String(summary.matchCount))
            } else {
                summary = try search.run(
                    formattingWith: ResultPrinter.formatter(output.format), write: StandardOutput.write,
                    onWarning: Self.warn)
            }
        }
        Diagnostics.summarizeCrawlWarnings()
        if summary.matchCount == 0, let words, let other = CommandLineQuery.otherReading(of: words) {
            let search = OneShotSession(predicate: other.predicate, scope: scope, output: output, budget: budget)
                .makeSearch(includeMetadata: false, limit: nil)
            if let counted = try? search.run(onWarning: { _ in }, onProgress: nil), counted.matchCount > 0 {
                Diagnostics.note(other.note(counted.matchCount))
            }
        }
        if !summary.reachedLimit {
            for pattern in summary.unmatchedExclusions {
                Diagnostics.warn("--exclude '\(String(decoding: pattern, as: UTF8.self))' matched no folder")
            }
        }
    }

    /// Items ordered by their paths' bytes. `memcmp`, not the generic
    /// `lexicographicallyPrecedes`, which took 40 % of a million-result
    /// `--attr` run.
    private static func inPathOrder(_ items: [MetadataItem]) -> [MetadataItem] {
        var items = items
        items.sort { a, b in
            a.pathBytes.withUnsafeBytes { x in
                b.pathBytes.withUnsafeBytes { y in
                    let common = min(x.count, y.count)
                    let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                    return order != 0 ? order < 0 : x.count < y.count
                }
            }
        }
        return items
    }

    private static let warn: @Sendable (CrawlWarning) -> Void = { warning in
        Diagnostics.crawlWarning(warning.operation.rawValue, warning.description)
    }

    private func makeSearch(includeMetadata: Bool, limit: Int?) -> OneShotSearch {
        var search = OneShotSearch(
            roots: scope.roots, predicate: predicate, crawlOptions: scope.crawlOptions,
            includeMetadata: includeMetadata, limit: limit, kinds: output.kinds,
            excludedFolderPatterns: scope.excludedFolders, skipsPseudoFileSystems: scope.skipsPseudoFileSystems,
            container: scope.container)
        search.budget = budget
        return search
    }

    /// A search whose results are collected as items: printed with `--attr`
    /// columns, sorted by `--sort`, or counted per `--group`.
    private func runCollecting(onProgress: (@Sendable (Int) -> Void)?) throws -> SearchSummary {
        // With --sort, the first N in order need every match first.
        let search = makeSearch(includeMetadata: true, limit: output.sort.isEmpty ? output.limit : nil)
        let conflictKeys: Set<String> = [MetadataItem.hasUnresolvedConflictsKey, MetadataItem.conflictOriginalPathKey]
        let needsListing = !conflictKeys.isDisjoint(
            with: output.attributes + output.sortDescriptors.map(\.key) + [output.group ?? ""])
        let reader = MetadataItemReader(container: scope.container, detectsConflicts: needsListing)
        // Columns, sort keys or groups read from inside files: imported per
        // item, in confined workers.
        let importer = try Self.columnImporter(output)
        defer { importer?.pool.shutdown() }
        if let importer { reader.importer = importer.values }
        let collected = Collected(reader)
        let summary = try search.run(
            onBatch: { @Sendable batch in collected.append(batch) }, onWarning: Self.warn, onProgress: onProgress)
        Diagnostics.clearStatus()
        Self.print(collected.items, output: output)
        return summary
    }

    /// What imports the attributes `output` shows, sorts or groups by that
    /// are read from inside files; nil when it shows none.
    ///
    /// - Throws: `MetadataError` `.importUnavailable` without the worker.
    static func columnImporter(_ output: OutputOptions) throws(MetadataError) -> ColumnImporter? {
        let wanted = importedColumns(output)
        guard !wanted.isEmpty else { return nil }
        let pool = ImportWorkerPool()
        try pool.checkAvailable()
        return ColumnImporter(pool: pool, wanted: wanted)
    }

    /// The attributes `output` shows, sorts or groups by that are read
    /// from inside files.
    static func importedColumns(_ output: OutputOptions) -> Set<MetadataAttribute> {
        let keys = output.attributes + output.sortDescriptors.map(\.key) + [output.group ?? ""]
        return Set(keys.compactMap { MetadataAttribute(key: $0) }.filter(\.isImported))
    }

    struct ColumnImporter {
        let pool: ImportWorkerPool
        let wanted: Set<MetadataAttribute>

        var values: @Sendable (FilePath) -> ImportedValues {
            { [pool, wanted] path in pool.importFile(at: path, wanted: wanted).values }
        }
    }

    /// `value<TAB>count` per value of the attribute `key` among `items`:
    /// most first, or in the items' order (`--sort` given).
    static func appendGroups(_ items: [MetadataItem], by key: String, inItemOrder: Bool, to out: inout [UInt8]) {
        var counts: [String: Int] = [:]
        var order: [String] = []
        for item in items {
            let value = AttributeText.column(item, key: key)
            if counts[value] == nil { order.append(value) }
            counts[value, default: 0] += 1
        }
        if !inItemOrder { order.sort { counts[$0]! != counts[$1]! ? counts[$0]! > counts[$1]! : $0 < $1 } }
        for value in order { out += Array("\(value)\t\(counts[value]!)\n".utf8) }
    }

    /// Prints collected items: in path order (the crawl's order depends on
    /// threads), then by the sort keys, with `--attr` columns or as JSON, or
    /// counted per `--group`. Items from a crawl and from the index daemon
    /// print the same.
    static func print(_ collected: [MetadataItem], output: OutputOptions, ranked: Bool = false) {
        // Ranked results (a words search) keep their order unless --sort
        // asks for another.
        var items =
            ranked && output.sortDescriptors.isEmpty
            ? collected : inPathOrder(collected).sorted(by: output.sortDescriptors)
        if let limit = output.limit { items = Array(items.prefix(limit)) }
        var out: [UInt8] = []
        if let group = output.group {
            appendGroups(items, by: group, inItemOrder: !output.sort.isEmpty, to: &out)
            StandardOutput.flush(&out)
            return
        }
        // Read once: each option is a property wrapper, costly per result.
        let json = output.json
        let attributes = output.attributes
        let terminator: UInt8 = output.nullTerminated ? 0 : 0x0A
        for item in items {
            if json {
                AttributeText.appendJSON(item, attributes: attributes, to: &out)
                out.append(0x0A)
            } else {
                AttributeText.appendLine(item, attributes: attributes, to: &out)
                out.append(terminator)
            }
            if out.count >= 1 << 16 { StandardOutput.flush(&out) }
        }
        StandardOutput.flush(&out)
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
