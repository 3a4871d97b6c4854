import BenchSupport
import Benchmark
import Foundation
import MetadataIndex
import SystemPackage

// `swift package benchmark` (from Benchmarks/): gather, query, apply, live
// latency and memory. Corpora are make-tree.py containers under $MDQ_CORPUS
// (default /tmp/mdq-corpus), named c<files> and shared with compare.sh and
// compare-foundation.sh: made by whichever runs first, then reused.

/// State built once per process and shared by the benchmarks of a suite.
enum Fixtures {
    static let corpusDirectory = ProcessInfo.processInfo.environment["MDQ_CORPUS"] ?? "/tmp/mdq-corpus"

    /// `make-tree.py`: $MDQ_MAKE_TREE, else the repository's
    /// `Benchmarks/make-tree.py`.
    static var makeTree: String {
        if let path = ProcessInfo.processInfo.environment["MDQ_MAKE_TREE"] { return path }
        var path = FilePath(#filePath)
        for _ in 0..<3 { path.removeLastComponent() }
        return path.appending("make-tree.py").string
    }

    /// A make-tree container of `files` files, generated on first use.
    static func tree(files: Int) -> String {
        let folder = "\(corpusDirectory)/c\(files)"
        if !FileManager.default.fileExists(atPath: folder) {
            try? FileManager.default.createDirectory(atPath: corpusDirectory, withIntermediateDirectories: true)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", makeTree, folder, "--files", "\(files)", "--container"]
            try? process.run()
            process.waitUntilExit()
            precondition(process.terminationStatus == 0, "make-tree.py failed (\(makeTree))")
        }
        return (folder as NSString).resolvingSymlinksInPath
    }

    nonisolated(unsafe) static let synthetic: (FileIndex, [EntryID]) = SyntheticIndex.make(count: 1_000_000)
}

/// One live query for every iteration of the latency benchmark.
enum LiveLatency {
    static let folder = Measure.temporaryFolder()
    static let arrived = DispatchSemaphore(value: 0)
    static let query: MetadataQuery = {
        let query = Measure.startQuery(.alwaysTrue, in: folder)
        observer = NotificationCenter.default.addObserver(
            forName: .metadataQueryDidUpdate, object: query, queue: nil
        ) { note in
            if !((note.userInfo?[MetadataQuery.addedItemsKey] as? [MetadataItem]) ?? []).isEmpty { arrived.signal() }
        }
        return query
    }()
    nonisolated(unsafe) static var observer: (any NSObjectProtocol)?
    nonisolated(unsafe) static var next = 0
}

let entriesPerSecond = BenchmarkMetric.custom("entries/s", polarity: .prefersLarger, useScalingFactor: false)
let eventsPerSecond = BenchmarkMetric.custom("events/s", polarity: .prefersLarger, useScalingFactor: false)
let updatesPerSecond = BenchmarkMetric.custom("updates/s", polarity: .prefersLarger, useScalingFactor: false)
let bytesPerEntry = BenchmarkMetric.custom("RSS B/entry", polarity: .prefersSmaller, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration.maxDuration = .seconds(10)
    Benchmark.defaultConfiguration.maxIterations = 30

    // MARK: Gather

    Benchmark(
        "Gather: 100k-file make-tree container into the index",
        configuration: .init(metrics: [.wallClock, entriesPerSecond], maxIterations: 10)
    ) { benchmark in
        let tree = Fixtures.tree(files: 100_000)
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        let index = FileIndex()
        _ = try? index.gather([CrawlRoot(path: FilePath(tree))], options: CrawlOptions(includeHidden: true))
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        let seconds = Measure.seconds(elapsed)
        benchmark.measurement(entriesPerSecond, Int(Double(index.count) / seconds))
    }

    // MARK: Query

    for (label, predicate) in (try? SyntheticIndex.queries()) ?? [] {
        Benchmark(
            "Query (1M in-memory entries): \(label)",
            configuration: .init(metrics: [.wallClock, .mallocCountTotal], maxIterations: 20)
        ) { benchmark in
            let index = Fixtures.synthetic.0
            benchmark.startMeasurement()
            blackHole(index.count(matching: predicate))
        }
    }

    // MARK: Apply

    Benchmark(
        "Apply: 100k synthetic create/rename/delete events to a 1M-entry index",
        configuration: .init(metrics: [.wallClock, eventsPerSecond], maxIterations: 5)
    ) { benchmark in
        let (index, folders) = SyntheticIndex.make(count: 1_000_000, seed: 7)
        var random = Generator(seed: 9)
        var made: [EntryID] = []
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        for i in 0..<100_000 {
            switch i % 3 {
            case 0:
                let folder = folders[Int.random(in: 0..<folders.count, using: &random)]
                made.append(
                    index.insert(
                        name: Array("event-\(i).txt".utf8), in: folder,
                        metadata: EntryMetadata(kind: .file, size: 1, modificationTime: Timestamp(nanosecondsSinceEpoch: 1))))
            case 1 where !made.isEmpty:
                let entry = made[Int.random(in: 0..<made.count, using: &random)]
                let folder = folders[Int.random(in: 0..<folders.count, using: &random)]
                if index.contains(entry) { index.move(entry, to: folder, name: Array("renamed-\(i).txt".utf8)) }
            default:
                if let entry = made.popLast(), index.contains(entry) { index.remove(entry) }
            }
        }
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        let seconds = Measure.seconds(elapsed)
        benchmark.measurement(eventsPerSecond, Int(100_000 / seconds))
    }

    Benchmark(
        "Apply: files created under a live query sorted by name (updates/s)",
        configuration: .init(metrics: [.wallClock, updatesPerSecond], maxIterations: 5)
    ) { benchmark in
        let folder = Measure.temporaryFolder()
        for i in 0..<20_000 { close(open("\(folder)/seed \(i).txt", O_WRONLY | O_CREAT, 0o644)) }
        let query = Measure.startQuery(.alwaysTrue, in: folder) { $0.sortDescriptors = [MetadataSortDescriptor(key: "kMDItemFSName")] }
        let arrived = DispatchSemaphore(value: 0)
        let token = NotificationCenter.default.addObserver(
            forName: .metadataQueryDidUpdate, object: query, queue: nil
        ) { _ in arrived.signal() }
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        let updates = 200
        for i in 0..<updates {
            close(open("\(folder)/new \(i).txt", O_WRONLY | O_CREAT, 0o644))
            arrived.wait()
        }
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        NotificationCenter.default.removeObserver(token)
        query.stop()
        try? FileManager.default.removeItem(atPath: folder)
        let seconds = Measure.seconds(elapsed)
        benchmark.measurement(updatesPerSecond, Int(Double(updates) / seconds))
    }

    // MARK: Live latency

    Benchmark(
        "Live latency: file created -> did update (interval 0)",
        configuration: .init(metrics: [.wallClock], maxDuration: .seconds(5), maxIterations: 500)
    ) { benchmark in
        _ = LiveLatency.query
        LiveLatency.next += 1
        let path = "\(LiveLatency.folder)/file \(LiveLatency.next)"
        benchmark.startMeasurement()
        close(open(path, O_WRONLY | O_CREAT, 0o644))
        LiveLatency.arrived.wait()
        benchmark.stopMeasurement()
    }

    // MARK: Memory

    Benchmark(
        "Memory: RSS per entry, 100k-file tree gathered and every folder watched",
        // No warm-up: memory freed by a first run would be reused by the second.
        configuration: .init(metrics: [bytesPerEntry], warmupIterations: 0, maxIterations: 1)
    ) { benchmark in
        let tree = Fixtures.tree(files: 100_000)
        let before = Measure.residentKilobytes("VmRSS:")
        let query = Measure.startQuery(.alwaysFalse, in: tree)
        let after = Measure.residentKilobytes("VmRSS:")
        let counted = (try? FileManager.default.subpathsOfDirectory(atPath: tree))?.filter { path in
            !path.split(separator: "/").contains { $0.hasPrefix(".") }
        }.count ?? 1
        benchmark.measurement(bytesPerEntry, (after - before) * 1024 / max(1, counted))
        query.stop()
    }
}
