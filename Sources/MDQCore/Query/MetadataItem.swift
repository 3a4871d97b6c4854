package import Foundation
public import MDQSystem
public import SystemPackage

/// One result of a metadata query: a file or folder with its attributes, as
/// they were when the query last reported it.
///
/// Items are immutable snapshots. Two items are equal when they stand for
/// the same result of the same query, even after it changed (renamed,
/// written): like `NSMetadataItem` identity, this is what lets
/// `index(ofResult:)` find an item from an earlier notification.
public struct MetadataItem: Hashable, Identifiable, Sendable, CustomStringConvertible {
    /// The query-local identity of the result.
    let serial: UInt64

    /// The result's identity for the life of its query: the same in every
    /// notification and in `results` while the file stays a result, through
    /// renames, moves and replacements by an atomic save; never reused for
    /// another result. 0 for items made outside a query (`mdq ls`, one-shot
    /// searches).
    public var id: UInt64 { serial }
    /// The absolute path as raw bytes (not necessarily UTF-8).
    public let pathBytes: [UInt8]
    /// File, folder, symbolic link or other.
    public let kind: EntryKind
    /// Size, dates and inode as last read from the disk.
    public let metadata: EntryMetadata
    /// Set for items inside the query's ubiquity container.
    public let ubiquity: Ubiquity?
    /// A conflict copy of this item sits beside it.
    public let hasUnresolvedConflicts: Bool
    /// For a conflict copy, the path of the item it conflicts with (when
    /// that item exists).
    public let conflictOriginalPathBytes: [UInt8]?
    /// What the importers read from inside the file, when the item was
    /// made with them (`mdq ls`, a search whose query or output needs
    /// them); nil otherwise.
    package var importedValues: ImportedValues?

    /// Where an item sits in a ubiquity container.
    public struct Ubiquity: Hashable, Sendable {
        /// The container folder's name (`NSMetadataUbiquitousItemContainerDisplayNameKey`).
        public var containerDisplayName: String
        /// The item lies in a registered external documents folder.
        public var isExternalDocument: Bool

        /// Where an item sits: in the container named `containerDisplayName`,
        /// or in one of its registered external documents folders.
        public init(containerDisplayName: String, isExternalDocument: Bool = false) {
            self.containerDisplayName = containerDisplayName
            self.isExternalDocument = isExternalDocument
        }
    }

    package init(
        serial: UInt64, pathBytes: [UInt8], kind: EntryKind, metadata: EntryMetadata, ubiquity: Ubiquity? = nil,
        hasUnresolvedConflicts: Bool = false, conflictOriginalPathBytes: [UInt8]? = nil
    ) {
        self.serial = serial
        self.pathBytes = pathBytes
        self.kind = kind
        self.metadata = metadata
        self.ubiquity = ubiquity
        self.hasUnresolvedConflicts = hasUnresolvedConflicts
        self.conflictOriginalPathBytes = conflictOriginalPathBytes
    }

    /// The same snapshot standing for another result identity.
    package func withIdentity(_ serial: UInt64) -> MetadataItem {
        var item = MetadataItem(
            serial: serial, pathBytes: pathBytes, kind: kind, metadata: metadata, ubiquity: ubiquity,
            hasUnresolvedConflicts: hasUnresolvedConflicts, conflictOriginalPathBytes: conflictOriginalPathBytes)
        item.importedValues = importedValues
        return item
    }

    /// The same snapshot at another path (the path a client last saw).
    package func replacingPath(_ pathBytes: [UInt8]) -> MetadataItem {
        var item = MetadataItem(
            serial: serial, pathBytes: pathBytes, kind: kind, metadata: metadata, ubiquity: ubiquity,
            hasUnresolvedConflicts: hasUnresolvedConflicts, conflictOriginalPathBytes: conflictOriginalPathBytes)
        item.importedValues = importedValues
        return item
    }

    public static func == (lhs: MetadataItem, rhs: MetadataItem) -> Bool { lhs.serial == rhs.serial }
    public func hash(into hasher: inout Hasher) { hasher.combine(serial) }

    /// Whether this snapshot has the same attributes as another (identity aside).
    public func hasSameAttributes(as other: MetadataItem) -> Bool {
        pathBytes == other.pathBytes && kind == other.kind && metadata == other.metadata
            && ubiquity == other.ubiquity && hasUnresolvedConflicts == other.hasUnresolvedConflicts
            && conflictOriginalPathBytes == other.conflictOriginalPathBytes && importedValues == other.importedValues
    }

    /// The absolute path.
    public var path: FilePath { FilePath.fromBytes(pathBytes) }

    /// The name's raw bytes.
    public var nameBytes: [UInt8] {
        guard let slash = pathBytes.lastIndex(of: 0x2F) else { return pathBytes }
        return Array(pathBytes[(slash + 1)...])
    }

    /// The name (bytes that are not UTF-8 become U+FFFD).
    public var name: String { String(decoding: nameBytes, as: UTF8.self) }

    /// `kMDItemDisplayName`: the name without its last extension (the whole
    /// name for folders and dot-files).
    public var displayName: String {
        String(decoding: DisplayName.bytes(of: nameBytes, isFolder: kind == .folder), as: UTF8.self)
    }

    /// `kMDItemContentType`: the uniform type identifier (see `ContentType`).
    public var contentType: String { ContentType.identifier(forName: nameBytes, kind: kind) }

    /// `kMDItemContentTypeTree`: the type and every type it conforms to.
    public var contentTypeTree: [String] { ContentType.tree(forName: nameBytes, kind: kind) }

    /// The attribute keys this item has values for, in a stable order.
    /// The keys this item has a value for (`NSMetadataItem.attributes`).
    public var attributes: [String] {
        MetadataAttribute.all.filter { value(of: $0) != nil }.map(\.rawValue)
    }

    /// Every key `value(forAttribute:)` answers, by its raw string (the
    /// attribute table's order).
    public static let knownKeys = MetadataAttribute.all.map(\.rawValue)

    // The ubiquitous item keys, by their `NSMetadata...Key` names: see
    // `MetadataAttribute` for the value each carries.

    /// Whether the item is in the query's ubiquity container.
    public static let isUbiquitousKey = MetadataAttribute.isUbiquitous.rawValue
    /// Whether a conflict copy of the item sits beside it.
    public static let hasUnresolvedConflictsKey = MetadataAttribute.hasUnresolvedConflicts.rawValue
    /// mdq's own key: for a conflict copy, the path of the item it conflicts with.
    public static let conflictOriginalPathKey = MetadataAttribute.conflictOriginalPath.rawValue
    /// The name of the container the item is in.
    public static let containerDisplayNameKey = MetadataAttribute.containerDisplayName.rawValue
    /// Always `downloadingStatusCurrent`: every file is local.
    public static let downloadingStatusKey = MetadataAttribute.downloadingStatus.rawValue
    /// The downloading status of a file that is fully present locally.
    public static let downloadingStatusCurrent = "NSMetadataUbiquitousItemDownloadingStatusCurrent"
    /// Always false: nothing is downloaded.
    public static let isDownloadingKey = MetadataAttribute.isDownloading.rawValue
    /// Always false: nothing is downloaded.
    public static let downloadRequestedKey = MetadataAttribute.downloadRequested.rawValue
    /// Always 100: every file is local.
    public static let percentDownloadedKey = MetadataAttribute.percentDownloaded.rawValue
    /// Always true: nothing waits to be uploaded.
    public static let isUploadedKey = MetadataAttribute.isUploaded.rawValue
    /// Always false: nothing is uploaded.
    public static let isUploadingKey = MetadataAttribute.isUploading.rawValue
    /// Always 100: nothing waits to be uploaded.
    public static let percentUploadedKey = MetadataAttribute.percentUploaded.rawValue
    /// Whether the item is in a registered external documents folder.
    public static let isExternalDocumentKey = MetadataAttribute.isExternalDocument.rawValue
    /// Always false: mdq knows of no sharing.
    public static let isSharedKey = MetadataAttribute.isShared.rawValue

    /// The typed value of an attribute (see `MetadataAttribute` for each
    /// key's value); nil when the item has none.
    ///
    /// - Complexity: O(1) but for the path's length (`kMDItemPath`,
    ///   `kMDItemURL`).
    public func value(of attribute: MetadataAttribute) -> AttributeValue? {
        attribute.value(of: ItemSubject(item: self))
    }

    /// The value of an attribute, by Apple's raw key (`kMDItemFSName`) or
    /// the `NSMetadataItem...Key` name, as `NSMetadataItem` returns it:
    /// `String` for names, paths and types, `URL` for `kMDItemURL`, `Int`
    /// for the size (absent for folders), `Date` for dates (the birth date
    /// is absent where the filesystem keeps none), `[String]` for the type
    /// tree, `Bool` and `Double` for the ubiquitous keys. Inside a ubiquity
    /// container the ubiquitous item keys have the values of a fully synced
    /// local file; outside one they are absent and
    /// `NSMetadataItemIsUbiquitousKey` is false. Derived from
    /// `value(of:)`.
    public func value(forAttribute key: String) -> Any? {
        MetadataAttribute(key: key).flatMap { value(of: $0) }?.foundationValue
    }

    /// The values of several attributes, keyed by the requested keys (missing
    /// values are left out).
    public func values(forAttributes keys: [String]) -> [String: Any] {
        var result: [String: Any] = [:]
        for key in keys { if let value = value(forAttribute: key) { result[key] = value } }
        return result
    }

    /// The path, for people (bytes that are not UTF-8 are replaced).
    public var description: String { String(decoding: pathBytes, as: UTF8.self) }
}

/// A sort key: an attribute and a direction.
public struct MetadataSortDescriptor: Hashable, Sendable {
    /// The attribute sorted on, by raw key (`kMDItemFSName`) or
    /// `NSMetadataItem...Key` name.
    public var key: String
    /// Smallest first when true.
    public var ascending: Bool

    /// Sorts on `key`, smallest first unless `ascending` is false.
    public init(key: String, ascending: Bool = true) {
        self.key = key
        self.ascending = ascending
    }

    /// Orders two items; names and paths compare like Finder:
    /// case-insensitively, with runs of digits by value (`file2` before
    /// `file10`); missing values first.
    package func compare(_ a: MetadataItem, _ b: MetadataItem) -> ComparisonResult {
        order(sortKey(a), sortKey(b))
    }

    /// The direction applied to two keys.
    func order(_ x: SortKey, _ y: SortKey) -> ComparisonResult {
        let result: ComparisonResult = x < y ? .orderedAscending : (y < x ? .orderedDescending : .orderedSame)
        guard result != .orderedSame else { return .orderedSame }
        return ascending ? result : (result == .orderedAscending ? .orderedDescending : .orderedAscending)
    }

    /// The item's value for this descriptor as a key that compares with
    /// `<` the way `compare` orders items; made once per item for a sort.
    func sortKey(_ item: MetadataItem) -> SortKey {
        MetadataAttribute(key: key).map { Self.sortKey(item, of: $0) } ?? .missing
    }

    private static func sortKey(_ item: MetadataItem, of attribute: MetadataAttribute) -> SortKey {
        guard let value = item.value(of: attribute) else { return .missing }
        switch value {
        case .text(let bytes): return .text(SortKey.finderBytes(String(decoding: bytes, as: UTF8.self)))
        case .url(let path, _): return .text(SortKey.finderBytes(String(decoding: path, as: UTF8.self)))
        case .list(let strings): return .text(SortKey.finderBytes(strings.first ?? ""))
        case .integer, .real, .bool, .date: return value.number.map(SortKey.number) ?? .missing
        }
    }
}

extension MetadataSortDescriptor {
    /// Whether an item's place in this order is read from the entry alone
    /// (its name, kind, size and dates; not its path or contents): a
    /// `Threshold` then judges an entry before its path is read.
    package var readsTheEntryAlone: Bool {
        guard let attribute = MetadataAttribute(key: key), !attribute.isImported else { return false }
        return attribute.source.requirements.isSubset(of: .metadata)
    }

    /// Whether an item's place in this order is read from what an index
    /// keeps of it (its name, path, kind, size and dates): an index may
    /// choose the first items in it (not by contents, a container's keys,
    /// conflicts or the access time, read elsewhere or later).
    package var readsTheIndexAlone: Bool {
        guard let attribute = MetadataAttribute(key: key), !attribute.isImported,
            attribute.source != .accessTime
        else { return false }
        return attribute.source.requirements.isSubset(of: [.path, .metadata])
    }

    /// The last of the first items in an order read from the entry alone
    /// (`readsTheEntryAlone`): an entry that comes after it is not among
    /// the first, which its name, kind and metadata say before its path is
    /// read.
    package struct Threshold: Sendable {
        let descriptor: MetadataSortDescriptor
        let attribute: MetadataAttribute
        let key: SortKey
        /// Whether the order reads the name (else the kind and metadata
        /// alone).
        package let readsName: Bool

        /// Nil for an order that reads more than the entry.
        package init?(_ descriptor: MetadataSortDescriptor, last: MetadataItem) {
            guard descriptor.readsTheEntryAlone, let attribute = MetadataAttribute(key: descriptor.key) else {
                return nil
            }
            self.descriptor = descriptor
            self.attribute = attribute
            readsName = attribute.source.requirements != .metadata
            key = MetadataSortDescriptor.sortKey(last, of: attribute)
        }

        /// Where an entry named `name` (read when `readsName`), of `kind`,
        /// with `metadata`, comes beside the last: before it, tied with it,
        /// or after it.
        package func place(kind: EntryKind, metadata: EntryMetadata, name: UnsafeRawBufferPointer)
            -> ComparisonResult
        {
            // An item's name is its path's last part: the name alone is
            // that path.
            let probe = MetadataItem(
                serial: 0, pathBytes: readsName ? Array(name) : [], kind: kind, metadata: metadata)
            return descriptor.order(MetadataSortDescriptor.sortKey(probe, of: attribute), key)
        }
    }
}

/// A sortable attribute value: missing first, then numbers, then text.
enum SortKey: Comparable {
    case missing
    case number(Double)
    /// Finder order as bytes: lowercased, digit runs length-prefixed.
    case text([UInt8])

    package static func < (lhs: SortKey, rhs: SortKey) -> Bool {
        switch (lhs, rhs) {
        case (.missing, .missing): return false
        case (.missing, _): return true
        case (_, .missing): return false
        case (.number(let x), .number(let y)): return x < y
        case (.number, .text): return true
        case (.text, .number): return false
        case (.text(let x), .text(let y)): return x.lexicographicallyPrecedes(y)
        }
    }

    /// `text` lowercased (ASCII in place, other characters through
    /// Foundation), each run of digits written as its length (leading
    /// zeros dropped) then the digits, so bytes compare like numbers.
    static func finderBytes(_ text: String) -> [UInt8] {
        let lowered = text.utf8.allSatisfy { $0 < 0x80 } ? text : text.lowercased()
        var out: [UInt8] = []
        out.reserveCapacity(lowered.utf8.count + 4)
        var digits: [UInt8] = []
        func flushDigits() {
            guard !digits.isEmpty else { return }
            let significant = digits.drop { $0 == UInt8(ascii: "0") }
            let run = significant.isEmpty ? [UInt8(ascii: "0")] : Array(significant)
            // Where a digit would sort (after space and punctuation, before
            // letters), then the run's length, so smaller numbers come first.
            out.append(UInt8(ascii: "0"))
            out.append(UInt8(min(run.count, 255)))
            out += run
            digits.removeAll(keepingCapacity: true)
        }
        for byte in lowered.utf8 {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits.append(byte)
                continue
            }
            flushDigits()
            out.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte)
        }
        flushDigits()
        return out
    }
}

/// An item as a predicate subject, so the attribute table reads items the
/// way it reads index entries.
struct ItemSubject: PredicateSubject {
    let item: MetadataItem

    package var kind: EntryKind { item.kind }

    package func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R {
        // The name in place, after the path's last slash: no copy.
        item.pathBytes.withUnsafeBytes { path in
            let start = path.lastIndex(of: 0x2F).map { $0 + 1 } ?? 0
            let name = UnsafeRawBufferPointer(rebasing: path[start...])
            return body(name, NameBytes.isASCII(name))
        }
    }

    package func appendPath(to bytes: inout [UInt8]) { bytes += item.pathBytes }

    package func metadata() -> EntryMetadata? { item.metadata }

    package func ubiquity() -> MetadataItem.Ubiquity? { item.ubiquity }

    package func hasUnresolvedConflicts() -> Bool { item.hasUnresolvedConflicts }

    package func conflictOriginalPath() -> [UInt8]? { item.conflictOriginalPathBytes }

    package func imported() -> ImportedValues? { item.importedValues }
}
