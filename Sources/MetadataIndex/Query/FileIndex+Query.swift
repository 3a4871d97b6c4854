extension FileIndex {
    private struct Subject: PredicateSubject {
        let index: FileIndex
        let id: UInt32

        var kind: EntryKind { index.bits(id).kind }

        @inline(__always)
        func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R {
            body(index.nameBytes(id), index.bits(id).isASCIIName)
        }

        func appendPath(to bytes: inout [UInt8]) {
            index.appendPath(of: id, to: &bytes)
        }
    }

    /// Every entry (scope roots excluded) that matches the predicate, in id order.
    ///
    /// - Complexity: O(entries); allocates nothing per entry.
    public func entries(matching predicate: MetadataPredicate) -> [EntryID] {
        let evaluator = CompiledPredicate(predicate).makeEvaluator()
        var result: [EntryID] = []
        forEachEntry { id in
            if !bits(id.rawValue).isRoot && evaluator.matches(Subject(index: self, id: id.rawValue)) {
                result.append(id)
            }
        }
        return result
    }

    /// The number of entries (scope roots excluded) that match.
    ///
    /// - Complexity: O(entries); allocates nothing per entry.
    public func count(matching predicate: MetadataPredicate) -> Int {
        let evaluator = CompiledPredicate(predicate).makeEvaluator()
        var count = 0
        forEachEntry { id in
            if !bits(id.rawValue).isRoot && evaluator.matches(Subject(index: self, id: id.rawValue)) { count += 1 }
        }
        return count
    }
}
