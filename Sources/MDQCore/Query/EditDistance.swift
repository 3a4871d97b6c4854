import MDQSystem

/// The Levenshtein distance between two short byte strings: how many
/// insertions, deletions and substitutions turn one into the other.
///
/// For "did you mean" decisions on the command line (a misspelt keyword or
/// option), where the strings are a few dozen bytes at most.
package enum EditDistance {
    /// - Complexity: O(`a.count` × `b.count`).
    package static func between(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Int {
        let b = Array(b)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
