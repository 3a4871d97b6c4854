import Foundation

/// Turns a name into its comparison form: canonical decomposition (NFD),
/// then case folding for `[c]` and removal of combining marks for `[d]`.
///
/// Each thread owns one folder per option set. Non-ASCII scalars are mapped
/// through Foundation once and memoised, so after warm-up folding a name
/// allocates nothing. Bytes that are not UTF-8 pass through unchanged, so
/// such names still match byte-wise. The folded bytes come with grapheme
/// boundaries: a literal must start and end on one and `?` spans one cluster
/// (a base character and its combining marks), so `cafe*` does not match a
/// decomposed `café`.
final class UnicodeFolder {
    let options: StringCompareOptions

    /// Folded bytes of the last `fold` call.
    private(set) var bytes: [UInt8] = []
    /// `boundaries[i]`: a character (grapheme cluster) starts at byte `i`;
    /// `boundaries[bytes.count]` is true.
    private(set) var boundaries: [Bool] = []

    /// A folded unit: scalar value (or 0x8000_0000 | byte for a raw byte),
    /// its combining class in bits 32-39, and bit 40 set when it extends the
    /// previous character.
    private var units: [UInt64] = []
    private var memo: [UInt32: (start: Int32, count: Int32)] = [:]
    private var pool: [UInt64] = []

    init(options: StringCompareOptions) {
        self.options = options
    }

    /// Folds `input` into `bytes` and `boundaries`.
    func fold(_ input: UnsafeRawBufferPointer) {
        units.removeAll(keepingCapacity: true)
        let lower = options.contains(.caseInsensitive)
        var i = 0
        while i < input.count {
            let b = input[i]
            if b < 0x80 {
                let folded = lower && b &- 0x41 < 26 ? b | 0x20 : b
                units.append(UInt64(folded))
                i += 1
                continue
            }
            let (unit, length) = UTF8ByteDecoder.decode(input, at: i)
            i += length
            switch unit {
            case .invalid(let byte):
                units.append(0x8000_0000 | UInt64(byte))
            case .scalar(let scalar):
                appendMapping(of: scalar)
            }
        }
        reorderCombiningMarks()
        encode()
    }

    private func appendMapping(of scalar: Unicode.Scalar) {
        if let entry = memo[scalar.value] {
            for k in 0..<Int(entry.count) { units.append(pool[Int(entry.start) + k]) }
            return
        }
        let start = pool.count
        var text = String(Character(scalar))
        var foundationOptions: String.CompareOptions = []
        if options.contains(.caseInsensitive) { foundationOptions.insert(.caseInsensitive) }
        if options.contains(.diacriticInsensitive) { foundationOptions.insert(.diacriticInsensitive) }
        if !foundationOptions.isEmpty { text = text.folding(options: foundationOptions, locale: nil) }
        for u in text.decomposedStringWithCanonicalMapping.unicodeScalars {
            let properties = u.properties
            let category = properties.generalCategory
            if options.contains(.diacriticInsensitive) && (category == .nonspacingMark || category == .enclosingMark) {
                continue
            }
            let ccc = UInt64(properties.canonicalCombiningClass.rawValue)
            let extends =
                ccc != 0 || category == .nonspacingMark || category == .enclosingMark
                || category == .spacingMark || u.value == 0x200D
            pool.append(UInt64(u.value) | ccc << 32 | (extends ? 1 << 40 : 0))
        }
        memo[scalar.value] = (Int32(start), Int32(pool.count - start))
        for k in start..<pool.count { units.append(pool[k]) }
    }

    /// Canonical ordering: within each run of combining marks, a stable sort
    /// by combining class (what makes NFD unique).
    private func reorderCombiningMarks() {
        var i = 1
        while i < units.count {
            let ccc = (units[i] >> 32) & 0xFF
            if ccc != 0 {
                var j = i
                while j > 0, case let previous = (units[j - 1] >> 32) & 0xFF, previous > ccc {
                    units.swapAt(j, j - 1)
                    j -= 1
                }
            }
            i += 1
        }
    }

    private func encode() {
        bytes.removeAll(keepingCapacity: true)
        boundaries.removeAll(keepingCapacity: true)
        for unit in units {
            let value = UInt32(truncatingIfNeeded: unit)
            let startsCharacter = unit & (1 << 40) == 0
            let before = bytes.count
            if value & 0x8000_0000 != 0 {
                bytes.append(UInt8(truncatingIfNeeded: value))
            } else if value < 0x80 {
                bytes.append(UInt8(value))
            } else if value < 0x800 {
                bytes.append(UInt8(0xC0 | value >> 6))
                bytes.append(UInt8(0x80 | value & 0x3F))
            } else if value < 0x10000 {
                bytes.append(UInt8(0xE0 | value >> 12))
                bytes.append(UInt8(0x80 | (value >> 6) & 0x3F))
                bytes.append(UInt8(0x80 | value & 0x3F))
            } else {
                bytes.append(UInt8(0xF0 | value >> 18))
                bytes.append(UInt8(0x80 | (value >> 12) & 0x3F))
                bytes.append(UInt8(0x80 | (value >> 6) & 0x3F))
                bytes.append(UInt8(0x80 | value & 0x3F))
            }
            boundaries.append(startsCharacter)
            for _ in before + 1..<bytes.count { boundaries.append(false) }
        }
        boundaries.append(true)
    }

    /// Folds a pattern literal once, at compile time.
    func folded(_ literal: [UInt8]) -> [UInt8] {
        literal.withUnsafeBytes { fold($0) }
        return bytes
    }
}
