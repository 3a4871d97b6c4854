import Foundation
import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQLive
@testable import MDQSystem
@testable import MDQWire

/// One item schema: the daemon's protocol and `--json` write an item's
/// dates the same way (`ItemDates`), and mdq's clients read them back to
/// the nanosecond.
@Suite struct ItemSchemaTests {
    static let times: [Int64] = [
        1_738_324_800_308_604_997, 1_738_324_800_000_000_000, 1_738_324_800_000_000_100, 0, -1_250_000_000,
        -1, 4_102_444_800_999_999_999,
    ]

    @Test(arguments: times)
    func aDateIsWrittenOnceAndReadBackExactly(nanoseconds: Int64) throws {
        let date = Timestamp(nanosecondsSinceEpoch: nanoseconds)
        var out: [UInt8] = Array("{".utf8)
        ItemDates.append(.modified, date, to: &out)
        out.append(UInt8(ascii: "}"))
        let value = try out.withUnsafeBytes { try JSONValue.parse($0) }
        #expect(ItemDates.read(.modified, from: value) == date, "\(String(decoding: out, as: UTF8.self))")
        // The readable half: ISO 8601 in UTC, to the second.
        var iso: [UInt8] = []
        TextFormat.appendISO8601(date, fractionalSeconds: false, to: &iso)
        #expect(value["modified"]?.bytes == iso)
    }

    /// A protocol item carries the same date fields `--json` does, and
    /// its reader gets back every attribute it wrote (an imported date
    /// too).
    @Test func aProtocolItemRoundTrips() throws {
        var metadata = EntryMetadata(kind: .file, inode: 42)
        metadata.size = 9
        metadata.modificationTime = Timestamp(nanosecondsSinceEpoch: 1_795_735_804_060_823_531)
        metadata.birthTime = Timestamp(nanosecondsSinceEpoch: 1_795_735_804_059_464_157)
        var imported = ImportedValues()
        imported[.contentCreationDate] = .date(Timestamp(nanosecondsSinceEpoch: 1_600_000_000_123_456_789))
        var out = JSONWriter()
        DaemonProtocol.writeItem(
            id: 7, path: Array("/a/b.txt".utf8), kind: .file, metadata: metadata, conflicts: false,
            conflictOriginal: nil, imported: imported, to: &out)
        let value = try out.bytes.withUnsafeBytes { try JSONValue.parse($0) }
        for key in ["modified", "modifiedEpoch", "created", "createdEpoch"] {
            #expect(value[key] != nil, "\(key) missing: \(String(decoding: out.bytes, as: UTF8.self))")
        }
        let read = try DaemonProtocol.item(value)
        #expect(read.metadata == metadata)
        #expect(
            ImportedValues(json: value["imported"] ?? .null)?[.contentCreationDate] == imported[.contentCreationDate]
        )
    }

    /// A problem a daemon sends reads back as the same problem, and its
    /// message is the one the query would list.
    @Test(arguments: [
        EngineProblem.watchLimit(unwatched: 3, example: "/a/b", limit: 8192),
        .unreadableFolder("/a/closed", .permissionDenied), .unwatchableFolder("/a/odd", .noSpace),
        .missingScope("/a/gone"), .tooExpensive("query too expensive: past its budget"),
        .sharedIndex("the shared index: cannot connect"),
        .hostOffline(
            host: "alpha", message: "alpha is offline since 2026-11-28 10:00:00+00: its results are as of then"),
        .hostFolder("alpha:/srv/missing", problem: "ENOENT"), .hostFolder("alpha:/srv/closed", problem: "EACCES"),
    ])
    func aProblemRoundTrips(problem: EngineProblem) throws {
        var out = JSONWriter()
        DaemonProtocol.write(problem, to: &out)
        let value = try out.bytes.withUnsafeBytes { try JSONValue.parse($0) }
        #expect(DaemonProtocol.problem(value) == problem, "\(String(decoding: out.bytes, as: UTF8.self))")
        #expect(value["message"]?.string == problem.error(watching: 0).description)
    }

    /// A request's zone is a name of the tz database or nothing: a path,
    /// or any name the database does not list, is not looked up (the
    /// system index would open a file of a user's choosing).
    @Test func aRequestsTimeZoneIsANameTheDatabaseKnows() throws {
        func zone(_ name: String) throws -> TimeZone {
            var out = JSONWriter()
            out.raw("{\"timeZone\":")
            out.string(Array(name.utf8))
            out.raw("}")
            return DaemonProtocol.timeZone(try out.bytes.withUnsafeBytes { try JSONValue.parse($0) })
        }
        #expect(try zone("Pacific/Kiritimati").identifier == "Pacific/Kiritimati")
        #expect(try zone("UTC").secondsFromGMT() == 0)
        for hostile in [
            // GMT+0500 is a zone Foundation makes, from no list: not
            // looked up either.
            "../../../../etc/passwd", "/dev/zero", "Europe/../../../proc/self/mem", "Nowhere/Atlantis", "GMT+0500",
            String(repeating: "A", count: 5000), "",
        ] {
            #expect(try zone(hostile) == .current, "\(hostile.prefix(40))")
        }
    }

    @Test func numbersThatAreNotExactSecondsAreRefused() throws {
        for text in ["1.0123456789", "1e9", "\"1\"", "true"] {
            let value = try Array(text.utf8).withUnsafeBytes { try JSONValue.parse($0) }
            #expect(value.exactNanoseconds == nil, "\(text)")
        }
        let whole = try Array("12".utf8).withUnsafeBytes { try JSONValue.parse($0) }
        #expect(whole.exactNanoseconds == 12_000_000_000)
    }
}

/// The protocol's error codes are one enum, and the documentation's table
/// of errors names each of them, and no other.
@Suite struct DaemonErrorCodeTests {
    @Test func everyCodeIsDocumentedAndEveryDocumentedCodeIsOne() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Documentation/protocol.md"), encoding: .utf8)
        let table = text.components(separatedBy: "\n\n").first { $0.hasPrefix("| error code |") } ?? ""
        var documented: Set<String> = []
        for row in table.split(separator: "\n") where row.hasPrefix("| `") {
            let cell = row.dropFirst(2).prefix { $0 != "|" }
            for code in cell.split(separator: ",") {
                documented.insert(code.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["`"]))
            }
        }
        #expect(documented.count >= 10, "the table was not found: \(documented)")
        // A client's own codes, never sent by a daemon.
        let sent = Set(DaemonErrorCode.allCases.map(\.rawValue)).subtracting(["bad-response", "bad-state"])
        #expect(sent.subtracting(documented).isEmpty, "not documented: \(sent.subtracting(documented))")
        #expect(documented.subtracting(sent).isEmpty, "documented, not a code: \(documented.subtracting(sent))")
    }

    /// Every command has its section under "Commands", and every section
    /// is a command.
    @Test func everyCommandIsDocumented() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Documentation/protocol.md"), encoding: .utf8)
        let commands =
            try #require(text.components(separatedBy: "### Commands").dropFirst().first)
            .components(separatedBy: "\n### ").first ?? ""
        var documented: Set<String> = []
        for line in commands.split(separator: "\n") where line.hasPrefix("#### ") {
            for word in line.dropFirst(5).split(separator: " ") where word != "and" {
                documented.insert(String(word))
            }
        }
        documented.remove("Clocks")
        #expect(documented == Set(DaemonCommand.allCases.map(\.rawValue)), "\(documented)")
    }
}
