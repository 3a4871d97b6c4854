import MDQSystem
import SystemPackage

/// The trigram lists and extension codes in a snapshot (its `GRAM`
/// section), so that a restarted daemon's first name searches use them at
/// once instead of scanning every name while the lists are built again.
///
/// Layout (little-endian): the bucket bits (`UInt32`), `covered`,
/// `postings` and `stale` (`UInt64` each), whether complete (`UInt8`); the
/// extension table's size `T` (`UInt32`) and the key of each code from 2
/// to `T - 1` (two `UInt64`); `covered` codes (`UInt16`); then every
/// bucket: its run's id count, last id, byte length and extras' count
/// (`UInt32` each), the run's bytes and the extras (`UInt32`).
extension NameGrams {
    /// The section's length in bytes.
    var encodedSize: Int {
        var size = 4 + 8 * 3 + 1 + 4 + 16 * max(0, extensionCounts.count - 2) + 2 * extensionCodes.count
        for bucket in 0..<bucketCount {
            size += 16 + lists[bucket].run.count + 4 * lists[bucket].extras.count
        }
        return size
    }

    /// Writes the section through `emit`, in pieces of about 64 KiB.
    func encode(_ emit: (UnsafeRawBufferPointer) throws(Errno) -> Void) throws(Errno) {
        var out = ByteWriter()
        func flush(over limit: Int) throws(Errno) {
            guard out.bytes.count > limit else { return }
            try withBytes(of: out.bytes) { (bytes) throws(Errno) in try emit(bytes) }
            out = ByteWriter()
        }
        out.append(32 - bucketShift)
        for value in [covered, postings, stale] { out.append(UInt64(value)) }
        out.append(UInt8(isComplete ? 1 : 0))
        var keys = [ExtensionKey](repeating: ExtensionKey(), count: extensionCounts.count)
        for (key, code) in extensionTable { keys[Int(code)] = key }
        out.append(UInt32(keys.count))
        for key in keys.dropFirst(2) {
            out.append(key.low)
            out.append(key.high)
        }
        for code in extensionCodes {
            out.append(code)
            try flush(over: 1 << 16)
        }
        for bucket in 0..<bucketCount {
            let list = lists[bucket]
            out.append(list.count)
            out.append(list.last)
            out.append(UInt32(list.run.count))
            out.append(UInt32(list.extras.count))
            out.append(contentsOf: list.run)
            for id in list.extras { out.append(id) }
            try flush(over: 1 << 16)
        }
        try flush(over: 0)
    }

    /// The lists of a snapshot's section, for an index of `slotCount`
    /// slots.
    ///
    /// - Throws: `Refusal` when the bytes are not a sound table: a run that
    ///   does not end a varint, extras out of order, an extension code past
    ///   the table, a key repeated, or a size that does not add up. (Lists
    ///   are a superset by contract, and every lookup is bounded by
    ///   `covered`: no id in them can reach past the index.)
    static func decode(_ bytes: UnsafeRawBufferPointer, slotCount: Int) throws(IndexSnapshot.Refusal) -> NameGrams {
        func refuse(_ what: String) -> IndexSnapshot.Refusal {
            IndexSnapshot.Refusal(reason: "name trigrams: \(what)")
        }
        var reader = ByteReader(bytes)
        let bits: UInt32 = try reader.read()
        guard bucketBits.contains(bits) else { throw refuse("\(bits) bucket bits") }
        let covered = Int(try reader.read() as UInt64)
        let postings = Int(try reader.read() as UInt64)
        let stale = Int(try reader.read() as UInt64)
        let complete: UInt8 = try reader.read()
        guard covered <= slotCount, complete <= 1, complete == 0 || covered == slotCount,
            postings <= Int(UInt32.max) * 64, stale <= Int(UInt32.max) * 64
        else { throw refuse("impossible counts") }
        let grams = NameGrams(bucketBits: bits)
        let tableSize = Int(try reader.read() as UInt32)
        guard tableSize >= 2, tableSize <= Int(nonASCIIName) else { throw refuse("extension table size") }
        for code in 2..<tableSize {
            let key = ExtensionKey(low: try reader.read(), high: try reader.read())
            guard key.low & 0xFF != 0, grams.extensionTable.updateValue(UInt16(code), forKey: key) == nil else {
                throw refuse("extension \(code)")
            }
        }
        grams.extensionCounts = [Int](repeating: 0, count: tableSize)
        let codes = try reader.bytes(2 * covered)
        grams.extensionCodes = [UInt16](unsafeUninitializedCapacity: covered) { buffer, filled in
            for i in 0..<covered {
                buffer[i] = UInt16(littleEndian: codes.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
            }
            filled = covered
        }
        for code in grams.extensionCodes {
            let plain = Int(code & ~nonASCIIName)
            guard plain < tableSize else { throw refuse("extension code \(plain)") }
            if plain != Int(noExtension) { grams.extensionCounts[plain] += 1 }
        }
        for bucket in 0..<grams.bucketCount {
            var list = List()
            list.count = try reader.read()
            list.last = try reader.read()
            let runBytes = Int(try reader.read() as UInt32)
            let extras = Int(try reader.read() as UInt32)
            let run = try reader.bytes(runBytes)
            // Decoding stops at a byte below 0x80: the last one must be.
            guard (runBytes == 0) == (list.count == 0), runBytes == 0 || run[runBytes - 1] < 0x80,
                runBytes <= 5 * Int(list.count)
            else { throw refuse("bucket \(bucket)") }
            list.run = Array(run)
            let extraBytes = try reader.bytes(4 * extras)
            list.extras.reserveCapacity(extras)
            for i in 0..<extras {
                let id = UInt32(littleEndian: extraBytes.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))
                guard id < list.last, list.extras.last.map({ $0 < id }) ?? true else {
                    throw refuse("bucket \(bucket)'s extras")
                }
                list.extras.append(id)
            }
            grams.lists[bucket] = list
        }
        guard reader.isAtEnd else { throw refuse("\(reader.remaining) bytes left over") }
        grams.covered = covered
        grams.isComplete = complete == 1
        grams.postings = postings
        grams.stale = stale
        return grams
    }
}
