import Foundation
import MetadataIndex
import Testing

/// The byte formatting behind `--json`, `--attr` and `mdq ls`.
struct TextFormatTests {
    func text(_ body: (inout [UInt8]) -> Void) -> String {
        var bytes: [UInt8] = []
        body(&bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(arguments: [Int64.min, -1, 0, 7, 10, 99, 100, 1_234_567_890, Int64.max])
    func decimalsMatchTheStandardLibrary(value: Int64) {
        #expect(text { TextFormat.appendDecimal(value, to: &$0) } == String(value))
    }

    @Test func unsignedExtremes() {
        #expect(text { TextFormat.appendDecimal(UInt64.max, to: &$0) } == String(UInt64.max))
        #expect(text { TextFormat.appendDecimal(UInt64(0), to: &$0) } == "0")
    }

    @Test(
        arguments: [
            (
                Int64(1_738_324_800_308_604_997), "2025-01-31T12:00:00Z", "2025-01-31T12:00:00.308604997Z",
                "1738324800.308604997"
            ),
            (0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "0"),
            (-1_250_000_000, "1969-12-31T23:59:58Z", "1969-12-31T23:59:58.75Z", "-1.25"),
            (951_782_400_500_000_000, "2000-02-29T00:00:00Z", "2000-02-29T00:00:00.5Z", "951782400.5"),
            (-2_000_000_000, "1969-12-31T23:59:58Z", "1969-12-31T23:59:58Z", "-2"),
        ] as [(Int64, String, String, String)])
    func datesInEveryForm(nanoseconds: Int64, whole: String, fraction: String, epoch: String) {
        let time = Timestamp(nanosecondsSinceEpoch: nanoseconds)
        #expect(text { TextFormat.appendISO8601(time, fractionalSeconds: false, to: &$0) } == whole)
        #expect(text { TextFormat.appendISO8601(time, fractionalSeconds: true, to: &$0) } == fraction)
        #expect(time.iso8601 == fraction)
        #expect(text { TextFormat.appendEpochSeconds(time, to: &$0) } == epoch)
    }

    @Test func wholeSecondDatesAreWhatFoundationReadsBack() throws {
        let time = Timestamp(nanosecondsSinceEpoch: 1_738_324_800_999_999_999)
        let printed = text { TextFormat.appendISO8601(time, fractionalSeconds: false, to: &$0) }
        let parsed = try #require(ISO8601DateFormatter().date(from: printed))
        #expect(parsed.timeIntervalSince1970 == 1_738_324_800, "truncated, never rounded up")
    }

    @Test func localDatesAsMdlsPrintsThem() throws {
        let time = Timestamp(nanosecondsSinceEpoch: 1_738_324_800_000_000_000)
        let east = try #require(TimeZone(secondsFromGMT: 5 * 3600 + 30 * 60))
        let west = try #require(TimeZone(secondsFromGMT: -3 * 3600))
        #expect(text { TextFormat.appendLocalDate(time, timeZone: east, to: &$0) } == "2025-01-31 17:30:00 +0530")
        #expect(text { TextFormat.appendLocalDate(time, timeZone: west, to: &$0) } == "2025-01-31 09:00:00 -0300")
    }
}
