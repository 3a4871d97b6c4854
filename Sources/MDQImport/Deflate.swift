import CZlib
import MDQCore
import MDQSystem

/// zlib's deflate for the text the import store keeps: natural text
/// shrinks to a third or less, and a file's text is read back whole (the
/// original length leads, so inflating allocates once).
enum Deflate {
    /// The compressed form: the original length (4 bytes, little-endian),
    /// then the zlib stream. One call's own compressor; many in a row share
    /// one (`Compressor`).
    static func compress(_ bytes: [UInt8]) -> [UInt8] {
        Compressor().compress(bytes)
    }

    /// Compresses one text after another without setting zlib up for each:
    /// a stream of its own costs about 270 KB allocated and cleared, which
    /// for the short texts most files hold is a hundred times the work of
    /// compressing them. Short texts use a small window and hash (a
    /// kilobyte of state to reset), which loses nothing on them; `inflate`
    /// reads either. Not thread-safe: one owner (the import store's
    /// connection).
    final class Compressor {
        /// Texts up to this long use the small stream.
        static let shortText = 1024
        private var short: UnsafeMutablePointer<z_stream>?
        private var long: UnsafeMutablePointer<z_stream>?

        init() {}

        deinit {
            for stream in [short, long] {
                guard let stream else { continue }
                deflateEnd(stream)
                stream.deallocate()
            }
        }

        /// `bytes` compressed as `Deflate.compress` does; empty on failure.
        func compress(_ bytes: [UInt8]) -> [UInt8] {
            let isShort = bytes.count <= Self.shortText
            guard
                let stream = isShort
                    ? (short ?? start(windowBits: 10, memoryLevel: 1, &short))
                    : (long ?? start(windowBits: 15, memoryLevel: 8, &long)),
                deflateReset(stream) == Z_OK
            else { return [] }
            let bound = Int(deflateBound(stream, uLong(bytes.count)))
            var status = Z_STREAM_ERROR
            let out = [UInt8](unsafeUninitializedCapacity: 4 + bound) { buffer, initialized in
                let length = UInt32(truncatingIfNeeded: bytes.count)
                for i in 0..<4 { buffer[i] = UInt8(truncatingIfNeeded: length >> (8 * UInt32(i))) }
                bytes.withUnsafeBufferPointer { source in
                    stream.pointee.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                    stream.pointee.avail_in = uInt(source.count)
                    stream.pointee.next_out = buffer.baseAddress! + 4
                    stream.pointee.avail_out = uInt(bound)
                    status = deflate(stream, Z_FINISH)
                }
                initialized = status == Z_STREAM_END ? 4 + Int(stream.pointee.total_out) : 0
            }
            stream.pointee.next_in = nil
            stream.pointee.next_out = nil
            return status == Z_STREAM_END ? out : []
        }

        private func start(
            windowBits: Int32, memoryLevel: Int32, _ slot: inout UnsafeMutablePointer<z_stream>?
        ) -> UnsafeMutablePointer<z_stream>? {
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            guard
                deflateInit2_(
                    stream, 6, Z_DEFLATED, windowBits, memoryLevel, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                    Int32(MemoryLayout<z_stream>.size)) == Z_OK
            else {
                stream.deallocate()
                return nil
            }
            slot = stream
            return stream
        }
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
