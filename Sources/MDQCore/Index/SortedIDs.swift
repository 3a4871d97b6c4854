import MDQSystem

/// Operations on ascending lists of entry ids: what the trigram lists, the
/// plan that combines them and the scan that reads them share.
enum SortedIDs {
    /// The first position in `ids` whose id is `id` or more.
    @inline(__always)
    static func lowerBound<C: RandomAccessCollection>(of id: UInt32, in ids: C) -> Int
    where C.Element == UInt32, C.Index == Int {
        var low = ids.startIndex
        var high = ids.endIndex
        while low < high {
            let mid = (low + high) / 2
            if ids[mid] < id { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The ids in both lists.
    static func intersection(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        var out: [UInt32] = []
        var i = 0
        var j = 0
        while i < a.count && j < b.count {
            if a[i] < b[j] {
                i += 1
            } else if a[i] > b[j] {
                j += 1
            } else {
                out.append(a[i])
                i += 1
                j += 1
            }
        }
        return out
    }

    /// The ids in either list, each once.
    static func union(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        guard !a.isEmpty else { return b }
        guard !b.isEmpty else { return a }
        var out: [UInt32] = []
        out.reserveCapacity(a.count + b.count)
        var i = 0
        var j = 0
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i] < b[j]) {
                out.append(a[i])
                i += 1
            } else if i == a.count || b[j] < a[i] {
                out.append(b[j])
                j += 1
            } else {
                out.append(a[i])
                i += 1
                j += 1
            }
        }
        return out
    }

    /// Merges `a[0..<m]` and `b[0..<n]` (ascending, disjoint) into `out`;
    /// returns the count.
    static func merge(
        _ a: UnsafeMutablePointer<UInt32>, _ m: Int, _ b: UnsafeMutablePointer<UInt32>, _ n: Int,
        into out: UnsafeMutablePointer<UInt32>
    ) -> Int {
        var i = 0
        var j = 0
        var k = 0
        while i < m && j < n {
            if a[i] < b[j] {
                out[k] = a[i]
                i += 1
            } else {
                out[k] = b[j]
                j += 1
            }
            k += 1
        }
        (out + k).update(from: a + i, count: m - i)
        k += m - i
        (out + k).update(from: b + j, count: n - j)
        return k + n - j
    }
}
