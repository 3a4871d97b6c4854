import CLinuxSyscalls
package import MDQSystem

/// Evaluates a compiled predicate over a whole index, one 64 Ki-slot chunk
/// at a time, on every core.
///
/// Interpreting a predicate tree once per entry costs more than the tests
/// themselves (a switch per node, a retain per array payload). The scan
/// turns it round: a chunk's candidate ids sit in a selection vector and
/// each term filters the vector in one tight loop specialised for its test:
/// name shapes with the literal hoisted out of the loop, size and date
/// ranges read straight from the columns. AND filters in sequence, so later
/// (costlier) terms see only the survivors of earlier ones; OR runs each
/// branch on what earlier branches left; NOT and negated tests subtract.
///
/// The caller keeps the index unchanged for the duration (the engine lock).
///
/// A predicate on the ubiquitous keys needs the query's container, which
/// the index does not know: set `ubiquity` (else no entry is ubiquitous).
/// Each thread then makes its own `IndexSubject.Context`; predicates that
/// do not read those keys never make one.
package struct IndexScan {
    package let index: FileIndex
    let predicate: CompiledPredicate
    /// Threads to use; chunks are dealt out round-robin.
    var threads = ProcessLimits.processorCount
    /// The query's container, for predicates on the ubiquitous keys.
    package var ubiquity: UbiquityContext?
    /// Where imported attributes are read (the daemon's content indexer);
    /// nil: no entry has any.
    package var content: (any ImportedContent)?
    /// What the full-text index decides (files that may match, word tests
    /// decided); nil: nothing. Set it from `content.acceleration(for:)`
    /// for a whole scan.
    package var acceleration: TextAcceleration?
    /// The query's budget, made current on every scan thread (`MATCHES`
    /// consults it per name).
    package var limit: QueryLimit?
    /// The slots to scan, for a scan in slices; nil for all.
    package var slots: Range<Int>?
    /// The user the scan answers (the system index serving a user): only
    /// entries they may see are candidates (`Visibility`), judged before
    /// the predicate, so nothing a hidden name does to a test (a pattern
    /// past its per-name cap, the time it takes) can tell of it. Each scan
    /// thread judges with its own copy.
    package var visibility: Visibility?
    /// The entries the trigram lists leave (`NameGramPlan`); nil: every
    /// entry is a candidate.
    package var candidates: ScanCandidates? {
        didSet {
            // A few candidates and nothing uncovered: one thread does it
            // sooner than starting others.
            if let candidates, candidates.count < 1 << 14, candidates.covered >= index.slotCount { threads = 1 }
        }
    }

    package init(index: FileIndex, predicate: CompiledPredicate) {
        self.index = index
        self.predicate = predicate
    }

    /// Matching entries, scope roots excluded, in id order.
    package func matchingEntries() -> [UInt32] {
        let chunks = chunkCount
        guard chunks > 0 else { return [] }
        let lists = UnsafeMutablePointer<[UInt32]>.allocate(capacity: chunks)
        lists.initialize(repeating: [], count: chunks)
        defer { lists.deinitialize(count: chunks).deallocate() }
        let results = UncheckedSendable(lists)
        run(chunks: chunks) { scanner, chunk, slots in
            let (ids, count) = scanner.scan(chunk, in: slots)
            results.value[chunk] = Array(UnsafeBufferPointer(start: ids, count: count))
        }
        var all: [UInt32] = []
        all.reserveCapacity((0..<chunks).reduce(0) { $0 + lists[$1].count })
        for chunk in 0..<chunks { all += lists[chunk] }
        return all
    }

    /// The number of matching entries, scope roots excluded.
    package func matchCount() -> Int {
        let chunks = chunkCount
        guard chunks > 0 else { return 0 }
        let counts = UnsafeMutablePointer<Int>.allocate(capacity: chunks)
        counts.initialize(repeating: 0, count: chunks)
        defer { counts.deallocate() }
        let results = UncheckedSendable(counts)
        run(chunks: chunks) { scanner, chunk, slots in
            results.value[chunk] = scanner.scan(chunk, in: slots).count
        }
        return (0..<chunks).reduce(0) { $0 + counts[$1] }
    }

    private var chunkCount: Int {
        let end = min(index.slotCount, slots?.upperBound ?? .max)
        return (end + ChunkScanner.chunkSize - 1) / ChunkScanner.chunkSize
    }

    /// Runs `body` on every chunk the scanned slots touch (chunks before
    /// the first slot get no call and keep their empty result).
    private func run(chunks: Int, _ body: @escaping (ChunkScanner, Int, Range<Int>?) -> Void) {
        let first = (slots?.lowerBound ?? 0) / ChunkScanner.chunkSize
        let workers = max(1, min(threads, chunks - first))
        let shared = SendableScan(
            index: index, predicate: predicate, ubiquity: ubiquity, content: content, acceleration: acceleration,
            limit: limit, slots: slots, candidates: candidates, visibility: visibility, body: body)
        WorkerThreads.run(count: workers) { worker in
            QueryLimit.withCurrent(shared.limit) {
                let scanner = ChunkScanner(
                    index: shared.index, predicate: shared.predicate, ubiquity: shared.ubiquity,
                    content: shared.content, acceleration: shared.acceleration, reader: shared.visibility?.viewer)
                scanner.candidates = shared.candidates
                scanner.visibility = shared.visibility
                var chunk = first + worker
                while chunk < chunks {
                    if shared.limit?.isStopped == true { return }
                    shared.body(scanner, chunk, shared.slots)
                    chunk += workers
                }
            }
        }
    }
}

/// What every scan thread reads: the index is not mutated during a scan
/// and each thread writes only its own chunks' result slots.
private struct SendableScan: @unchecked Sendable {
    package let index: FileIndex
    let predicate: CompiledPredicate
    package let ubiquity: UbiquityContext?
    package let content: (any ImportedContent)?
    package let acceleration: TextAcceleration?
    package let limit: QueryLimit?
    package let slots: Range<Int>?
    package let candidates: ScanCandidates?
    package let visibility: Visibility?
    let body: (ChunkScanner, Int, Range<Int>?) -> Void
}

/// One thread's scan state: selection vectors and the evaluator used for
/// folding names and for tests without a column loop.
package final class ChunkScanner {
    package static let chunkSize = 1 << 16

    package let index: FileIndex
    let predicate: CompiledPredicate
    private let evaluator: PredicateEvaluator
    /// This thread's facts from outside the index, made only for
    /// predicates that read the ubiquitous or conflict keys.
    private let context: IndexSubject.Context?
    /// Selection vectors, one per nesting level of OR/NOT.
    private var buffers: [UnsafeMutablePointer<UInt32>] = []
    private var depth = 0
    /// The first selection from the trigram lists; nil: every slot.
    package var candidates: ScanCandidates?
    /// Who may see what, judged before any test (`IndexScan.visibility`).
    package var visibility: Visibility?

    package init(
        index: FileIndex, predicate: CompiledPredicate, ubiquity: UbiquityContext? = nil,
        content: (any ImportedContent)? = nil, acceleration: TextAcceleration? = nil, reader: Viewer? = nil
    ) {
        self.index = index
        self.predicate = predicate
        evaluator = predicate.makeEvaluator()
        context = IndexSubject.Context.needed(
            by: predicate, ubiquity: ubiquity, content: content, acceleration: acceleration, reader: reader)
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
    }

    /// Matching ids of one chunk (of its part within `slots`), in order;
    /// valid until the next call.
    func scan(_ chunk: Int, in slots: Range<Int>? = nil) -> (UnsafeMutablePointer<UInt32>, count: Int) {
        depth = 0
        let ids = takeBuffer()
        let base = chunk * Self.chunkSize
        let length = min(Self.chunkSize, index.slotCount - base, (slots?.upperBound ?? .max) - base)
        let start = max(0, (slots?.lowerBound ?? 0) - base)
        let bits = index.bitsColumn.chunk(chunk)
        var count = 0
        guard let candidates else {
            for i in start..<max(start, length) where Self.isScanned(bits[i]) {
                ids[count] = UInt32(base + i)
                count += 1
            }
            return (ids, filter(predicate.program, ids, keepVisible(ids, count)))
        }
        // Covered slots: only the listed ones.
        let coveredEnd = max(start, min(length, candidates.covered - base))
        let covered = UInt32(base + start)..<UInt32(base + coveredEnd)
        count = Self.select(candidates.ids, in: covered, bits: bits, base: base, into: ids)
        var decided: (ids: UnsafeMutablePointer<UInt32>, count: Int, rest: CompiledPredicate.Program)?
        if let extensions = candidates.extensions {
            // Those the extension codes decide need only pass the rest; the
            // unsure ones join the listed (both lists are in order).
            let exact = takeBuffer()
            let (e, u) = extensions.grams.select(
                extensions.set, asciiOnly: extensions.asciiOnly, in: base + start..<base + coveredEnd, exact: exact,
                unsure: ids + count)
            count += Self.keepScanned(ids + count, u, bits: bits, base: base)
            decided = (exact, Self.keepScanned(exact, e, bits: bits, base: base), extensions.rest)
        }
        for i in coveredEnd..<max(coveredEnd, length) where Self.isScanned(bits[i]) {
            ids[count] = UInt32(base + i)
            count += 1
        }
        count = keepVisible(ids, count)
        guard let decided else { return (ids, filter(predicate.program, ids, count)) }
        let merged = takeBuffer()
        let n = filter(predicate.program, ids, count)
        let d = filter(decided.rest, decided.ids, keepVisible(decided.ids, decided.count))
        return (merged, SortedIDs.merge(ids, n, decided.ids, d, into: merged))
    }

    /// Keeps the ids of entries the scan's user may see (all without one);
    /// returns how many.
    private func keepVisible(_ ids: UnsafeMutablePointer<UInt32>, _ count: Int) -> Int {
        guard visibility != nil else { return count }
        var out = 0
        for i in 0..<count where visibility!.allows(ids[i], in: index) {
            ids[out] = ids[i]
            out += 1
        }
        return out
    }

    /// Keeps the ids whose entries are scanned; returns how many.
    private static func keepScanned(
        _ ids: UnsafeMutablePointer<UInt32>, _ count: Int, bits: UnsafeMutablePointer<UInt32>, base: Int
    ) -> Int {
        var out = 0
        for i in 0..<count where isScanned(bits[Int(ids[i]) - base]) {
            ids[out] = ids[i]
            out += 1
        }
        return out
    }

    /// Copies the ids of `listed` in `range` whose entries are scanned.
    private static func select(
        _ listed: [UInt32], in range: Range<UInt32>, bits: UnsafeMutablePointer<UInt32>, base: Int,
        into ids: UnsafeMutablePointer<UInt32>
    ) -> Int {
        listed.withUnsafeBufferPointer { listed in
            var count = 0
            var k = SortedIDs.lowerBound(of: range.lowerBound, in: listed)
            while k < listed.count && listed[k] < range.upperBound {
                if isScanned(bits[Int(listed[k]) - base]) {
                    ids[count] = listed[k]
                    count += 1
                }
                k += 1
            }
            return count
        }
    }

    /// Whether an entry's bits are those of a live entry (kind set) that
    /// is not a scope root: what every scan considers.
    @inline(__always)
    private static func isScanned(_ bits: UInt32) -> Bool {
        bits & 0x700 != 0 && bits & (1 << 24) == 0
    }

    private func takeBuffer() -> UnsafeMutablePointer<UInt32> {
        if depth == buffers.count { buffers.append(.allocate(capacity: Self.chunkSize)) }
        defer { depth += 1 }
        return buffers[depth]
    }

    /// Runs `body` with a scratch selection vector.
    private func withScratch<R>(_ body: (UnsafeMutablePointer<UInt32>) -> R) -> R {
        let buffer = takeBuffer()
        defer { depth -= 1 }
        return body(buffer)
    }

    /// Keeps the ids that satisfy `program`, in order; returns how many.
    private func filter(_ program: CompiledPredicate.Program, _ ids: UnsafeMutablePointer<UInt32>, _ count: Int) -> Int
    {
        guard count > 0 else { return 0 }
        switch program {
        case .constant(let value):
            return value ? count : 0
        case .test(let test):
            guard test.negated else { return filter(test, ids, count) }
            return withScratch { scratch in
                scratch.update(from: ids, count: count)
                let kept = filter(test, scratch, count)
                return Self.remove(scratch, kept, from: ids, count)
            }
        case .not(let inner):
            return withScratch { scratch in
                scratch.update(from: ids, count: count)
                let kept = filter(inner, scratch, count)
                return Self.remove(scratch, kept, from: ids, count)
            }
        case .and(let parts):
            var n = count
            for part in parts {
                n = filter(part, ids, n)
                if n == 0 { break }
            }
            return n
        case .or(let parts):
            // `remaining`: candidates no branch has accepted yet.
            return withScratch { remaining in
                remaining.update(from: ids, count: count)
                var left = count
                withScratch { trial in
                    for part in parts {
                        trial.update(from: remaining, count: left)
                        let accepted = filter(part, trial, left)
                        left = Self.remove(trial, accepted, from: remaining, left)
                        if left == 0 { break }
                    }
                }
                return Self.remove(remaining, left, from: ids, count)
            }
        }
    }

    /// Removes `removed[0..<m]`, a subsequence of `ids[0..<n]`, from `ids`;
    /// returns the new count.
    private static func remove(
        _ removed: UnsafeMutablePointer<UInt32>, _ m: Int, from ids: UnsafeMutablePointer<UInt32>, _ n: Int
    ) -> Int {
        guard m > 0 else { return n }
        var out = 0
        var j = 0
        for i in 0..<n {
            let id = ids[i]
            if j < m && removed[j] == id {
                j += 1
            } else {
                ids[out] = id
                out += 1
            }
        }
        return out
    }

    // MARK: Tests

    /// Keeps the ids that pass `test`, ignoring its negation.
    private func filter(_ test: CompiledPredicate.Test, _ ids: UnsafeMutablePointer<UInt32>, _ count: Int) -> Int {
        switch (test.field, test.kind) {
        case (.name, .pattern(let matcher)):
            return filterNames(ids, count, matcher, displayName: false)
        case (.displayName, .pattern(let matcher)):
            return filterNames(ids, count, matcher, displayName: true)
        case (.name, .suffixes(let matchers)), (.displayName, .suffixes(let matchers)):
            return filterNames(ids, count, suffixes: matchers, displayName: test.field == .displayName)
        case (.name, .stringSet(let set)), (.displayName, .stringSet(let set)):
            let evaluator = evaluator
            return filterNames(ids, count, displayName: test.field == .displayName) { name, isASCII in
                evaluator.contains(set, name, isASCII: isASCII)
            }
        case (.size, .numberRange(let lower, let lowerInclusive, let upper, let upperInclusive)):
            let index = index
            return filterEntries(ids, count) { id, bits in
                // Folders have no size; entries not yet stat'ed have none known.
                guard EntryBits(rawValue: bits).kind != .folder, EntryBits(rawValue: bits).isStatted else {
                    return false
                }
                let size =
                    EntryBits(rawValue: bits).hasLargeSize
                    ? index.largeSizes[id, default: 0] : UInt64(index.sizeColumn[id])
                let value = Double(size)
                if let lower, lowerInclusive ? value < lower : value <= lower { return false }
                if let upper, upperInclusive ? value > upper : value >= upper { return false }
                return true
            }
        case (.contentChangeDate, .dateRange(let lower, let lowerInclusive, let upper, let upperInclusive)),
            (.creationDate, .dateRange(let lower, let lowerInclusive, let upper, let upperInclusive)):
            let column = test.field == .creationDate ? index.birthColumn : index.modificationColumn
            let needsBirth = test.field == .creationDate
            return filterEntries(ids, count) { id, bits in
                let b = EntryBits(rawValue: bits)
                guard b.isStatted, !needsBirth || b.hasBirthTime else { return false }
                let value = column[id]
                if let lower, lowerInclusive ? value < lower : value <= lower { return false }
                if let upper, upperInclusive ? value > upper : value >= upper { return false }
                return true
            }
        default:
            let evaluator = evaluator
            let index = index
            let context = context
            return filterEntries(ids, count) { id, _ in
                evaluator.passes(test, IndexSubject(index: index, id: id, context: context))
            }
        }
    }

    /// Keeps the ids for which `accept(id, bits)` holds.
    @inline(__always)
    private func filterEntries(
        _ ids: UnsafeMutablePointer<UInt32>, _ count: Int, _ accept: (UInt32, UInt32) -> Bool
    ) -> Int {
        let bitsColumn = index.bitsColumn
        var out = 0
        for i in 0..<count {
            let id = ids[i]
            if accept(id, bitsColumn[id]) {
                ids[out] = id
                out += 1
            }
        }
        return out
    }

    /// Keeps the ids for which `accept(name, isASCII)` holds, where `name`
    /// is the file name or the display name.
    @inline(__always)
    private func filterNames(
        _ ids: UnsafeMutablePointer<UInt32>, _ count: Int, displayName: Bool,
        _ accept: (UnsafeRawBufferPointer, Bool) -> Bool
    ) -> Int {
        let bitsColumn = index.bitsColumn
        let offsets = index.nameOffsetColumn
        let names = index.names
        var out = 0
        // Few candidates left in a chunk lie far apart in the arena: each
        // name is a cache miss, so the names a few candidates ahead are
        // fetched while this one is tested. (A dense selection streams
        // through the arena, where the hardware prefetcher does better.)
        let ahead = count < 1 << 14 ? 8 : 0
        for i in 0..<min(ahead, count) { mdq_prefetch(names.pointer(at: offsets[ids[i]])) }
        for i in 0..<count {
            let id = ids[i]
            if ahead > 0 && i + ahead < count { mdq_prefetch(names.pointer(at: offsets[ids[i + ahead]])) }
            let b = EntryBits(rawValue: bitsColumn[id])
            var name = names.bytes(at: offsets[id], length: b.nameLength)
            if displayName { name = DisplayName.range(of: name, isFolder: b.kind == .folder) }
            if accept(name, b.isASCIIName) {
                ids[out] = id
                out += 1
            }
        }
        return out
    }

    /// The bigram bits every name matching `matcher` has (its literals
    /// folded for case and diacritics; 0 when there is nothing to require).
    private func requiredSignature(_ matcher: NameMatcher) -> UInt64 {
        let folder = evaluator.folder(for: [.caseInsensitive, .diacriticInsensitive])
        var required: UInt64 = 0
        for segment in matcher.segments {
            for case .literal(let bytes) in segment {
                let folded = folder.folded(bytes)
                folded.withUnsafeBytes { required |= NameSignatures.signature($0, lowercasingASCII: false) }
            }
        }
        return required
    }

    /// Keeps the ids whose name signature has every bit of `required`,
    /// computing (and keeping) the signatures not made yet. `ids` lie in
    /// one chunk, scanned by this thread alone.
    private func filterBySignature(_ ids: UnsafeMutablePointer<UInt32>, _ count: Int, required: UInt64) -> Int {
        guard count > 0 else { return 0 }
        let bitsColumn = index.bitsColumn
        let offsets = index.nameOffsetColumn
        let names = index.names
        let signatures = index.signatures.chunk(Int(ids[0] >> 16))
        let folder = evaluator.folder(for: [.caseInsensitive, .diacriticInsensitive])
        var out = 0
        for i in 0..<count {
            let id = ids[i]
            let local = Int(id & 0xFFFF)
            var b = EntryBits(rawValue: bitsColumn[id])
            let signature: UInt64
            if b.hasSignature {
                signature = signatures[local]
            } else {
                let name = names.bytes(at: offsets[id], length: b.nameLength)
                if b.isASCIIName {
                    signature = NameSignatures.signature(name, lowercasingASCII: true)
                } else {
                    folder.fold(name)
                    signature = NameSignatures.signature(
                        UnsafeRawBufferPointer(folder.folded.bytes), lowercasingASCII: false)
                }
                signatures[local] = signature
                b.hasSignature = true
                bitsColumn[id] = b.rawValue
            }
            if signature & required == required {
                ids[out] = id
                out += 1
            }
        }
        return out
    }

    /// Several suffixes in one pass: the last 8 bytes of an ASCII name are
    /// loaded once and compared with each literal.
    private func filterNames(
        _ ids: UnsafeMutablePointer<UInt32>, _ count: Int, suffixes matchers: [NameMatcher], displayName: Bool
    ) -> Int {
        let evaluator = evaluator
        let lower = matchers[0].options.contains(.caseInsensitive)
        let words = matchers.compactMap { matcher -> TailWord? in
            guard matcher.literalIsASCII, case .suffix(let literal) = matcher.shape else { return nil }
            return TailWord(literal, lower: lower)
        }
        guard words.count == matchers.count else {
            return filterNames(ids, count, displayName: displayName) { name, isASCII in
                matchers.contains { evaluator.matchesName($0, name, isASCII: isASCII) }
            }
        }
        // Every literal in one buffer, so the loop touches no array payloads.
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        for matcher in matchers {
            guard case .suffix(let literal) = matcher.shape else { continue }
            ranges.append(bytes.count..<bytes.count + literal.count)
            bytes += literal
        }
        let folder = evaluator.folder(for: matchers[0].options)
        return bytes.withUnsafeBytes { bytes in
            ranges.withUnsafeBufferPointer { ranges in
                words.withUnsafeBufferPointer { words in
                    filterNames(ids, count, displayName: displayName) { name, isASCII in
                        if isASCII && name.count >= 8 {
                            var last8 = name.baseAddress!.loadUnaligned(fromByteOffset: name.count - 8, as: UInt64.self)
                            if lower { last8 = ASCIIBytes.lowercased(last8) }
                            for word in words where last8 & word.mask == word.word { return true }
                            return false
                        }
                        var folded = false
                        for range in ranges {
                            let literal = UnsafeRawBufferPointer(rebasing: bytes[range])
                            if isASCII {
                                let n = literal.count
                                if name.count >= n,
                                    ASCIIBytes.equal(
                                        name.baseAddress! + (name.count - n), literal.baseAddress!, n, lower: lower)
                                {
                                    return true
                                }
                                continue
                            }
                            switch NameMatcher.decideSuffix(name, literal, lower: lower) {
                            case true?: return true
                            case false?: continue
                            case nil:
                                if !folded {
                                    folder.fold(name)
                                    folded = true
                                }
                                if FoldedSearch.hasSuffix(folder.folded, literal) { return true }
                            }
                        }
                        return false
                    }
                }
            }
        }
    }

    /// A string test on names, one loop per common shape. ASCII names are
    /// compared in place; other names are decided from their ASCII ends
    /// when possible, else folded and searched.
    private func filterNames(
        _ ids: UnsafeMutablePointer<UInt32>, _ count: Int, _ matcher: NameMatcher, displayName: Bool
    ) -> Int {
        let evaluator = evaluator
        guard matcher.literalIsASCII else {
            return filterNames(ids, count, displayName: displayName) { name, isASCII in
                evaluator.matchesName(matcher, name, isASCII: isASCII)
            }
        }
        let lower = matcher.options.contains(.caseInsensitive)
        let folder = evaluator.folder(for: matcher.options)
        var count = count
        // Substring and general patterns: first drop the names that lack a
        // bigram of the literals (one AND per name, signatures kept).
        switch matcher.shape {
        case .contains, .general:
            let required = requiredSignature(matcher)
            if required != 0 { count = filterBySignature(ids, count, required: required) }
        default: break
        }
        switch matcher.shape {
        case .anything:
            return count
        case .suffix(let literal):
            let tail = TailWord(literal, lower: lower)
            return literal.withUnsafeBytes { literal in
                filterNames(ids, count, displayName: displayName) { name, isASCII in
                    let n = literal.count
                    let end = name.baseAddress! + name.count
                    guard isASCII else {
                        // A last byte that is ASCII is the folded name's last byte.
                        let last = end.load(fromByteOffset: -1, as: UInt8.self)
                        if last < 0x80 && ASCIIText.fold(last, lower) != literal[n - 1] { return false }
                        if let decided = NameMatcher.decideSuffix(name, literal, lower: lower) { return decided }
                        folder.fold(name)
                        return FoldedSearch.hasSuffix(folder.folded, literal)
                    }
                    guard name.count >= n else { return false }
                    if let tail, name.count >= 8 { return tail.matches(end) }
                    return ASCIIBytes.equal(end - n, literal.baseAddress!, n, lower: lower)
                }
            }
        case .prefix(let literal):
            return literal.withUnsafeBytes { literal in
                filterNames(ids, count, displayName: displayName) { name, isASCII in
                    guard isASCII else {
                        if let decided = NameMatcher.decidePrefix(name, literal, lower: lower) { return decided }
                        folder.fold(name)
                        return FoldedSearch.hasPrefix(folder.folded, literal)
                    }
                    let n = literal.count
                    return name.count >= n && ASCIIBytes.equal(name.baseAddress!, literal.baseAddress!, n, lower: lower)
                }
            }
        case .exact(let literal):
            return literal.withUnsafeBytes { literal in
                filterNames(ids, count, displayName: displayName) { name, isASCII in
                    guard isASCII else {
                        if let decided = NameMatcher.decideExact(name, literal, lower: lower) { return decided }
                        folder.fold(name)
                        return FoldedSearch.equals(folder.folded, literal)
                    }
                    let n = literal.count
                    return name.count == n
                        && (n == 0 || ASCIIBytes.equal(name.baseAddress!, literal.baseAddress!, n, lower: lower))
                }
            }
        case .contains(let literal):
            return literal.withUnsafeBytes { literal in
                filterNames(ids, count, displayName: displayName) { name, isASCII in
                    guard isASCII else {
                        if NameMatcher.decideContains(name, literal, lower: lower) == true { return true }
                        folder.fold(name)
                        return FoldedSearch.contains(folder.folded, literal)
                    }
                    return ASCIIBytes.contains(name, literal, lower: lower)
                }
            }
        case .general:
            return filterNames(ids, count, displayName: displayName) { name, isASCII in
                isASCII ? matcher.matchesASCII(name) : evaluator.matchesName(matcher, name, isASCII: false)
            }
        }
    }
}

/// Literal tests on a folded name: a literal must start and end on
/// character boundaries (as `FoldedText` requires).
enum FoldedSearch {
    typealias Folded = (bytes: UnsafeBufferPointer<UInt8>, boundaries: UnsafeBufferPointer<Bool>)

    @inline(__always)
    static func occurs(_ text: Folded, _ literal: UnsafeRawBufferPointer, at position: Int) -> Bool {
        text.boundaries[position] && text.boundaries[position + literal.count]
            && NameBytes.equal(text.bytes.baseAddress! + position, literal.baseAddress!, count: literal.count)
    }

    static func equals(_ text: Folded, _ literal: UnsafeRawBufferPointer) -> Bool {
        text.bytes.count == literal.count && occurs(text, literal, at: 0)
    }

    static func hasPrefix(_ text: Folded, _ literal: UnsafeRawBufferPointer) -> Bool {
        text.bytes.count >= literal.count && occurs(text, literal, at: 0)
    }

    static func hasSuffix(_ text: Folded, _ literal: UnsafeRawBufferPointer) -> Bool {
        text.bytes.count >= literal.count && occurs(text, literal, at: text.bytes.count - literal.count)
    }

    static func contains(_ text: Folded, _ literal: UnsafeRawBufferPointer) -> Bool {
        let n = literal.count
        guard n > 0 else { return true }
        let first = literal[0]
        var position = 0
        while position + n <= text.bytes.count {
            if text.bytes[position] == first && occurs(text, literal, at: position) { return true }
            position += 1
        }
        return false
    }
}

/// A literal of at most 8 bytes compared against the last 8 bytes of an
/// ASCII name with one load.
struct TailWord {
    let word: UInt64
    let mask: UInt64
    let lower: Bool

    package init?(_ literal: [UInt8], lower: Bool) {
        guard !literal.isEmpty && literal.count <= 8 else { return nil }
        var word: UInt64 = 0
        for byte in literal.reversed() { word = word << 8 | UInt64(byte) }
        let shift = UInt64(64 - 8 * literal.count)
        self.word = word << shift
        mask = ~0 << shift
        self.lower = lower
    }

    /// Whether the 8 bytes ending at `end` end with the literal.
    @inline(__always)
    package func matches(_ end: UnsafeRawPointer) -> Bool {
        var last8 = end.loadUnaligned(fromByteOffset: -8, as: UInt64.self)
        if lower { last8 = ASCIIBytes.lowercased(last8) }
        return last8 & mask == word
    }
}

/// Byte comparisons of ASCII names against folded ASCII literals.
enum ASCIIBytes {
    /// `a[0..<n]`, lowercased when `lower`, equals `literal[0..<n]`.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ literal: UnsafeRawPointer, _ n: Int, lower: Bool) -> Bool {
        if !lower { return NameBytes.equal(a, literal, count: n) }
        var i = 0
        while i + 8 <= n {
            var word = a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            word = lowercased(word)
            if word != literal.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i += 8
        }
        while i < n {
            if ASCIIText.fold(a.load(fromByteOffset: i, as: UInt8.self), true)
                != literal.load(fromByteOffset: i, as: UInt8.self)
            {
                return false
            }
            i += 1
        }
        return true
    }

    /// Eight ASCII bytes with `A`...`Z` lowercased (SWAR: a byte gets 0x20
    /// added when it lies in 0x41...0x5A).
    @inline(__always)
    static func lowercased(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        // Bytes are ASCII (< 0x80), so adding never carries across bytes.
        let aboveA = (word &+ ones &* (0x80 - 0x41)) & high
        let aboveZ = (word &+ ones &* (0x80 - 0x5B)) & high
        let upper = aboveA & ~aboveZ
        return word | (upper >> 2)
    }

    /// Whether `literal` occurs in the ASCII `name` (lowercased when
    /// `lower`). Candidates for the first byte are found 8 bytes at a time
    /// (a zero-byte test on the name XOR the broadcast byte), then checked.
    @inline(__always)
    static func contains(_ name: UnsafeRawBufferPointer, _ literal: UnsafeRawBufferPointer, lower: Bool) -> Bool {
        let n = literal.count
        guard n > 0 else { return true }
        guard name.count >= n else { return false }
        let base = name.baseAddress!
        let pattern = literal.baseAddress!
        let first = pattern.load(as: UInt8.self)
        let last = name.count - n
        let ones: UInt64 = 0x0101_0101_0101_0101
        let broadcast = UInt64(first) &* ones
        var position = 0
        while position + 8 <= name.count && position <= last {
            var word = base.loadUnaligned(fromByteOffset: position, as: UInt64.self)
            if lower { word = lowercased(word) }
            let x = word ^ broadcast
            var hits = (x &- ones) & ~x & 0x8080_8080_8080_8080
            while hits != 0 {
                let at = position + hits.trailingZeroBitCount >> 3
                if at > last { return false }
                if equal(base + at, pattern, n, lower: lower) { return true }
                hits &= hits &- 1
            }
            position += 8
        }
        while position <= last {
            if ASCIIText.fold(base.load(fromByteOffset: position, as: UInt8.self), lower) == first
                && equal(base + position, pattern, n, lower: lower)
            {
                return true
            }
            position += 1
        }
        return false
    }
}

/// An index entry as a predicate subject.
///
/// Name, kind, path and metadata come from the index. Whether the entry is
/// ubiquitous and whether a conflict copy sits beside it come through a
/// `Context` the caller makes per thread (or per batch) for the query: the
/// live engine and `IndexScan` both evaluate through it. Without a context
/// no entry is ubiquitous (as in a query with no container) and conflict
/// copies are looked for afresh each time.
package struct IndexSubject: PredicateSubject {
    package let index: FileIndex
    let id: UInt32
    var context: Context?

    /// The file's imported values, from the content indexer's store
    /// (nil without one, or for a file not imported yet).
    package func imported() -> ImportedValues? {
        guard let context, let content = context.content, let key = index.fileKey(of: EntryID(id)),
            context.mayRead(id, in: index)
        else {
            return nil
        }
        // Outside the full-text index's candidates the predicate cannot
        // hold (its text tests are false without the text): no store read.
        if let candidates = context.acceleration?.candidates, !candidates.contains(key) { return nil }
        // ASCII text whose every test the index decides is not read.
        let decided = context.acceleration.map { $0.decidesAllTextTests && !$0.nonASCII.contains(key) } ?? false
        return content.values(for: key, text: context.wantsText && !decided)
    }

    package func decidedTextWords(_ matcher: NameMatcher) -> Bool? {
        guard let context, let acceleration = context.acceleration, let files = context.decidedFiles(matcher),
            let key = index.fileKey(of: EntryID(id)), !acceleration.nonASCII.contains(key)
        else { return nil }
        // A file the user may not read has no text for them.
        return files.contains(key) && context.mayRead(id, in: index)
    }

    package init(index: FileIndex, id: UInt32, context: Context? = nil) {
        self.index = index
        self.id = id
        self.context = context
    }

    /// One thread's view of a query's container and of the conflict copies
    /// found so far (per folder, as entries are tested). Not thread-safe:
    /// one per thread, used while the index is unchanged; it caches what it
    /// learns about folders, so make a new one for each scan or batch of
    /// changes.
    ///
    /// The live engine supplies it like this, under the engine lock:
    ///
    ///     let ubiquity = container.map { UbiquityContext(container: $0, externalFolders: folders) }
    ///     var scan = IndexScan(index: index, predicate: compiled)
    ///     scan.ubiquity = ubiquity                 // the initial results
    ///     // each batch of changes:
    ///     let context = compiled.requirements.isDisjoint(with: [.ubiquity, .conflicts])
    ///         ? nil : IndexSubject.Context(ubiquity: ubiquity)
    ///     evaluator.matches(IndexSubject(index: index, id: id, context: context))
    package final class Context {
        let ubiquity: UbiquityContext?
        /// Where imported values are read, and whether the predicate reads
        /// the text (the largest of them).
        let content: (any ImportedContent)?
        let wantsText: Bool
        /// The user the scan answers, when not everything is theirs to
        /// read: what is imported from a file they may not read (its
        /// permissions and ACL, as the kernel judges them) is not there
        /// for them.
        let reader: Viewer?
        /// What the full-text index decides for this scan.
        let acceleration: TextAcceleration?
        private var conflicts = ConflictCache()
        /// The last parent asked about and its children's ubiquity: entries
        /// are tested in id order, siblings mostly together.
        private var lastParent: UInt32?
        private var lastUbiquity: MetadataItem.Ubiquity?
        /// The word test last asked about and the files the full-text
        /// index decided for it: a scan asks for every entry, and hashing
        /// the matcher (its literals, byte by byte) each time cost more
        /// than the rest of the test.
        private var lastWords: (matcher: NameMatcher, files: Set<FileKey>?)?

        /// The files the full-text index decides `matcher` for, nil when it
        /// does not decide it.
        func decidedFiles(_ matcher: NameMatcher) -> Set<FileKey>? {
            if let lastWords, lastWords.matcher == matcher { return lastWords.files }
            let files = acceleration?.decided[matcher]
            lastWords = (matcher, files)
            return files
        }

        init(
            ubiquity: UbiquityContext?, content: (any ImportedContent)? = nil, wantsText: Bool = false,
            acceleration: TextAcceleration? = nil, reader: Viewer? = nil
        ) {
            self.ubiquity = ubiquity
            self.content = content
            self.wantsText = wantsText
            self.acceleration = acceleration
            self.reader = reader.flatMap { $0.isRoot ? nil : $0 }
        }

        /// Whether the scan's user may read the file `id`.
        func mayRead(_ id: UInt32, in index: FileIndex) -> Bool {
            reader?.mayRead(id, in: index) ?? true
        }

        /// A context for `predicate` when it reads what the index does not
        /// hold (ubiquity, conflict copies, imported attributes); nil when
        /// it does not.
        package static func needed(
            by predicate: CompiledPredicate, ubiquity: UbiquityContext?, content: (any ImportedContent)?,
            acceleration: TextAcceleration? = nil, reader: Viewer? = nil
        ) -> Context? {
            guard !predicate.requirements.isDisjoint(with: [.ubiquity, .conflicts, .imported]) else { return nil }
            let imported = predicate.requirements.contains(.imported)
            return Context(
                ubiquity: ubiquity, content: imported ? content : nil,
                wantsText: predicate.importedAttributes.contains(.textContent),
                acceleration: imported ? acceleration : nil, reader: reader)
        }

        func ubiquity(of id: UInt32, in index: FileIndex) -> MetadataItem.Ubiquity? {
            guard let ubiquity, let parent = index.parent(of: EntryID(id))?.rawValue else { return nil }
            if parent != lastParent {
                lastParent = parent
                lastUbiquity = ubiquity.ubiquity(ofChildOf: index.path(of: EntryID(parent)).bytes)
            }
            return lastUbiquity
        }

        func hasCopies(_ id: UInt32, in index: FileIndex) -> Bool {
            conflicts.hasCopies(id, in: index)
        }
    }

    package var kind: EntryKind { index.bits(id).kind }

    package func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R {
        body(index.nameBytes(id), index.bits(id).isASCIIName)
    }

    package func appendPath(to bytes: inout [UInt8]) {
        index.appendPath(of: id, to: &bytes)
    }

    package func metadata() -> EntryMetadata? {
        index.metadata(of: EntryID(id))
    }

    package func ubiquity() -> MetadataItem.Ubiquity? {
        context?.ubiquity(of: id, in: index)
    }

    package func hasUnresolvedConflicts() -> Bool {
        if let context { return context.hasCopies(id, in: index) }
        var cache = ConflictCache()
        return cache.hasCopies(id, in: index)
    }

    package func conflictOriginalPath() -> [UInt8]? {
        index.conflictOriginal(of: id).map { index.path(of: EntryID($0)).bytes }
    }
}
