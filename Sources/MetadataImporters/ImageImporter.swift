import CGExiv2
import Foundation
import MDQCore
import MDQImport
import MDQSystem

/// Images, read with Exiv2 (through gexiv2): pixel size, orientation
/// (Apple's values: 0 landscape, 1 portrait, as displayed), camera make and
/// model, exposure time, f-number, ISO speed, focal length, GPS position and
/// altitude, and the capture time (`DateTimeOriginal`, with its offset when
/// recorded, else taken as UTC) as `kMDItemContentCreationDate`.
///
/// Exiv2 reads headers and metadata blocks, never decodes pixels: a JPEG
/// claiming 65,535 × 65,535 pixels costs no memory. Claimed sizes past the
/// pixel limit are reported as a failure ("absurd dimensions"), so they do
/// not reach queries as facts. Exiv2 reads the worker's descriptor mapped
/// into memory (it opens no file: the worker may open none), as it maps a
/// file it opens itself; only the pages it touches are read.
struct ImageImporter: Importer {
    var name: String { "image" }
    var contentTypes: [String] { ["public.image"] }
    var attributes: [MetadataAttribute] {
        [
            .pixelWidth, .pixelHeight, .orientation, .acquisitionMake, .acquisitionModel, .exposureTimeSeconds,
            .fNumber, .isoSpeed, .focalLength, .latitude, .longitude, .altitude, .contentCreationDate,
        ]
    }

    /// Exiv2 set up once per worker, its warnings muted (a malformed file
    /// is reported as the import's failure, not as lines on stderr).
    private static let initialized: Bool = {
        gexiv2_log_set_level(GEXIV2_LOG_LEVEL_MUTE)
        return gexiv2_initialize() != 0
    }()

    /// Exiv2's start-up (its XMP toolkit, the GObject types), and the
    /// calendar and local time zone capture times are read with, before
    /// the worker is sandboxed.
    func prepareForConfinement() {
        _ = Self.initialized
        _ = Self.exifDate("2024:01:01 00:00:00", offset: nil)
    }

    func extract(from file: ContentFile, type: String, limits: ImportLimits) throws(ImportFailure) -> ImportedValues {
        guard Self.initialized else { throw ImportFailure("Exiv2 could not be initialised") }
        let read = file.withMappedBytes { bytes in
            Result { () throws(ImportFailure) -> ImportedValues in try Self.values(of: bytes, limits: limits) }
        }
        switch read {
        case .success(let result): return try result.get()
        case .failure(.invalidArgument): throw ImportFailure("not a readable image: the file is empty")
        case .failure(let error): throw ImportFailure("cannot read the image: \(error.description)")
        }
    }

    /// The values of the image whose bytes (mapped) are `bytes`.
    private static func values(of bytes: UnsafeRawBufferPointer, limits: ImportLimits) throws(ImportFailure)
        -> ImportedValues
    {
        guard let metadata = gexiv2_metadata_new() else { throw ImportFailure("Exiv2 could not start") }
        defer { g_object_unref(UnsafeMutableRawPointer(metadata)) }
        var error: UnsafeMutablePointer<GError>?
        // Exiv2 reads the memory in place (a MemIo over it, no copy).
        let data = bytes.baseAddress!.assumingMemoryBound(to: guint8.self)
        guard gexiv2_metadata_open_buf(metadata, data, glong(bytes.count), &error) != 0 else {
            let reason = error.map { String(cString: $0.pointee.message) } ?? "unreadable"
            if let error { g_error_free(error) }
            throw ImportFailure("not a readable image: \(reason)")
        }
        var values = ImportedValues()
        let width = Int(gexiv2_metadata_get_pixel_width(metadata))
        let height = Int(gexiv2_metadata_get_pixel_height(metadata))
        if width > 0 && height > 0 {
            guard width.multipliedReportingOverflow(by: height).partialValue <= limits.pixels,
                width <= 1 << 20, height <= 1 << 20
            else { throw ImportFailure("absurd dimensions \(width) × \(height)") }
            values[.pixelWidth] = .integer(Int64(width))
            values[.pixelHeight] = .integer(Int64(height))
            // EXIF orientations 5 to 8 turn the image a quarter: its
            // displayed width is its height.
            let exif = Int(gexiv2_metadata_try_get_orientation(metadata, nil).rawValue)
            let turned = (5...8).contains(exif)
            let (shownWidth, shownHeight) = turned ? (height, width) : (width, height)
            values[.orientation] = .integer(shownHeight > shownWidth ? 1 : 0)
        }
        func tag(_ name: String) -> String? {
            guard gexiv2_metadata_try_has_tag(metadata, name, nil) != 0,
                let value = gexiv2_metadata_try_get_tag_string(metadata, name, nil)
            else { return nil }
            defer { g_free(value) }
            let text = String(cString: value).trimmingCharacters(in: .whitespacesAndNewlines.union(.controlCharacters))
            return text.isEmpty ? nil : text
        }
        if let make = tag("Exif.Image.Make") { values[.acquisitionMake] = .text(Array(make.utf8)) }
        if let model = tag("Exif.Image.Model") { values[.acquisitionModel] = .text(Array(model.utf8)) }
        var numerator: Int32 = 0
        var denominator: Int32 = 0
        if gexiv2_metadata_try_get_exposure_time(metadata, &numerator, &denominator, nil) != 0, denominator > 0,
            numerator > 0
        {
            values[.exposureTimeSeconds] = .real(Double(numerator) / Double(denominator))
        }
        let fNumber = gexiv2_metadata_try_get_fnumber(metadata, nil)
        if fNumber > 0 { values[.fNumber] = .real(fNumber) }
        let iso = gexiv2_metadata_try_get_iso_speed(metadata, nil)
        if iso > 0 { values[.isoSpeed] = .integer(Int64(iso)) }
        let focal = gexiv2_metadata_try_get_focal_length(metadata, nil)
        if focal > 0 { values[.focalLength] = .real(focal) }
        var longitude = 0.0
        var latitude = 0.0
        var altitude = 0.0
        if tag("Exif.GPSInfo.GPSLatitude") != nil,
            gexiv2_metadata_try_get_gps_info(metadata, &longitude, &latitude, &altitude, nil) != 0,
            latitude.isFinite, longitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 180
        {
            values[.latitude] = .real(latitude)
            values[.longitude] = .real(longitude)
            if tag("Exif.GPSInfo.GPSAltitude") != nil, altitude.isFinite { values[.altitude] = .real(altitude) }
        }
        if let taken = tag("Exif.Photo.DateTimeOriginal") ?? tag("Exif.Image.DateTime"),
            let time = Self.exifDate(taken, offset: tag("Exif.Photo.OffsetTimeOriginal"))
        {
            values[.contentCreationDate] = .date(time)
        }
        return values
    }

    /// "2024:03:15 09:30:00" (EXIF's form) with an optional "+01:00" offset.
    static func exifDate(_ text: String, offset: String?) -> Timestamp? {
        let digits = text.split(whereSeparator: { ":- T".contains($0) }).compactMap { Int($0) }
        guard digits.count >= 6, (1...12).contains(digits[1]), (1...31).contains(digits[2]), digits[0] > 1800
        else { return nil }
        var components = DateComponents()
        (components.year, components.month, components.day) = (digits[0], digits[1], digits[2])
        (components.hour, components.minute, components.second) = (digits[3], digits[4], digits[5])
        var seconds = 0
        if let offset, offset.count >= 6, let hours = Int(offset.dropFirst().prefix(2)),
            let minutes = Int(offset.suffix(2))
        {
            seconds = (hours * 3600 + minutes * 60) * (offset.hasPrefix("-") ? -1 : 1)
        }
        components.timeZone = TimeZone(secondsFromGMT: seconds)
        guard let date = Calendar(identifier: .gregorian).date(from: components) else { return nil }
        return Timestamp(nanosecondsSinceEpoch: Int64(date.timeIntervalSince1970) * 1_000_000_000)
    }
}
