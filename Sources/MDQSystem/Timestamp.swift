import Foundation

/// A point in time as the filesystem reports it: nanoseconds since the Unix
/// epoch, stored in 8 bytes (good from 1677 to 2262).
public struct Timestamp: Hashable, Comparable, Sendable {
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    package init(seconds: Int64, nanoseconds: UInt32) {
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow {
            nanosecondsSinceEpoch = seconds < 0 ? .min : .max
        } else {
            nanosecondsSinceEpoch = product.addingReportingOverflow(Int64(nanoseconds)).partialValue
        }
    }

    /// The current time.
    public static var now: Timestamp {
        Timestamp(nanosecondsSinceEpoch: Int64((Date().timeIntervalSince1970 * 1e9).rounded()))
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }

    /// Seconds since the epoch, as a `Double` (`Date(timeIntervalSince1970:)`).
    public var secondsSinceEpoch: Double {
        Double(nanosecondsSinceEpoch) / 1e9
    }

    /// ISO-8601 in UTC with nanoseconds trimmed of trailing zeros,
    /// e.g. `2025-01-31T12:00:00.5Z`.
    public var iso8601: String {
        var bytes: [UInt8] = []
        TextFormat.appendISO8601(self, fractionalSeconds: true, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
