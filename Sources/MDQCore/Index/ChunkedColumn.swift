import MDQSystem

/// A column of plain values stored in fixed 64 Ki-element chunks.
///
/// Growing never copies or doubles: peak memory stays at what is used plus
/// one partly filled chunk, which keeps the index within its bytes-per-entry
/// budget during a gather (a doubling array briefly holds both buffers).
///
/// The column is a pointer to a fixed table of chunk pointers, so the owner
/// holds it with `let` and element access is plain pointer arithmetic, free of
/// exclusivity checks. The owner frees it with `deallocate(chunkCount:)`.
struct ChunkedColumn<Element: BitwiseCopyable>: @unchecked Sendable {
    static var chunkShift: Int { 16 }
    package static var chunkSize: Int { 1 << chunkShift }
    static var chunkMask: Int { chunkSize - 1 }
    /// 4096 chunks of 64 Ki entries: 2^28 entries per index.
    static var maxChunks: Int { 1 << 12 }

    private let table: UnsafeMutablePointer<UnsafeMutablePointer<Element>>
    private let fill: Element

    package init(fill: Element) {
        self.fill = fill
        table = .allocate(capacity: Self.maxChunks)
    }

    /// Allocates chunk number `chunk` (chunks are added in order).
    func addChunk(_ chunk: Int) {
        precondition(chunk < Self.maxChunks, "index full (2^28 entries)")
        let storage = UnsafeMutablePointer<Element>.allocate(capacity: Self.chunkSize)
        storage.initialize(repeating: fill, count: Self.chunkSize)
        (table + chunk).initialize(to: storage)
    }

    func deallocate(chunkCount: Int) {
        for chunk in 0..<chunkCount { table[chunk].deallocate() }
        table.deallocate()
    }

    subscript(index: Int) -> Element {
        @inline(__always) get {
            table[index &>> Self.chunkShift][index & Self.chunkMask]
        }
        @inline(__always) nonmutating set {
            table[index &>> Self.chunkShift][index & Self.chunkMask] = newValue
        }
    }

    subscript(id: UInt32) -> Element {
        @inline(__always) get { self[Int(id)] }
        @inline(__always) nonmutating set { self[Int(id)] = newValue }
    }

    /// The chunk holding slots `chunk << 16 ..< (chunk + 1) << 16`.
    @inline(__always)
    func chunk(_ chunk: Int) -> UnsafeMutablePointer<Element> {
        table[chunk]
    }
}
