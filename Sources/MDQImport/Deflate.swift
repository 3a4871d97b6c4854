import CZlib
import MDQCore
import MDQSystem

/// zlib's deflate for the text the import store keeps: natural text
/// shrinks to a third or less, and a file's text is read back whole (the
/// original length leads, so inflating allocates once).
enum Deflate {
    /// The compressed form: the original length (4 bytes, little-endian),
    /// then the zlib stream.
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        var bound = compressBound(uLong(bytes.count))
        var out = [UInt8](repeating: 0, count: 4 + Int(bound))
        let length = UInt32(truncatingIfNeeded: bytes.count)
        for i in 0..<4 { out[i] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(i))) }
        let status = out.withUnsafeMutableBufferPointer { target in
            bytes.withUnsafeBufferPointer { source in
                compress2(target.baseAddress! + 4, &bound, source.baseAddress, uLong(bytes.count), 6)
            }
        }
        guard status == Z_OK else { return [] }
        out.removeLast(out.count - 4 - Int(bound))
        return out
    }

    /// The original bytes; nil for anything `compress` did not make (or a
    /// damaged blob).
    static func decompress(_ blob: [UInt8], limit: Int = 1 << 26) -> [UInt8]? {
        guard blob.count >= 4 else { return nil }
        var length = 0
        for i in 0..<4 { length |= Int(blob[i]) << (8 * i) }
        guard length <= limit else { return nil }
        if length == 0 { return [] }
        var out = [UInt8](repeating: 0, count: length)
        var produced = uLong(length)
        let status = out.withUnsafeMutableBufferPointer { target in
            blob.withUnsafeBufferPointer { source in
                uncompress(target.baseAddress, &produced, source.baseAddress! + 4, uLong(blob.count - 4))
            }
        }
        guard status == Z_OK, Int(produced) == length else { return nil }
        return out
    }
}
