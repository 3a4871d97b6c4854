import Glibc

/// Memory for a large table read at random (a hash table's buckets): past
/// a few megabytes, each read at random misses the TLB as well as the
/// cache, and in a virtual machine a miss walks two sets of page tables.
/// Such a table is placed on 2 MiB boundaries and its pages asked to be
/// huge (`MADV_HUGEPAGE`; the kernel may refuse, and then nothing changes).
package enum RandomAccessMemory {
    /// Tables smaller than this are allocated as any other.
    static let threshold = 4 << 20
    static let hugePage = 2 << 20

    /// Uninitialized room for `capacity` elements, freed with
    /// `deallocate()` as any other allocation (glibc's `free` takes what
    /// `posix_memalign` gave).
    package static func allocate<Element>(_: Element.Type, capacity: Int) -> UnsafeMutablePointer<Element> {
        let bytes = capacity * MemoryLayout<Element>.stride
        guard bytes >= threshold else { return .allocate(capacity: capacity) }
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, hugePage, bytes) == 0, let memory else {
            return .allocate(capacity: capacity)
        }
        _ = madvise(memory, bytes, MADV_HUGEPAGE)
        return memory.bindMemory(to: Element.self, capacity: capacity)
    }
}
