public import Foundation
import MetadataIndex
import SystemPackage

extension FileManager {
    /// The URL of a ubiquity container, as Apple's
    /// `url(forUbiquityContainerIdentifier:)` gives it: the folder an
    /// identifier names under the containers root (`$MDQ_CONTAINERS`, see
    /// `UbiquityContainer.containersRoot`), in either spelling
    /// (`iCloud.com.example.app` or `iCloud~com~example~app`).
    ///
    /// Apple's creates the app's container when it is missing; this one
    /// never creates anything and returns nil instead (as Apple's does when
    /// iCloud is unavailable): make the folder first.
    ///
    /// - Parameter containerIdentifier: the identifier; nil means the
    ///   default container (`UbiquityContainer.defaultContainer()`: the one
    ///   `$MDQ_DEFAULT_CONTAINER` names, else the first this process asked
    ///   for by identifier, else the only one).
    /// - Returns: the container folder's URL, or nil when there is no such
    ///   container.
    public func url(forUbiquityContainerIdentifier containerIdentifier: String?) -> URL? {
        let container: UbiquityContainer
        do throws(MetadataError) {
            if let containerIdentifier {
                container = try UbiquityContainer(identifier: containerIdentifier)
                // What the app asks for first is its default (Apple: the
                // first container of its entitlements).
                UbiquityContainer.noteRequested(container)
            } else {
                container = try UbiquityContainer.defaultContainer()
            }
        } catch {
            return nil
        }
        return URL(fileURLWithPath: container.path.string, isDirectory: true)
    }

    /// A token for the current iCloud account, as Apple's
    /// `ubiquityIdentityToken`: here the containers root's path (an
    /// `NSString`), non-nil when that folder exists. It changes when
    /// `$MDQ_CONTAINERS` points elsewhere, as Apple's changes with the
    /// account.
    public var ubiquityIdentityToken: (any NSCoding & NSCopying & NSObjectProtocol)? {
        let root = UbiquityContainer.containersRoot
        var isFolder: ObjCBool = false
        guard fileExists(atPath: root.string, isDirectory: &isFolder), isFolder.boolValue else { return nil }
        return NSString(string: root.string)
    }

    /// Whether the item at `url` lies in a ubiquity container (inside one of
    /// the folders of the containers root), as Apple's
    /// `isUbiquitousItem(at:)`; false when nothing is there.
    ///
    /// - Parameter url: a file URL.
    /// - Returns: whether the item exists inside a container.
    public func isUbiquitousItem(at url: URL) -> Bool {
        guard url.isFileURL, UbiquityContainer.container(holding: FilePath(url.path)) != nil else { return false }
        return (try? attributesOfItem(atPath: url.path)) != nil
    }

    /// Starts downloading an item, as Apple's
    /// `startDownloadingUbiquitousItem(at:)`: every item in a container is
    /// a local file whose status is already
    /// `NSMetadataUbiquitousItemDownloadingStatusCurrent`, so there is
    /// nothing to fetch.
    ///
    /// - Parameter url: the item's file URL.
    /// - Throws: `CocoaError(.fileNoSuchFile)` when nothing is at `url`, and
    ///   `CocoaError(.fileReadUnsupportedScheme)` for a URL that is not a
    ///   file URL.
    public func startDownloadingUbiquitousItem(at url: URL) throws {
        guard url.isFileURL else { throw CocoaError(.fileReadUnsupportedScheme, userInfo: [NSURLErrorKey: url]) }
        guard (try? attributesOfItem(atPath: url.path)) != nil else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
        }
    }

    /// Moves an item into a ubiquity container or out of one, as Apple's
    /// `setUbiquitous(_:itemAt:destinationURL:)`: a container here is a
    /// local folder that something else syncs, so this is a move (a rename
    /// within a filesystem, else a copy and delete), which a query on the
    /// container reports like any other.
    ///
    /// - Parameters:
    ///   - flag: true to move the item into a container, false to move it
    ///     out of one.
    ///   - url: the item's file URL.
    ///   - destinationURL: where it goes: inside a container under the
    ///     containers root when `flag` is true, outside every container when
    ///     false.
    /// - Throws: `CocoaError(.fileWriteInvalidFileName)` when
    ///   `destinationURL` is not on the side `flag` asks for, else what
    ///   `moveItem(at:to:)` throws.
    public func setUbiquitous(_ flag: Bool, itemAt url: URL, destinationURL: URL) throws {
        let inside = UbiquityContainer.container(holding: FilePath(destinationURL.path)) != nil
        guard destinationURL.isFileURL, inside == flag else {
            throw CocoaError(.fileWriteInvalidFileName, userInfo: [NSURLErrorKey: destinationURL])
        }
        try moveItem(at: url, to: destinationURL)
    }

    /// Apple's `evictUbiquitousItem(at:)` removes the local copy of an item
    /// kept in iCloud. Here the local file is the only copy mdq knows of,
    /// so this refuses rather than delete it.
    ///
    /// - Parameter url: the item's file URL.
    /// - Throws: `CocoaError(.featureUnsupported)` always.
    public func evictUbiquitousItem(at url: URL) throws {
        throw CocoaError(.featureUnsupported, userInfo: [NSURLErrorKey: url])
    }
}
