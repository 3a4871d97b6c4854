import MDQSystem
import SystemPackage

/// All entry names, as raw bytes, in 1 MiB chunks.
///
/// A name is addressed by a 32-bit offset (`chunk << 20 | offset`) and a length
/// kept by the caller (names are at most 255 bytes, `NAME_MAX`). A name never
/// straddles two chunks. Freed spans go on a free list per length and are
/// reused first, so churn (the same names deleted and recreated) does not grow
/// the arena.
final class NameArena {
    static var chunkShift: Int { 20 }
    package static var chunkSize: Int { 1 << chunkShift }
    /// 4096 chunks of 1 MiB: 4 GiB of names.
    static var maxChunks: Int { 1 << (32 - chunkShift) }

    /// A fixed table of chunk pointers, held by `let` so reads are plain
    /// pointer arithmetic.
    private let table = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>>.allocate(capacity: NameArena.maxChunks)
    private var chunkCount = 0
    private var top = NameArena.chunkSize
    private var freeSpans: [[UInt32]] = Array(repeating: [], count: 256)
    /// Bytes in freed spans not yet reused.
    private(set) var freeBytes = 0

    package init() {}

    deinit {
        for chunk in 0..<chunkCount { table[chunk].deallocate() }
        table.deallocate()
    }

    /// Copies `name` (1...255 bytes) in and returns its offset.
    func store(_ name: UnsafeRawBufferPointer) -> UInt32 {
        let length = name.count
        precondition(length > 0 && length <= 255, "name length out of range")
        let offset: UInt32
        if let reused = freeSpans[length].popLast() {
            offset = reused
            freeBytes -= length
        } else {
            if top + length > Self.chunkSize {
                precondition(chunkCount < Self.maxChunks, "name arena exhausted (4 GiB of names)")
                (table + chunkCount).initialize(to: .allocate(capacity: Self.chunkSize))
                chunkCount += 1
                top = 0
            }
            offset = UInt32((chunkCount - 1) << Self.chunkShift | top)
            top += length
        }
        pointer(at: offset).update(from: name.baseAddress!.assumingMemoryBound(to: UInt8.self), count: length)
        return offset
    }

    /// Gives a span back for reuse.
    func release(offset: UInt32, length: Int) {
        freeSpans[length].append(offset)
        freeBytes += length
    }

    @inline(__always)
    func pointer(at offset: UInt32) -> UnsafeMutablePointer<UInt8> {
        table[Int(offset >> UInt32(Self.chunkShift))] + Int(offset & UInt32(Self.chunkSize - 1))
    }

    @inline(__always)
    func bytes(at offset: UInt32, length: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: pointer(at: offset), count: length)
    }

    package var allocatedBytes: Int { chunkCount * Self.chunkSize }

    /// The bytes in use: every chunk, the last one up to its top (for snapshots).
    func forEachUsedChunk(_ body: (UnsafeRawBufferPointer) throws(Errno) -> Void) throws(Errno) {
        for chunk in 0..<chunkCount {
            try body(UnsafeRawBufferPointer(start: table[chunk], count: chunk == chunkCount - 1 ? top : Self.chunkSize))
        }
    }

    /// The free spans by length (for snapshots).
    var spans: [[UInt32]] { freeSpans }

    /// The bytes used, as `forEachUsedChunk` gives them.
    var usedBytes: Int { chunkCount == 0 ? 0 : (chunkCount - 1) * Self.chunkSize + top }

    /// Restores the arena from `usedBytes` bytes and its free spans; the
    /// arena must be empty.
    func restore(_ bytes: UnsafeRawBufferPointer, freeSpans spans: [[UInt32]]) {
        precondition(chunkCount == 0, "restore into a used arena")
        var offset = 0
        while offset < bytes.count {
            let length = min(Self.chunkSize, bytes.count - offset)
            let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: Self.chunkSize)
            storage.initialize(
                from: bytes.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self), count: length)
            (table + chunkCount).initialize(to: storage)
            chunkCount += 1
            top = length
            offset += length
        }
        if chunkCount == 0 { top = Self.chunkSize }
        freeSpans = spans
        freeBytes = spans.enumerated().reduce(0) { $0 + $1.offset * $1.element.count }
    }
}
