import MDQSystem

extension FileIndex {
    /// Every entry (scope roots excluded) that matches the predicate, in id order.
    ///
    /// - Complexity: O(entries), on every core; allocates nothing per entry.
    public func entries(matching predicate: MetadataPredicate) -> [EntryID] {
        IndexScan(index: self, predicate: CompiledPredicate(predicate)).matchingEntries().map(EntryID.init)
    }

    /// The number of entries (scope roots excluded) that match.
    ///
    /// - Complexity: O(entries), on every core; allocates nothing per entry.
    public func count(matching predicate: MetadataPredicate) -> Int {
        IndexScan(index: self, predicate: CompiledPredicate(predicate)).matchCount()
    }
}
