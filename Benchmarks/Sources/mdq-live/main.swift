import BenchSupport
import Foundation
import Glibc

/// glibc's malloc_stats(3): per-arena totals on stderr.
@_silgen_name("malloc_stats") func mallocStats()
import MetadataIndex
import SystemPackage

/// `mdq-live latency|burst|idle|memory [DIR]`: the live query figures.
///
/// - latency: file created -> did update received, interval 0, 1000 files.
/// - burst: 100,000 files created at once, then 10,000 of them saved
///   atomically (written aside, renamed over) -> time until the query holds
///   all of them with the saved sizes, and how many a fresh crawl finds that
///   the query lacks.
/// - idle: CPU used by the process over 10 s with a live query and no change.
/// - memory DIR: peak RSS per entry with every folder of DIR watched.
/// - sorted DIR: a TRUEPREDICATE query over DIR sorted by name (Finder
///   order): time to the first sorted result set, then the time from
///   creating one file to the update (the sorted insert), over 20 files;
///   then the time and transient memory of reading value lists and grouped
///   results by content type.

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}

func sorted(_ folder: String) throws {
    let clock = ContinuousClock()
    let start = clock.now
    let query = Measure.startQuery(.alwaysTrue, in: folder) { query in
        query.sortDescriptors = [MetadataSortDescriptor(key: "kMDItemFSName")]
        query.valueListAttributes = ["kMDItemContentType"]
        query.groupingAttributes = ["kMDItemContentType"]
    }
    let first = Measure.seconds(clock.now - start)
    print(String(format: "first sorted result set: %.2f s for %d results (crawl, watch, match, sort)", first, query.resultCount))
    let arrived = DispatchSemaphore(value: 0)
    let updates = NotificationCenter.default.addObserver(forName: .metadataQueryDidUpdate, object: query, queue: nil) {
        _ in arrived.signal()
    }
    let scratch = "\(folder)/mdq-sorted-bench"
    mkdir(scratch, 0o755)
    _ = arrived.wait(timeout: .now() + 5)
    var samples: [Double] = []
    for i in 0..<20 {
        let t0 = clock.now
        close(open("\(scratch)/file \(i).txt", O_WRONLY | O_CREAT, 0o644))
        arrived.wait()
        samples.append(Measure.seconds(clock.now - t0) * 1000)
    }
    NotificationCenter.default.removeObserver(updates)
    samples.sort()
    print(String(format: "one file created -> sorted update: median %.1f ms, max %.1f ms (20 files)", samples[10], samples[19]))
    let before = Measure.residentKilobytes("VmRSS")
    let t1 = clock.now
    let lists = query.valueLists["kMDItemContentType"] ?? []
    let listTime = Measure.seconds(clock.now - t1) * 1000
    let t2 = clock.now
    let groups = query.groupedResults
    let groupTime = Measure.seconds(clock.now - t2) * 1000
    let peak = Measure.residentKilobytes("VmHWM")
    print(String(format: "value list (%d values): %.0f ms; grouped results (%d groups): %.0f ms; RSS %d MB before, peak %d MB",
        lists.count, listTime, groups.count, groupTime, before / 1024, peak / 1024))
    query.stop()
    for i in 0..<20 { unlink("\(scratch)/file \(i).txt") }
    rmdir(scratch)
}

func latency() throws {
    let folder = Measure.temporaryFolder()
    let query = Measure.startQuery(.alwaysTrue, in: folder)
    let arrived = DispatchSemaphore(value: 0)
    let token = NotificationCenter.default.addObserver(forName: .metadataQueryDidUpdate, object: query, queue: nil) {
        note in
        if !((note.userInfo?[MetadataQuery.addedItemsKey] as? [MetadataItem]) ?? []).isEmpty { arrived.signal() }
    }
    var samples: [Double] = []
    for i in 0..<1000 {
        let clock = ContinuousClock()
        let start = clock.now
        let fd = open("\(folder)/file\(i)", O_WRONLY | O_CREAT, 0o644)
        close(fd)
        arrived.wait()
        samples.append(Measure.seconds(clock.now - start) * 1000)
    }
    NotificationCenter.default.removeObserver(token)
    query.stop()
    samples.sort()
    print(String(
        format: "create -> did update (interval 0, %d files): median %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms",
        samples.count, samples[samples.count / 2], samples[samples.count * 9 / 10], samples[samples.count * 99 / 100],
        samples.last!))
    try? FileManager.default.removeItem(atPath: folder)
}

func burst() throws {
    let folder = Measure.temporaryFolder()
    let query = Measure.startQuery(.alwaysTrue, in: folder) { $0.notificationBatchingInterval = 0.05 }
    let clock = ContinuousClock()
    let start = clock.now
    let folders = 100
    for f in 0..<folders {
        mkdir("\(folder)/d\(f)", 0o755)
        for i in 0..<1000 {
            let fd = open("\(folder)/d\(f)/f\(i)", O_WRONLY | O_CREAT, 0o644)
            close(fd)
        }
    }
    // Then an atomic save of every tenth file, as editors and sync tools
    // save: written aside, renamed over the file.
    var saved: Set<[UInt8]> = []
    for f in 0..<folders {
        for i in stride(from: 0, to: 1000, by: 10) {
            let path = "\(folder)/d\(f)/f\(i)"
            let fd = open(path + ".tmp", O_WRONLY | O_CREAT, 0o644)
            _ = "saved".withCString { write(fd, $0, 5) }
            close(fd)
            rename(path + ".tmp", path)
            saved.insert(Array(path.utf8))
        }
    }
    let written = clock.now - start
    let expected = folders * 1000 + folders
    func convergedNow() -> Bool {
        guard query.resultCount == expected else { return false }
        return query.results.allSatisfy { !saved.contains($0.pathBytes) || $0.metadata.size == 5 }
    }
    while !convergedNow() && clock.now - start < .seconds(120) { usleep(10_000) }
    let converged = clock.now - start
    final class Collected: @unchecked Sendable {
        // Batches arrive one at a time (the search serialises them).
        var paths = Set<[UInt8]>()
    }
    let collected = Collected()
    try OneShotSearch(roots: [CrawlRoot(path: FilePath(folder))], predicate: .alwaysTrue).run(onBatch: { batch in
        for i in 0..<batch.count { collected.paths.insert(Array(batch[i].pathBytes)) }
    })
    let found = collected.paths
    let results = Set(query.results.map(\.pathBytes))
    print(String(
        format: "burst of %d files in %d folders and %d atomic saves: written in %.3f s, query converged (paths and "
            + "sizes) %.3f s after the first write; %d results, %d on disk, %d lost, %d extra",
        folders * 1000, folders, saved.count, Measure.seconds(written), Measure.seconds(converged), results.count, found.count,
        found.subtracting(results).count, results.subtracting(found).count))
    query.stop()
    try? FileManager.default.removeItem(atPath: folder)
}

func idle() throws {
    let folder = Measure.temporaryFolder()
    for i in 0..<100 { mkdir("\(folder)/d\(i)", 0o755) }
    let query = Measure.startQuery(.alwaysTrue, in: folder)
    let before = cpuSeconds()
    sleep(10)
    let used = cpuSeconds() - before
    print(String(format: "idle for 10 s with a live query on 100 folders: %.4f s CPU (%.3f%%)", used, used / 10 * 100))
    query.stop()
    try? FileManager.default.removeItem(atPath: folder)
}

func memory(_ folder: String) throws {
    let baseline = Measure.residentKilobytes("VmRSS:")
    let clock = ContinuousClock()
    let start = clock.now
    let query = Measure.startQuery(try MetadataPredicate("kMDItemFSName == 'no such name'"), in: folder)
    let gathered = clock.now - start
    let peak = Measure.residentKilobytes("VmHWM:")
    let settled = Measure.residentKilobytes("VmRSS:")
    if ProcessInfo.processInfo.environment["MDQ_MALLINFO"] != nil {
        mallocStats()
    }
    if let path = ProcessInfo.processInfo.environment["MDQ_SMAPS"] {
        _ = system("cat /proc/\(getpid())/smaps > '\(path)'")
    }
    // Counted after the measurement, so that the counting pass's buffers
    // are not in the peak.
    let count = try OneShotSearch(roots: [CrawlRoot(path: FilePath(folder))], predicate: .alwaysTrue).run().matchCount
    print(String(
        format: "live gather of %d entries with every folder watched: %.3f s; peak RSS %.1f MB = %.1f B/entry "
            + "(baseline %.1f MB); RSS once gathered %.1f MB = %.1f B/entry",
        count, Measure.seconds(gathered), Double(peak) / 1024, Double(peak) * 1024 / Double(count), Double(baseline) / 1024,
        Double(settled) / 1024, Double(settled) * 1024 / Double(count)))
    query.stop()
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "latency": try latency()
case "burst": try burst()
case "idle": try idle()
case "memory" where arguments.count == 2: try memory(arguments.last!)
case "sorted" where arguments.count == 2: try sorted(arguments.last!)
default:
    FileHandle.standardError.write(Data("usage: mdq-live latency|burst|idle|memory DIR\n".utf8))
    exit(2)
}
exit(0)
