import MDQSystem

/// A 64-bit signature per entry of the bigrams of its name, folded for
/// case and diacritics: bit `h(a, b)` is set for every pair of adjacent
/// bytes. A substring query rejects a name with one AND when the name lacks
/// a bigram of the literal (a name of 15 bytes sets about a fifth of the
/// bits, so a 6-letter literal passes about one name in a thousand by
/// chance), instead of folding and searching it.
///
/// Built lazily, a 64 Ki-entry chunk at a time, by the first query that
/// wants it, so an index nobody searches by substring pays nothing; then
/// 8 bytes per entry. An entry's signature is valid while its
/// `EntryBits.hasSignature` is set; renaming clears it.
///
/// Threads scanning disjoint chunks may fill their own chunks concurrently.
final class NameSignatures: @unchecked Sendable {
    private let table: UnsafeMutablePointer<UnsafeMutablePointer<UInt64>?>
    private static let maxChunks = 1 << 12

    package init() {
        table = .allocate(capacity: Self.maxChunks)
        table.initialize(repeating: nil, count: Self.maxChunks)
    }

    deinit {
        for chunk in 0..<Self.maxChunks { table[chunk]?.deallocate() }
        table.deallocate()
    }

    /// The signatures of chunk `chunk`, allocated on first use.
    @inline(__always)
    func chunk(_ chunk: Int) -> UnsafeMutablePointer<UInt64> {
        if let existing = table[chunk] { return existing }
        let made = UnsafeMutablePointer<UInt64>.allocate(capacity: 1 << 16)
        table[chunk] = made
        return made
    }

    /// Bytes allocated so far.
    package var allocatedBytes: Int {
        (0..<Self.maxChunks).reduce(0) { $0 + (table[$1] == nil ? 0 : 8 << 16) }
    }

    /// The bit of a pair of folded bytes.
    @inline(__always)
    static func bit(_ a: UInt8, _ b: UInt8) -> UInt64 {
        1 &<< (((UInt32(a) &<< 8 | UInt32(b)) &* 0x9E37_79B1) &>> 26)
    }

    /// The signature of folded bytes.
    @inline(__always)
    static func signature(_ bytes: UnsafeRawBufferPointer, lowercasingASCII: Bool) -> UInt64 {
        guard bytes.count > 1 else { return 0 }
        var bits: UInt64 = 0
        var previous = ASCIIText.fold(bytes[0], lowercasingASCII)
        for i in 1..<bytes.count {
            let current = ASCIIText.fold(bytes[i], lowercasingASCII)
            bits |= bit(previous, current)
            previous = current
        }
        return bits
    }
}
