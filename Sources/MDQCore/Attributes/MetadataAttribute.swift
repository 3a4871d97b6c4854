import MDQSystem

/// An attribute key, by Apple's raw string (`kMDItemFSName`), so a key
/// constant and a literal key in a predicate are interchangeable; and, for
/// the attributes mdq knows, their row in the one attribute table.
///
/// Each attribute is declared once, in `all`: its raw key, its
/// `NSMetadata...Key` constant name, its value type, and where its value
/// comes from (`Source`, read by `value(of:)` for an index entry, a crawled
/// entry or an item alike). Predicates compare by the value type, items
/// answer `value(forAttribute:)` from it, sorting and grouping key on the
/// typed value, and `mdq` prints it by its type; so adding an attribute is
/// one row here (and one `Source` case if it reads something new).
public struct MetadataAttribute: Hashable, Sendable, CustomStringConvertible {
    /// What values of the attribute are, for type checking predicates.
    public enum ValueType: String, Sendable, Hashable {
        case string, number, date, boolean
    }

    /// The canonical raw key (`kMDItem...`).
    public let rawValue: String
    /// The `NSMetadataItem...Key` spelling.
    public let constantName: String
    /// What its values are: how predicates type-check and compare it.
    public let valueType: ValueType
    /// Where the value comes from.
    package let source: Source

    private init(_ rawValue: String, _ constantName: String? = nil, _ valueType: ValueType, _ source: Source) {
        self.rawValue = rawValue
        self.constantName = constantName ?? rawValue
        self.valueType = valueType
        self.source = source
    }

    /// A row filled by the importers.
    package static func imported(
        _ rawValue: String, _ constantName: String?, _ valueType: ValueType, isList: Bool = false
    ) -> MetadataAttribute {
        MetadataAttribute(rawValue, constantName, valueType, .imported(list: isList))
    }

    /// Attributes are equal when their raw keys are: a key names one row.
    public static func == (lhs: MetadataAttribute, rhs: MetadataAttribute) -> Bool { lhs.rawValue == rhs.rawValue }
    /// Hashes the raw key.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    /// Whether the value is a list whose elements a comparison tests
    /// (`ANY`/`ALL`/`NONE`; a plain comparison holds when it holds for one).
    public var isList: Bool { source == .contentTypeTree || source == .imported(list: true) }

    /// Whether the value comes from inside the file (an importer), not
    /// from its name or `stat`.
    public var isImported: Bool {
        if case .imported = source { return true }
        return false
    }

    // MARK: The table

    /// `kMDItemFSName`: the name on disk.
    public static let fsName = MetadataAttribute("kMDItemFSName", "NSMetadataItemFSNameKey", .string, .name)
    /// `kMDItemDisplayName`: the name without its last extension (the whole
    /// name for dot-files and folders).
    public static let displayName = MetadataAttribute(
        "kMDItemDisplayName", "NSMetadataItemDisplayNameKey", .string, .displayName)
    /// `kMDItemPath`: the absolute path.
    public static let path = MetadataAttribute("kMDItemPath", "NSMetadataItemPathKey", .string, .path)
    /// `kMDItemURL`: the file URL, compared as its string (`file:///...`).
    public static let url = MetadataAttribute("kMDItemURL", "NSMetadataItemURLKey", .string, .url)
    /// `kMDItemFSSize`: size in bytes; absent for folders.
    public static let fsSize = MetadataAttribute("kMDItemFSSize", "NSMetadataItemFSSizeKey", .number, .size)
    /// `kMDItemFSOwnerUserID`: the user id of its owner, as its host
    /// numbers users.
    public static let ownerUserID = MetadataAttribute("kMDItemFSOwnerUserID", nil, .number, .ownerUserID)
    /// `kMDItemFSOwnerGroupID`: the group id of its group, as its host
    /// numbers groups.
    public static let ownerGroupID = MetadataAttribute("kMDItemFSOwnerGroupID", nil, .number, .ownerGroupID)
    /// `kMDQItemFSPOSIXPermissions` (mdq's own): its permission bits with
    /// set-user-id, set-group-id and sticky (`st_mode & 07777`, as
    /// `NSFilePosixPermissions`); `== 0o777` finds what anyone may change.
    public static let permissions = MetadataAttribute("kMDQItemFSPOSIXPermissions", nil, .number, .permissions)
    /// `kMDItemFSCreationDate`: birth time; absent where the filesystem keeps none.
    public static let creationDate = MetadataAttribute(
        "kMDItemFSCreationDate", "NSMetadataItemFSCreationDateKey", .date, .creationDate)
    /// `kMDItemFSContentChangeDate`: modification time.
    public static let contentChangeDate = MetadataAttribute(
        "kMDItemFSContentChangeDate", "NSMetadataItemFSContentChangeDateKey", .date, .contentChangeDate)
    /// `kMDItemContentModificationDate`: when the contents last changed,
    /// the modification time (as `kMDItemFSContentChangeDate`; the key
    /// `mdfind` users type most).
    public static let contentModificationDate = MetadataAttribute(
        "kMDItemContentModificationDate", "NSMetadataItemContentModificationDateKey", .date, .contentChangeDate)
    /// `kMDItemLastUsedDate`: when the file was last read, its access time
    /// (`st_atime`), read from the file when asked, not indexed. Under
    /// `relatime` (Linux's default mount option) a read moves it only when
    /// it is older than the last modification or a day old, and under
    /// `noatime` never; a live query sees it change when something else
    /// about the file changes (a read sends no event).
    public static let lastUsedDate = MetadataAttribute(
        "kMDItemLastUsedDate", "NSMetadataItemLastUsedDateKey", .date, .accessTime)
    /// `kMDItemKind`: the content type as a person reads it ("PDF
    /// document", "Folder", "PNG image"; see `ContentKind`).
    public static let kind = MetadataAttribute("kMDItemKind", nil, .string, .kind)
    /// `kMDItemContentType`: the uniform type identifier (`public.png`).
    public static let contentType = MetadataAttribute(
        "kMDItemContentType", "NSMetadataItemContentTypeKey", .string, .contentType)
    /// `kMDItemContentTypeTree`: the type and every type it conforms to; a
    /// comparison holds when it holds for one of them (`== 'public.image'`
    /// finds every image), `!=` when it holds for none.
    public static let contentTypeTree = MetadataAttribute(
        "kMDItemContentTypeTree", "NSMetadataItemContentTypeTreeKey", .string, .contentTypeTree)

    /// `NSMetadataItemIsUbiquitousKey`: the item lies in the query's
    /// container or one of its external document folders.
    public static let isUbiquitous = MetadataAttribute("NSMetadataItemIsUbiquitousKey", nil, .boolean, .isUbiquitous)
    /// `NSMetadataUbiquitousItemHasUnresolvedConflictsKey`: a conflict copy
    /// of the item sits beside it (see `ConflictCopy`).
    public static let hasUnresolvedConflicts = MetadataAttribute(
        "NSMetadataUbiquitousItemHasUnresolvedConflictsKey", nil, .boolean, .hasUnresolvedConflicts)
    /// `kMDQItemConflictOriginalPath` (mdq's own): for a conflict copy, the
    /// path of the item it conflicts with, when that item exists.
    public static let conflictOriginalPath = MetadataAttribute(
        "kMDQItemConflictOriginalPath", nil, .string, .conflictOriginalPath)
    /// `NSMetadataUbiquitousItemContainerDisplayNameKey`: the container
    /// folder's name (ubiquitous items only).
    public static let containerDisplayName = MetadataAttribute(
        "NSMetadataUbiquitousItemContainerDisplayNameKey", nil, .string, .containerDisplayName)
    /// `NSMetadataUbiquitousItemDownloadingStatusKey`: always
    /// `NSMetadataUbiquitousItemDownloadingStatusCurrent` (a local file is
    /// fully present); ubiquitous items only, as every key below.
    public static let downloadingStatus = MetadataAttribute(
        "NSMetadataUbiquitousItemDownloadingStatusKey", nil, .string,
        .synced(.text(Array("NSMetadataUbiquitousItemDownloadingStatusCurrent".utf8))))
    /// `NSMetadataUbiquitousItemIsDownloadingKey`: always false.
    public static let isDownloading = MetadataAttribute(
        "NSMetadataUbiquitousItemIsDownloadingKey", nil, .boolean, .synced(.bool(false)))
    /// `NSMetadataUbiquitousItemDownloadRequestedKey`: always false.
    public static let downloadRequested = MetadataAttribute(
        "NSMetadataUbiquitousItemDownloadRequestedKey", nil, .boolean, .synced(.bool(false)))
    /// `NSMetadataUbiquitousItemPercentDownloadedKey`: always 100.
    public static let percentDownloaded = MetadataAttribute(
        "NSMetadataUbiquitousItemPercentDownloadedKey", nil, .number, .synced(.real(100)))
    /// `NSMetadataUbiquitousItemIsUploadedKey`: always true.
    public static let isUploaded = MetadataAttribute(
        "NSMetadataUbiquitousItemIsUploadedKey", nil, .boolean, .synced(.bool(true)))
    /// `NSMetadataUbiquitousItemIsUploadingKey`: always false.
    public static let isUploading = MetadataAttribute(
        "NSMetadataUbiquitousItemIsUploadingKey", nil, .boolean, .synced(.bool(false)))
    /// `NSMetadataUbiquitousItemPercentUploadedKey`: always 100.
    public static let percentUploaded = MetadataAttribute(
        "NSMetadataUbiquitousItemPercentUploadedKey", nil, .number, .synced(.real(100)))
    /// `NSMetadataUbiquitousItemIsExternalDocumentKey`: the item lies in a
    /// registered external documents folder rather than the container.
    public static let isExternalDocument = MetadataAttribute(
        "NSMetadataUbiquitousItemIsExternalDocumentKey", nil, .boolean, .isExternalDocument)
    /// `NSMetadataUbiquitousItemIsSharedKey`: always false.
    public static let isShared = MetadataAttribute(
        "NSMetadataUbiquitousItemIsSharedKey", nil, .boolean, .synced(.bool(false)))

    // MARK: Key paths on names

    /// `kMDItemFSName.pathExtension` (also reached from the path and URL
    /// keys): the name's extension, the key path Apple code writes as
    /// `%K.pathExtension`. Not an attribute of items.
    static let nameExtension = MetadataAttribute("kMDItemFSName.pathExtension", nil, .string, .nameExtension)
    /// `kMDItemFSName.stringByDeletingPathExtension`: the name without its
    /// extension. Not an attribute of items.
    static let nameWithoutExtension = MetadataAttribute(
        "kMDItemFSName.stringByDeletingPathExtension", nil, .string, .nameWithoutExtension)

    /// The attribute a key path on `base` reads (`pathExtension`,
    /// `lastPathComponent`, `stringByDeletingPathExtension` or
    /// `deletingPathExtension`, chained with dots), as `NSString` and `URL`
    /// answer them for a file name, path or URL; nil for any other.
    static func keyPath(_ path: String, on base: MetadataAttribute) -> MetadataAttribute? {
        var current = base
        for component in path.split(separator: ".", omittingEmptySubsequences: false) {
            let onName = current == .fsName || current == .path || current == .url
            switch component {
            case "lastPathComponent" where onName: current = .fsName
            case "pathExtension" where onName: current = .nameExtension
            case "stringByDeletingPathExtension" where current == .fsName,
                "deletingPathExtension" where current == .fsName:
                current = .nameWithoutExtension
            default: return nil
            }
        }
        return current
    }

    /// Every attribute mdq knows, in the order items list them.
    public static let all: [MetadataAttribute] =
        [
            .fsName, .displayName, .path, .url, .fsSize, .ownerUserID, .ownerGroupID, .permissions, .creationDate,
            .contentChangeDate, .contentModificationDate, .lastUsedDate,
            .contentType, .contentTypeTree, .kind, .isUbiquitous, .hasUnresolvedConflicts, .conflictOriginalPath,
            .containerDisplayName,
            .downloadingStatus, .isDownloading, .downloadRequested, .percentDownloaded, .isUploaded, .isUploading,
            .percentUploaded, .isExternalDocument, .isShared,
        ] + importedAttributes

    /// Every spelling accepted in a predicate: the raw key and the
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

    /// The raw key.
    public var description: String { rawValue }
}
