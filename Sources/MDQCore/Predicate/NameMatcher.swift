import MDQSystem

/// A string test compiled once: a LIKE-style pattern whose literals are
/// already folded, specialised by shape.
///
/// ASCII names (most names on real disks) are matched in place, byte by
/// byte, with ASCII case folding when `[c]`; no copy, no allocation. Other
/// names are folded first (`UnicodeFolder`) and matched on grapheme
/// boundaries.
package struct NameMatcher: Sendable, Hashable {
    enum Piece: Hashable, Sendable {
        case literal([UInt8])
        case one
    }

    /// The pattern's shape; the first four run a single compare or search.
    enum Shape: Hashable, Sendable {
        case exact([UInt8])
        case prefix([UInt8])
        case suffix([UInt8])
        case contains([UInt8])
        /// `*`: everything matches.
        case anything
        case general
    }

    let options: StringCompareOptions
    let shape: Shape
    /// Runs between stars.
    let segments: [[Piece]]
    /// No leading star: the first segment starts at 0.
    let anchoredStart: Bool
    /// No trailing star: the last segment ends at the end.
    let anchoredEnd: Bool
    /// Every literal byte is ASCII (after folding).
    let literalIsASCII: Bool

    /// Compiles a pattern, folding its literals for `options`.
    package init(_ pattern: LikePattern, options: StringCompareOptions) {
        self.options = options
        let folder = UnicodeFolder(options: options)
        var segments: [[Piece]] = [[]]
        for element in pattern.elements {
            switch element {
            case .any: segments.append([])
            case .one: segments[segments.count - 1].append(.one)
            case .literal(let bytes): segments[segments.count - 1].append(.literal(folder.folded(bytes)))
            }
        }
        anchoredStart = pattern.elements.first != .any
        anchoredEnd = pattern.elements.last != .any || pattern.elements.isEmpty
        // Leading/trailing stars leave empty first/last segments; drop them.
        if !anchoredStart { segments.removeFirst() }
        if !anchoredEnd && !segments.isEmpty { segments.removeLast() }
        self.segments = segments
        // CR and LF join into one character (CR LF), so a literal holding
        // either is not decided from ASCII ends alone.
        literalIsASCII = segments.allSatisfy { segment in
            segment.allSatisfy { piece in
                if case .literal(let bytes) = piece {
                    return bytes.allSatisfy { $0 < 0x80 && $0 != 0x0D && $0 != 0x0A }
                }
                return true
            }
        }

        func single() -> [UInt8]? {
            guard segments.count == 1, segments[0].count == 1, case .literal(let bytes) = segments[0][0] else {
                return nil
            }
            return bytes
        }
        if pattern.elements.isEmpty {
            shape = .exact([])
        } else if segments.isEmpty {
            shape = .anything
        } else if let literal = single() {
            switch (anchoredStart, anchoredEnd) {
            case (true, true): shape = .exact(literal)
            case (true, false): shape = .prefix(literal)
            case (false, true): shape = .suffix(literal)
            case (false, false): shape = .contains(literal)
            }
        } else {
            shape = .general
        }
    }

    /// For a name that is not all ASCII, the answer when its ASCII ends
    /// settle it without folding; nil when only folding can tell.
    ///
    /// Folding maps an ASCII byte to itself (lowercased for `[c]`), never
    /// moves a combining mark across it, and an ASCII character starts a
    /// character unless a prepended mark (`GraphemeBreak.Class.prepend`,
    /// such as U+0600) comes right before it. So a run of ASCII bytes at
    /// either end of the name survives folding unchanged at the same end,
    /// and a literal made of ASCII is compared against that run directly.
    /// Names of mostly ASCII with an accent somewhere (`résumé_2024.png`)
    /// are decided here.
    func decideWithoutFolding(_ name: UnsafeRawBufferPointer) -> Bool? {
        guard literalIsASCII else { return nil }
        let lower = options.contains(.caseInsensitive)
        switch shape {
        case .anything: return true
        case .suffix(let literal): return literal.withUnsafeBytes { Self.decideSuffix(name, $0, lower: lower) }
        case .prefix(let literal): return literal.withUnsafeBytes { Self.decidePrefix(name, $0, lower: lower) }
        case .exact(let literal): return literal.withUnsafeBytes { Self.decideExact(name, $0, lower: lower) }
        case .contains(let literal): return literal.withUnsafeBytes { Self.decideContains(name, $0, lower: lower) }
        case .general:
            // A literal the pattern starts or ends with is necessary.
            if anchoredStart, case .literal(let first)? = segments.first?.first,
                first.withUnsafeBytes({ Self.decidePrefix(name, $0, lower: lower) }) == false
            {
                return false
            }
            if anchoredEnd, case .literal(let last)? = segments.last?.last,
                last.withUnsafeBytes({ Self.decideSuffix(name, $0, lower: lower) }) == false
            {
                return false
            }
            return nil
        }
    }

    /// The length of the run of ASCII bytes at the start of `name`.
    @inline(__always)
    static func leadingASCII(_ name: UnsafeRawBufferPointer) -> Int {
        var run = 0
        while run < name.count && name[run] < 0x80 { run += 1 }
        return run
    }

    /// `decideWithoutFolding` for an ASCII literal that must end the name.
    @inline(__always)
    static func decideSuffix(_ name: UnsafeRawBufferPointer, _ literal: UnsafeRawBufferPointer, lower: Bool) -> Bool? {
        var run = 0
        while run < name.count && name[name.count - 1 - run] < 0x80 { run += 1 }
        let k = min(run, literal.count)
        for i in 0..<k where ASCIIText.fold(name[name.count - k + i], lower) != literal[literal.count - k + i] {
            return false
        }
        guard run >= literal.count else { return nil }
        // The literal starts the run: a prepended mark before it joins it.
        return run == literal.count && prependEnds(name, at: name.count - run) ? nil : true
    }

    /// Whether the scalar ending at byte `index` of `name` is a prepended
    /// mark, which joins the character after it. Such marks lie in a few
    /// blocks only, so most names are ruled out by one lead byte.
    @inline(__always)
    static func prependEnds(_ name: UnsafeRawBufferPointer, at index: Int) -> Bool {
        guard index > 0 else { return false }
        var start = index - 1
        while start > 0 && index - start < 4 && name[start] & 0xC0 == 0x80 { start -= 1 }
        switch name[start] {
        case 0xD8, 0xDB, 0xDC, 0xE0, 0xF0: break
        default: return false
        }
        let (unit, length) = UTF8ByteDecoder.decode(name, at: start)
        guard start + length == index, case .scalar(let scalar) = unit else { return false }
        return GraphemeBreak.classify(scalar) == .prepend
    }

    /// `decideWithoutFolding` for an ASCII literal that must start the name.
    @inline(__always)
    static func decidePrefix(_ name: UnsafeRawBufferPointer, _ literal: UnsafeRawBufferPointer, lower: Bool) -> Bool? {
        let run = leadingASCII(name)
        let k = min(run, literal.count)
        for i in 0..<k where ASCIIText.fold(name[i], lower) != literal[i] { return false }
        // The byte after the literal is ASCII, so a character starts there.
        return literal.count < run ? true : nil
    }

    /// `decideWithoutFolding` for an ASCII literal that must be the name.
    @inline(__always)
    static func decideExact(_ name: UnsafeRawBufferPointer, _ literal: UnsafeRawBufferPointer, lower: Bool) -> Bool? {
        // A last byte that is ASCII is the folded name's last byte (folding
        // maps each scalar alone and leaves ASCII in place): most names end
        // in an ASCII extension, so this settles them without a fold.
        if let last = name.last, last < 0x80, let end = literal.last, ASCIIText.fold(last, lower) != end {
            return false
        }
        let run = leadingASCII(name)
        let k = min(run, literal.count)
        for i in 0..<k where ASCIIText.fold(name[i], lower) != literal[i] { return false }
        // The folded name is at least `run` bytes long.
        return run > literal.count ? false : nil
    }

    /// `decideWithoutFolding` for an ASCII literal anywhere in the name:
    /// an occurrence made of ASCII bytes and followed by an ASCII byte or
    /// the end is an occurrence in the folded name.
    static func decideContains(_ name: UnsafeRawBufferPointer, _ literal: UnsafeRawBufferPointer, lower: Bool) -> Bool?
    {
        let n = literal.count
        guard n > 0 else { return true }
        var at = 0
        while at + n <= name.count {
            // Folding leaves bytes >= 0x80 alone, so equal bytes are ASCII.
            var i = 0
            while i < n && ASCIIText.fold(name[at + i], lower) == literal[i] { i += 1 }
            if i == n && (at + n == name.count || name[at + n] < 0x80) && !prependEnds(name, at: at) { return true }
            at += 1
        }
        return nil
    }

    /// Matches an ASCII name in place.
    @inline(__always)
    func matchesASCII(_ name: UnsafeRawBufferPointer) -> Bool {
        let text = ASCIIText(base: name.baseAddress, count: name.count, lower: options.contains(.caseInsensitive))
        return matches(text)
    }

    /// Matches a name that is not ASCII, folding it with `folder` (which
    /// must have this matcher's options).
    func matchesFolding(_ name: UnsafeRawBufferPointer, folder: UnicodeFolder) -> Bool {
        folder.fold(name)
        let (bytes, boundaries) = folder.folded
        return matches(FoldedText(bytes: bytes, boundaries: boundaries))
    }

    @inline(__always)
    package func matches<T: MatchText>(_ text: T) -> Bool {
        switch shape {
        case .anything:
            return true
        case .exact(let literal):
            return text.count == literal.count && text.matchesLiteral(literal, at: 0)
        case .prefix(let literal):
            return text.count >= literal.count && text.matchesLiteral(literal, at: 0)
        case .suffix(let literal):
            let start = text.count - literal.count
            return start >= 0 && text.isBoundary(start) && text.matchesLiteral(literal, at: start)
        case .contains(let literal):
            return text.find(literal, from: 0) != nil
        case .general:
            return matchesGeneral(text)
        }
    }

    private func matchesGeneral<T: MatchText>(_ text: T) -> Bool {
        var position = 0
        var first = 0
        var last = segments.count
        if anchoredStart {
            guard let end = match(segments[0], in: text, at: 0) else { return false }
            if segments.count == 1 && anchoredEnd { return end == text.count }
            position = end
            first = 1
        }
        if anchoredEnd { last -= 1 }
        if first < last {
            for segment in segments[first..<last] {
                guard let end = findLeftmost(segment, in: text, from: position) else { return false }
                position = end
            }
        }
        guard anchoredEnd, last >= first, last < segments.count else { return true }
        // The last segment must end exactly at the end of the text.
        let segment = segments[last]
        if let length = fixedLength(segment, in: text) {
            let start = text.count - length
            return start >= position && text.isBoundary(start) && match(segment, in: text, at: start) == text.count
        }
        var start = position
        while start <= text.count {
            if text.isBoundary(start), match(segment, in: text, at: start) == text.count { return true }
            start += 1
        }
        return false
    }

    /// The segment's length in bytes when it does not depend on the text
    /// (no `?`, or every character is one byte).
    private func fixedLength<T: MatchText>(_ segment: [Piece], in text: T) -> Int? {
        var length = 0
        for piece in segment {
            switch piece {
            case .literal(let bytes): length += bytes.count
            case .one:
                guard T.isSingleByteCharacters else { return nil }
                length += 1
            }
        }
        return length
    }

    /// Where the segment ends when it matches at `start`, or nil.
    @inline(__always)
    private func match<T: MatchText>(_ segment: [Piece], in text: T, at start: Int) -> Int? {
        var position = start
        for piece in segment {
            switch piece {
            case .literal(let bytes):
                guard position + bytes.count <= text.count, text.matchesLiteral(bytes, at: position) else { return nil }
                position += bytes.count
            case .one:
                guard position < text.count else { return nil }
                position = text.nextBoundary(after: position)
            }
        }
        return position
    }

    private func findLeftmost<T: MatchText>(_ segment: [Piece], in text: T, from start: Int) -> Int? {
        if segment.count == 1, case .literal(let bytes) = segment[0] {
            return text.find(bytes, from: start).map { $0 + bytes.count }
        }
        var position = start
        while position <= text.count {
            if text.isBoundary(position), let end = match(segment, in: text, at: position) { return end }
            position += 1
        }
        return nil
    }
}

/// Text a matcher runs over: bytes already in comparison form, with
/// character boundaries.
package protocol MatchText {
    var count: Int { get }
    /// Whether every character is one byte (ASCII), so `?` is one byte.
    static var isSingleByteCharacters: Bool { get }
    func isBoundary(_ position: Int) -> Bool
    func nextBoundary(after position: Int) -> Int
    /// `literal` occurs at `position` (in bounds) and ends on a boundary.
    func matchesLiteral(_ literal: [UInt8], at position: Int) -> Bool
    /// The leftmost boundary-aligned occurrence at or after `start`.
    func find(_ literal: [UInt8], from start: Int) -> Int?
}

/// An ASCII name matched in place; `[c]` lowercases on the fly.
struct ASCIIText: MatchText {
    let base: UnsafeRawPointer?
    let count: Int
    let lower: Bool

    static var isSingleByteCharacters: Bool { true }

    @inline(__always) func isBoundary(_ position: Int) -> Bool { true }
    @inline(__always) func nextBoundary(after position: Int) -> Int { position + 1 }

    @inline(__always)
    private func byte(_ i: Int) -> UInt8 {
        Self.fold(base.unsafelyUnwrapped.load(fromByteOffset: i, as: UInt8.self), lower)
    }

    /// The byte lowercased when `lower` and it is `A`...`Z`.
    @inline(__always)
    static func fold(_ b: UInt8, _ lower: Bool) -> UInt8 {
        lower && b &- 0x41 < 26 ? b | 0x20 : b
    }

    @inline(__always)
    func matchesLiteral(_ literal: [UInt8], at position: Int) -> Bool {
        literal.withUnsafeBufferPointer { p in
            if !lower, let base {
                return NameBytes.equal(base + position, p.baseAddress!, count: p.count)
            }
            for i in 0..<p.count where byte(position + i) != p[i] { return false }
            return true
        }
    }

    func find(_ literal: [UInt8], from start: Int) -> Int? {
        guard let first = literal.first else { return start <= count ? start : nil }
        var position = start
        let last = count - literal.count
        while position <= last {
            if byte(position) == first && matchesLiteral(literal, at: position) { return position }
            position += 1
        }
        return nil
    }
}

/// A folded name with its grapheme boundaries.
struct FoldedText: MatchText {
    let bytes: UnsafeBufferPointer<UInt8>
    let boundaries: UnsafeBufferPointer<Bool>

    var count: Int { bytes.count }
    static var isSingleByteCharacters: Bool { false }

    @inline(__always) func isBoundary(_ position: Int) -> Bool { boundaries[position] }

    func nextBoundary(after position: Int) -> Int {
        var next = position + 1
        while next < bytes.count && !boundaries[next] { next += 1 }
        return next
    }

    func matchesLiteral(_ literal: [UInt8], at position: Int) -> Bool {
        guard boundaries[position], boundaries[position + literal.count] else { return false }
        return literal.withUnsafeBufferPointer { p in
            NameBytes.equal(bytes.baseAddress! + position, p.baseAddress!, count: p.count)
        }
    }

    func find(_ literal: [UInt8], from start: Int) -> Int? {
        var position = start
        while position + literal.count <= bytes.count {
            if matchesLiteral(literal, at: position) { return position }
            position += 1
        }
        return nil
    }
}
