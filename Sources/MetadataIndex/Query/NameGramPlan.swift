/// Which entries a predicate can match according to the trigram lists
/// (`NameGrams`), when that is much fewer than the whole index: the first
/// selection of a scan, which the predicate's own tests then decide.
///
/// A name (or display name) test whose literals hold a run of three bytes
/// or more gives the entries on all of the run's trigram lists; AND takes
/// its most selective part; OR the union of its parts, when each gives a
/// set. Anything else (a negation, a regex, a test of sizes or dates
/// alone, literals too short) gives no set, and the whole index is
/// scanned. The set is a superset of the matches among the covered ids:
/// a literal is folded for case and diacritics as the names in the lists
/// are, and a pattern matching a name under any options matches its
/// folded form.
struct NameGramPlan {
    private indirect enum Node {
        /// Entries on every one of these lists.
        case all([Int])
        /// Entries of any of these.
        case any([Node])
    }

    private let root: Node

    /// The plan for `predicate` over `grams`, or nil when the trigrams do
    /// not narrow it to under an eighth of `slots`.
    init?(_ predicate: CompiledPredicate, grams: NameGrams, slots: Int) {
        let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])
        guard let root = Self.node(predicate.program, grams, folder),
            Self.estimate(root, grams) < max(1, slots / 8)
        else { return nil }
        self.root = root
    }

    /// The candidate ids below the lists' coverage, ascending.
    func candidates(_ grams: NameGrams) -> [UInt32] {
        Self.candidates(root, grams)
    }

    private static func node(_ program: CompiledPredicate.Program, _ grams: NameGrams, _ folder: UnicodeFolder)
        -> Node?
    {
        switch program {
        case .constant, .not: return nil
        case .test(let test):
            guard !test.negated, test.field == .name || test.field == .displayName else { return nil }
            switch test.kind {
            case .pattern(let matcher):
                return node(matcher, grams, folder)
            case .suffixes(let matchers):
                var parts: [Node] = []
                for matcher in matchers {
                    guard let part = node(matcher, grams, folder) else { return nil }
                    parts.append(part)
                }
                return .any(parts)
            default: return nil
            }
        case .and(let parts):
            return parts.compactMap { node($0, grams, folder) }.min { estimate($0, grams) < estimate($1, grams) }
        case .or(let parts):
            var nodes: [Node] = []
            for part in parts {
                guard let node = node(part, grams, folder) else { return nil }
                nodes.append(node)
            }
            return .any(nodes)
        }
    }

    /// Every trigram of the matcher's literals (each folded for case and
    /// diacritics); nil when none has three bytes.
    private static func node(_ matcher: NameMatcher, _ grams: NameGrams, _ folder: UnicodeFolder) -> Node? {
        var buckets: [Int] = []
        for segment in matcher.segments {
            for case .literal(let bytes) in segment {
                buckets += grams.buckets(ofFolded: folder.folded(bytes))
            }
        }
        return buckets.isEmpty ? nil : .all(buckets)
    }

    /// An upper bound of the candidates.
    private static func estimate(_ node: Node, _ grams: NameGrams) -> Int {
        switch node {
        case .all(let buckets): return buckets.map(grams.count(of:)).min() ?? 0
        case .any(let nodes): return nodes.reduce(0) { $0 + estimate($1, grams) }
        }
    }

    private static func candidates(_ node: Node, _ grams: NameGrams) -> [UInt32] {
        switch node {
        case .all(let buckets): return grams.candidates(inAll: buckets)
        case .any(let nodes):
            var union: [UInt32] = []
            for node in nodes { union = SortedIDs.union(union, candidates(node, grams)) }
            return union
        }
    }
}

/// The first selection of a scan from the trigram lists: `ids` (ascending)
/// stand for every slot below `covered`; slots from `covered` on are all
/// candidates.
struct ScanCandidates: Sendable {
    var ids: [UInt32]
    var covered: Int
}
