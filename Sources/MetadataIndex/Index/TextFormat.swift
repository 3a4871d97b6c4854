package import Foundation

/// Numbers and dates as ASCII bytes appended to an output buffer.
///
/// This is what `mdq` prints on its hot path (`--json`, `--attr`, `mdq ls`):
/// no Foundation formatter and no `String` per value, so a million results
/// cost a few tens of milliseconds of formatting, not seconds. Every
/// printed number and date goes through here, so the forms stay the same
/// in every output.
package enum TextFormat {
    /// Appends `value` in decimal.
    package static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 {
            out.append(UInt8(ascii: "-"))
            // The magnitude of Int64.min does not fit in Int64; UInt64 holds it.
            appendDecimal(UInt64(bitPattern: 0 &- value), to: &out)
        } else {
            appendDecimal(UInt64(value), to: &out)
        }
    }

    /// Appends `value` in decimal.
    package static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        appendDigits(value, minimumWidth: 1, to: &out)
    }

    /// Appends `value` in decimal, padded with leading zeros to `minimumWidth`.
    private static func appendDigits(_ value: UInt64, minimumWidth: Int, to out: inout [UInt8]) {
        // 20 digits hold UInt64.max; written right to left into a tuple on the stack.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            var rest = value
            repeat {
                count += 1
                buffer[24 - count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest != 0
            while count < minimumWidth && count < 24 {
                count += 1
                buffer[24 - count] = UInt8(ascii: "0")
            }
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(24 - count)...]))
        }
    }

    /// The calendar fields of a timestamp, UTC, proleptic Gregorian.
    package struct CivilTime: Equatable {
        package var year: Int64
        package var month: Int64
        package var day: Int64
        package var hour: Int64
        package var minute: Int64
        package var second: Int64
        /// 0 ... 999,999,999.
        package var nanosecond: Int64

        /// `timestamp` shifted by `offset` seconds (0 for UTC).
        package init(_ timestamp: Timestamp, offset: Int64 = 0) {
            var seconds = timestamp.nanosecondsSinceEpoch / 1_000_000_000
            var nanos = timestamp.nanosecondsSinceEpoch % 1_000_000_000
            if nanos < 0 {
                nanos += 1_000_000_000
                seconds -= 1
            }
            seconds += offset
            var days = seconds / 86_400
            var secondOfDay = seconds % 86_400
            if secondOfDay < 0 {
                secondOfDay += 86_400
                days -= 1
            }
            // Civil-from-days (Howard Hinnant's algorithm).
            let z = days + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let mp = (5 * dayOfYear + 2) / 153
            day = dayOfYear - (153 * mp + 2) / 5 + 1
            month = mp < 10 ? mp + 3 : mp - 9
            year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
            hour = secondOfDay / 3600
            minute = secondOfDay / 60 % 60
            second = secondOfDay % 60
            nanosecond = nanos
        }
    }

    /// Appends `YYYY-MM-DD`, a separator, then `hh:mm:ss`.
    private static func appendDateAndTime(_ time: CivilTime, separator: UInt8, to out: inout [UInt8]) {
        if time.year < 0 { out.append(UInt8(ascii: "-")) }
        appendDigits(time.year.magnitude, minimumWidth: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(UInt64(time.month), minimumWidth: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(UInt64(time.day), minimumWidth: 2, to: &out)
        out.append(separator)
        appendDigits(UInt64(time.hour), minimumWidth: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(UInt64(time.minute), minimumWidth: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(UInt64(time.second), minimumWidth: 2, to: &out)
    }

    /// Appends `.` and the nanoseconds without trailing zeros; nothing for 0.
    private static func appendFraction(_ nanoseconds: Int64, to out: inout [UInt8]) {
        guard nanoseconds != 0 else { return }
        var value = UInt64(nanoseconds)
        var width = 9
        while value % 10 == 0 {
            value /= 10
            width -= 1
        }
        out.append(UInt8(ascii: "."))
        appendDigits(value, minimumWidth: width, to: &out)
    }

    /// Appends ISO 8601 in UTC: `2025-01-31T12:00:00Z`, or with the
    /// nanoseconds trimmed of trailing zeros (`2025-01-31T12:00:00.5Z`) when
    /// `fractionalSeconds` is set.
    ///
    /// Without the fraction this is the form jq's `fromdateiso8601` (and
    /// `fromdate`) reads; the seconds are truncated, not rounded, so a
    /// file's date never moves into the next second.
    package static func appendISO8601(_ timestamp: Timestamp, fractionalSeconds: Bool, to out: inout [UInt8]) {
        let time = CivilTime(timestamp)
        appendDateAndTime(time, separator: UInt8(ascii: "T"), to: &out)
        if fractionalSeconds { appendFraction(time.nanosecond, to: &out) }
        out.append(UInt8(ascii: "Z"))
    }

    /// Appends seconds since the Unix epoch with the exact nanoseconds,
    /// trailing zeros trimmed: `1738324800.308604997`, `1738324800`.
    package static func appendEpochSeconds(_ timestamp: Timestamp, to out: inout [UInt8]) {
        var seconds = timestamp.nanosecondsSinceEpoch / 1_000_000_000
        var nanos = timestamp.nanosecondsSinceEpoch % 1_000_000_000
        if nanos < 0 {
            nanos += 1_000_000_000
            seconds -= 1
        }
        if seconds < 0 && nanos != 0 {
            // -1.25 s is -2 s + 0.75 s; print it as -1.25.
            out.append(UInt8(ascii: "-"))
            appendDecimal(UInt64(-(seconds + 1)), to: &out)
            appendFraction(1_000_000_000 - nanos, to: &out)
            return
        }
        appendDecimal(seconds, to: &out)
        appendFraction(nanos, to: &out)
    }

    /// Appends the date in the local time zone as `mdls` prints it:
    /// `2025-01-31 13:00:00 +0100`.
    package static func appendLocalDate(_ timestamp: Timestamp, timeZone: TimeZone = .current, to out: inout [UInt8]) {
        let seconds = Double(timestamp.nanosecondsSinceEpoch / 1_000_000_000)
        let offset = Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: seconds)))
        appendDateAndTime(CivilTime(timestamp, offset: offset), separator: UInt8(ascii: " "), to: &out)
        out.append(UInt8(ascii: " "))
        out.append(UInt8(ascii: offset < 0 ? "-" : "+"))
        let minutes = UInt64(offset.magnitude / 60)
        appendDigits(minutes / 60, minimumWidth: 2, to: &out)
        appendDigits(minutes % 60, minimumWidth: 2, to: &out)
    }
}
