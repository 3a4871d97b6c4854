/// An attribute key, by Apple's raw string (`kMDItemFSName`), so a key
/// constant and a literal key in a predicate are interchangeable.
public struct MetadataAttribute: Hashable, Sendable, CustomStringConvertible {
    /// What values of the attribute are, for type checking predicates.
    public enum ValueType: String, Sendable, Hashable {
        case string, number, date, boolean
    }

    /// The canonical raw key (`kMDItem...`).
    public let rawValue: String
    /// The `NSMetadataItem...Key` spelling.
    public let constantName: String
    public let valueType: ValueType

    private init(_ rawValue: String, _ constantName: String, _ valueType: ValueType) {
        self.rawValue = rawValue
        self.constantName = constantName
        self.valueType = valueType
    }

    /// `kMDItemFSName`: the name on disk.
    public static let fsName = MetadataAttribute("kMDItemFSName", "NSMetadataItemFSNameKey", .string)
    /// `kMDItemDisplayName`: the name without its last extension (the whole
    /// name for dot-files and folders).
    public static let displayName = MetadataAttribute("kMDItemDisplayName", "NSMetadataItemDisplayNameKey", .string)
    /// `kMDItemPath`: the absolute path.
    public static let path = MetadataAttribute("kMDItemPath", "NSMetadataItemPathKey", .string)
    /// `kMDItemURL`: the file URL, compared as its string (`file:///...`).
    public static let url = MetadataAttribute("kMDItemURL", "NSMetadataItemURLKey", .string)
    /// `kMDItemFSSize`: size in bytes; absent for folders.
    public static let fsSize = MetadataAttribute("kMDItemFSSize", "NSMetadataItemFSSizeKey", .number)
    /// `kMDItemFSCreationDate`: birth time; absent where the filesystem keeps none.
    public static let creationDate = MetadataAttribute(
        "kMDItemFSCreationDate", "NSMetadataItemFSCreationDateKey", .date)
    /// `kMDItemFSContentChangeDate`: modification time.
    public static let contentChangeDate = MetadataAttribute(
        "kMDItemFSContentChangeDate", "NSMetadataItemFSContentChangeDateKey", .date)

    /// `kMDItemContentType`: the uniform type identifier (`public.png`).
    public static let contentType = MetadataAttribute(
        "kMDItemContentType", "NSMetadataItemContentTypeKey", .string)
    /// `kMDItemContentTypeTree`: the type and every type it conforms to; a
    /// comparison holds when it holds for one of them (`== 'public.image'`
    /// finds every image), `!=` when it holds for none.
    public static let contentTypeTree = MetadataAttribute(
        "kMDItemContentTypeTree", "NSMetadataItemContentTypeTreeKey", .string)

    /// Attributes predicates can test today.
    public static let all: [MetadataAttribute] = [
        .fsName, .displayName, .path, .url, .fsSize, .creationDate, .contentChangeDate, .contentType,
        .contentTypeTree,
    ]

    /// Every spelling accepted in a predicate: the `kMDItem...` key and the
    /// `NSMetadataItem...Key` constant name.
    static let spellings: [String: MetadataAttribute] = {
        var table: [String: MetadataAttribute] = [:]
        for attribute in all {
            table[attribute.rawValue] = attribute
            table[attribute.constantName] = attribute
        }
        return table
    }()

    /// The attribute a key spells, if mdq knows it.
    public init?(key: String) {
        guard let attribute = Self.spellings[key] else { return nil }
        self = attribute
    }

    /// The known key closest to a misspelt one (edit distance at most 3, or
    /// the same key in another case), for "did you mean" messages.
    static func suggestion(for key: String) -> String? {
        var best: (String, Int)?
        for candidate in spellings.keys {
            if candidate.lowercased() == key.lowercased() { return candidate }
            let distance = editDistance(key, candidate, limit: 3)
            if distance <= 3 && distance < (best?.1 ?? .max) { best = (candidate, distance) }
        }
        return best?.0
    }

    private static func editDistance(_ a: String, _ b: String, limit: Int) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        if abs(a.count - b.count) > limit { return limit + 1 }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...max(1, a.count) where !a.isEmpty {
            current[0] = i
            for j in 1...max(1, b.count) where !b.isEmpty {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }

    public var description: String { rawValue }
}
