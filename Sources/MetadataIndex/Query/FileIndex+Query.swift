extension FileIndex {
    /// Every entry (scope roots excluded) that matches the predicate, in id order.
    ///
    /// - Complexity: O(entries); allocates nothing per entry.
    public func entries(matching predicate: MetadataPredicate) -> [EntryID] {
        let evaluator = CompiledPredicate(predicate).makeEvaluator()
        var result: [EntryID] = []
        forEachEntry { id in
            if !bits(id.rawValue).isRoot && evaluator.matches(IndexSubject(index: self, id: id.rawValue)) {
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
            if !bits(id.rawValue).isRoot && evaluator.matches(IndexSubject(index: self, id: id.rawValue)) { count += 1 }
        }
        return count
    }
}
