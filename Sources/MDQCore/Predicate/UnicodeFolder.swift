import Foundation
import MDQSystem

/// Turns a name into its comparison form: canonical decomposition (NFD),
/// then case folding for `[c]` and removal of combining marks for `[d]`.
///
/// Each thread owns one folder per option set. Non-ASCII scalars are mapped
/// through Foundation once and memoised, so after warm-up folding a name
/// allocates nothing. Bytes that are not UTF-8 pass through unchanged, so
/// such names still match byte-wise. The folded bytes come with extended
/// grapheme cluster boundaries (`GraphemeBreak`): a literal must start and
/// end on one and `?` spans one cluster (a letter and its marks, a Hangul
/// syllable's jamo, an emoji sequence, a flag), so `cafe*` does not match
/// a decomposed `café` and `???.txt` matches `한국어.txt`.
package final class UnicodeFolder {
    let options: StringCompareOptions

    /// Output of the last `fold`: the folded bytes, and `boundaries[i]`
    /// true where a character (grapheme cluster) starts at byte `i`, with
    /// `boundaries[count]` true. Valid until the next `fold`.
    private var bytes: UnsafeMutableBufferPointer<UInt8>
    private var boundaries: UnsafeMutableBufferPointer<Bool>
    private var count = 0

    /// A folded unit: scalar value (or 0x8000_0000 | byte for a raw byte),
    /// its combining class in bits 32-39, and its grapheme break class in
    /// bits 40-47. Used only when marks need reordering.
    private var units: UnsafeMutableBufferPointer<UInt64>

    /// How one scalar folds: its units, and the same already encoded as
    /// UTF-8 with boundary flags, so the common case is a copy.
    private struct Mapping {
        var unitStart: Int32
        var unitCount: UInt8
        var byteCount: UInt8
        /// Combining classes of the first and last unit.
        var firstClass: UInt8
        var lastClass: UInt8
        /// Grapheme break classes of the first and last unit.
        var firstBreak: GraphemeBreak.Class
        var lastBreak: GraphemeBreak.Class
        /// How the units after the first move the break state: not at all
        /// (one unit), as marks do, by clearing it, or only unit by unit.
        var tail: Tail
        /// Bit `c` set when, with a clear state and a scalar of class `c`
        /// before, the mapping starts a character and leaves the state clear.
        var fastAfter: UInt32
        var byteStart: Int32
        var isMapped: Bool

        enum Tail: UInt8 {
            case none, marks, clears, mixed
        }

        static let unmapped = Mapping(
            unitStart: 0, unitCount: 0, byteCount: 0, firstClass: 0, lastClass: 0, firstBreak: .other,
            lastBreak: .other, tail: .none, fastAfter: 0, byteStart: 0, isMapped: false)
    }

    /// Per scalar, its mapping, in pages of 256 scalars allocated on
    /// first use (held by `let`: reads are plain loads).
    private let pages: UnsafeMutablePointer<UnsafeMutablePointer<Mapping>?>
    private static let pageCount = 0x110000 >> 8
    private var unitPool: [UInt64] = []
    /// Encoded mappings and their boundary flags, grown by `map`.
    private var bytePool = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 4096)
    private var boundaryPool = UnsafeMutableBufferPointer<Bool>.allocate(capacity: 4096)
    private var poolCount = 0

    package init(options: StringCompareOptions) {
        self.options = options
        bytes = .allocate(capacity: 1024)
        boundaries = .allocate(capacity: 1025)
        units = .allocate(capacity: 1024)
        pages = .allocate(capacity: Self.pageCount)
        pages.initialize(repeating: nil, count: Self.pageCount)
    }

    deinit {
        bytes.deallocate()
        boundaries.deallocate()
        units.deallocate()
        bytePool.deallocate()
        boundaryPool.deallocate()
        for page in 0..<Self.pageCount { pages[page]?.deallocate() }
        pages.deallocate()
    }

    /// The folded bytes and boundaries of the last `fold`.
    var folded: (bytes: UnsafeBufferPointer<UInt8>, boundaries: UnsafeBufferPointer<Bool>) {
        (UnsafeBufferPointer(rebasing: bytes[..<count]), UnsafeBufferPointer(rebasing: boundaries[...count]))
    }

    /// Folds `input`; read the result through `folded`.
    func fold(_ input: UnsafeRawBufferPointer) {
        // A scalar (1 to 4 bytes) folds to at most 18 units of 4 bytes.
        let capacity = input.count * 72
        if bytes.count < capacity {
            bytes.deallocate()
            boundaries.deallocate()
            units.deallocate()
            bytes = .allocate(capacity: capacity)
            boundaries = .allocate(capacity: capacity + 1)
            units = .allocate(capacity: capacity)
        }
        if !foldInOrder(input) { foldReordering(input) }
    }

    /// Folds by copying each scalar's encoded mapping; false (and nothing
    /// usable) when combining marks meet out of canonical order. A mapping's
    /// inner boundaries are copied with it; the one before it is decided
    /// here, from the break class of what came before.
    private func foldInOrder(_ input: UnsafeRawBufferPointer) -> Bool {
        let out = bytes.baseAddress!
        let starts = boundaries.baseAddress!
        let lower = options.contains(.caseInsensitive)
        var pool = bytePool.baseAddress!
        var flags = boundaryPool.baseAddress!
        var n = 0
        var lastClass: UInt8 = 0
        // `stateIsClear`: the state is as at the start of text (as after any
        // ordinary character). Then most joins are decided by a bit the
        // mapping carries, without the rules, and leave the state clear.
        var lastBreak = GraphemeBreak.Class.control  // the start of text: a boundary
        var state = GraphemeBreak.State()
        var stateIsClear = true
        var i = 0
        while i < input.count {
            let b = input[i]
            if b < 0x80 {
                out[n] = lower && b &- 0x41 < 26 ? b | 0x20 : b
                if b >= 0x20 && b != 0x7F && lastBreak != .prepend {
                    // A printable ASCII character starts a character after
                    // anything but a prepended mark, and ends every sequence.
                    starts[n] = true
                    lastBreak = .other
                    if !stateIsClear {
                        state = GraphemeBreak.State()
                        stateIsClear = true
                    }
                } else {
                    starts[n] = Self.joinASCII(b, after: &lastBreak, &state)
                    stateIsClear = true
                }
                n += 1
                i += 1
                lastClass = 0
                continue
            }
            // Two- and three-byte sequences (most scripts) decode here, in
            // the loop; four-byte ones and invalid bytes through the decoder.
            var value: UInt32 = 0
            var length = 0
            if b < 0xE0 {
                if b >= 0xC2, i + 1 < input.count, input[i + 1] & 0xC0 == 0x80 {
                    value = UInt32(b & 0x1F) << 6 | UInt32(input[i + 1] & 0x3F)
                    length = 2
                }
            } else if b < 0xF0, i + 2 < input.count, input[i + 1] & 0xC0 == 0x80, input[i + 2] & 0xC0 == 0x80 {
                value = UInt32(b & 0x0F) << 12 | UInt32(input[i + 1] & 0x3F) << 6 | UInt32(input[i + 2] & 0x3F)
                if value >= 0x800 && value & 0xF800 != 0xD800 { length = 3 }
            }
            let unit: UTF8ByteDecoder.Unit
            if length > 0 {
                unit = .scalar(Unicode.Scalar(value).unsafelyUnwrapped)
            } else {
                (unit, length) = UTF8ByteDecoder.decode(input, at: i)
            }
            i += length
            switch unit {
            case .invalid(let byte):
                out[n] = byte
                starts[n] = true
                state = GraphemeBreak.State()
                stateIsClear = true
                lastBreak = .control
                n += 1
                lastClass = 0
            case .scalar(let scalar):
                var mapping = pages[Int(scalar.value >> 8)]?[Int(scalar.value & 0xFF)] ?? .unmapped
                if !mapping.isMapped {
                    mapping = map(scalar)
                    pool = bytePool.baseAddress!
                    flags = boundaryPool.baseAddress!
                }
                if mapping.unitCount == 0 { continue }
                if mapping.firstClass != 0 && lastClass > mapping.firstClass { return false }
                let length = Int(mapping.byteCount)
                let start = Int(mapping.byteStart)
                (out + n).update(from: pool + start, count: length)
                (starts + n).update(from: flags + start, count: length)
                // Decided by the mapping's bit: it starts a character (its
                // first flag, copied, says so) and leaves the state clear.
                if !stateIsClear || mapping.fastAfter & 1 << UInt32(lastBreak.rawValue) == 0 {
                    starts[n] = join(mapping, after: lastBreak, &state)
                    stateIsClear = state.isClear
                }
                lastBreak = mapping.lastBreak
                n += length
                lastClass = mapping.lastClass
            }
        }
        starts[n] = true
        count = n
        return true
    }

    /// Whether an ASCII byte starts a character after `previous`, moving
    /// the state past it; out of line, as it is rare in names.
    @inline(never)
    private static func joinASCII(
        _ b: UInt8, after previous: inout GraphemeBreak.Class, _ state: inout GraphemeBreak.State
    ) -> Bool {
        let next = GraphemeBreak.asciiClass(b)
        let boundary = GraphemeBreak.isBoundary(previous, next, state)
        state = GraphemeBreak.State()  // no ASCII character continues a tracked sequence
        previous = next
        return boundary
    }

    /// Whether `mapping` starts a character after `previous`, moving the
    /// state past all its units; out of line, for the joins the rules decide.
    @inline(never)
    private func join(
        _ mapping: Mapping, after previous: GraphemeBreak.Class, _ state: inout GraphemeBreak.State
    ) -> Bool {
        let boundary = GraphemeBreak.isBoundary(previous, mapping.firstBreak, state)
        state.advance(mapping.firstBreak)
        switch mapping.tail {
        case .none: break
        case .marks: state.advanceOverMarks()
        case .clears: state = GraphemeBreak.State()
        case .mixed:
            for k in 1..<Int(mapping.unitCount) {
                state.advance(Self.breakClass(unitPool[Int(mapping.unitStart) + k]))
            }
        }
        return boundary
    }

    /// The classes after which, from a clear state, a mapping whose first
    /// unit is of class `first` starts a character and leaves the state
    /// clear; none when its units carry state on.
    private static func fastAfter(_ first: GraphemeBreak.Class, tail: Mapping.Tail) -> UInt32 {
        guard GraphemeBreak.State.clears(first), tail != .mixed else { return 0 }
        var mask: UInt32 = 0
        var previous: UInt8 = 0
        while let c = GraphemeBreak.Class(rawValue: previous) {
            if GraphemeBreak.isBoundary(c, first, GraphemeBreak.State()) { mask |= 1 << UInt32(previous) }
            previous += 1
        }
        return mask
    }

    /// A unit's grapheme break class (bits 40-47).
    @inline(__always)
    private static func breakClass(_ unit: UInt64) -> GraphemeBreak.Class {
        GraphemeBreak.Class(rawValue: UInt8(truncatingIfNeeded: unit >> 40)) ?? .other
    }

    /// Folds through units, reordering combining marks canonically.
    private func foldReordering(_ input: UnsafeRawBufferPointer) {
        let units = self.units.baseAddress!
        var n = 0
        let lower = options.contains(.caseInsensitive)
        var i = 0
        while i < input.count {
            let b = input[i]
            if b < 0x80 {
                let folded = lower && b &- 0x41 < 26 ? b | 0x20 : b
                units[n] = UInt64(folded) | UInt64(GraphemeBreak.asciiClass(b).rawValue) << 40
                n += 1
                i += 1
                continue
            }
            let (unit, length) = UTF8ByteDecoder.decode(input, at: i)
            i += length
            switch unit {
            case .invalid(let byte):
                units[n] = 0x8000_0000 | UInt64(byte) | UInt64(GraphemeBreak.Class.control.rawValue) << 40
                n += 1
            case .scalar(let scalar):
                let mapping = mapping(of: scalar)
                for k in 0..<Int(mapping.unitCount) {
                    units[n] = unitPool[Int(mapping.unitStart) + k]
                    n += 1
                }
            }
        }
        Self.reorderCombiningMarks(units, n)
        count = Self.encode(units, n, into: bytes.baseAddress!, boundaries.baseAddress!)
    }

    @inline(__always)
    private func mapping(of scalar: Unicode.Scalar) -> Mapping {
        if let mapping = pages[Int(scalar.value >> 8)]?[Int(scalar.value & 0xFF)], mapping.isMapped { return mapping }
        return map(scalar)
    }

    private func map(_ scalar: Unicode.Scalar) -> Mapping {
        var text = String(Character(scalar))
        var foundationOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foundationOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foundationOptions.insert(.diacriticInsensitive) }
        if !foundationOptions.isEmpty { text = text.folding(options: foundationOptions, locale: nil) }
        var mapped: [UInt64] = []
        for u in text.decomposedStringWithCanonicalMapping.unicodeScalars {
            let properties = u.properties
            let category = properties.generalCategory
            if options.contains(.diacriticInsensitive) && (category == .nonspacingMark || category == .enclosingMark) {
                continue
            }
            let ccc = UInt64(properties.canonicalCombiningClass.rawValue)
            let breakClass = UInt64(GraphemeBreak.classify(u).rawValue)
            mapped.append(UInt64(u.value) | ccc << 32 | breakClass << 40)
        }
        mapped = Array(mapped.prefix(18))
        var units = mapped
        if poolCount + 73 > bytePool.count {
            func grow<T>(_ buffer: UnsafeMutableBufferPointer<T>) -> UnsafeMutableBufferPointer<T> {
                let bigger = UnsafeMutableBufferPointer<T>.allocate(capacity: buffer.count * 2)
                _ = bigger.initialize(fromContentsOf: buffer)
                buffer.deallocate()
                return bigger
            }
            bytePool = grow(bytePool)
            boundaryPool = grow(boundaryPool)
        }
        // `encode` also flags one past the end; the next mapping overwrites it.
        let byteCount =
            units.isEmpty
            ? 0
            : units.withUnsafeMutableBufferPointer {
                Self.encode(
                    $0.baseAddress!, $0.count, into: bytePool.baseAddress! + poolCount,
                    boundaryPool.baseAddress! + poolCount)
            }
        func classOf(_ unit: UInt64?) -> UInt8 { unit.map { UInt8(truncatingIfNeeded: $0 >> 32) } ?? 0 }
        let tailClasses = mapped.dropFirst().map(Self.breakClass)
        let tail: Mapping.Tail
        if tailClasses.isEmpty {
            tail = .none
        } else if tailClasses.allSatisfy({ $0 == .extend }) {
            tail = .marks
        } else if tailClasses.allSatisfy({ GraphemeBreak.State.clears($0) }) {
            tail = .clears
        } else {
            tail = .mixed
        }
        let mapping = Mapping(
            unitStart: Int32(unitPool.count), unitCount: UInt8(mapped.count), byteCount: UInt8(byteCount),
            firstClass: classOf(mapped.first), lastClass: classOf(mapped.last),
            firstBreak: mapped.first.map(Self.breakClass) ?? .other,
            lastBreak: mapped.last.map(Self.breakClass) ?? .other, tail: tail,
            fastAfter: Self.fastAfter(mapped.first.map(Self.breakClass) ?? .other, tail: tail),
            byteStart: Int32(poolCount), isMapped: true)
        unitPool += mapped
        poolCount += byteCount
        let page = Int(scalar.value >> 8)
        if pages[page] == nil {
            let table = UnsafeMutablePointer<Mapping>.allocate(capacity: 256)
            table.initialize(repeating: .unmapped, count: 256)
            pages[page] = table
        }
        pages[page]![Int(scalar.value & 0xFF)] = mapping
        return mapping
    }

    /// Canonical ordering: within each run of combining marks, a stable sort
    /// by combining class (what makes NFD unique).
    private static func reorderCombiningMarks(_ units: UnsafeMutablePointer<UInt64>, _ n: Int) {
        var i = 1
        while i < n {
            let ccc = (units[i] >> 32) & 0xFF
            if ccc != 0 {
                var j = i
                while j > 0, case let previous = (units[j - 1] >> 32) & 0xFF, previous > ccc {
                    let swapped = units[j]
                    units[j] = units[j - 1]
                    units[j - 1] = swapped
                    j -= 1
                }
            }
            i += 1
        }
    }

    /// Encodes units as UTF-8 (raw bytes as themselves) with a boundary
    /// flag per byte and one past the end; returns the byte count.
    private static func encode(
        _ units: UnsafeMutablePointer<UInt64>, _ n: Int, into out: UnsafeMutablePointer<UInt8>,
        _ starts: UnsafeMutablePointer<Bool>
    ) -> Int {
        var count = 0
        var previous = GraphemeBreak.Class.control  // the start: a boundary
        var state = GraphemeBreak.State()
        for k in 0..<n {
            let unit = units[k]
            let value = UInt32(truncatingIfNeeded: unit)
            let next = breakClass(unit)
            starts[count] = GraphemeBreak.isBoundary(previous, next, state)
            state.advance(next)
            previous = next
            if value & 0x8000_0000 != 0 {
                out[count] = UInt8(truncatingIfNeeded: value)
                count += 1
            } else if value < 0x80 {
                out[count] = UInt8(value)
                count += 1
            } else if value < 0x800 {
                out[count] = UInt8(0xC0 | value >> 6)
                out[count + 1] = UInt8(0x80 | value & 0x3F)
                starts[count + 1] = false
                count += 2
            } else if value < 0x10000 {
                out[count] = UInt8(0xE0 | value >> 12)
                out[count + 1] = UInt8(0x80 | (value >> 6) & 0x3F)
                out[count + 2] = UInt8(0x80 | value & 0x3F)
                starts[count + 1] = false
                starts[count + 2] = false
                count += 3
            } else {
                out[count] = UInt8(0xF0 | value >> 18)
                out[count + 1] = UInt8(0x80 | (value >> 12) & 0x3F)
                out[count + 2] = UInt8(0x80 | (value >> 6) & 0x3F)
                out[count + 3] = UInt8(0x80 | value & 0x3F)
                starts[count + 1] = false
                starts[count + 2] = false
                starts[count + 3] = false
                count += 4
            }
        }
        starts[count] = true
        return count
    }

    /// Folds a pattern literal once, at compile time.
    package func folded(_ literal: [UInt8]) -> [UInt8] {
        literal.withUnsafeBytes { fold($0) }
        return Array(folded.bytes)
    }
}
