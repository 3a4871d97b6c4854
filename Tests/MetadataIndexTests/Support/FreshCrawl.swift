import Foundation
import Glibc
import Synchronization
import SystemPackage

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The paths a fresh crawl finds for a predicate under a folder.
func freshCrawl(_ folder: FilePath, _ predicate: MetadataPredicate, hidden: Bool = false) throws -> Set<String> {
    try freshCrawl(roots: [CrawlRoot(path: folder)], predicate, hidden: hidden)
}

/// The paths a fresh crawl of `roots` finds for a predicate.
func freshCrawl(roots: [CrawlRoot], _ predicate: MetadataPredicate, hidden: Bool = false) throws -> Set<String> {
    Set(try freshCrawlBytes(roots: roots, predicate, hidden: hidden).map { String(decoding: $0, as: UTF8.self) })
}

/// The paths, byte for byte, a fresh crawl of `roots` finds for a predicate.
func freshCrawlBytes(roots: [CrawlRoot], _ predicate: MetadataPredicate, hidden: Bool = false) throws -> Set<[UInt8]> {
    let found = Locked<Set<[UInt8]>>([])
    try OneShotSearch(
        roots: roots, predicate: predicate, crawlOptions: CrawlOptions(includeHidden: hidden)
    )
    .run(onBatch: { batch in
        found.withLock { for i in 0..<batch.count { $0.insert(Array(batch[i].pathBytes)) } }
    })
    return found.withLock { $0 }
}

/// Every item a fresh crawl of `roots` finds for a predicate, by path, with
/// every attribute read now (as `mdq ls` reads them: statx, conflict
/// copies from a listing of each folder, ubiquity from `container`).
func freshItems(
    roots: [CrawlRoot], _ predicate: MetadataPredicate, hidden: Bool = false, container: UbiquityContainer? = nil
) throws -> [[UInt8]: MetadataItem] {
    let found = Locked<[SearchResult]>([])
    try OneShotSearch(
        roots: roots, predicate: predicate, crawlOptions: CrawlOptions(includeHidden: hidden), includeMetadata: true
    )
    .run(onBatch: { batch in
        found.withLock { for i in 0..<batch.count { $0.append(batch[i]) } }
    })
    let reader = MetadataItemReader(container: container)
    var items: [[UInt8]: MetadataItem] = [:]
    for result in found.withLock({ $0 }) {
        let item = reader.item(for: result)
        items[item.pathBytes] = item
    }
    return items
}

/// The attributes of `results` that differ from a fresh crawl's items, as
/// readable lines (empty when every path and every attribute agree).
func attributeDifferences(_ results: [MetadataItem], _ fresh: [[UInt8]: MetadataItem]) -> [String] {
    var differences: [String] = []
    var seen: Set<[UInt8]> = []
    for item in results {
        seen.insert(item.pathBytes)
        guard let expected = fresh[item.pathBytes] else {
            differences.append("extra \(item.path)")
            continue
        }
        if !item.hasSameAttributes(as: expected) {
            differences.append(
                "stale \(item.path): \(item.kind) \(item.metadata) vs \(expected.kind) \(expected.metadata)"
                    + " conflicts \(item.hasUnresolvedConflicts)/\(expected.hasUnresolvedConflicts)")
        }
    }
    for path in fresh.keys where !seen.contains(path) {
        differences.append("missing \(String(decoding: path, as: UTF8.self))")
    }
    return differences.sorted()
}

/// Replays a query's updates on its first results, by identity, checking
/// what a sync client relies on: a removed item is one the client has, at
/// the path it last saw; a changed item is one it has, and carries its old
/// path exactly when it moved; an added item is new; no update holds a path
/// in both `removed` and `added`; each list is in path order (removed in
/// reverse). Returns the problems found and the replayed state.
///
/// `onePathEach`: after each update no two items share a path (what an
/// index of one moment gives; a host's catch-up of more than a batch is
/// published a batch at a time, and its readers can see two states).
func replay(_ updates: [MetadataQuery.Update], on initial: [MetadataItem], onePathEach: Bool = true) -> (
    problems: [String], state: [UInt64: MetadataItem]
) {
    var state = Dictionary(uniqueKeysWithValues: initial.map { ($0.id, $0) })
    var problems: [String] = []
    /// Whether `items` are in (reverse) path order; the first pair that is
    /// not, else nil. Two items of one path are in order either way: they
    /// are there together only when `onePathEach` is off (else the state
    /// check below says so).
    func disorder(_ items: [MetadataItem], reversed: Bool) -> String? {
        zip(items, items.dropFirst()).first { a, b in
            a.pathBytes != b.pathBytes
                && !(reversed
                    ? b.pathBytes.lexicographicallyPrecedes(a.pathBytes)
                    : a.pathBytes.lexicographicallyPrecedes(b.pathBytes))
        }.map { "\($0.id) \($0.path), \($1.id) \($1.path)" }
    }
    for update in updates {
        let removedPaths = Set(update.removed.map(\.pathBytes))
        for item in update.added where removedPaths.contains(item.pathBytes) {
            problems.append("removed and added in one update: \(item.path)")
        }
        if let pair = disorder(update.added, reversed: false) { problems.append("added out of path order: \(pair)") }
        if let pair = disorder(update.changed, reversed: false) {
            problems.append("changed out of path order: \(pair)")
        }
        if let pair = disorder(update.removed, reversed: true) {
            problems.append("removed out of reverse path order: \(pair)")
        }
        for item in update.removed {
            if let known = state[item.id] {
                if known.pathBytes != item.pathBytes {
                    problems.append("removed at another path than last seen: \(item.path)")
                }
            } else {
                problems.append("removed something not there: \(item.path)")
            }
            state[item.id] = nil
        }
        for item in update.changed {
            if let known = state[item.id] {
                let previous = update.previousPathBytes[item.id]
                if known.pathBytes != item.pathBytes && previous != known.pathBytes {
                    problems.append("moved without its last seen path: \(item.path)")
                }
                if known.pathBytes == item.pathBytes && previous != nil {
                    problems.append("previous path on an item that did not move: \(item.path)")
                }
            } else {
                problems.append("changed something not there: \(item.path)")
            }
            state[item.id] = item
        }
        for item in update.added {
            if state[item.id] != nil { problems.append("added twice: \(item.path)") }
            state[item.id] = item
        }
        // After each update, one item per path.
        var holders: [[UInt8]: UInt64] = [:]
        for (id, item) in state where onePathEach {
            if let other = holders.updateValue(id, forKey: item.pathBytes) {
                problems.append("two items at one path: \(other) and \(id) at \(item.path)")
            }
        }
    }
    return (problems, state)
}
