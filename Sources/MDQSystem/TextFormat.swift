package import Foundation

/// Numbers and dates as ASCII bytes appended to an output buffer.
///
/// This is what `mdq` prints on its hot path (`--json`, `--attr`, `mdq ls`):
/// no Foundation formatter and no `String` per value, so a million results
/// cost a few tens of milliseconds of formatting, not seconds. Every
/// printed number and date goes through here, so the forms stay the same
/// in every output.
package enum TextFormat {
    /// Seconds as messages say them: `30 s`, `2.5 s`.
    package static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e15 ? "\(Int(value)) s" : "\(value) s"
    }

    /// Appends `value` in decimal.
    package static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        appending(to: &out) { text in
            if value < 0 { text.put(UInt8(ascii: "-")) }
            text.putDigits(value.magnitude, width: 1)
        }
    }

    /// Appends `value` in decimal.
    package static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        appending(to: &out) { text in text.putDigits(value, width: 1) }
    }

    /// A few dozen bytes built on the stack, then appended to the output
    /// in one call: many small appends to an `Array` (each checking
    /// uniqueness and capacity) cost more than the formatting itself.
    struct Scratch {
        private let buffer: UnsafeMutableBufferPointer<UInt8>
        private(set) var count = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

        var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: buffer[..<count]) }

        mutating func put(_ byte: UInt8) {
            buffer[count] = byte
            count += 1
        }

        /// `value` in decimal, with leading zeros up to `width` digits.
        mutating func putDigits(_ value: UInt64, width: Int) {
            var digits = 1
            var limit: UInt64 = 10
            while value >= limit && digits < 20 {
                digits += 1
                (limit, _) = limit.multipliedReportingOverflow(by: 10)
            }
            digits = max(digits, width)
            // Two digits per step, from the right, from a table of "00"..."99".
            var rest = value
            var i = count + digits
            while i - count >= 2 {
                let pair = Int(rest % 100) &* 2
                rest /= 100
                i -= 2
                buffer[i] = TextFormat.digitPairs[pair]
                buffer[i + 1] = TextFormat.digitPairs[pair + 1]
            }
            if i > count { buffer[count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10) }
            count += digits
        }

        /// Exactly two digits (`value` < 100).
        @inline(__always)
        mutating func putTwoDigits(_ value: Int64) {
            let pair = Int(value) &* 2
            buffer[count] = TextFormat.digitPairs[pair]
            buffer[count + 1] = TextFormat.digitPairs[pair + 1]
            count += 2
        }
    }

    /// "00" through "99", two bytes each.
    static let digitPairs: [UInt8] = (0..<100).flatMap {
        [UInt8(ascii: "0") + UInt8($0 / 10), UInt8(ascii: "0") + UInt8($0 % 10)]
    }

    /// Runs `body` on a stack scratch buffer of 64 bytes, then appends what
    /// it wrote.
    @inline(__always)
    static func appending(to out: inout [UInt8], _ body: (inout Scratch) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            var scratch = Scratch(buffer)
            body(&scratch)
            out.append(contentsOf: scratch.written)
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

    /// Writes `YYYY-MM-DD`, a separator, then `hh:mm:ss`.
    private static func putDateAndTime(_ time: CivilTime, separator: UInt8, to text: inout Scratch) {
        if time.year < 0 { text.put(UInt8(ascii: "-")) }
        text.putDigits(time.year.magnitude, width: 4)
        text.put(UInt8(ascii: "-"))
        text.putTwoDigits(time.month)
        text.put(UInt8(ascii: "-"))
        text.putTwoDigits(time.day)
        text.put(separator)
        text.putTwoDigits(time.hour)
        text.put(UInt8(ascii: ":"))
        text.putTwoDigits(time.minute)
        text.put(UInt8(ascii: ":"))
        text.putTwoDigits(time.second)
    }

    /// Writes `.` and the nanoseconds without trailing zeros; nothing for 0.
    private static func putFraction(_ nanoseconds: Int64, to text: inout Scratch) {
        guard nanoseconds != 0 else { return }
        var value = UInt64(nanoseconds)
        var width = 9
        while value % 10 == 0 {
            value /= 10
            width -= 1
        }
        text.put(UInt8(ascii: "."))
        text.putDigits(value, width: width)
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
        appending(to: &out) { text in
            putDateAndTime(time, separator: UInt8(ascii: "T"), to: &text)
            if fractionalSeconds { putFraction(time.nanosecond, to: &text) }
            text.put(UInt8(ascii: "Z"))
        }
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
        appending(to: &out) { text in
            if seconds < 0 && nanos != 0 {
                // -1.25 s is -2 s + 0.75 s; print it as -1.25.
                text.put(UInt8(ascii: "-"))
                text.putDigits(UInt64(-(seconds + 1)), width: 1)
                putFraction(1_000_000_000 - nanos, to: &text)
                return
            }
            if seconds < 0 { text.put(UInt8(ascii: "-")) }
            text.putDigits(seconds.magnitude, width: 1)
            putFraction(nanos, to: &text)
        }
    }

    /// Appends the date in the local time zone as `mdls` prints it:
    /// `2025-01-31 13:00:00 +0100`.
    package static func appendLocalDate(_ timestamp: Timestamp, timeZone: TimeZone = .current, to out: inout [UInt8]) {
        let seconds = Double(timestamp.nanosecondsSinceEpoch / 1_000_000_000)
        let offset = Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: seconds)))
        appending(to: &out) { text in
            putDateAndTime(CivilTime(timestamp, offset: offset), separator: UInt8(ascii: " "), to: &text)
            text.put(UInt8(ascii: " "))
            text.put(UInt8(ascii: offset < 0 ? "-" : "+"))
            let minutes = UInt64(offset.magnitude / 60)
            text.putDigits(minutes / 60, width: 2)
            text.putDigits(minutes % 60, width: 2)
        }
    }
}
