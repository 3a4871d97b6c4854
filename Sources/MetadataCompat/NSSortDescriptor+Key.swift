public import Foundation

/// How MetadataCompat gives `NSSortDescriptor` Apple's
/// `init(key:ascending:)`, which swift-corelibs-foundation lacks (see
/// `MetadataPredicateFormatting` for why a protocol); `NSSortDescriptor` is
/// the only type meant to conform.
public protocol MetadataSortDescriptorKeying {}

extension NSSortDescriptor: MetadataSortDescriptorKeying {
    /// The attribute key of a descriptor made with `init(key:ascending:)`;
    /// nil for key-path descriptors.
    public var key: String? { (self as? MetadataKeySortDescriptor)?.sortKey }
}

extension MetadataSortDescriptorKeying where Self == NSSortDescriptor {
    /// A descriptor that sorts metadata query results by an attribute, as
    /// Apple code writes it:
    /// `NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: true)`.
    ///
    /// Text sorts in Finder's order (any case, `file2` before `file10`),
    /// numbers and dates by value, items without the attribute first.
    ///
    /// - Parameters:
    ///   - key: the attribute key (`NSMetadataItem...Key` or `kMDItem...`).
    ///   - ascending: the direction.
    public init(key: String?, ascending: Bool) {
        self = MetadataKeySortDescriptor(key: key, ascending: ascending)
    }
}
