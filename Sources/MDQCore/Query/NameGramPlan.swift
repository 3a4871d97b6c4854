import MDQSystem

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
///
/// A suffix test that is an extension (`LIKE[cd] '*.png'`, the glob `mdq
/// '*.png'` makes) is looked up in the exact extension codes instead: the
/// entries with that code pass the test without their names being read
/// (under `[c]`, those with ASCII names), so only the rest of the
/// predicate is tested on them. Other options make them candidates.
package struct NameGramPlan {
    /// How far an extension lookup decides a suffix test.
    private enum Decides: Comparable {
        /// Not at all (case- or diacritic-sensitive): its entries are
        /// candidates.
        case nothing
        /// For ASCII names (`[c]`: folding diacritics changes only others).
        case asciiNames
        /// For every entry (`[cd]`, the folding the codes are made with).
        case everything
    }

    private indirect enum Node {
        /// Entries on every one of these lists.
        case all([Int])
        /// Entries of any of these.
        case any([Node])
        /// Entries whose extension has one of these codes.
        case extensions([UInt16], Decides)
    }

    private let root: Node
    /// What the entries the extension codes decide must still pass (the
    /// predicate with the decided test made true); nil when nothing is
    /// decided.
    private let rest: CompiledPredicate.Program?

    /// The plan for `predicate` over `grams`, or nil when the lists do not
    /// narrow it to under an eighth of `slots` (half, when extension codes
    /// decide the test: no name is read then).
    package init?(_ predicate: CompiledPredicate, grams: NameGrams, slots: Int) {
        let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])
        guard let (root, rest) = Self.node(predicate.program, grams, folder) else { return nil }
        let decides = if case .extensions(_, let decides) = root, rest != nil { decides != .nothing } else { false }
        guard Self.estimate(root, grams) < max(1, slots / (decides ? 2 : 8)) else { return nil }
        self.root = root
        self.rest = decides ? rest : nil
    }

    /// The candidates below the lists' coverage.
    package func candidates(_ grams: NameGrams) -> ScanCandidates {
        if let rest, case .extensions(let codes, let decides) = root {
            guard let (set, entries) = grams.extensionSet(codes) else {
                return ScanCandidates(ids: [], covered: grams.covered)
            }
            let selection = ExtensionSelection(
                grams: grams, set: set, asciiOnly: decides == .asciiNames, entries: entries, rest: rest)
            return ScanCandidates(ids: [], covered: grams.covered, extensions: selection)
        }
        return ScanCandidates(ids: Self.candidates(root, grams), covered: grams.covered)
    }

    /// The node for `program`, and what is left to test of the entries an
    /// extension node decides (nil when it decides nothing).
    private static func node(_ program: CompiledPredicate.Program, _ grams: NameGrams, _ folder: UnicodeFolder)
        -> (Node, CompiledPredicate.Program?)?
    {
        switch program {
        case .constant, .not: return nil
        case .test(let test):
            guard !test.negated, test.field == .name || test.field == .displayName else { return nil }
            switch test.kind {
            case .pattern(let matcher):
                if test.field == .name, let node = extensionNode([matcher], grams, folder) {
                    return (node, .constant(true))
                }
                return node(matcher, grams, folder).map { ($0, nil) }
            case .suffixes(let matchers):
                if test.field == .name, let node = extensionNode(matchers, grams, folder) {
                    return (node, .constant(true))
                }
                var parts: [Node] = []
                for matcher in matchers {
                    guard let part = node(matcher, grams, folder) else { return nil }
                    parts.append(part)
                }
                return (.any(parts), nil)
            default: return nil
            }
        case .and(let parts):
            var best: (index: Int, node: Node, rest: CompiledPredicate.Program?, estimate: Int)?
            for (i, part) in parts.enumerated() {
                guard let (node, rest) = node(part, grams, folder) else { continue }
                let estimate = estimate(node, grams)
                if best == nil || estimate < best!.estimate { best = (i, node, rest, estimate) }
            }
            guard let best else { return nil }
            // The decided part's remainder in its place.
            let rest = best.rest.map { rest -> CompiledPredicate.Program in
                var others = parts
                if case .constant(true) = rest { others.remove(at: best.index) } else { others[best.index] = rest }
                return others.isEmpty ? .constant(true) : .and(others)
            }
            return (best.node, rest)
        case .or(let parts):
            var nodes: [Node] = []
            var codes: [UInt16] = []
            var decides: Decides? = .everything
            for part in parts {
                guard let (node, rest) = node(part, grams, folder) else { return nil }
                nodes.append(node)
                // Extension nodes deciding their whole part join into one.
                if case .extensions(let partCodes, let partDecides) = node, case .constant(true)? = rest {
                    codes += partCodes
                    decides = decides.map { min($0, partDecides) }
                } else {
                    decides = nil
                }
            }
            if let decides { return (.extensions(codes, decides), .constant(true)) }
            return (.any(nodes), nil)
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

    /// The extension codes of suffix tests of the name (`LIKE '*.png'`,
    /// `ENDSWITH '.png'`), one per matcher; nil unless every matcher is
    /// one whose extension the table can record. A name matches such a
    /// test under `[cd]` exactly when its folded name ends with the
    /// folded literal on a character boundary: when the part after its
    /// last dot is the literal's extension and that dot starts a
    /// character, which is what its code records.
    private static func extensionNode(_ matchers: [NameMatcher], _ grams: NameGrams, _ folder: UnicodeFolder)
        -> Node?
    {
        var codes: [UInt16] = []
        var decides = Decides.everything
        for matcher in matchers {
            guard !matcher.options.contains(.wordBased), case .suffix(let literal) = matcher.shape else { return nil }
            let folded = folder.folded(literal)
            guard folded.first == 0x2E, let code = grams.extensionCode(ofFolded: Array(folded.dropFirst())) else {
                return nil
            }
            codes.append(code)
            // The literal is folded for the test's own options: under [c]
            // alone an ASCII name's code decides it only when folding
            // diacritics leaves the literal as it is (not `*.pñg`).
            let options = matcher.options.folding
            let decided: Decides =
                if options == [.caseInsensitive, .diacriticInsensitive] {
                    .everything
                } else if options == .caseInsensitive && folded == literal {
                    .asciiNames
                } else {
                    .nothing
                }
            decides = min(decides, decided)
        }
        return .extensions(codes, decides)
    }

    /// An upper bound of the candidates.
    private static func estimate(_ node: Node, _ grams: NameGrams) -> Int {
        switch node {
        case .all(let buckets): return buckets.map(grams.count(of:)).min() ?? 0
        case .any(let nodes): return nodes.reduce(0) { $0 + estimate($1, grams) }
        case .extensions(let codes, _): return grams.extensionCount(of: codes)
        }
    }

    private static func candidates(_ node: Node, _ grams: NameGrams) -> [UInt32] {
        switch node {
        case .all(let buckets): return grams.candidates(inAll: buckets)
        case .any(let nodes):
            var union: [UInt32] = []
            for node in nodes { union = SortedIDs.union(union, candidates(node, grams)) }
            return union
        case .extensions(let codes, _):
            return grams.entries(withExtensions: codes)
        }
    }
}

/// The first selection of a scan from the trigram lists and extension
/// codes: for the slots below `covered`, `ids` (ascending) and the entries
/// `extensions` selects; slots from `covered` on are all candidates. The
/// predicate decides `ids`, the uncovered slots and the extensions' unsure
/// entries; the entries their codes decide need only pass its `rest`.
package struct ScanCandidates: Sendable {
    var ids: [UInt32]
    package var covered: Int
    package var extensions: ExtensionSelection?

    /// About how many covered candidates there are.
    var count: Int { ids.count + (extensions?.entries ?? 0) }
}

/// Entries chosen by their extension codes, read a chunk at a time by the
/// scan (under the engine's lock, which keeps `grams` unchanged).
package struct ExtensionSelection: @unchecked Sendable {
    let grams: NameGrams
    let set: ExtensionSet
    /// Whether the codes decide ASCII names only (`[c]`).
    let asciiOnly: Bool
    /// How many covered entries have those codes.
    package let entries: Int
    /// What those the codes decide must still pass.
    let rest: CompiledPredicate.Program
}
