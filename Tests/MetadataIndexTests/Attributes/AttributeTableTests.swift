import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The one attribute table: every key once, items and predicates reading
/// the same values, values printed without formatters.
struct AttributeTableTests {
    @Test func everyKeyIsDeclaredOnce() {
        let raw = MetadataAttribute.all.map(\.rawValue)
        #expect(Set(raw).count == raw.count)
        let spellings = MetadataAttribute.all.flatMap { [$0.rawValue, $0.constantName] }
        #expect(
            Set(spellings).count == Set(raw).count
                + MetadataAttribute.all.filter { $0.rawValue != $0.constantName }.count)
        #expect(MetadataItem.knownKeys == raw)
        for attribute in MetadataAttribute.all {
            #expect(MetadataAttribute(key: attribute.rawValue) == attribute)
            #expect(MetadataAttribute(key: attribute.constantName) == attribute)
        }
    }

    /// `value(forAttribute:)` is the typed value made Foundation's, for
    /// every key, inside and outside a container.
    @Test func foundationValuesComeFromTypedValues() throws {
        let temp = try TemporaryDirectory()
        try temp.file("box/Documents/photo.png", contents: "12345")
        try temp.file("box/Documents/photo (conflicted copy 2025-01-31).png")
        try temp.file("out/notes.txt")
        let container = UbiquityContainer(path: temp.path.appending("box"))
        for path in [
            "box/Documents/photo.png", "box/Documents/photo (conflicted copy 2025-01-31).png", "out/notes.txt",
            "box/Documents",
        ] {
            let item = try MetadataItem(path: temp.path.appending(path), container: container)
            for attribute in MetadataAttribute.all {
                let typed = item.value(of: attribute)
                let foundation = item.value(forAttribute: attribute.rawValue)
                #expect((typed == nil) == (foundation == nil), "\(path) \(attribute)")
                #expect(item.value(forAttribute: attribute.constantName).map { "\($0)" } == foundation.map { "\($0)" })
                // The item satisfies the predicate that its own value spells.
                if let typed, let literal = Self.literal(typed) {
                    let predicate = try MetadataPredicate("\(attribute.rawValue) == \(literal)")
                    #expect(
                        CompiledPredicate(predicate).makeEvaluator().matches(ItemSubject(item: item)), "\(predicate)")
                }
            }
        }
        let photo = try MetadataItem(path: temp.path.appending("box/Documents/photo.png"), container: container)
        #expect(photo.value(of: .fsSize) == .integer(5))
        #expect(photo.value(of: .hasUnresolvedConflicts) == .bool(true))
        #expect(photo.value(of: .percentDownloaded) == .real(100))
        #expect(photo.value(forAttribute: "kMDItemURL") as? URL == URL(fileURLWithPath: photo.path.string))
        let outside = try MetadataItem(path: temp.path.appending("out/notes.txt"), container: container)
        #expect(outside.value(of: .isUbiquitous) == .bool(false))
        #expect(outside.value(of: .downloadingStatus) == nil)
        #expect(!outside.attributes.contains(MetadataItem.percentDownloadedKey))
    }

    /// A predicate literal for a value, where the format syntax has one.
    static func literal(_ value: AttributeValue) -> String? {
        switch value {
        case .text(let bytes): PredicateValue.string(bytes).format
        case .integer(let n): "\(n)"
        case .real(let x): PredicateValue.formatNumber(x)
        case .bool(let flag): flag ? "YES" : "NO"
        // A date's nanoseconds do not survive a Double literal.
        case .date, .url, .list: nil
        }
    }

    @Test(arguments: [
        (AttributeValue.integer(-1_234_567), "-1234567", "-1234567"),
        (.integer(Int64.min), "-9223372036854775808", "-9223372036854775808"),
        (.real(100), "100", "100"),
        (.real(2.5), "2.5", "2.5"),
        (.bool(true), "1", "1"),
        (.text(Array("a\t\"b\"\n".utf8)), "a \"b\" ", "\"a\t\\\"b\\\"\n\""),
        (
            .list(["public.png", "public.image"]), "public.png,public.image",
            "(\n    \"public.png\",\n    \"public.image\"\n)"
        ),
        (.url(path: Array("/a b/c".utf8), isFolder: true), "file:///a%20b/c/", "\"file:///a%20b/c/\""),
        // Another host's file (`NAME:/path`) is that host's, as text.
        (
            .fileURL(Array("nas-2.lab:/srv/a b".utf8), isFolder: false), "file://nas-2.lab/srv/a%20b",
            "\"file://nas-2.lab/srv/a%20b\""
        ),
        // A colon in a path of this machine, or a name no host has.
        (.url(path: Array("/srv/nas:/x".utf8), isFolder: false), "file:///srv/nas:/x", "\"file:///srv/nas:/x\""),
        // Encoded as Foundation encodes it.
        (
            .url(path: Array("/a!b$c&d'e(f)g*h+i,j;k=l@m:n[o]p?q#r%s t~u".utf8), isFolder: false),
            "file:///a!b$c&d'e(f)g*h+i,j;k=l@m:n%5Bo%5Dp%3Fq%23r%25s%20t~u",
            "\"file:///a!b$c&d'e(f)g*h+i,j;k=l@m:n%5Bo%5Dp%3Fq%23r%25s%20t~u\""
        ),
        // 2025-01-31T12:00:00.9Z; 1969-12-31T23:59:59Z; 0001-01-01 is before 1677 and never a timestamp.
        (
            .date(Timestamp(nanosecondsSinceEpoch: 1_738_324_800_900_000_000)), "2025-01-31 12:00:00 +0000",
            "2025-01-31 12:00:00 +0000"
        ),
        (.date(Timestamp(nanosecondsSinceEpoch: -1)), "1969-12-31 23:59:59 +0000", "1969-12-31 23:59:59 +0000"),
        (
            .date(Timestamp(nanosecondsSinceEpoch: 951_782_400_000_000_000)), "2000-02-29 00:00:00 +0000",
            "2000-02-29 00:00:00 +0000"
        ),
    ])
    func valuesPrintWithoutFormatters(value: AttributeValue, column: String, listing: String) {
        #expect(value.text(style: .column) == column)
        #expect(value.text(style: .listing) == listing)
        // Foundation's URL is the same one.
        if case .url = value { #expect((value.foundationValue as? URL)?.absoluteString == column) }
    }

    /// An item of another host, as a query across hosts names it
    /// (`NAME:/path`): its URL names the host, and is text, not a `URL`:
    /// Foundation on Linux would open this machine's file at that path
    /// for it (a program ported from Apple code reading or removing the
    /// wrong file).
    @Test func anotherHostsItemHasThatHostsURL() throws {
        let item = MetadataItem(
            serial: 1, pathBytes: Array("alpha:/srv/report 1.txt".utf8), kind: .file,
            metadata: EntryMetadata(kind: .file))
        #expect(item.value(forAttribute: "kMDItemURL") as? URL == nil)
        #expect(item.value(forAttribute: "kMDItemURL") as? String == "file://alpha/srv/report%201.txt")
        #expect(item.value(of: .url)?.text(style: .column) == "file://alpha/srv/report%201.txt")
        let predicate = try MetadataPredicate("kMDItemURL BEGINSWITH 'file://alpha/'")
        #expect(CompiledPredicate(predicate).makeEvaluator().matches(ItemSubject(item: item)))
    }

    @Test func jsonDatesAreWholeSecondsInUTC() {
        var out: [UInt8] = []
        AttributeValue.appendISO8601(Timestamp(nanosecondsSinceEpoch: 1_738_324_800_900_000_000), to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "2025-01-31T12:00:00Z")
        // Days across 1696...2243 (every 97th) agree with Foundation's calendar.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for day in stride(from: -100_000, to: 100_000, by: 97) {
            let seconds = Int64(day) * 86_400 + 3_723
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            let c = calendar.dateComponents([.year, .month, .day], from: date)
            let expected = String(format: "%04d-%02d-%02dT01:02:03Z", c.year!, c.month!, c.day!)
            var text: [UInt8] = []
            AttributeValue.appendISO8601(Timestamp(nanosecondsSinceEpoch: seconds * 1_000_000_000), to: &text)
            #expect(String(decoding: text, as: UTF8.self) == expected)
        }
    }

    /// Grouping and value lists key on typed values.
    @Test func typedValuesAreHashableKeys() {
        let values: [AttributeValue?] = [.integer(1), .real(1), .text(Array("1".utf8)), nil, .integer(1)]
        #expect(Set(values).count == 4)
    }
}
