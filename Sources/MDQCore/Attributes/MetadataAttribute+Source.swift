import MDQSystem

extension MetadataAttribute {
    /// Where an attribute's value comes from: resolved once per attribute,
    /// so evaluating a predicate never compares key strings.
    package enum Source: Hashable, Sendable {
        case name, displayName, path, url, size, creationDate, contentChangeDate, contentType, contentTypeTree
        /// From `stat`: the owner's user id, the group id, the permission bits.
        case ownerUserID, ownerGroupID, permissions
        /// The access time, read from the file (`stat`) when asked.
        case accessTime
        /// The content type as a person reads it (`ContentKind`).
        case kind
        /// The name's extension, after its last dot (none for a leading
        /// dot): the key path `pathExtension` on a name, path or URL.
        case nameExtension
        /// The name without its extension: `stringByDeletingPathExtension`.
        case nameWithoutExtension
        case isUbiquitous, isExternalDocument, containerDisplayName
        case hasUnresolvedConflicts, conflictOriginalPath
        /// Inside the container, the value a fully synced local file has
        /// (downloaded, uploaded, 100 %); absent outside it.
        case synced(AttributeValue)
        /// Read from inside the file by an importer; `list` for values that
        /// are lists of strings (authors, tags).
        case imported(list: Bool)

        /// What reading this source needs from a subject beyond its name
        /// and kind.
        var requirements: SubjectRequirements {
            switch self {
            case .name, .displayName, .contentType, .contentTypeTree, .kind, .nameExtension, .nameWithoutExtension: []
            case .path, .url, .accessTime: .path
            case .size, .creationDate, .contentChangeDate, .ownerUserID, .ownerGroupID, .permissions: .metadata
            case .isUbiquitous, .isExternalDocument, .containerDisplayName, .synced: .ubiquity
            case .hasUnresolvedConflicts, .conflictOriginalPath: .conflicts
            case .imported: .imported
            }
        }

        /// The value for `subject`, nil when it has none (a folder's size, a
        /// birth time the filesystem does not keep, a ubiquitous key outside
        /// the container).
        ///
        /// This is the one reader of every attribute: items, predicates'
        /// slow path, sorting, grouping and printing all come through it
        /// (the predicate fast paths for names, sizes and dates read the
        /// same fields in place, without building a value).
        func value<S: PredicateSubject>(of subject: S) -> AttributeValue? {
            switch self {
            case .name:
                return subject.withName { name, _ in .text(Array(name)) }
            case .displayName:
                let isFolder = subject.kind == .folder
                return subject.withName { name, _ in .text(Array(DisplayName.range(of: name, isFolder: isFolder))) }
            case .nameExtension:
                return subject.withName { name, _ in
                    let stem = DisplayName.range(of: name, isFolder: false)
                    return .text(stem.count == name.count ? [] : Array(name[(stem.count + 1)...]))
                }
            case .nameWithoutExtension:
                return subject.withName { name, _ in .text(Array(DisplayName.range(of: name, isFolder: false))) }
            case .path:
                var bytes: [UInt8] = []
                subject.appendPath(to: &bytes)
                return .text(bytes)
            case .url:
                var bytes: [UInt8] = []
                subject.appendURLPath(to: &bytes)
                return .fileURL(bytes, isFolder: subject.kind == .folder)
            case .size:
                guard subject.kind != .folder, let size = subject.metadata()?.size else { return nil }
                return .integer(Int64(clamping: size))
            case .ownerUserID:
                return subject.metadata()?.access.map { .integer(Int64($0.owner)) }
            case .ownerGroupID:
                return subject.metadata()?.access.map { .integer(Int64($0.group)) }
            case .permissions:
                return subject.metadata()?.access.map { .integer(Int64($0.mode)) }
            case .creationDate:
                return subject.metadata()?.birthTime.map(AttributeValue.date)
            case .contentChangeDate:
                return subject.metadata()?.modificationTime.map(AttributeValue.date)
            case .accessTime:
                var bytes: [UInt8] = []
                subject.appendPath(to: &bytes)
                guard case .success(let status) = FileStatus.of(pathBytes: bytes) else { return nil }
                return .date(status.accessTime)
            case .contentType:
                let type = subject.withName { name, _ in ContentType.type(ofName: name, kind: subject.kind) }
                return .text(ContentType.types[type].identifierBytes)
            case .kind:
                let type = subject.withName { name, _ in ContentType.type(ofName: name, kind: subject.kind) }
                return .text(ContentKind.byType[type])
            case .contentTypeTree:
                let type = subject.withName { name, _ in ContentType.type(ofName: name, kind: subject.kind) }
                return .list(ContentType.types[type].tree)
            case .isUbiquitous:
                return .bool(subject.ubiquity() != nil)
            case .isExternalDocument:
                return subject.ubiquity().map { .bool($0.isExternalDocument) }
            case .containerDisplayName:
                return subject.ubiquity().map { .text(Array($0.containerDisplayName.utf8)) }
            case .synced(let value):
                return subject.ubiquity() == nil ? nil : value
            case .hasUnresolvedConflicts:
                return .bool(subject.hasUnresolvedConflicts())
            case .conflictOriginalPath:
                return subject.conflictOriginalPath().map(AttributeValue.text)
            case .imported:
                // Read per attribute (`MetadataAttribute.value(of:)`): the
                // source alone does not name its key.
                return nil
            }
        }
    }

    /// The attribute's value for `subject`; see `Source.value(of:)`.
    func value<S: PredicateSubject>(of subject: S) -> AttributeValue? {
        if isImported { return subject.imported()?[self] }
        return source.value(of: subject)
    }
}

/// What evaluating a predicate (or reading an attribute) needs from a
/// subject beyond its name and kind; a compiled predicate collects them so
/// callers provide only what it reads.
package struct SubjectRequirements: OptionSet, Hashable, Sendable {
    package let rawValue: UInt8

    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The full path (`kMDItemPath`, `kMDItemURL`).
    package static let path = SubjectRequirements(rawValue: 1)
    /// Size and dates (a stat, for a crawled entry).
    package static let metadata = SubjectRequirements(rawValue: 2)
    /// Where the entry lies relative to the query's container.
    package static let ubiquity = SubjectRequirements(rawValue: 4)
    /// The entry's siblings (conflict copies).
    static let conflicts = SubjectRequirements(rawValue: 8)
    /// What the importers read from inside the file.
    package static let imported = SubjectRequirements(rawValue: 16)
    /// What needs every entry stat'ed (and imported) first: a names-first
    /// index answers nothing else until it is.
    package static let readByStat: SubjectRequirements = [.metadata, .conflicts, .imported]
}
