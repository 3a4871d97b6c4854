import BenchSupport
import Foundation
import MetadataIndex
import SystemPackage

/// `mdq-query [ENTRIES]`: predicate evaluation over an in-memory index of
/// synthetic names (no disk, `SyntheticIndex`). Prints the median of 9 runs
/// per predicate (MDQ_QUERY_RUNS to change), on every core, and the parse time.

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
    print(padded + String(format: " %8.2f ms (median of %d; min %.2f, max %.2f)  %d matches", times[runs / 2], runs, times[0], times[runs - 1], matches))
}
let text = "kMDItemFSSize > 1000000 AND kMDItemFSName LIKE[cd] '*report*.pdf' OR kMDItemDisplayName BEGINSWITH 'IMG_'"
let parses = 20_000
let parseTime = milliseconds { for _ in 0..<parses { _ = try? MetadataPredicate(text) } }
print(String(format: "parse a typical query: %.2f µs", parseTime * 1000 / Double(parses)))
