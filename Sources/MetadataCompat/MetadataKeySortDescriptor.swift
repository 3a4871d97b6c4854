import Foundation
import MetadataIndex

/// The `NSSortDescriptor` that `NSSortDescriptor(key:ascending:)` makes
/// here: an attribute key and a direction, which `NSMetadataQuery` sorts by
/// (`MetadataSortDescriptor`: Finder's order for text, missing values
/// first).
final class MetadataKeySortDescriptor: NSSortDescriptor {
    /// The attribute key; nil sorts nothing (Apple's compares the objects
    /// themselves, which a metadata query does not do).
    let sortKey: String?

    /// Foundation's descriptor needs a key path to a comparable value; this
    /// one is never applied, as `compare(_:to:)` is overridden.
    private struct Keyed {
        var key: String
    }

    init(key: String?, ascending: Bool) {
        sortKey = key
        super.init(keyPath: \Keyed.key, ascending: ascending)
    }

    /// The query's order for this key.
    var metadataDescriptor: MetadataSortDescriptor? {
        sortKey.map { MetadataSortDescriptor(key: $0, ascending: ascending) }
    }

    /// Orders two `NSMetadataItem`s as a query sorted by this descriptor
    /// does; other objects (and a nil key) compare the same.
    override func compare(_ object1: Any, to object2: Any) -> ComparisonResult {
        guard let descriptor = metadataDescriptor, let a = (object1 as? NSMetadataItem)?.metadataItem,
            let b = (object2 as? NSMetadataItem)?.metadataItem
        else { return .orderedSame }
        return descriptor.order(a, b)
    }

    override var reversedSortDescriptor: Any { MetadataKeySortDescriptor(key: sortKey, ascending: !ascending) }

    override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? MetadataKeySortDescriptor else { return false }
        return sortKey == other.sortKey && ascending == other.ascending
    }

    override var hash: Int { sortKey.hashValue ^ ascending.hashValue }

    /// Immutable: a copy is the descriptor itself.
    override func copy(with zone: NSZone? = nil) -> Any { self }

    override var description: String { "(\(sortKey ?? "self"), \(ascending ? "ascending" : "descending"))" }
}
