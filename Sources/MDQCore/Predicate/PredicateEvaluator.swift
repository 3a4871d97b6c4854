package import MDQSystem

/// What a predicate is evaluated against: an index entry, an entry the
/// crawler just listed, or an item.
///
/// Name and kind are always at hand. The rest is asked for only when the
/// compiled predicate's `requirements` say a term reads it, so a predicate
/// over names costs no path, stat, container or sibling lookup.
package protocol PredicateSubject {
    var kind: EntryKind { get }
    /// Calls `body` with the name's bytes and whether they are all ASCII.
    func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R
    /// Appends the absolute path's bytes (`.path`).
    func appendPath(to bytes: inout [UInt8])
    /// Appends the path its URL names (`.url`): the path, or for another
    /// host's entry `NAME:/path`, whose URL is `file://NAME/path`.
    func appendURLPath(to bytes: inout [UInt8])
    /// Size, dates and inode; nil when they cannot be read (the entry
    /// vanished) (`.metadata`).
    func metadata() -> EntryMetadata?
    /// Where the entry lies relative to the query's ubiquity container: nil
    /// outside it, or when the query has none (`.ubiquity`).
    func ubiquity() -> MetadataItem.Ubiquity?
    /// Whether a conflict copy of the entry sits beside it (`.conflicts`).
    func hasUnresolvedConflicts() -> Bool
    /// For a conflict copy, the path of the entry it conflicts with, when
    /// that exists (`.conflicts`).
    func conflictOriginalPath() -> [UInt8]?
    /// What the importers read from inside the file (`.imported`): from
    /// the import store, or imported now; nil when nothing could be.
    func imported() -> ImportedValues?
    /// A `[w]` word test on the text decided without reading the text (the
    /// full-text index answers it exactly for this file); nil to read it.
    func decidedTextWords(_ matcher: NameMatcher) -> Bool?
}

extension PredicateSubject {
    package func appendURLPath(to bytes: inout [UInt8]) { appendPath(to: &bytes) }

    package func decidedTextWords(_ matcher: NameMatcher) -> Bool? { nil }
}

/// Evaluates a compiled predicate on one thread, reusing its buffers.
package final class PredicateEvaluator {
    let predicate: CompiledPredicate
    private var folders: [UnicodeFolder?] = [nil, nil, nil, nil]
    private var path: [UInt8] = []
    private var url: [UInt8] = []
    /// Word starts and ends of the text a `[w]` test is looking at.
    private var wordStarts: [Int] = []
    private var wordEnds: [Int] = []
    /// The current subject's metadata, read at most once per entry.
    private var cachedMetadata: EntryMetadata??
    /// The current subject's imported values, asked for at most once per
    /// entry (an import is a worker round trip).
    private var cachedImported: ImportedValues??

    package init(_ predicate: CompiledPredicate) {
        self.predicate = predicate
    }

    /// Whether the subject matches.
    @inline(__always)
    package func matches<S: PredicateSubject>(_ subject: S) -> Bool {
        cachedMetadata = nil
        cachedImported = nil
        return evaluate(predicate.program, subject)
    }

    /// Whether the subject passes one test, ignoring its negation; the
    /// index scan's path for tests it has no column loop for.
    func passes<S: PredicateSubject>(_ test: CompiledPredicate.Test, _ subject: S) -> Bool {
        cachedMetadata = nil
        cachedImported = nil
        return evaluateTest(test, subject)
    }

    /// Whether a name matches a string test, folding through this
    /// evaluator's folders when the name is not ASCII.
    @inline(__always)
    func matchesName(_ matcher: NameMatcher, _ name: UnsafeRawBufferPointer, isASCII: Bool) -> Bool {
        match(matcher, name, isASCII: isASCII)
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

    /// An attribute's value: imported ones through the per-entry cache.
    private func value<S: PredicateSubject>(_ attribute: MetadataAttribute, _ subject: S) -> AttributeValue? {
        guard attribute.isImported else { return attribute.value(of: subject) }
        if cachedImported == nil { cachedImported = .some(subject.imported()) }
        return cachedImported??[attribute]
    }

    private func metadata<S: PredicateSubject>(_ subject: S) -> EntryMetadata? {
        if let cachedMetadata { return cachedMetadata }
        let value = subject.metadata()
        cachedMetadata = .some(value)
        return value
    }

    @inline(__always)
    private func evaluateTest<S: PredicateSubject>(_ test: CompiledPredicate.Test, _ subject: S) -> Bool {
        switch test.kind {
        case .numberRange(let lower, let lowerInclusive, let upper, let upperInclusive):
            guard let value = number(test, subject) else { return false }
            if let lower, lowerInclusive ? value < lower : value <= lower { return false }
            if let upper, upperInclusive ? value > upper : value >= upper { return false }
            return true
        case .numberSet(let values):
            guard let value = number(test, subject) else { return false }
            return values.contains(value)
        case .dateRange(let lower, let lowerInclusive, let upper, let upperInclusive):
            guard let value = date(test, subject) else { return false }
            if let lower, lowerInclusive ? value < lower : value <= lower { return false }
            if let upper, upperInclusive ? value > upper : value >= upper { return false }
            return true
        case .dateSet(let values):
            guard let value = date(test, subject) else { return false }
            return values.contains(value)
        case .boolean(let wanted):
            return value(test.attribute, subject) == .bool(wanted)
        case .exists:
            switch test.field {
            case .size: return subject.kind != .folder && metadata(subject)?.size != nil
            case .creationDate, .contentChangeDate: return date(test, subject) != nil
            default: return value(test.attribute, subject) != nil
            }
        case .pattern, .suffixes, .stringSet, .regex, .words, .within:
            if test.field == .contentTypeTree {
                // A list: the test holds for one element, or for every one.
                let type = subject.withName { name, _ in ContentType.type(ofName: name, kind: subject.kind) }
                let tree = ContentType.types[type].treeBytes
                let passesElement = { (identifier: [UInt8]) in
                    identifier.withUnsafeBytes { self.passes(test.kind, $0, isASCII: true) }
                }
                return test.quantifier == .everyElement
                    ? tree.allSatisfy(passesElement) : tree.contains(where: passesElement)
            }
            if test.attribute.isList {
                // Imported lists (authors, tags, codecs): per element, too.
                guard case .list(let strings)? = value(test.attribute, subject) else { return false }
                let passesElement = { (string: String) in
                    let bytes = Array(string.utf8)
                    return bytes.withUnsafeBytes { self.passes(test.kind, $0, isASCII: NameBytes.isASCII($0)) }
                }
                return test.quantifier == .everyElement
                    ? strings.allSatisfy(passesElement) : strings.contains(where: passesElement)
            }
            if case .words(let matcher, _) = test.kind, test.attribute == .textContent,
                let decided = subject.decidedTextWords(matcher)
            {
                return decided
            }
            return withText(test, subject) { text, isASCII in passes(test.kind, text, isASCII: isASCII) }
        }
    }

    /// A string test on one text.
    @inline(__always)
    private func passes(_ kind: CompiledPredicate.Test.Kind, _ text: UnsafeRawBufferPointer, isASCII: Bool) -> Bool {
        switch kind {
        case .pattern(let matcher): return match(matcher, text, isASCII: isASCII)
        case .suffixes(let matchers): return matchers.contains { match($0, text, isASCII: isASCII) }
        case .stringSet(let set): return contains(set, text, isASCII: isASCII)
        case .regex(let regex): return regex.matches(text)
        case .words(let matcher, let spans): return matchesWords(matcher, spans, text, isASCII: isASCII)
        case .within(let literal):
            let folder = folder(for: literal.options)
            folder.fold(text)
            return literal.contains(folder.folded.bytes)
        default: return false
        }
    }

    /// A number attribute's value: the size from the metadata, any other
    /// (a ubiquitous percentage) from the attribute table.
    private func number<S: PredicateSubject>(_ test: CompiledPredicate.Test, _ subject: S) -> Double? {
        if test.field == .size {
            guard subject.kind != .folder, let size = metadata(subject)?.size else { return nil }
            return Double(size)
        }
        return value(test.attribute, subject)?.number
    }

    private func date<S: PredicateSubject>(_ test: CompiledPredicate.Test, _ subject: S) -> Int64? {
        guard test.field == .creationDate || test.field == .contentChangeDate else {
            guard case .date(let time)? = value(test.attribute, subject) else { return nil }
            return time.nanosecondsSinceEpoch
        }
        let field = test.field
        guard let metadata = metadata(subject) else { return nil }
        let time = field == .creationDate ? metadata.birthTime : metadata.modificationTime
        return time?.nanosecondsSinceEpoch
    }

    /// Calls `body` with the attribute's string value (false when it has none).
    private func withText<S: PredicateSubject>(
        _ test: CompiledPredicate.Test, _ subject: S, _ body: (UnsafeRawBufferPointer, Bool) -> Bool
    ) -> Bool {
        switch test.field {
        case .name:
            return subject.withName(body)
        case .path:
            path.removeAll(keepingCapacity: true)
            subject.appendPath(to: &path)
            return path.withUnsafeBytes { body($0, NameBytes.isASCII($0)) }
        case .url:
            path.removeAll(keepingCapacity: true)
            subject.appendURLPath(to: &path)
            FileURL.encode(path, isFolder: subject.kind == .folder, into: &url)
            return url.withUnsafeBytes { body($0, true) }
        case .contentType:
            let type = subject.withName { name, _ in ContentType.type(ofName: name, kind: subject.kind) }
            return ContentType.types[type].identifierBytes.withUnsafeBytes { body($0, true) }
        case .displayName:
            let isFolder = subject.kind == .folder
            return subject.withName { name, isASCII in body(DisplayName.range(of: name, isFolder: isFolder), isASCII) }
        default:
            guard case .text(let bytes)? = value(test.attribute, subject) else { return false }
            return bytes.withUnsafeBytes { body($0, NameBytes.isASCII($0)) }
        }
    }

    package func folder(for options: StringCompareOptions) -> UnicodeFolder {
        let options = options.folding
        let slot = Int(options.rawValue)
        if let existing = folders[slot] { return existing }
        let made = UnicodeFolder(options: options)
        folders[slot] = made
        return made
    }

    @inline(__always)
    private func match(_ matcher: NameMatcher, _ text: UnsafeRawBufferPointer, isASCII: Bool) -> Bool {
        if isASCII { return matcher.matchesASCII(text) }
        if let decided = matcher.decideWithoutFolding(text) { return decided }
        return matcher.matchesFolding(text, folder: folder(for: matcher.options))
    }

    /// `[w]`: whether the pattern matches the text from some word start to
    /// some word end (so it may span several words, as `"I love*"w` does).
    private func matchesWords(
        _ matcher: NameMatcher, _ spans: WordSpans, _ text: UnsafeRawBufferPointer, isASCII: Bool
    ) -> Bool {
        if isASCII, spans.maximumWords == 1, !spans.splitsCamelCase, matcher.literalIsASCII {
            // mdfind's common case, a word or word prefix in ASCII text:
            // find the literal, then check it starts (and for a whole word,
            // ends) a word, without splitting the whole text.
            switch matcher.shape {
            case .prefix(let literal):
                return WordBoundaries.asciiWord(
                    literal, in: text, wholeWord: false, ignoringCase: matcher.options.contains(.caseInsensitive))
            case .exact(let literal):
                return WordBoundaries.asciiWord(
                    literal, in: text, wholeWord: true, ignoringCase: matcher.options.contains(.caseInsensitive))
            default:
                break
            }
        }
        WordBoundaries.find(
            in: text, splitsCamelCase: spans.splitsCamelCase, starts: &wordStarts, ends: &wordEnds)
        // Word i runs from starts[i] to ends[i]; a span of n words from
        // starts[i] to ends[i + n - 1].
        for i in wordStarts.indices {
            let last = spans.maximumWords.map { min(wordEnds.count, i + $0) } ?? wordEnds.count
            for j in i..<last {
                let span = UnsafeRawBufferPointer(rebasing: text[wordStarts[i]..<wordEnds[j]])
                if match(matcher, span, isASCII: isASCII) { return true }
            }
        }
        return false
    }

    /// Whether a name is in an `IN` set, folding it when the set needs.
    @inline(__always)
    func contains(_ set: StringSet, _ text: UnsafeRawBufferPointer, isASCII: Bool) -> Bool {
        if isASCII && set.options.isEmpty { return set.contains(folded: text) }
        let folder = folder(for: set.options)
        folder.fold(text)
        return set.contains(folded: UnsafeRawBufferPointer(folder.folded.bytes))
    }
}

/// Which runs of words a `[w]` test tries.
///
/// On names (short), any run: `MyReport` is `My` and `Report`, and the
/// pattern may cover several words. On a file's text (up to a megabyte),
/// words are runs of letters and digits only, as the full-text index
/// tokenizes them (no split inside `camelCase`), and a run is at most as
/// many words as the pattern has, so the test is linear in the text
/// (`'invoice*'cdw` tries each word once, `'tax retu*'cdw` each pair).
struct WordSpans: Hashable, Sendable {
    var splitsCamelCase: Bool
    /// The most words a run may have; nil for any.
    var maximumWords: Int?

    package static let name = WordSpans(splitsCamelCase: true, maximumWords: nil)

    /// For a pattern on text: as many words as the pattern holds (at least
    /// one).
    static func text(pattern: [UInt8]) -> WordSpans {
        var starts: [Int] = []
        var ends: [Int] = []
        pattern.withUnsafeBytes { WordBoundaries.find(in: $0, splitsCamelCase: false, starts: &starts, ends: &ends) }
        return WordSpans(splitsCamelCase: false, maximumWords: max(1, starts.count))
    }
}

/// Where words start and end in a text, for mdfind's `w` modifier: a word
/// is a run of letters and digits (with the marks that follow them); with
/// `splitsCamelCase`, a new word also starts where a lower-case letter is
/// followed by an upper-case one (`MyReport` is `My` and `Report`). Bytes
/// that are not UTF-8 separate words. `starts[i]` and `ends[i]` bound word
/// i.
enum WordBoundaries {
    /// Whether ASCII `text` has a word (a run of letters and digits, no
    /// split inside camelCase) that starts with `literal` (is it, with
    /// `wholeWord`); `literal` is lower-case when `ignoringCase`.
    static func asciiWord(
        _ literal: [UInt8], in text: UnsafeRawBufferPointer, wholeWord: Bool, ignoringCase: Bool
    ) -> Bool {
        let n = literal.count
        guard n > 0 else { return false }
        guard text.count >= n else { return false }
        @inline(__always) func isWordByte(_ b: UInt8) -> Bool { b &- 0x30 < 10 || (b | 0x20) &- 0x61 < 26 }
        @inline(__always) func fold(_ b: UInt8) -> UInt8 { ignoringCase && b &- 0x41 < 26 ? b | 0x20 : b }
        return literal.withUnsafeBufferPointer { pattern in
            let first = pattern[0]
            var p = 0
            let last = text.count - n
            while p <= last {
                if fold(text[p]) == first && (p == 0 || !isWordByte(text[p - 1])) {
                    var k = 1
                    while k < n && fold(text[p + k]) == pattern[k] { k += 1 }
                    if k == n && (!wholeWord || p + n == text.count || !isWordByte(text[p + n])) { return true }
                }
                p += 1
            }
            return false
        }
    }

    static func find(
        in text: UnsafeRawBufferPointer, splitsCamelCase: Bool = true, starts: inout [Int], ends: inout [Int]
    ) {
        starts.removeAll(keepingCapacity: true)
        ends.removeAll(keepingCapacity: true)
        var inWord = false
        var previousLower = false
        var i = 0
        while i < text.count {
            let byte = text[i]
            if byte < 0x80 {
                // ASCII, most of most texts: classified without decoding.
                let isLower = byte &- 0x61 < 26
                let isUpper = byte &- 0x41 < 26
                if isLower || isUpper || byte &- 0x30 < 10 {
                    if !inWord || (splitsCamelCase && previousLower && isUpper) {
                        if inWord { ends.append(i) }
                        starts.append(i)
                        inWord = true
                    }
                    previousLower = isLower
                } else {
                    if inWord { ends.append(i) }
                    inWord = false
                    previousLower = false
                }
                i += 1
                continue
            }
            let (unit, length) = UTF8ByteDecoder.decode(text, at: i)
            var isWord = false
            var isLower = false
            var isUpper = false
            var isMark = false
            if case .scalar(let scalar) = unit {
                if scalar.value < 0x80 {
                    let b = UInt8(scalar.value)
                    isLower = b &- 0x61 < 26
                    isUpper = b &- 0x41 < 26
                    isWord = isLower || isUpper || b &- 0x30 < 10
                } else {
                    let properties = scalar.properties
                    switch properties.generalCategory {
                    case .nonspacingMark, .spacingMark, .enclosingMark: isMark = true
                    default: break
                    }
                    isLower = properties.isLowercase
                    isUpper = properties.isUppercase
                    isWord = properties.isAlphabetic || properties.numericType != nil
                }
            }
            if isMark && inWord {
                // A combining mark belongs to the letter before it.
            } else if isWord && (!inWord || (splitsCamelCase && previousLower && isUpper)) {
                if inWord { ends.append(i) }
                starts.append(i)
                inWord = true
                previousLower = isLower
            } else if isWord {
                previousLower = isLower
            } else {
                if inWord { ends.append(i) }
                inWord = false
                previousLower = false
            }
            i += length
        }
        if inWord { ends.append(text.count) }
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

/// `file://` URLs for `kMDItemURL`, percent-encoded as
/// `URL(fileURLWithPath:).absoluteString` writes them (what a path may hold
/// as it is, RFC 3986's unreserved characters, sub-delimiters, `:`, `@`
/// and `/`, kept), with a trailing `/` for folders. Another host's path
/// (`NAME:/path`, as searches across hosts name it) is `file://NAME/path`
/// (RFC 8089), as text (`AttributeValue.fileURL`).
enum FileURL {
    static func encode(_ path: [UInt8], isFolder: Bool, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out += Array("file://".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        var path = path[...]
        if let host = host(of: path) {
            out += host
            path = path[(host.count + 1)...]
        }
        for byte in path {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"),
                // What a path may hold as it is (RFC 3986's sub-delimiters,
                // `:` and `@`), as Foundation leaves them.
                UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
                UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
                UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        if isFolder && out.last != UInt8(ascii: "/") { out.append(UInt8(ascii: "/")) }
    }

    /// The host of a path that names one (`NAME:/path`: a host name, at
    /// most 63 letters, digits, `.`, `_` or `-`, not starting with one of
    /// the last three); nil for a path of this machine (it starts with
    /// `/`).
    static func host(of path: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard let first = path.first, first != UInt8(ascii: "/"),
            let colon = path.prefix(64).firstIndex(of: UInt8(ascii: ":")), colon > path.startIndex,
            path.index(after: colon) < path.endIndex, path[path.index(after: colon)] == UInt8(ascii: "/")
        else { return nil }
        let name = path[..<colon]
        func allowed(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): byte != name.first
            default: false
            }
        }
        return name.allSatisfy(allowed) ? name : nil
    }
}
