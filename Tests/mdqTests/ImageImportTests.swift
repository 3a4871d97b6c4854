import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MetadataIndex

/// The image importer (Exiv2 through gexiv2, in the import worker), on
/// fixtures made by Pillow (Tests/Fixtures/import/make-image-fixtures.py)
/// and hostile files.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ImageImportTests {
    func real(_ value: AttributeValue?) -> Double? {
        switch value {
        case .real(let number)?: number
        case .integer(let number)?: Double(number)
        default: nil
        }
    }

    @Test func cameraPropertiesOfAPhoto() throws {
        let report = ImportWorkerTests.importFile(OfficeImportTests.fixture("photo.jpg"))
        #expect(report.values[.importError] == nil)
        #expect(report.values[.pixelWidth] == .integer(64))
        #expect(report.values[.pixelHeight] == .integer(48))
        // EXIF orientation 6: shown turned, so portrait.
        #expect(report.values[.orientation] == .integer(1))
        #expect(report.values[.acquisitionMake] == .text(Array("Fictional Optics".utf8)))
        #expect(report.values[.acquisitionModel] == .text(Array("FO-1 Mark II".utf8)))
        #expect(real(report.values[.exposureTimeSeconds]) == 0.004)
        #expect(real(report.values[.fNumber]) == 2.8)
        #expect(real(report.values[.isoSpeed]) == 400)
        #expect(real(report.values[.focalLength]) == 35)
        #expect(abs((real(report.values[.latitude]) ?? 0) - 48.858222) < 1e-5)
        #expect(abs((real(report.values[.longitude]) ?? 0) - 2.2945) < 1e-5)
        #expect(real(report.values[.altitude]) == 35)
        // 18:45:10 at +02:00.
        #expect(
            report.values[.contentCreationDate] == .date(Timestamp(nanosecondsSinceEpoch: 1_717_260_310_000_000_000)))
    }

    @Test(arguments: [
        ("diagram.png", 300, 200, 0), ("anim.gif", 40, 30, 0), ("leaf.webp", 120, 90, 0), ("scan.tiff", 33, 77, 1),
    ])
    func sizesOfEachFormat(file: String, width: Int64, height: Int64, orientation: Int64) {
        let report = ImportWorkerTests.importFile(OfficeImportTests.fixture(file))
        #expect(report.values[.pixelWidth] == .integer(width))
        #expect(report.values[.pixelHeight] == .integer(height))
        #expect(report.values[.orientation] == .integer(orientation))
        #expect(report.values[.acquisitionMake] == nil)
    }

    @Test func absurdAndBrokenImagesFailWithAReason() throws {
        let absurd = ImportWorkerTests.importFile(OfficeImportTests.fixture("absurd.jpg"))
        #expect(absurd.steps.last?.failure?.reason == "absurd dimensions 65500 × 65500")
        #expect(absurd.values[.pixelWidth] == nil)
        let temp = try TemporaryDirectory()
        let photo = try Data(contentsOf: URL(fileURLWithPath: OfficeImportTests.fixture("photo.jpg").string))
        try temp.file(Array("cut.jpg".utf8), contents: Array(photo.prefix(200)))
        try temp.file(Array("noise.png".utf8), contents: (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7919) })
        for name in ["cut.jpg", "noise.png"] {
            let report = ImportWorkerTests.importFile(temp.path.appending(name))
            #expect(report.failure == nil, "\(name): the worker survives")
            #expect(report.values[.acquisitionMake] == nil)
        }
    }
}
