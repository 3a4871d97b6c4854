/// A 64-bit checksum of a byte stream (the xxHash64 algorithm), fed in
/// pieces: detects a truncated, corrupted or mixed-up snapshot file. Not a
/// cryptographic hash: it guards against accidents, not adversaries (the
/// snapshot is private to its user).
package struct Checksum64 {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    private var lanes: (UInt64, UInt64, UInt64, UInt64)
    private var buffer: [UInt8] = []
    private var length: UInt64 = 0
    private let seed: UInt64

    package init(seed: UInt64 = 0) {
        self.seed = seed
        lanes = (
            seed &+ Self.prime1 &+ Self.prime2, seed &+ Self.prime2, seed, seed &- Self.prime1
        )
        buffer.reserveCapacity(32)
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ lane: UInt64) -> UInt64 {
        let mixed = accumulator &+ lane &* prime2
        return ((mixed << 31) | (mixed >> 33)) &* prime1
    }

    @inline(__always)
    private static func merge(_ accumulator: UInt64, _ lane: UInt64) -> UInt64 {
        (accumulator ^ round(0, lane)) &* prime1 &+ prime4
    }

    /// Feeds bytes.
    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        length &+= UInt64(bytes.count)
        var start = 0
        if !buffer.isEmpty {
            let take = min(32 - buffer.count, bytes.count)
            buffer += bytes[0..<take]
            start = take
            guard buffer.count == 32 else { return }
            buffer.withUnsafeBytes { consumeStripes($0) }
            buffer.removeAll(keepingCapacity: true)
        }
        let whole = (bytes.count - start) / 32 * 32
        if whole > 0 { consumeStripes(UnsafeRawBufferPointer(rebasing: bytes[start..<start + whole])) }
        buffer += bytes[(start + whole)...]
    }

    private mutating func consumeStripes(_ bytes: UnsafeRawBufferPointer) {
        var (a, b, c, d) = lanes
        var offset = 0
        while offset < bytes.count {
            a = Self.round(a, bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            b = Self.round(b, bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            c = Self.round(c, bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
            d = Self.round(d, bytes.loadUnaligned(fromByteOffset: offset + 24, as: UInt64.self))
            offset += 32
        }
        lanes = (a, b, c, d)
    }

    /// The checksum of everything fed so far.
    package func finalize() -> UInt64 {
        var hash: UInt64
        if length >= 32 {
            let (a, b, c, d) = lanes
            hash =
                ((a << 1) | (a >> 63)) &+ ((b << 7) | (b >> 57)) &+ ((c << 12) | (c >> 52)) &+ ((d << 18) | (d >> 46))
            hash = Self.merge(hash, a)
            hash = Self.merge(hash, b)
            hash = Self.merge(hash, c)
            hash = Self.merge(hash, d)
        } else {
            hash = seed &+ Self.prime5
        }
        hash &+= length
        buffer.withUnsafeBytes { tail in
            var offset = 0
            while offset + 8 <= tail.count {
                let lane = Self.round(0, tail.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                hash ^= lane
                hash = ((hash << 27) | (hash >> 37)) &* Self.prime1 &+ Self.prime4
                offset += 8
            }
            if offset + 4 <= tail.count {
                hash ^= UInt64(tail.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) &* Self.prime1
                hash = ((hash << 23) | (hash >> 41)) &* Self.prime2 &+ Self.prime3
                offset += 4
            }
            while offset < tail.count {
                hash ^= UInt64(tail[offset]) &* Self.prime5
                hash = ((hash << 11) | (hash >> 53)) &* Self.prime1
                offset += 1
            }
        }
        hash ^= hash >> 33
        hash &*= Self.prime2
        hash ^= hash >> 29
        hash &*= Self.prime3
        hash ^= hash >> 32
        return hash
    }
}

/// `withUnsafeBytes` for typed throws (the standard one rethrows untyped).
package func withBytes<Result, Failure: Error>(
    of array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
) throws(Failure) -> Result {
    let outcome: Swift.Result<Result, Failure> = array.withUnsafeBytes { bytes in
        Swift.Result { () throws(Failure) -> Result in try body(bytes) }
    }
    return try outcome.get()
}
