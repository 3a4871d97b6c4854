package import MDQSystem

/// The entries of one listed folder, handed to a sink in one call.
///
/// Owned by one crawler thread and reused for every folder it lists, so a
/// crawl allocates per folder at most, never per entry.
package struct CrawlBatch {
    package struct Entry {
        /// Offset of the NUL-terminated name in `nameBytes`.
        var nameStart: Int32
        var nameLength: UInt8
        package var kind: EntryKind
        var isASCIIName: Bool
        /// nil when the crawl does not stat entries (or the stat failed).
        package var status: FileStatus?
        /// The listing's inode number (`DirectoryReader.Entry.inode`).
        package var inode: UInt64
        /// Whether the crawler will descend into it (the sink must return a
        /// folder token for each such entry, in order).
        package var descend: Bool
    }

    var nameBytes: [UInt8] = []
    package var entries: [Entry] = []

    mutating func removeAll() {
        nameBytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the entry's name (without the NUL).
    @inline(__always)
    package func withName<R>(of entry: Entry, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try nameBytes.withUnsafeBytes { all in
            try body(
                UnsafeRawBufferPointer(
                    rebasing: all[Int(entry.nameStart)..<Int(entry.nameStart) + Int(entry.nameLength)]))
        }
    }

    /// The entry's name as a NUL-terminated C string, for `*at` calls.
    @inline(__always)
    func withCName<R>(of entry: Entry, _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        try nameBytes.withUnsafeBytes { all in
            try body((all.baseAddress! + Int(entry.nameStart)).assumingMemoryBound(to: CChar.self))
        }
    }
}
