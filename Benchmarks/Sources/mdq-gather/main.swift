import BenchSupport
import Foundation
import MetadataIndex
import SystemPackage

/// `mdq-gather DIR [--hidden] [--threads N] [--repeat N] [--query PREDICATE]...`
///
/// Gathers DIR into a fresh index (name, kind, size, times, inode of every
/// entry) and prints one line per run: entries, seconds, entries per second,
/// index bytes per entry, and peak resident bytes per entry (VmHWM / entries,
/// the whole process included). With `--query`, then times each predicate
/// over the warm index (median of 30 `count(matching:)` calls). With
/// `--print PREDICATE`, times writing every matching path to /dev/null from
/// the warm index, as `mdq` prints them (median of 10): the in-process
/// figure the index daemon's answers are held to.
var arguments = CommandLine.arguments.dropFirst()
guard let directory = arguments.popFirst() else {
    FileHandle.standardError.write(Data("usage: mdq-gather DIR [--hidden] [--threads N] [--repeat N]\n".utf8))
    exit(2)
}
var hidden = false
var threads: Int?
var repeats = 1
var queries: [String] = []
var prints: [String] = []
while let flag = arguments.popFirst() {
    switch flag {
    case "--hidden": hidden = true
    case "--threads": threads = Int(arguments.popFirst() ?? "")
    case "--repeat": repeats = Int(arguments.popFirst() ?? "") ?? 1
    case "--query": queries.append(arguments.popFirst() ?? "")
    case "--print": prints.append(arguments.popFirst() ?? "")
    default:
        FileHandle.standardError.write(Data("unknown option \(flag)\n".utf8))
        exit(2)
    }
}
let baseline = Measure.residentKilobytes("VmRSS:")
var index = FileIndex()
for _ in 0..<repeats {
    index = FileIndex()
    let start = ContinuousClock.now
    let summary = try index.gather(
        [CrawlRoot(path: FilePath(directory))], options: CrawlOptions(includeHidden: hidden, threadCount: threads))
    let elapsed = ContinuousClock.now - start
    let seconds = Measure.seconds(elapsed)
    let entries = index.count
    let peak = Measure.residentKilobytes("VmHWM:")
    print(
        String(
            format: "entries %d  time %.3f s  rate %.0f entries/s  index %.1f B/entry  peak RSS %.1f B/entry (baseline %.1f MB)  warnings %d",
            entries, seconds, Double(entries) / seconds, Double(index.allocatedBytes) / Double(entries),
            Double(peak) * 1024 / Double(entries), Double(baseline) / 1024, summary.warnings.count))
}

for text in queries {
    let predicate = try MetadataPredicate(text)
    var times: [Double] = []
    var matches = 0
    for _ in 0..<30 {
        let start = ContinuousClock.now
        matches = index.count(matching: predicate)
        let elapsed = ContinuousClock.now - start
        times.append(Measure.seconds(elapsed) * 1000)
    }
    times.sort()
    print(String(format: "query median %.3f ms  matches %d  %@", times[15], matches, text))
}

let devNull = try FileDescriptor.open("/dev/null", .writeOnly)
for text in prints {
    let predicate = try MetadataPredicate(text)
    var times: [Double] = []
    var printed = 0
    for _ in 0..<10 {
        let start = ContinuousClock.now
        var out: [UInt8] = []
        out.reserveCapacity(1 << 20)
        let ids = index.entries(matching: predicate)
        for id in ids {
            index.appendPath(of: id, to: &out)
            out.append(0x0A)
            if out.count >= 1 << 16 {
                _ = try out.withUnsafeBytes { try devNull.writeAll($0) }
                out.removeAll(keepingCapacity: true)
            }
        }
        _ = try out.withUnsafeBytes { try devNull.writeAll($0) }
        printed = ids.count
        times.append(Measure.seconds(ContinuousClock.now - start) * 1000)
    }
    times.sort()
    print(String(format: "print median %.3f ms  paths %d  %@", times[5], printed, text))
}
