import BenchSupport
import Foundation
import MetadataIndex
import SystemPackage

/// `mdq-query [ENTRIES]`: predicate evaluation over an in-memory index of
/// synthetic names (no disk, `SyntheticIndex`). Prints the median of 9 runs
/// per predicate (MDQ_QUERY_RUNS to change), on every core, with the time
/// per index entry; then the parse time and what one `--attr` column costs
/// per result (the typed value read from the attribute table and written
/// as text).

let count = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 1_000_000
let (index, folders) = SyntheticIndex.make(count: count)
print("index of \(index.count) entries (\(folders.count) folders)")

func milliseconds(_ body: () -> Void) -> Double { Measure.seconds(body) * 1000 }

let queries = try SyntheticIndex.queries()
// MDQ_QUERY_ONLY=TEXT runs only the predicates whose label contains TEXT;
// MDQ_QUERY_RUNS=N times each N times (for profiling).
let only = ProcessInfo.processInfo.environment["MDQ_QUERY_ONLY"]
let runs = max(1, Int(ProcessInfo.processInfo.environment["MDQ_QUERY_RUNS"] ?? "") ?? 9)
for (label, predicate) in queries where only.map(label.contains) ?? true {
    var times: [Double] = []
    var matches = 0
    for _ in 0..<runs { times.append(milliseconds { matches = index.count(matching: predicate) }) }
    times.sort()
    let padded = label.padding(toLength: 62, withPad: " ", startingAt: 0)
    let perEntry = times[runs / 2] * 1e6 / Double(index.count)
    print(padded + String(format: " %8.2f ms (median of %d; min %.2f, max %.2f)  %.2f ns/entry  %d matches", times[runs / 2], runs, times[0], times[runs - 1], perEntry, matches))
}
let text = "kMDItemFSSize > 1000000 AND kMDItemFSName LIKE[cd] '*report*.pdf' OR kMDItemDisplayName BEGINSWITH 'IMG_'"
let parses = 20_000
let parseTime = milliseconds { for _ in 0..<parses { _ = try? MetadataPredicate(text) } }
print(String(format: "parse a typical query: %.2f µs", parseTime * 1000 / Double(parses)))

// One `--attr` column per result: look the key up in the attribute table,
// read the item's typed value, write it as text. (Dates as JSON go through
// the same digit writer, `AttributeValue.appendISO8601`.) Skipped when
// MDQ_QUERY_ONLY picks predicates.
guard only == nil else { exit(0) }
let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("mdq-query-\(getpid()).txt")
try Data("12345".utf8).write(to: scratch)
defer { try? FileManager.default.removeItem(at: scratch) }
let item = try MetadataItem(path: FilePath(scratch.path))
let attributeKeys = ["kMDItemFSSize", "kMDItemFSContentChangeDate", "kMDItemContentType", "kMDItemFSName"]
var columns: [UInt8] = []
columns.reserveCapacity(1 << 16)
let rounds = 200_000
var attributeTimes: [Double] = []
for _ in 0..<5 {
    attributeTimes.append(
        Measure.seconds {
            for _ in 0..<rounds {
                columns.removeAll(keepingCapacity: true)
                for key in attributeKeys {
                    columns.append(0x09)
                    if let attribute = MetadataAttribute(key: key), let value = item.value(of: attribute) {
                        value.appendText(to: &columns, style: .column)
                    }
                }
            }
        })
}
attributeTimes.sort()
print(
    String(
        format: "--attr column (%@): %.0f ns per attribute per result (median of 5)",
        attributeKeys.joined(separator: ", "), attributeTimes[2] * 1e9 / Double(rounds * attributeKeys.count)))
