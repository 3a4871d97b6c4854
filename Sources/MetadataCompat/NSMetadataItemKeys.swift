import MetadataIndex

// Apple's `NSMetadataItem...Key` constants. Each value is the key's raw
// string, so a constant and a literal key are interchangeable in
// `value(forAttribute:)`, sort descriptors and predicate text. The keys mdq
// reads come from the attribute table (`MetadataAttribute.all`); the others
// are Apple's Spotlight keys for what it extracts from file contents (the
// macOS-only group of Apple's header), which mdq does not read: items have
// no value for them and a predicate on one is refused when the query
// starts.

// MARK: Keys mdq reads

/// `kMDItemFSName`: the name on disk (`String`).
public let NSMetadataItemFSNameKey = MetadataAttribute.fsName.rawValue
/// `kMDItemDisplayName`: the name without its last extension (`String`).
public let NSMetadataItemDisplayNameKey = MetadataAttribute.displayName.rawValue
/// `kMDItemURL`: the file URL (`URL`).
public let NSMetadataItemURLKey = MetadataAttribute.url.rawValue
/// `kMDItemPath`: the absolute path (`String`).
public let NSMetadataItemPathKey = MetadataAttribute.path.rawValue
/// `kMDItemFSSize`: the size in bytes (`NSNumber`); files only.
public let NSMetadataItemFSSizeKey = MetadataAttribute.fsSize.rawValue
/// `kMDItemFSCreationDate`: the birth time (`Date`), where the filesystem
/// keeps one.
public let NSMetadataItemFSCreationDateKey = MetadataAttribute.creationDate.rawValue
/// `kMDItemFSContentChangeDate`: the modification time (`Date`).
public let NSMetadataItemFSContentChangeDateKey = MetadataAttribute.contentChangeDate.rawValue
/// `kMDItemContentType`: the uniform type identifier (`String`).
public let NSMetadataItemContentTypeKey = MetadataAttribute.contentType.rawValue
/// `kMDItemContentTypeTree`: the type and the types it conforms to
/// (`[String]`).
public let NSMetadataItemContentTypeTreeKey = MetadataAttribute.contentTypeTree.rawValue
/// Whether the item lies in the query's ubiquity container (`NSNumber`
/// holding a `Bool`).
public let NSMetadataItemIsUbiquitousKey = MetadataAttribute.isUbiquitous.rawValue

// MARK: Keys mdq has no value for

/// `kMDItemAttributeChangeDate` (a date on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAttributeChangeDateKey = "kMDItemAttributeChangeDate"
/// `kMDItemKeywords` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemKeywordsKey = "kMDItemKeywords"
/// `kMDItemTitle` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemTitleKey = "kMDItemTitle"
/// `kMDItemAuthors` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAuthorsKey = "kMDItemAuthors"
/// `kMDItemEditors` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemEditorsKey = "kMDItemEditors"
/// `kMDItemParticipants` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemParticipantsKey = "kMDItemParticipants"
/// `kMDItemProjects` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemProjectsKey = "kMDItemProjects"
/// `kMDItemDownloadedDate` (a date on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemDownloadedDateKey = "kMDItemDownloadedDate"
/// `kMDItemWhereFroms` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemWhereFromsKey = "kMDItemWhereFroms"
/// `kMDItemComment` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCommentKey = "kMDItemComment"
/// `kMDItemCopyright` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCopyrightKey = "kMDItemCopyright"
/// `kMDItemLastUsedDate`: the file's access time, read when asked (see `MetadataAttribute.lastUsedDate`).
public let NSMetadataItemLastUsedDateKey = MetadataAttribute.lastUsedDate.rawValue
/// `kMDItemContentCreationDate`: when the content was made, as the importers read it (a photo's capture date).
public let NSMetadataItemContentCreationDateKey = "kMDItemContentCreationDate"
/// `kMDItemContentModificationDate`: the modification time (see `MetadataAttribute.contentModificationDate`).
public let NSMetadataItemContentModificationDateKey = MetadataAttribute.contentModificationDate.rawValue
/// `kMDItemDateAdded` (a date on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemDateAddedKey = "kMDItemDateAdded"
/// `kMDItemDurationSeconds` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemDurationSecondsKey = "kMDItemDurationSeconds"
/// `kMDItemContactKeywords` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemContactKeywordsKey = "kMDItemContactKeywords"
/// `kMDItemVersion` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemVersionKey = "kMDItemVersion"
/// `kMDItemPixelHeight` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPixelHeightKey = "kMDItemPixelHeight"
/// `kMDItemPixelWidth` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPixelWidthKey = "kMDItemPixelWidth"
/// `kMDItemPixelCount` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPixelCountKey = "kMDItemPixelCount"
/// `kMDItemColorSpace` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemColorSpaceKey = "kMDItemColorSpace"
/// `kMDItemBitsPerSample` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemBitsPerSampleKey = "kMDItemBitsPerSample"
/// `kMDItemFlashOnOff` (a boolean on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemFlashOnOffKey = "kMDItemFlashOnOff"
/// `kMDItemFocalLength` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemFocalLengthKey = "kMDItemFocalLength"
/// `kMDItemAcquisitionMake` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAcquisitionMakeKey = "kMDItemAcquisitionMake"
/// `kMDItemAcquisitionModel` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAcquisitionModelKey = "kMDItemAcquisitionModel"
/// `kMDItemISOSpeed` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemISOSpeedKey = "kMDItemISOSpeed"
/// `kMDItemOrientation` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemOrientationKey = "kMDItemOrientation"
/// `kMDItemLayerNames` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemLayerNamesKey = "kMDItemLayerNames"
/// `kMDItemWhiteBalance` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemWhiteBalanceKey = "kMDItemWhiteBalance"
/// `kMDItemAperture` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemApertureKey = "kMDItemAperture"
/// `kMDItemProfileName` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemProfileNameKey = "kMDItemProfileName"
/// `kMDItemResolutionWidthDPI` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemResolutionWidthDPIKey = "kMDItemResolutionWidthDPI"
/// `kMDItemResolutionHeightDPI` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemResolutionHeightDPIKey = "kMDItemResolutionHeightDPI"
/// `kMDItemExposureMode` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemExposureModeKey = "kMDItemExposureMode"
/// `kMDItemExposureTimeSeconds` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemExposureTimeSecondsKey = "kMDItemExposureTimeSeconds"
/// `kMDItemEXIFVersion` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemEXIFVersionKey = "kMDItemEXIFVersion"
/// `kMDItemCameraOwner` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCameraOwnerKey = "kMDItemCameraOwner"
/// `kMDItemFocalLength35mm` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemFocalLength35mmKey = "kMDItemFocalLength35mm"
/// `kMDItemLensModel` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemLensModelKey = "kMDItemLensModel"
/// `kMDItemEXIFGPSVersion` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemEXIFGPSVersionKey = "kMDItemEXIFGPSVersion"
/// `kMDItemAltitude` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAltitudeKey = "kMDItemAltitude"
/// `kMDItemLatitude` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemLatitudeKey = "kMDItemLatitude"
/// `kMDItemLongitude` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemLongitudeKey = "kMDItemLongitude"
/// `kMDItemSpeed` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemSpeedKey = "kMDItemSpeed"
/// `kMDItemTimestamp` (a date on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemTimestampKey = "kMDItemTimestamp"
/// `kMDItemGPSTrack` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSTrackKey = "kMDItemGPSTrack"
/// `kMDItemImageDirection` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemImageDirectionKey = "kMDItemImageDirection"
/// `kMDItemNamedLocation` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemNamedLocationKey = "kMDItemNamedLocation"
/// `kMDItemGPSStatus` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSStatusKey = "kMDItemGPSStatus"
/// `kMDItemGPSMeasureMode` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSMeasureModeKey = "kMDItemGPSMeasureMode"
/// `kMDItemGPSDOP` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSDOPKey = "kMDItemGPSDOP"
/// `kMDItemGPSMapDatum` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSMapDatumKey = "kMDItemGPSMapDatum"
/// `kMDItemGPSDestLatitude` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSDestLatitudeKey = "kMDItemGPSDestLatitude"
/// `kMDItemGPSDestLongitude` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSDestLongitudeKey = "kMDItemGPSDestLongitude"
/// `kMDItemGPSDestBearing` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSDestBearingKey = "kMDItemGPSDestBearing"
/// `kMDItemGPSDestDistance` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSDestDistanceKey = "kMDItemGPSDestDistance"
/// `kMDItemGPSProcessingMethod` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSProcessingMethodKey = "kMDItemGPSProcessingMethod"
/// `kMDItemGPSAreaInformation` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSAreaInformationKey = "kMDItemGPSAreaInformation"
/// `kMDItemGPSDateStamp` (a date on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSDateStampKey = "kMDItemGPSDateStamp"
/// `kMDItemGPSDifferental` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGPSDifferentalKey = "kMDItemGPSDifferental"
/// `kMDItemCodecs` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCodecsKey = "kMDItemCodecs"
/// `kMDItemMediaTypes` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemMediaTypesKey = "kMDItemMediaTypes"
/// `kMDItemStreamable` (a boolean on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemStreamableKey = "kMDItemStreamable"
/// `kMDItemTotalBitRate` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemTotalBitRateKey = "kMDItemTotalBitRate"
/// `kMDItemVideoBitRate` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemVideoBitRateKey = "kMDItemVideoBitRate"
/// `kMDItemAudioBitRate` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAudioBitRateKey = "kMDItemAudioBitRate"
/// `kMDItemDeliveryType` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemDeliveryTypeKey = "kMDItemDeliveryType"
/// `kMDItemAlbum` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAlbumKey = "kMDItemAlbum"
/// `kMDItemHasAlphaChannel` (a boolean on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemHasAlphaChannelKey = "kMDItemHasAlphaChannel"
/// `kMDItemRedEyeOnOff` (a boolean on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemRedEyeOnOffKey = "kMDItemRedEyeOnOff"
/// `kMDItemMeteringMode` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemMeteringModeKey = "kMDItemMeteringMode"
/// `kMDItemMaxAperture` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemMaxApertureKey = "kMDItemMaxAperture"
/// `kMDItemFNumber` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemFNumberKey = "kMDItemFNumber"
/// `kMDItemExposureProgram` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemExposureProgramKey = "kMDItemExposureProgram"
/// `kMDItemExposureTimeString` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemExposureTimeStringKey = "kMDItemExposureTimeString"
/// `kMDItemHeadline` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemHeadlineKey = "kMDItemHeadline"
/// `kMDItemInstructions` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemInstructionsKey = "kMDItemInstructions"
/// `kMDItemCity` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCityKey = "kMDItemCity"
/// `kMDItemStateOrProvince` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemStateOrProvinceKey = "kMDItemStateOrProvince"
/// `kMDItemCountry` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCountryKey = "kMDItemCountry"
/// `kMDItemTextContent` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemTextContentKey = "kMDItemTextContent"
/// `kMDItemAudioSampleRate` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAudioSampleRateKey = "kMDItemAudioSampleRate"
/// `kMDItemAudioChannelCount` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAudioChannelCountKey = "kMDItemAudioChannelCount"
/// `kMDItemTempo` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemTempoKey = "kMDItemTempo"
/// `kMDItemKeySignature` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemKeySignatureKey = "kMDItemKeySignature"
/// `kMDItemTimeSignature` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemTimeSignatureKey = "kMDItemTimeSignature"
/// `kMDItemAudioEncodingApplication` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAudioEncodingApplicationKey = "kMDItemAudioEncodingApplication"
/// `kMDItemComposer` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemComposerKey = "kMDItemComposer"
/// `kMDItemLyricist` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemLyricistKey = "kMDItemLyricist"
/// `kMDItemAudioTrackNumber` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAudioTrackNumberKey = "kMDItemAudioTrackNumber"
/// `kMDItemRecordingDate` (a date on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemRecordingDateKey = "kMDItemRecordingDate"
/// `kMDItemMusicalGenre` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemMusicalGenreKey = "kMDItemMusicalGenre"
/// `kMDItemIsGeneralMIDISequence` (a boolean on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemIsGeneralMIDISequenceKey = "kMDItemIsGeneralMIDISequence"
/// `kMDItemRecordingYear` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemRecordingYearKey = "kMDItemRecordingYear"
/// `kMDItemOrganizations` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemOrganizationsKey = "kMDItemOrganizations"
/// `kMDItemLanguages` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemLanguagesKey = "kMDItemLanguages"
/// `kMDItemRights` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemRightsKey = "kMDItemRights"
/// `kMDItemPublishers` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPublishersKey = "kMDItemPublishers"
/// `kMDItemContributors` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemContributorsKey = "kMDItemContributors"
/// `kMDItemCoverage` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCoverageKey = "kMDItemCoverage"
/// `kMDItemSubject` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemSubjectKey = "kMDItemSubject"
/// `kMDItemTheme` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemThemeKey = "kMDItemTheme"
/// `kMDItemDescription` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemDescriptionKey = "kMDItemDescription"
/// `kMDItemIdentifier` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemIdentifierKey = "kMDItemIdentifier"
/// `kMDItemAudiences` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAudiencesKey = "kMDItemAudiences"
/// `kMDItemNumberOfPages` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemNumberOfPagesKey = "kMDItemNumberOfPages"
/// `kMDItemPageWidth` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPageWidthKey = "kMDItemPageWidth"
/// `kMDItemPageHeight` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPageHeightKey = "kMDItemPageHeight"
/// `kMDItemSecurityMethod` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemSecurityMethodKey = "kMDItemSecurityMethod"
/// `kMDItemCreator` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCreatorKey = "kMDItemCreator"
/// `kMDItemEncodingApplications` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemEncodingApplicationsKey = "kMDItemEncodingApplications"
/// `kMDItemDueDate` (a date on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemDueDateKey = "kMDItemDueDate"
/// `kMDItemStarRating` (a number on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemStarRatingKey = "kMDItemStarRating"
/// `kMDItemPhoneNumbers` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPhoneNumbersKey = "kMDItemPhoneNumbers"
/// `kMDItemEmailAddresses` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemEmailAddressesKey = "kMDItemEmailAddresses"
/// `kMDItemInstantMessageAddresses` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemInstantMessageAddressesKey = "kMDItemInstantMessageAddresses"
/// `kMDItemKind` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemKindKey = "kMDItemKind"
/// `kMDItemRecipients` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemRecipientsKey = "kMDItemRecipients"
/// `kMDItemFinderComment` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemFinderCommentKey = "kMDItemFinderComment"
/// `kMDItemFonts` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemFontsKey = "kMDItemFonts"
/// `kMDItemAppleLoopsRootKey` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAppleLoopsRootKeyKey = "kMDItemAppleLoopsRootKey"
/// `kMDItemAppleLoopsKeyFilterType` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAppleLoopsKeyFilterTypeKey = "kMDItemAppleLoopsKeyFilterType"
/// `kMDItemAppleLoopsLoopMode` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAppleLoopsLoopModeKey = "kMDItemAppleLoopsLoopMode"
/// `kMDItemAppleLoopDescriptors` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAppleLoopDescriptorsKey = "kMDItemAppleLoopDescriptors"
/// `kMDItemMusicalInstrumentCategory` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemMusicalInstrumentCategoryKey = "kMDItemMusicalInstrumentCategory"
/// `kMDItemMusicalInstrumentName` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemMusicalInstrumentNameKey = "kMDItemMusicalInstrumentName"
/// `kMDItemCFBundleIdentifier` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemCFBundleIdentifierKey = "kMDItemCFBundleIdentifier"
/// `kMDItemInformation` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemInformationKey = "kMDItemInformation"
/// `kMDItemDirector` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemDirectorKey = "kMDItemDirector"
/// `kMDItemProducer` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemProducerKey = "kMDItemProducer"
/// `kMDItemGenre` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemGenreKey = "kMDItemGenre"
/// `kMDItemPerformers` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemPerformersKey = "kMDItemPerformers"
/// `kMDItemOriginalFormat` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemOriginalFormatKey = "kMDItemOriginalFormat"
/// `kMDItemOriginalSource` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemOriginalSourceKey = "kMDItemOriginalSource"
/// `kMDItemAuthorEmailAddresses` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAuthorEmailAddressesKey = "kMDItemAuthorEmailAddresses"
/// `kMDItemRecipientEmailAddresses` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemRecipientEmailAddressesKey = "kMDItemRecipientEmailAddresses"
/// `kMDItemAuthorAddresses` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemAuthorAddressesKey = "kMDItemAuthorAddresses"
/// `kMDItemRecipientAddresses` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemRecipientAddressesKey = "kMDItemRecipientAddresses"
/// `kMDItemIsLikelyJunk` (a boolean on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemIsLikelyJunkKey = "kMDItemIsLikelyJunk"
/// `kMDItemExecutableArchitectures` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemExecutableArchitecturesKey = "kMDItemExecutableArchitectures"
/// `kMDItemExecutablePlatform` (a string on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemExecutablePlatformKey = "kMDItemExecutablePlatform"
/// `kMDItemApplicationCategories` (a list of strings on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemApplicationCategoriesKey = "kMDItemApplicationCategories"
/// `kMDItemIsApplicationManaged` (a boolean on macOS): Spotlight reads it from file contents; mdq has no value.
public let NSMetadataItemIsApplicationManagedKey = "kMDItemIsApplicationManaged"
