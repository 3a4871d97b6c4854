/// What one batch of filesystem events did to the index, for queries.
///
/// An id may be in several sets (created, then changed, then removed in one
/// batch); `removed` wins. Removed ids are held back from reuse until every
/// observer has seen the batch.
struct IndexChanges {
    var added: Set<UInt32> = []
    var changed: Set<UInt32> = []
    var removed: Set<UInt32> = []
    /// The engine rescanned (overflow, root recovery): treat every
    /// entry under the affected roots as possibly changed.
    var rescannedRoots: Set<UInt32> = []

    var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty && rescannedRoots.isEmpty }
}
