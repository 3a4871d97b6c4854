import MDQSystem

/// Hashing and comparison of raw name bytes, for the (parent, name) table.
enum NameBytes {
    /// A 64-bit hash of a parent id and a name, 8 bytes at a time.
    @inline(__always)
    static func hash(parent: UInt32, name: UnsafeRawBufferPointer) -> UInt64 {
        var h = (UInt64(parent) &+ 0x9E37_79B9) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(name.count)
        guard let base = name.baseAddress else { return h }
        let n = name.count
        var i = 0
        while i + 8 <= n {
            h = (h ^ base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            h ^= h &>> 31
            i += 8
        }
        if i < n {
            var tail: UInt64 = 0
            while i < n {
                tail = tail &<< 8 | UInt64(base.load(fromByteOffset: i, as: UInt8.self))
                i += 1
            }
            h = (h ^ tail) &* 0x94D0_49BB_1331_11EB
        }
        h ^= h &>> 32
        h &*= 0xFF51_AFD7_ED55_8CCD
        h ^= h &>> 29
        return h
    }

    /// Byte equality of two buffers of the same length, 8 bytes at a time.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        var i = 0
        while i + 8 <= count {
            if a.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                != b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            {
                return false
            }
            i += 8
        }
        while i < count {
            if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
            i += 1
        }
        return true
    }

    /// Whether every byte is below 0x80.
    @inline(__always)
    static func isASCII(_ name: UnsafeRawBufferPointer) -> Bool {
        guard let base = name.baseAddress else { return true }
        let n = name.count
        var i = 0
        while i + 8 <= n {
            if base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            i += 8
        }
        while i < n {
            if base.load(fromByteOffset: i, as: UInt8.self) >= 0x80 { return false }
            i += 1
        }
        return true
    }
}
