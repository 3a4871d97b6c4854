import Foundation

/// A point in time as the filesystem reports it: nanoseconds since the Unix
/// epoch, stored in 8 bytes (good from 1677 to 2262).
public struct Timestamp: Hashable, Comparable, Sendable {
    /// Nanoseconds since 1970-01-01T00:00:00Z.
    public var nanosecondsSinceEpoch: Int64

    public init(nanosecondsSinceEpoch: Int64) {
        self.nanosecondsSinceEpoch = nanosecondsSinceEpoch
    }

    init(seconds: Int64, nanoseconds: UInt32) {
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
        var seconds = nanosecondsSinceEpoch / 1_000_000_000
        var nanos = nanosecondsSinceEpoch % 1_000_000_000
        if nanos < 0 {
            nanos += 1_000_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        // Civil-from-days (Howard Hinnant's algorithm), proleptic Gregorian.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
        }
        var text = "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T"
        text += "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))"
        if nanos != 0 {
            var fraction = pad(nanos, 9)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text + "Z"
    }
}
