import MDQSystem
public import SystemPackage

/// Where a query looks, named as on Apple platforms.
///
/// The raw strings equal Apple's constants, so code ported from
/// `NSMetadataQuery` can keep its scope values.
public struct SearchScope: Hashable, Sendable, CustomStringConvertible {
    /// Apple's constant string, or the folder path for a directory scope.
    public let rawValue: String
    /// For a directory scope, the folder.
    public let directory: FilePath?

    private init(_ rawValue: String) {
        self.rawValue = rawValue
        directory = nil
    }

    /// `<container>/Documents/**`.
    public static let ubiquitousDocuments = SearchScope("NSMetadataQueryUbiquitousDocumentsScope")
    /// `<container>/**` minus `<container>/Documents/**`.
    public static let ubiquitousData = SearchScope("NSMetadataQueryUbiquitousDataScope")
    /// The external document folders registered with the container
    /// (`UbiquityContainer.registerExternalDocuments(_:)`).
    public static let accessibleExternalDocuments = SearchScope(
        "NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope")
    /// `$HOME`.
    public static let userHome = SearchScope("NSMetadataQueryUserHomeScope")

    /// A folder's subtree (`mdfind -onlyin`).
    public static func directory(_ path: FilePath) -> SearchScope {
        SearchScope(directory: path)
    }

    private init(directory: FilePath) {
        rawValue = directory.string
        self.directory = directory
    }

    public var description: String { rawValue }
}
