import CICURegex
import Foundation
import MDQSystem
import Synchronization

/// `MATCHES`: a whole-string regular expression (ICU syntax, as
/// NSPredicate), compiled once per query.
///
/// Pattern and text get the same normalisation: both are put in canonical
/// composed form (NFC), so a name written decomposed matches as `==` would,
/// and with `[d]` both lose their diacritics first (`MATCHES[d] 'cafe.*'`
/// finds `café menu.txt`). `[c]` is the expression's case-insensitive flag.
/// Matching needs the tested value in UTF-16, so it allocates; the
/// compiler runs it after every cheaper term.
///
/// ICU is called directly, not through Foundation's `NSRegularExpression`,
/// whose compiler leaks a copy of every pattern longer than 256 UTF-16
/// units (swift-corelibs-foundation's `_CFRegularExpressionCreate` frees
/// its pattern buffer only on failure): a daemon compiling users' long
/// patterns would grow without bound. And a match uses a copy of the
/// compiled expression kept for the thread's next match, instead of
/// cloning one per match when threads meet.
struct RegexMatcher: Sendable {
    let expression: CompiledRegex
    let options: StringCompareOptions

    package init?(_ pattern: [UInt8], options: StringCompareOptions) {
        guard !pattern.contains(0) else { return nil }
        let text = Self.normalized(String(decoding: pattern, as: UTF8.self), options)
        guard
            case .success(let expression) = CompiledRegex.compile(
                text, ignoringCase: options.contains(.caseInsensitive))
        else { return nil }
        self.expression = expression
        self.options = options
    }

    /// Why the pattern does not compile, and the byte offset in it of the
    /// mistake when ICU names one; nil when it compiles.
    static func validate(_ pattern: [UInt8]) -> (reason: String, offset: Int?)? {
        // No name holds a NUL.
        if let nul = pattern.firstIndex(of: 0) { return ("it contains a NUL character, which no name can hold", nul) }
        let text = String(decoding: pattern, as: UTF8.self)
        guard case .failure(let failure) = CompiledRegex.compile(text, ignoringCase: false) else { return nil }
        // ICU counts UTF-16 units; the query's caret counts bytes.
        let offset = failure.offset.flatMap { units in
            text.utf16.index(text.utf16.startIndex, offsetBy: units, limitedBy: text.utf16.endIndex).map {
                text.utf8.distance(from: text.utf8.startIndex, to: $0)
            }
        }
        return (failure.reason, offset)
    }

    /// Text (a pattern or a value) in the form both are compared in.
    private static func normalized(_ text: String, _ options: StringCompareOptions) -> String {
        let folded =
            options.contains(.diacriticInsensitive) ? text.folding(options: .diacriticInsensitive, locale: nil) : text
        return folded.precomposedStringWithCanonicalMapping
    }

    /// Whether the whole text matches.
    ///
    /// Under a query's `QueryLimit` the match is bounded: ICU reports
    /// progress about every 10,000 backtracking steps, and past
    /// `QueryLimit.ticksPerName` such reports on one name (or once the query
    /// is past its deadline or cancelled) the match is abandoned and the
    /// limit marked, so the query ends as too expensive; the false returned
    /// then is never an answer anyone sees.
    package func matches(_ text: UnsafeRawBufferPointer) -> Bool {
        let units = Array(Self.normalized(String(decoding: text, as: UTF8.self), options).utf16)
        let limit = QueryLimit.current
        if let limit, limit.isStopped { return false }
        var progress = MatchProgress(limit: limit)
        return withUnsafeMutablePointer(to: &progress) { context in
            expression.matches(units, reporting: limit == nil ? nil : context)
        }
    }
}

extension RegexMatcher: Hashable {
    package static func == (lhs: RegexMatcher, rhs: RegexMatcher) -> Bool {
        lhs.expression.pattern == rhs.expression.pattern && lhs.options == rhs.options
    }
    package func hash(into hasher: inout Hasher) { hasher.combine(expression.pattern) }
}

/// What one match has spent of its query's limit.
struct MatchProgress {
    package let limit: QueryLimit?
    var ticks = 0
}

/// ICU calls this about every 10,000 steps of a match; 0 stops it.
private let reportProgress: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { context in
    guard let context else { return 1 }
    let progress = context.assumingMemoryBound(to: MatchProgress.self)
    guard let limit = progress.pointee.limit else { return 1 }
    progress.pointee.ticks += 1
    if progress.pointee.ticks > QueryLimit.ticksPerName {
        limit.exceed("the MATCHES pattern backtracks too much on a name")
        return 0
    }
    if progress.pointee.ticks & 15 == 0 && limit.isStopped { return 0 }
    return 1
}

/// A compiled ICU expression and spare copies of it for matching: an ICU
/// expression holds the state of one match, so each thread matching at
/// once takes a copy (kept for the next match) and gives it back.
final class CompiledRegex: Sendable {
    /// The pattern as compiled (normalised), for equality.
    let pattern: String
    private let compiled: UncheckedSendable<OpaquePointer>
    private let spares = Mutex<[UncheckedSendable<OpaquePointer>]>([])
    /// Copies kept: one per thread that matches at once, at most.
    private static let sparesKept = 16

    private init(pattern: String, compiled: OpaquePointer) {
        self.pattern = pattern
        self.compiled = UncheckedSendable(compiled)
    }

    deinit {
        mdq_regex_free(compiled.value)
        for spare in spares.withLock({ $0 }) { mdq_regex_free(spare.value) }
    }

    struct Failure: Error {
        var reason: String
        /// Where, in UTF-16 units of the pattern, when ICU says.
        var offset: Int?
    }

    /// Compiles `pattern`.
    static func compile(_ pattern: String, ignoringCase: Bool) -> Result<CompiledRegex, Failure> {
        // ICU takes no empty pattern; an empty group is the same pattern.
        let units = pattern.isEmpty ? Array("(?:)".utf16) : Array(pattern.utf16)
        guard units.count < Int32.max else { return .failure(Failure(reason: "the pattern is too long")) }
        var error: Int32 = 0
        var offset: Int32 = -1
        let compiled = units.withUnsafeBufferPointer {
            mdq_regex_compile($0.baseAddress, Int32($0.count), ignoringCase ? 1 : 0, &error, &offset)
        }
        guard let compiled else {
            return .failure(Failure(reason: Self.describe(error), offset: offset >= 0 ? Int(offset) : nil))
        }
        return .success(CompiledRegex(pattern: pattern, compiled: compiled))
    }

    /// Whether the whole of `text` (UTF-16) matches; with `progress`, ICU
    /// reports to it as the match goes (`reportProgress`).
    package func matches(_ text: [UInt16], reporting progress: UnsafeMutablePointer<MatchProgress>?) -> Bool {
        let matcher: OpaquePointer
        if let spare = spares.withLock({ $0.popLast() }) {
            matcher = spare.value
        } else {
            guard let copy = mdq_regex_clone(compiled.value) else { return false }
            matcher = copy
        }
        let matched = text.withUnsafeBufferPointer { units in
            mdq_regex_matches(
                matcher, units.baseAddress, Int32(clamping: units.count), progress == nil ? nil : reportProgress,
                progress.map { UnsafeMutableRawPointer($0) })
        }
        let kept = spares.withLock { spares -> Bool in
            guard spares.count < Self.sparesKept else { return false }
            spares.append(UncheckedSendable(matcher))
            return true
        }
        if !kept { mdq_regex_free(matcher) }
        return matched == 1
    }

    /// A compile error in words.
    private static func describe(_ error: Int32) -> String {
        switch Int(error) {
        case MDQ_REGEX_SYNTAX: return "its syntax is wrong here"
        case MDQ_REGEX_MISSING_BRACKET: return "a [ has no closing ]"
        case MDQ_REGEX_MISMATCHED_PAREN: return "its parentheses do not pair"
        case MDQ_REGEX_BAD_ESCAPE: return "an escape sequence is unknown"
        case MDQ_REGEX_BAD_INTERVAL: return "a {min,max} repetition is malformed"
        case MDQ_REGEX_BAD_RANGE: return "a range in [ ] runs backwards"
        case MDQ_REGEX_BAD_PROPERTY: return "a \\p{...} property is malformed"
        case MDQ_REGEX_LOOK_BEHIND: return "a look-behind has no bounded length"
        case MDQ_REGEX_TOO_BIG: return "the pattern is too big"
        default: return "the pattern does not compile"
        }
    }
}
