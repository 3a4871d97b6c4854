package import MDQSystem

/// A `LIKE` pattern split into literal runs and wildcards.
///
/// `*` is any run of characters (including none), `?` exactly one character,
/// `\` makes the next character literal; a trailing lone `\` is an error.
/// Consecutive stars collapse; adjacent literal bytes merge.
package struct LikePattern: Hashable, Sendable {
    package enum Element: Hashable, Sendable {
        case literal([UInt8])
        /// `?`
        case one
        /// `*`
        case any
    }

    var elements: [Element]

    /// Parses LIKE syntax.
    ///
    /// - Throws: `MetadataError` (`.querySyntax`) with `offset` relative to
    ///   the pattern's first byte, for a trailing lone backslash.
    package init(_ pattern: [UInt8]) throws(MetadataError) {
        var elements: [Element] = []
        var literal: [UInt8] = []
        func flush() {
            if !literal.isEmpty {
                elements.append(.literal(literal))
                literal.removeAll()
            }
        }
        var i = 0
        while i < pattern.count {
            let b = pattern[i]
            switch b {
            case UInt8(ascii: "\\"):
                guard i + 1 < pattern.count else {
                    throw .syntax(
                        "LIKE pattern ends in a lone backslash: write \\\\ for a literal backslash", offset: i)
                }
                literal.append(pattern[i + 1])
                i += 2
                continue
            case UInt8(ascii: "*"):
                flush()
                if elements.last != .any { elements.append(.any) }
            case UInt8(ascii: "?"):
                flush()
                elements.append(.one)
            default:
                literal.append(b)
            }
            i += 1
        }
        flush()
        self.elements = elements
    }

    package init(elements: [Element]) {
        self.elements = elements
    }

    /// The pattern the other string operators mean.
    static func forOperator(_ op: ComparisonOperator, value: [UInt8]) throws(MetadataError) -> LikePattern {
        let literal: [Element] = value.isEmpty ? [] : [.literal(value)]
        switch op {
        case .like: return try LikePattern(value)
        case .equal, .notEqual: return LikePattern(elements: literal)
        case .beginsWith: return LikePattern(elements: literal + [.any])
        case .endsWith: return LikePattern(elements: [.any] + literal)
        case .contains: return LikePattern(elements: [.any] + literal + [.any])
        default: return LikePattern(elements: literal)
        }
    }
}
