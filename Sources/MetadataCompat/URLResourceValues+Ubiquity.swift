public import Foundation
import MetadataIndex
import SystemPackage

/// Apple's download status of a ubiquitous item.
public struct URLUbiquitousItemDownloadingStatus: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Not on this machine (never the case here).
    public static let notDownloaded = URLUbiquitousItemDownloadingStatus(
        rawValue: "NSURLUbiquitousItemDownloadingStatusNotDownloaded")
    /// Downloaded, but a newer version exists elsewhere (never the case here).
    public static let downloaded = URLUbiquitousItemDownloadingStatus(
        rawValue: "NSURLUbiquitousItemDownloadingStatusDownloaded")
    /// Here, and the latest: every file in a container on Linux.
    public static let current = URLUbiquitousItemDownloadingStatus(
        rawValue: "NSURLUbiquitousItemDownloadingStatusCurrent")
}

extension Notification.Name {
    /// Apple's notification that the iCloud account changed. Posted by
    /// nobody here (the containers root is the account, see
    /// `FileManager.ubiquityIdentityToken`); declared so code observing it
    /// builds.
    public static let NSUbiquityIdentityDidChange = Notification.Name("NSUbiquityIdentityDidChangeNotification")
}

/// `ubiquitousItemDownloadingStatus`, which swift-corelibs-foundation does
/// not declare, as a fully synced local file has it inside a container:
/// `.current`; nil outside any container, as Apple's is for a local file.
///
/// swift-corelibs-foundation's `URLResourceValues` keeps only the values
/// its own `resourceValues(forKeys:)` reads and cannot be given others, so
/// the status is worked out from the values' `path`: ask for `.pathKey`
/// with it (`[.pathKey, .ubiquitousItemDownloadingStatusKey]`). The other
/// ubiquitous properties (`ubiquitousItemIsDownloading`,
/// `ubiquitousItemHasUnresolvedConflicts`, `isUbiquitousItem`, ...) are
/// Foundation's own declarations, which answer nil on Linux and cannot be
/// replaced from outside; read them from the query's items
/// (`NSMetadataUbiquitousItem...Key`), which carry every one, or use
/// `NSFileVersion` for conflicts.
extension URLResourceValues {
    /// `.ubiquitousItemDownloadingStatusKey`.
    public var ubiquitousItemDownloadingStatus: URLUbiquitousItemDownloadingStatus? {
        guard let path, UbiquityContainer.container(holding: FilePath(path)) != nil else { return nil }
        return .current
    }
}
