import MDQSystem
import Synchronization

/// Which folders a one-shot search reports but does not descend into:
/// folders whose name matches an exclusion pattern, at any depth, and the
/// pseudo-filesystems `/proc` and `/sys` when a scope contains them.
///
/// A pattern is a shell glob over the name's bytes: `*` any run (including
/// none), `?` one byte, `[abc]`, `[a-z]` and `[!abc]` one byte of (or not
/// of) a set, `\` makes the next byte literal; a pattern without these is
/// the exact name. It also remembers which patterns matched some folder,
/// so a misspelt `--exclude` can be pointed out.
///
/// Kept apart from the crawler so the name-matching can move into a
/// shared scope-rule type as is.
package final class FolderExclusion: Sendable {
    private let patterns: [[UInt8]]
    private let exactNames: Set<[UInt8]>
    private let skipsPseudoFileSystems: Bool
    /// Bit `i` set once pattern `i` (of the first 64) matched a folder.
    private let matched = Atomic<UInt64>(0)

    /// Folders under `/` never descended into when `skipsPseudoFileSystems`.
    static let pseudoFileSystemNames: Set<[UInt8]> = [Array("proc".utf8), Array("sys".utf8)]

    package init(patterns: [[UInt8]], skipsPseudoFileSystems: Bool) {
        self.patterns = patterns
        self.exactNames = Set(patterns.filter { !Self.isGlob($0) })
        self.skipsPseudoFileSystems = skipsPseudoFileSystems
    }

    /// Whether nothing is ever excluded (the common case costs one branch).
    var isEmpty: Bool { patterns.isEmpty && !skipsPseudoFileSystems }

    /// Whether the folder `name`, listed in the folder at `parentPath`, is
    /// left uncrawled.
    package func excludes(name: UnsafeRawBufferPointer, parentPath: [UInt8]) -> Bool {
        if skipsPseudoFileSystems && parentPath == [UInt8(ascii: "/")]
            && Self.pseudoFileSystemNames.contains(Array(name))
        {
            return true
        }
        guard !patterns.isEmpty else { return false }
        var excluded = false
        for (i, pattern) in patterns.enumerated() {
            let hit =
                exactNames.contains(pattern) ? name.elementsEqual(pattern) : Self.glob(pattern[...], matches: name[...])
            guard hit else { continue }
            excluded = true
            if i < 64 {
                let bit = UInt64(1) << UInt64(i)
                if matched.load(ordering: .relaxed) & bit == 0 { matched.bitwiseOr(bit, ordering: .relaxed) }
            }
        }
        return excluded
    }

    /// The patterns (of the first 64) that matched no folder so far.
    package var unmatchedPatterns: [[UInt8]] {
        let mask = matched.load(ordering: .relaxed)
        return patterns.enumerated().filter { $0.offset < 64 && mask & (UInt64(1) << UInt64($0.offset)) == 0 }
            .map(\.element)
    }

    /// Whether `pattern` has glob syntax (else it is an exact name).
    package static func isGlob(_ pattern: [UInt8]) -> Bool {
        pattern.contains { [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "\\")].contains($0) }
    }

    /// Shell-glob match of a whole name, byte by byte.
    static func glob(_ pattern: ArraySlice<UInt8>, matches name: Slice<UnsafeRawBufferPointer>) -> Bool {
        var p = pattern.startIndex
        var n = name.startIndex
        // Where to resume after the last `*`: the pattern after it, and the
        // name position it has consumed up to (classic backtracking on one star).
        var star: (pattern: Int, name: Int)?
        while n < name.endIndex {
            if p < pattern.endIndex {
                switch pattern[p] {
                case UInt8(ascii: "*"):
                    star = (p + 1, n)
                    p += 1
                    continue
                case UInt8(ascii: "?"):
                    p += 1
                    n += 1
                    continue
                case UInt8(ascii: "["):
                    if let (matchesSet, next) = bracket(pattern, at: p, byte: name[n]) {
                        if matchesSet {
                            p = next
                            n += 1
                            continue
                        }
                    } else if name[n] == UInt8(ascii: "[") {
                        // An unclosed `[` is a literal.
                        p += 1
                        n += 1
                        continue
                    }
                default:
                    var literal = pattern[p]
                    var width = 1
                    if literal == UInt8(ascii: "\\") && p + 1 < pattern.endIndex {
                        literal = pattern[p + 1]
                        width = 2
                    }
                    if literal == name[n] {
                        p += width
                        n += 1
                        continue
                    }
                }
            }
            guard let resume = star else { return false }
            star = (resume.pattern, resume.name + 1)
            p = resume.pattern
            n = resume.name + 1
        }
        while p < pattern.endIndex && pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.endIndex
    }

    /// Whether `byte` is in the bracket set starting at `start`, and the
    /// index after the set; nil when the `[` is not closed.
    private static func bracket(_ pattern: ArraySlice<UInt8>, at start: Int, byte: UInt8) -> (Bool, Int)? {
        var i = start + 1
        var negated = false
        if i < pattern.endIndex && (pattern[i] == UInt8(ascii: "!") || pattern[i] == UInt8(ascii: "^")) {
            negated = true
            i += 1
        }
        var found = false
        var first = true
        while i < pattern.endIndex {
            if pattern[i] == UInt8(ascii: "]") && !first { return (found != negated, i + 1) }
            first = false
            var low = pattern[i]
            if low == UInt8(ascii: "\\") && i + 1 < pattern.endIndex {
                i += 1
                low = pattern[i]
            }
            if i + 2 < pattern.endIndex && pattern[i + 1] == UInt8(ascii: "-") && pattern[i + 2] != UInt8(ascii: "]") {
                if (low...max(low, pattern[i + 2])).contains(byte) { found = true }
                i += 3
            } else {
                if low == byte { found = true }
                i += 1
            }
        }
        return nil
    }
}
