import MDQSystem

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

    /// `YYYY-MM-DD HH:MM:SS.ffffff+00`, UTC (microseconds truncated), or
    /// nil outside the years 1 to 9999.
    package static func isoDate(nanosecondsSinceEpoch nanoseconds: Int64) -> String? {
        let time = TextFormat.CivilTime(Timestamp(nanosecondsSinceEpoch: nanoseconds))
        guard time.year >= 1 && time.year <= 9999 else { return nil }
        func padded(_ n: Int64, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(time.year, 4))-\(padded(time.month, 2))-\(padded(time.day, 2)) "
            + "\(padded(time.hour, 2)):\(padded(time.minute, 2)):\(padded(time.second, 2))."
            + "\(padded(time.nanosecond / 1000, 6))+00"
    }
}
