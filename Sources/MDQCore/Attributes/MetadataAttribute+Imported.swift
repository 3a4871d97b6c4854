import MDQSystem

extension MetadataAttribute {
    // MARK: Imported from file contents
    //
    // Filled by the importers (`ImporterRegistry`), not by a crawl: text,
    // document, image, audio and video properties, and the freedesktop
    // extended attributes. Raw keys and constant names are Apple's.

    /// `kMDItemTextContent`: the text of the file (markup stripped), at most
    /// `ImportLimits.textBytes` of it.
    public static let textContent = imported("kMDItemTextContent", "NSMetadataItemTextContentKey", .string)
    /// `kMDItemTitle`: the document's or track's title.
    public static let title = imported("kMDItemTitle", "NSMetadataItemTitleKey", .string)
    /// `kMDItemAuthors`: authors (artists, for audio).
    public static let authors = imported("kMDItemAuthors", "NSMetadataItemAuthorsKey", .string, isList: true)
    /// `kMDItemCreator`: the application that made the document.
    public static let creator = imported("kMDItemCreator", "NSMetadataItemCreatorKey", .string)
    /// `kMDItemNumberOfPages`: pages (slides for a presentation).
    public static let numberOfPages = imported("kMDItemNumberOfPages", "NSMetadataItemNumberOfPagesKey", .number)
    /// `kMDItemPageWidth`: the first page's width in points.
    public static let pageWidth = imported("kMDItemPageWidth", "NSMetadataItemPageWidthKey", .number)
    /// `kMDItemPageHeight`: the first page's height in points.
    public static let pageHeight = imported("kMDItemPageHeight", "NSMetadataItemPageHeightKey", .number)
    /// `kMDItemSecurityMethod`: "Password Encrypted" for an encrypted document.
    public static let securityMethod = imported("kMDItemSecurityMethod", "NSMetadataItemSecurityMethodKey", .string)
    /// `kMDItemPixelWidth`: an image's or video's width in pixels.
    public static let pixelWidth = imported("kMDItemPixelWidth", "NSMetadataItemPixelWidthKey", .number)
    /// `kMDItemPixelHeight`: an image's or video's height in pixels.
    public static let pixelHeight = imported("kMDItemPixelHeight", "NSMetadataItemPixelHeightKey", .number)
    /// `kMDItemOrientation`: 0 landscape, 1 portrait (Apple's values).
    public static let orientation = imported("kMDItemOrientation", "NSMetadataItemOrientationKey", .number)
    /// `kMDItemAcquisitionMake`: the camera's maker.
    public static let acquisitionMake = imported(
        "kMDItemAcquisitionMake", "NSMetadataItemAcquisitionMakeKey", .string)
    /// `kMDItemAcquisitionModel`: the camera's model.
    public static let acquisitionModel = imported(
        "kMDItemAcquisitionModel", "NSMetadataItemAcquisitionModelKey", .string)
    /// `kMDItemExposureTimeSeconds`: exposure time in seconds.
    public static let exposureTimeSeconds = imported(
        "kMDItemExposureTimeSeconds", "NSMetadataItemExposureTimeSecondsKey", .number)
    /// `kMDItemFNumber`: the aperture's f-number.
    public static let fNumber = imported("kMDItemFNumber", "NSMetadataItemFNumberKey", .number)
    /// `kMDItemISOSpeed`: the ISO speed.
    public static let isoSpeed = imported("kMDItemISOSpeed", "NSMetadataItemISOSpeedKey", .number)
    /// `kMDItemFocalLength`: focal length in millimetres.
    public static let focalLength = imported("kMDItemFocalLength", "NSMetadataItemFocalLengthKey", .number)
    /// `kMDItemLatitude`: degrees, north positive.
    public static let latitude = imported("kMDItemLatitude", "NSMetadataItemLatitudeKey", .number)
    /// `kMDItemLongitude`: degrees, east positive.
    public static let longitude = imported("kMDItemLongitude", "NSMetadataItemLongitudeKey", .number)
    /// `kMDItemAltitude`: metres above sea level.
    public static let altitude = imported("kMDItemAltitude", "NSMetadataItemAltitudeKey", .number)
    /// `kMDItemContentCreationDate`: when the content was made (a photo's
    /// capture time, a document's creation date).
    public static let contentCreationDate = imported(
        "kMDItemContentCreationDate", "NSMetadataItemContentCreationDateKey", .date)
    /// `kMDItemDurationSeconds`: an audio or video file's duration.
    public static let durationSeconds = imported(
        "kMDItemDurationSeconds", "NSMetadataItemDurationSecondsKey", .number)
    /// `kMDItemAlbum`: the album a track is from.
    public static let album = imported("kMDItemAlbum", "NSMetadataItemAlbumKey", .string)
    /// `kMDItemMusicalGenre`: the genre.
    public static let musicalGenre = imported("kMDItemMusicalGenre", "NSMetadataItemMusicalGenreKey", .string)
    /// `kMDItemRecordingYear`: the year recorded.
    public static let recordingYear = imported("kMDItemRecordingYear", "NSMetadataItemRecordingYearKey", .number)
    /// `kMDItemAudioSampleRate`: samples per second.
    public static let audioSampleRate = imported(
        "kMDItemAudioSampleRate", "NSMetadataItemAudioSampleRateKey", .number)
    /// `kMDItemAudioChannelCount`: audio channels.
    public static let audioChannelCount = imported(
        "kMDItemAudioChannelCount", "NSMetadataItemAudioChannelCountKey", .number)
    /// `kMDItemAudioBitRate`: audio bits per second.
    public static let audioBitRate = imported("kMDItemAudioBitRate", "NSMetadataItemAudioBitRateKey", .number)
    /// `kMDItemVideoBitRate`: video bits per second.
    public static let videoBitRate = imported("kMDItemVideoBitRate", "NSMetadataItemVideoBitRateKey", .number)
    /// `kMDItemCodecs`: the codecs of the streams (`aac`, `h264`).
    public static let codecs = imported("kMDItemCodecs", "NSMetadataItemCodecsKey", .string, isList: true)
    /// `kMDItemWhereFroms`: where a download came from (`user.xdg.origin.url`,
    /// then `user.xdg.referrer.url`).
    public static let whereFroms = imported(
        "kMDItemWhereFroms", "NSMetadataItemWhereFromsKey", .string, isList: true)
    /// `kMDItemUserTags`: the user's tags (`user.xdg.tags`, comma-separated).
    public static let userTags = imported("kMDItemUserTags", nil, .string, isList: true)
    /// `kMDItemComment`: the user's comment (`user.xdg.comment`).
    public static let comment = imported("kMDItemComment", "NSMetadataItemCommentKey", .string)
    /// `kMDQItemSniffedContentType` (mdq's own): the type the file's
    /// leading bytes name, where it differs from the extension's.
    public static let sniffedContentType = imported("kMDQItemSniffedContentType", nil, .string)
    /// `kMDQItemImportError` (mdq's own): why the file could not be
    /// imported ("binary content in a text file").
    public static let importError = imported("kMDQItemImportError", nil, .string)

    /// Every imported attribute, in the order items list them.
    public static let importedAttributes: [MetadataAttribute] = [
        .title, .authors, .creator, .numberOfPages, .pageWidth, .pageHeight, .securityMethod, .pixelWidth,
        .pixelHeight, .orientation, .acquisitionMake, .acquisitionModel, .exposureTimeSeconds, .fNumber, .isoSpeed,
        .focalLength, .latitude, .longitude, .altitude, .contentCreationDate, .durationSeconds, .album,
        .musicalGenre, .recordingYear, .audioSampleRate, .audioChannelCount, .audioBitRate, .videoBitRate, .codecs,
        .whereFroms, .userTags, .comment, .sniffedContentType, .importError, .textContent,
    ]

    /// The imported attributes by raw key.
    package static let importedByKey: [String: MetadataAttribute] = Dictionary(
        uniqueKeysWithValues: importedAttributes.map { ($0.rawValue, $0) })
}
