import MDQCore
import MDQShared
import MDQSystem
import TestSupport
import Testing

/// A search across hosts sorted by a size or a date keeps, of each part,
/// its first in that order and every result tied with the last of them:
/// whatever a sort by more keys then keeps is among them.
struct HostSearchOrderTests {
    /// Seeded results with few distinct sizes and dates (many ties) and
    /// some missing, against the plain definition: sorted whole, the first
    /// `count`, and every result equal to the last of them, in their order.
    @Test(arguments: [UInt64(1), 2, 3])
    func theFirstInAnOrderKeepEveryTie(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var results: [HostSearch.Result] = []
        for i in 0..<6000 {
            var metadata = EntryMetadata(kind: Bool.random(using: &random) ? .file : .folder, inode: UInt64(i))
            if Int.random(in: 0..<10, using: &random) > 0 {
                metadata.size = UInt64.random(in: 0...40, using: &random)
                metadata.modificationTime = Timestamp(nanosecondsSinceEpoch: Int64.random(in: 0...50, using: &random))
            }
            let item = MetadataItem(
                serial: UInt64(i), pathBytes: Array("/r/\(i)".utf8), kind: metadata.kind, metadata: metadata)
            results.append(HostSearch.Result(host: nil, item: item, stale: false))
        }
        for key in ["kMDItemFSSize", "kMDItemFSContentChangeDate"] {
            for ascending in [true, false] {
                let descriptor = MetadataSortDescriptor(key: key, ascending: ascending)
                let sorted = results.map(\.item).sorted(by: [descriptor])
                for count in [0, 1, 7, 100, 4097, 6000, 7000] {
                    let kept = HostSearch.first(count, of: results, by: descriptor).map(\.item.pathBytes)
                    var expected = results.map(\.item.pathBytes)
                    if count < results.count {
                        expected =
                            count == 0
                            ? []
                            : results.filter { descriptor.compare($0.item, sorted[count - 1]) != .orderedDescending }
                                .map(\.item.pathBytes)
                    }
                    #expect(
                        kept == expected, "seed \(seed), \(key) \(ascending ? "ascending" : "descending"), \(count)")
                    // Ties ordered by path: exactly the first `count` of a
                    // sort by the key, ties in path order.
                    let items = results.map(\.item)
                    let byPath = items.positionsOfFirst(count, by: descriptor, thenByPath: true).map {
                        items[$0].pathBytes
                    }
                    let firstByPath = items.sorted { $0.pathBytes.lexicographicallyPrecedes($1.pathBytes) }
                        .sorted(by: [descriptor]).prefix(count).map(\.pathBytes)
                    #expect(
                        Set(byPath) == Set(firstByPath) && byPath.count == firstByPath.count,
                        "seed \(seed), \(key) \(ascending ? "ascending" : "descending") then path, \(count)")
                }
            }
        }
    }
}
