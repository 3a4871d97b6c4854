public import MDQCore
public import SystemPackage

/// One update: the items added, changed and removed since the last one.
///
/// Items are identified by `id` for the life of the query. Within an
/// update, `added` and `changed` come in path order (a folder before
/// what is inside it) and `removed` in reverse path order (what is
/// inside a folder before the folder), the same in every run; no path
/// is both removed and added. A file replaced by a rename onto its path
/// (an atomic save) is a change of the item that was there.
public struct ResultUpdate: Sendable, Equatable {
    public var added: [MetadataItem]
    /// Changed items, with their new attributes (and path).
    public var changed: [MetadataItem]
    /// Removed items as the client last saw them (their last reported path).
    public var removed: [MetadataItem]
    /// For changed items that were renamed or moved: the path the client
    /// last saw, by item id.
    public var previousPathBytes: [UInt64: [UInt8]] = [:]

    public init(
        added: [MetadataItem], changed: [MetadataItem], removed: [MetadataItem],
        previousPathBytes: [UInt64: [UInt8]] = [:]
    ) {
        self.added = added
        self.changed = changed
        self.removed = removed
        self.previousPathBytes = previousPathBytes
    }

    /// The path a changed item had when the client last saw it, if it
    /// was renamed or moved since.
    public func previousPath(of item: MetadataItem) -> FilePath? {
        previousPathBytes[item.id].map(FilePath.fromBytes)
    }
}
