import MDQWire
import SystemPackage
import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Imported values on the daemon's wire: every kind of value comes back as
/// it was sent, whatever its bytes.
@Suite struct ImportedValuesWireTests {
    func roundTrip(_ values: ImportedValues) throws -> ImportedValues? {
        var out = JSONWriter()
        values.writeJSON(to: &out)
        return ImportedValues(json: try JSONValue.parse(out.bytes))
    }

    @Test func everyKindOfValueComesBackAsSent() throws {
        var values = ImportedValues()
        values[.title] = .text(Array("Quarterly \"report\"\n\u{1F4C8}".utf8))
        values[.comment] = .text([0x66, 0xFF, 0xFE, 0x00, 0x41])  // not UTF-8, with a NUL
        values[.numberOfPages] = .integer(12)
        values[.durationSeconds] = .real(3.0)  // integral, still a real
        values[.latitude] = .real(-33.856_159_5)
        values[.authors] = .list(["Ada", "Émile, Jr."])
        values[.userTags] = .list([])
        values[.contentCreationDate] = .date(Timestamp(nanosecondsSinceEpoch: 1_700_000_000_123_456_789))
        #expect(try roundTrip(values) == values)
    }

    @Test func unknownKeysAndShapesAreDropped() throws {
        let text = #"{"kMDItemTitle":"t","kMDItemFSName":"not imported","kMDItemNope":1,"kMDItemComment":{"odd":1}}"#
        let values = ImportedValues(json: try JSONValue.parse(Array(text.utf8)))
        var expected = ImportedValues()
        expected[.title] = .text(Array("t".utf8))
        #expect(values == expected)
    }

    @Test func aRequestNamingAnUnknownAttributeIsRefused() throws {
        let request = try JSONValue.parse(Array(#"{"attributes":["kMDItemTitle","kMDItemBogus"]}"#.utf8))
        #expect(throws: ProtocolError.self) { try DaemonProtocol.attributes(request) }
        let names = try JSONValue.parse(Array(#"{"attributes":["kMDItemTitle","kMDItemFSName"]}"#.utf8))
        #expect(try DaemonProtocol.attributes(names) == [.title])
    }
}
