import MDQSystem
public import SystemPackage

/// The ubiquity container a query runs against, as evaluating predicates
/// on the ubiquitous keys (`NSMetadataItemIsUbiquitousKey`,
/// `NSMetadataUbiquitousItemDownloadingStatusKey`, ...) needs it: an entry
/// is ubiquitous when it lies inside the container folder or one of its
/// registered external document folders.
///
/// A value, read once per query (the external folders come from the
/// container's registry on disk), and cheap to share between threads.
public struct UbiquityContext: Sendable, Hashable {
    private let containerPath: [UInt8]
    private let externalFolders: [[UInt8]]
    private let displayName: String

    /// - Parameters:
    ///   - container: the query's container.
    ///   - externalFolders: its external document folders; nil reads them
    ///     from the container's registry now.
    public init(container: UbiquityContainer, externalFolders: [FilePath]? = nil) {
        containerPath = container.path.lexicallyNormalized().bytes
        self.externalFolders = (externalFolders ?? container.externalDocumentFolders).map {
            $0.lexicallyNormalized().bytes
        }
        displayName = container.path.lastComponent?.string ?? ""
    }

    /// The ubiquity of an entry directly inside `folder` (an absolute
    /// path): the same for every entry of a folder, so a crawl asks once
    /// per folder.
    package func ubiquity(ofChildOf folder: [UInt8]) -> MetadataItem.Ubiquity? {
        func within(_ root: [UInt8]) -> Bool {
            folder.starts(with: root) && (folder.count == root.count || folder[root.count] == 0x2F || root == [0x2F])
        }
        if within(containerPath) { return MetadataItem.Ubiquity(containerDisplayName: displayName) }
        if externalFolders.contains(where: within) {
            return MetadataItem.Ubiquity(containerDisplayName: displayName, isExternalDocument: true)
        }
        return nil
    }

    /// The ubiquity of the entry at `path` (an absolute path).
    package func ubiquity(ofPath path: [UInt8]) -> MetadataItem.Ubiquity? {
        guard let slash = path.lastIndex(of: 0x2F) else { return nil }
        return ubiquity(ofChildOf: slash == 0 ? [0x2F] : Array(path[..<slash]))
    }
}
