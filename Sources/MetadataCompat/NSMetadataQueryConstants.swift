public import Foundation
import MetadataIndex

// Apple's scope constants, update keys and notification names, with the
// raw strings `MetadataIndex` uses for the same things (so both APIs can be
// mixed in one program).
//
// Scopes: the ubiquitous documents, data and external documents scopes and
// the home folder. `NSMetadataQueryLocalComputerScope` and the network
// scopes are not provided: a live query of the whole computer would crawl
// and watch every folder of every mount, which inotify's per-user watch
// limit does not allow, so code that uses them fails to build rather than
// failing at run time; name folders (`URL`s or paths) instead.

/// `<container>/Documents` and everything in it.
public let NSMetadataQueryUbiquitousDocumentsScope = SearchScope.ubiquitousDocuments.rawValue
/// The container outside its `Documents` folder.
public let NSMetadataQueryUbiquitousDataScope = SearchScope.ubiquitousData.rawValue
/// The folders outside the container registered with it
/// (`UbiquityContainer.registerExternalDocuments(_:)`).
public let NSMetadataQueryAccessibleUbiquitousExternalDocumentsScope = SearchScope.accessibleExternalDocuments.rawValue
/// The user's home folder (`$HOME`).
public let NSMetadataQueryUserHomeScope = SearchScope.userHome.rawValue

/// Not provided: a live query of the whole computer would crawl and watch
/// every folder of every mount (see above); name folders instead.
@available(
    *, unavailable,
    message: "a live query of the whole computer is not supported on Linux; search folders (URLs or paths) instead"
)
public let NSMetadataQueryLocalComputerScope = "NSMetadataQueryLocalComputerScope"
/// Not provided, as `NSMetadataQueryLocalComputerScope`.
@available(
    *, unavailable,
    message: "a live query of the whole computer is not supported on Linux; search folders (URLs or paths) instead"
)
public let NSMetadataQueryIndexedLocalComputerScope = "NSMetadataQueryIndexedLocalComputerScope"
/// Not provided: mounted network volumes are searched by naming their folders.
@available(
    *, unavailable,
    message: "network scopes are not supported on Linux; search the mounted folders (URLs or paths) instead"
)
public let NSMetadataQueryNetworkScope = "NSMetadataQueryNetworkScope"
/// Every host of the shared index across hosts (`SearchScope.allHosts`):
/// "all indexed user-mounted remote volumes", as the hosts that publish
/// into the shared index this machine is configured with (`$MDQ_SHARED`,
/// else `SHARED` in `/etc/mdq/system.conf`). Not with other scopes in one
/// query.
public let NSMetadataQueryIndexedNetworkScope = "NSMetadataQueryIndexedNetworkScope"

/// The `userInfo` key of a did-update notification's added result objects
/// (`[NSMetadataItem]`, or the delegate's replacements).
public let NSMetadataQueryUpdateAddedItemsKey = MetadataQuery.addedItemsKey
/// The `userInfo` key of a did-update notification's changed result objects.
public let NSMetadataQueryUpdateChangedItemsKey = MetadataQuery.changedItemsKey
/// The `userInfo` key of a did-update notification's removed result objects.
public let NSMetadataQueryUpdateRemovedItemsKey = MetadataQuery.removedItemsKey

extension Notification.Name {
    /// Posted by `NSMetadataQuery.start()` before it returns.
    public static let NSMetadataQueryDidStartGathering = Notification.Name.metadataQueryDidStartGathering
    /// Posted while the first crawl runs, at most once per batching interval.
    public static let NSMetadataQueryGatheringProgress = Notification.Name.metadataQueryGatheringProgress
    /// Posted once, when the results are complete and live.
    public static let NSMetadataQueryDidFinishGathering = Notification.Name.metadataQueryDidFinishGathering
    /// Posted when the results change; `userInfo` holds the result objects
    /// under `NSMetadataQueryUpdateAddedItemsKey`, `...ChangedItemsKey` and
    /// `...RemovedItemsKey`.
    public static let NSMetadataQueryDidUpdate = Notification.Name.metadataQueryDidUpdate
}
