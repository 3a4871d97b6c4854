/// A predicate compiled for evaluation: each comparison a `NameMatcher`,
/// cheap terms first.
///
/// Compile once per query; evaluate through a per-thread
/// `PredicateEvaluator` (it owns the scratch buffers), which allocates
/// nothing per entry.
struct CompiledPredicate: Sendable {
    indirect enum Program: Sendable {
        case constant(Bool)
        case test(Test)
        case not(Program)
        case and([Program])
        case or([Program])
    }

    struct Test: Sendable {
        var attribute: MetadataAttribute
        var matcher: NameMatcher
        /// `!=`
        var negated: Bool
    }

    let program: Program
    /// Whether any term reads the full path (the one-shot search then builds it).
    let needsPath: Bool

    init(_ predicate: MetadataPredicate) {
        var needsPath = false
        program = Self.compile(predicate.node, needsPath: &needsPath)
        self.needsPath = needsPath
    }

    private static func compile(_ node: PredicateNode, needsPath: inout Bool) -> Program {
        switch node {
        case .constant(let value):
            return .constant(value)
        case .comparison(let comparison):
            guard case .string(let value) = comparison.value,
                let pattern = try? LikePattern.forOperator(comparison.op, value: value)
            else {
                // The parser validated every LIKE pattern already.
                return .constant(false)
            }
            if comparison.attribute == .path { needsPath = true }
            return .test(
                Test(
                    attribute: comparison.attribute,
                    matcher: NameMatcher(pattern, options: comparison.options),
                    negated: comparison.op == .notEqual))
        case .not(let inner):
            return .not(compile(inner, needsPath: &needsPath))
        case .and(let parts):
            return .and(cheapestFirst(parts.map { compile($0, needsPath: &needsPath) }))
        case .or(let parts):
            return .or(cheapestFirst(parts.map { compile($0, needsPath: &needsPath) }))
        }
    }

    /// Orders terms by cost, keeping source order among equals. AND and OR
    /// have no side effects, so the order changes only the speed.
    private static func cheapestFirst(_ programs: [Program]) -> [Program] {
        programs.enumerated()
            .sorted { (cost($0.element), $0.offset) < (cost($1.element), $1.offset) }
            .map(\.element)
    }

    /// Relative cost: name tests are cheap, path tests rebuild a path.
    private static func cost(_ program: Program) -> Int {
        switch program {
        case .constant: return 0
        case .test(let test): return test.attribute == .path ? 10 : 1
        case .not(let inner): return cost(inner)
        case .and(let parts), .or(let parts): return parts.map(cost).reduce(0, +)
        }
    }

    /// Scratch state for evaluating on one thread.
    func makeEvaluator() -> PredicateEvaluator {
        PredicateEvaluator(self)
    }
}

/// What a predicate is evaluated against: an index entry, or an entry the
/// crawler just listed.
protocol PredicateSubject {
    var kind: EntryKind { get }
    /// Calls `body` with the name's bytes and whether they are all ASCII.
    func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R
    /// Appends the absolute path's bytes.
    func appendPath(to bytes: inout [UInt8])
}

/// Evaluates a compiled predicate on one thread, reusing its buffers.
final class PredicateEvaluator {
    let predicate: CompiledPredicate
    private var folders: [UnicodeFolder?] = [nil, nil, nil, nil]
    private var path: [UInt8] = []

    init(_ predicate: CompiledPredicate) {
        self.predicate = predicate
    }

    /// Whether the subject matches.
    @inline(__always)
    func matches<S: PredicateSubject>(_ subject: S) -> Bool {
        evaluate(predicate.program, subject)
    }

    private func evaluate<S: PredicateSubject>(_ program: CompiledPredicate.Program, _ subject: S) -> Bool {
        switch program {
        case .constant(let value):
            return value
        case .test(let test):
            return evaluateTest(test, subject) != test.negated
        case .not(let inner):
            return !evaluate(inner, subject)
        case .and(let parts):
            for part in parts where !evaluate(part, subject) { return false }
            return true
        case .or(let parts):
            for part in parts where evaluate(part, subject) { return true }
            return false
        }
    }

    @inline(__always)
    private func evaluateTest<S: PredicateSubject>(_ test: CompiledPredicate.Test, _ subject: S) -> Bool {
        switch test.attribute {
        case .path:
            path.removeAll(keepingCapacity: true)
            subject.appendPath(to: &path)
            return path.withUnsafeBytes { bytes in
                match(test.matcher, bytes, isASCII: NameBytes.isASCII(bytes))
            }
        case .displayName:
            let isFolder = subject.kind == .folder
            return subject.withName { name, isASCII in
                match(test.matcher, DisplayName.range(of: name, isFolder: isFolder), isASCII: isASCII)
            }
        default:
            return subject.withName { name, isASCII in
                match(test.matcher, name, isASCII: isASCII)
            }
        }
    }

    @inline(__always)
    private func match(_ matcher: NameMatcher, _ text: UnsafeRawBufferPointer, isASCII: Bool) -> Bool {
        if isASCII { return matcher.matchesASCII(text) }
        let slot = Int(matcher.options.rawValue)
        let folder: UnicodeFolder
        if let existing = folders[slot] {
            folder = existing
        } else {
            folder = UnicodeFolder(options: matcher.options)
            folders[slot] = folder
        }
        return matcher.matchesFolding(text, folder: folder)
    }
}

/// `kMDItemDisplayName`: the name without its last extension; the whole
/// name for folders and for names whose only dot is the first character.
enum DisplayName {
    static func range(of name: UnsafeRawBufferPointer, isFolder: Bool) -> UnsafeRawBufferPointer {
        guard !isFolder, let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > 0 else { return name }
        return UnsafeRawBufferPointer(rebasing: name[..<dot])
    }

    /// The display name's bytes.
    static func bytes(of name: [UInt8], isFolder: Bool) -> [UInt8] {
        name.withUnsafeBytes { Array(range(of: $0, isFolder: isFolder)) }
    }
}
