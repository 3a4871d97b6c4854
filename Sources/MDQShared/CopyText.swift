/// Rows in the text format of PostgreSQL's `COPY … FROM STDIN`: fields
/// separated by tabs, rows ended by a newline, `\N` for NULL, and a
/// backslash before the bytes that would end a field or a row.
package struct CopyText {
    package var bytes: [UInt8] = []
    private var atRowStart = true

    package init() {}

    private mutating func separate() {
        if !atRowStart { bytes.append(UInt8(ascii: "\t")) }
        atRowStart = false
    }

    /// A text field: UTF-8 as it is, with the separators escaped (the
    /// caller makes sure the bytes are UTF-8 and hold no NUL).
    package mutating func text(_ value: some Collection<UInt8>) {
        separate()
        for byte in value {
            switch byte {
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            default: bytes.append(byte)
            }
        }
    }

    package mutating func text(_ value: String) {
        var value = value
        value.withUTF8 { text($0) }
    }

    package mutating func null() {
        separate()
        bytes.append(contentsOf: [0x5C, UInt8(ascii: "N")])
    }

    package mutating func integer(_ value: some BinaryInteger) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
    }

    package mutating func boolean(_ value: Bool) {
        separate()
        bytes.append(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
    }

    /// A `bytea` field in hex (`\x…`, its backslash escaped for COPY).
    package mutating func bytea(_ value: some Collection<UInt8>) {
        separate()
        bytes.append(contentsOf: [0x5C, 0x5C, UInt8(ascii: "x")])
        let digits = Array("0123456789abcdef".utf8)
        for byte in value {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 15)])
        }
    }

    /// A `timestamptz` field from nanoseconds since 1970 (UTC), to the
    /// microsecond PostgreSQL keeps, as an ISO 8601 date; NULL for a date
    /// outside the years 1 to 9999 (a file may claim any).
    package mutating func timestamp(nanosecondsSinceEpoch nanoseconds: Int64) {
        guard let date = Self.isoDate(nanosecondsSinceEpoch: nanoseconds) else { return null() }
        separate()
        bytes.append(contentsOf: date.utf8)
    }

    package mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        atRowStart = true
    }

    /// `YYYY-MM-DD HH:MM:SS.ffffff+00`, in the proleptic Gregorian
    /// calendar (days from civil, Howard Hinnant's algorithm).
    package static func isoDate(nanosecondsSinceEpoch nanoseconds: Int64) -> String? {
        let micros = nanoseconds >= 0 ? nanoseconds / 1000 : (nanoseconds - 999) / 1000
        var seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
        let fraction = micros - seconds * 1_000_000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        seconds -= days * 86_400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        var fractionText = String(fraction)
        fractionText = String(repeating: "0", count: 6 - fractionText.count) + fractionText
        guard year >= 1 && year <= 9999 else { return nil }
        let yearText = String(repeating: "0", count: 4 - String(year).count) + String(year)
        return "\(yearText)-\(two(month))-\(two(day)) \(two(seconds / 3600)):\(two(seconds / 60 % 60)):"
            + "\(two(seconds % 60)).\(fractionText)+00"
    }
}
