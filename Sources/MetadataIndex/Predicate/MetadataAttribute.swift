/// An attribute key, by Apple's raw string (`kMDItemFSName`), so a key
/// constant and a literal key in a predicate are interchangeable.
public struct MetadataAttribute: Hashable, Sendable, CustomStringConvertible {
    /// The canonical raw key (`kMDItem...`).
    public let rawValue: String

    private init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// `kMDItemFSName`: the name on disk.
    public static let fsName = MetadataAttribute("kMDItemFSName")
    /// `kMDItemDisplayName`: the name without its last extension (the whole
    /// name for dot-files and folders).
    public static let displayName = MetadataAttribute("kMDItemDisplayName")
    /// `kMDItemPath`: the absolute path.
    public static let path = MetadataAttribute("kMDItemPath")

    /// Attributes predicates can test today.
    public static let all: [MetadataAttribute] = [.fsName, .displayName, .path]

    /// Every spelling accepted in a predicate: the `kMDItem...` key and the
    /// `NSMetadataItem...Key` constant name.
    static let spellings: [String: MetadataAttribute] = [
        "kMDItemFSName": .fsName, "NSMetadataItemFSNameKey": .fsName,
        "kMDItemDisplayName": .displayName, "NSMetadataItemDisplayNameKey": .displayName,
        "kMDItemPath": .path, "NSMetadataItemPathKey": .path,
    ]

    /// The attribute a key spells, if mdq knows it.
    public init?(key: String) {
        guard let attribute = Self.spellings[key] else { return nil }
        self = attribute
    }

    public var description: String { rawValue }
}
