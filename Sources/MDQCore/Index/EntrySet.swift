/// A set of entry ids (or any small whole numbers) as one bit each: a
/// subscription's members cost an eighth of a byte per index slot.
package struct EntrySet {
    private var words: [UInt64] = []

    package init() {}

    /// An empty set with room for ids below `capacity` (inserting them
    /// never grows it).
    package init(capacity: Int) {
        words = [UInt64](repeating: 0, count: (capacity + 63) / 64)
    }

    package func contains(_ id: UInt32) -> Bool {
        let word = Int(id >> 6)
        return word < words.count && words[word] & (1 << UInt64(id & 63)) != 0
    }

    package mutating func insert(_ id: UInt32) {
        let word = Int(id >> 6)
        if word >= words.count { words += [UInt64](repeating: 0, count: word - words.count + 1) }
        words[word] |= 1 << UInt64(id & 63)
    }

    package mutating func remove(_ id: UInt32) {
        let word = Int(id >> 6)
        guard word < words.count else { return }
        words[word] &= ~(1 << UInt64(id & 63))
    }

    /// Calls `body` with every id in the set, in increasing order.
    package func forEach(_ body: (UInt32) -> Void) {
        for (w, word) in words.enumerated() where word != 0 {
            var bits = word
            while bits != 0 {
                let bit = bits.trailingZeroBitCount
                body(UInt32(w << 6 | bit))
                bits &= bits - 1
            }
        }
    }
}
