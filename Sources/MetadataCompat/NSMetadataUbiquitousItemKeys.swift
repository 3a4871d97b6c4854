import MetadataIndex

// Apple's iCloud item keys and their values. Items inside the query's
// container answer with what a fully synced local file has on Apple
// platforms: downloaded and current, uploaded, nothing in transfer, 100%;
// items elsewhere have none of these keys. A conflict is a conflict copy
// beside the file (see `ConflictCopy` in MetadataIndex).

/// Whether a conflict copy of the item sits beside it (`NSNumber` holding a
/// `Bool`).
public let NSMetadataUbiquitousItemHasUnresolvedConflictsKey = MetadataAttribute.hasUnresolvedConflicts.rawValue
/// Deprecated by Apple for `NSMetadataUbiquitousItemDownloadingStatusKey`;
/// mdq has no value for it.
public let NSMetadataUbiquitousItemIsDownloadedKey = "NSMetadataUbiquitousItemIsDownloadedKey"
/// The download status (`String`): always
/// `NSMetadataUbiquitousItemDownloadingStatusCurrent`.
public let NSMetadataUbiquitousItemDownloadingStatusKey = MetadataAttribute.downloadingStatus.rawValue
/// The status of an item not downloaded yet; never reported by mdq (every
/// file is local).
public let NSMetadataUbiquitousItemDownloadingStatusNotDownloaded =
    "NSMetadataUbiquitousItemDownloadingStatusNotDownloaded"
/// The status of an item with an older local version; never reported by mdq.
public let NSMetadataUbiquitousItemDownloadingStatusDownloaded = "NSMetadataUbiquitousItemDownloadingStatusDownloaded"
/// The status of an item whose local version is the latest: every item's.
public let NSMetadataUbiquitousItemDownloadingStatusCurrent = MetadataItem.downloadingStatusCurrent
/// Whether the item is downloading (`NSNumber` holding a `Bool`): false.
public let NSMetadataUbiquitousItemIsDownloadingKey = MetadataAttribute.isDownloading.rawValue
/// Whether the item is uploaded (`NSNumber` holding a `Bool`): true.
public let NSMetadataUbiquitousItemIsUploadedKey = MetadataAttribute.isUploaded.rawValue
/// Whether the item is uploading (`NSNumber` holding a `Bool`): false.
public let NSMetadataUbiquitousItemIsUploadingKey = MetadataAttribute.isUploading.rawValue
/// How much is downloaded, 0 to 100 (`NSNumber` holding a `Double`): 100.
public let NSMetadataUbiquitousItemPercentDownloadedKey = MetadataAttribute.percentDownloaded.rawValue
/// How much is uploaded, 0 to 100 (`NSNumber` holding a `Double`): 100.
public let NSMetadataUbiquitousItemPercentUploadedKey = MetadataAttribute.percentUploaded.rawValue
/// The error of a failed download (`NSError`); never present.
public let NSMetadataUbiquitousItemDownloadingErrorKey = "NSMetadataUbiquitousItemDownloadingErrorKey"
/// The error of a failed upload (`NSError`); never present.
public let NSMetadataUbiquitousItemUploadingErrorKey = "NSMetadataUbiquitousItemUploadingErrorKey"
/// Whether a download was requested (`NSNumber` holding a `Bool`): false.
public let NSMetadataUbiquitousItemDownloadRequestedKey = MetadataAttribute.downloadRequested.rawValue
/// Whether the item lies in a registered external documents folder rather
/// than the container (`NSNumber` holding a `Bool`).
public let NSMetadataUbiquitousItemIsExternalDocumentKey = MetadataAttribute.isExternalDocument.rawValue
/// The container folder's name (`String`).
public let NSMetadataUbiquitousItemContainerDisplayNameKey = MetadataAttribute.containerDisplayName.rawValue
/// An external document's URL inside the container (`URL`); mdq has no
/// value for it (external documents stay where they are).
public let NSMetadataUbiquitousItemURLInLocalContainerKey = "NSMetadataUbiquitousItemURLInLocalContainerKey"
/// Whether the item is shared with other users (`NSNumber` holding a
/// `Bool`): false.
public let NSMetadataUbiquitousItemIsSharedKey = MetadataAttribute.isShared.rawValue
/// The current user's role in a shared item (`String`); never present.
public let NSMetadataUbiquitousSharedItemCurrentUserRoleKey = "NSMetadataUbiquitousSharedItemCurrentUserRoleKey"
/// The current user's permissions on a shared item (`String`); never
/// present.
public let NSMetadataUbiquitousSharedItemCurrentUserPermissionsKey =
    "NSMetadataUbiquitousSharedItemCurrentUserPermissionsKey"
/// The owner of a shared item (`PersonNameComponents`); never present.
public let NSMetadataUbiquitousSharedItemOwnerNameComponentsKey = "NSMetadataUbiquitousSharedItemOwnerNameComponentsKey"
/// The last editor of a shared item (`PersonNameComponents`); never present.
public let NSMetadataUbiquitousSharedItemMostRecentEditorNameComponentsKey =
    "NSMetadataUbiquitousSharedItemMostRecentEditorNameComponentsKey"
/// The role value of a shared item's owner.
public let NSMetadataUbiquitousSharedItemRoleOwner = "NSMetadataUbiquitousSharedItemRoleOwner"
/// The role value of a shared item's participant.
public let NSMetadataUbiquitousSharedItemRoleParticipant = "NSMetadataUbiquitousSharedItemRoleParticipant"
/// The permissions value of a read-only shared item.
public let NSMetadataUbiquitousSharedItemPermissionsReadOnly = "NSMetadataUbiquitousSharedItemPermissionsReadOnly"
/// The permissions value of a writable shared item.
public let NSMetadataUbiquitousSharedItemPermissionsReadWrite = "NSMetadataUbiquitousSharedItemPermissionsReadWrite"
