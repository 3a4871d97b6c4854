import MDQSystem

extension MetadataPredicate {
    /// Orders the results of a `words` search as mdfind users expect:
    /// files whose name holds every word first, then the most recently
    /// modified, then by path (a stable order for equal dates).
    ///
    /// - Parameters:
    ///   - items: the matches.
    ///   - text: the words searched for, as given to `words(_:)`.
    package static func rankWords(_ items: [MetadataItem], text: [UInt8]) -> [MetadataItem] {
        let words = freeTextWords(text)
        let names: MetadataPredicate? =
            words.isEmpty
            ? nil
            : MetadataPredicate(
                node: .and(
                    words.map {
                        .comparison(
                            Comparison(
                                attribute: .fsName, op: .contains, options: [.caseInsensitive, .diacriticInsensitive],
                                value: .string($0)))
                    }))
        let evaluator = names.map { CompiledPredicate($0).makeEvaluator() }
        let keyed = items.map { item in
            (
                item: item, named: evaluator?.matches(ItemSubject(item: item)) ?? false,
                modified: item.metadata.modificationTime?.nanosecondsSinceEpoch ?? .min
            )
        }
        return keyed.sorted { a, b in
            if a.named != b.named { return a.named }
            if a.modified != b.modified { return a.modified > b.modified }
            return a.item.pathBytes.lexicographicallyPrecedes(b.item.pathBytes)
        }.map(\.item)
    }
}
