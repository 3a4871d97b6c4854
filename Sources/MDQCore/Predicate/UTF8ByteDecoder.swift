import MDQSystem

/// Decodes UTF-8 one scalar at a time, passing through every byte that is
/// not part of a valid sequence as itself, so nothing is ever lost.
package struct UTF8ByteDecoder {
    package enum Unit: Equatable {
        case scalar(Unicode.Scalar)
        /// A byte that does not begin a valid UTF-8 sequence here.
        case invalid(UInt8)
    }

    private let bytes: [UInt8]
    private var position = 0

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    package mutating func next() -> Unit? {
        guard position < bytes.count else { return nil }
        let (unit, length) = bytes.withUnsafeBytes { Self.decode($0, at: position) }
        position += length
        return unit
    }

    /// The unit at `index` and its length in bytes (1 for an invalid byte).
    @inline(__always)
    package static func decode(_ bytes: UnsafeRawBufferPointer, at index: Int) -> (Unit, Int) {
        let b0 = bytes[index]
        if b0 < 0x80 { return (.scalar(Unicode.Scalar(b0)), 1) }
        let remaining = bytes.count - index
        func continuation(_ offset: Int) -> UInt32? {
            guard offset < remaining else { return nil }
            let b = bytes[index + offset]
            return b & 0xC0 == 0x80 ? UInt32(b & 0x3F) : nil
        }
        if b0 >= 0xC2 && b0 <= 0xDF, let c1 = continuation(1) {
            return (.scalar(Unicode.Scalar(UInt32(b0 & 0x1F) << 6 | c1)!), 2)
        }
        if b0 >= 0xE0 && b0 <= 0xEF, let c1 = continuation(1), let c2 = continuation(2) {
            let value = UInt32(b0 & 0x0F) << 12 | c1 << 6 | c2
            if value >= 0x800, let scalar = Unicode.Scalar(value) { return (.scalar(scalar), 3) }
        }
        if b0 >= 0xF0 && b0 <= 0xF4, let c1 = continuation(1), let c2 = continuation(2), let c3 = continuation(3) {
            let value = UInt32(b0 & 0x07) << 18 | c1 << 12 | c2 << 6 | c3
            if value >= 0x10000, let scalar = Unicode.Scalar(value) { return (.scalar(scalar), 4) }
        }
        return (.invalid(b0), 1)
    }
}
