public import MDQSystem

extension AttributeValue {
    /// How a value is printed as text.
    public enum TextStyle: Sendable {
        /// As `mdls` prints it (`mdq ls`): strings and URLs quoted, lists in
        /// parentheses one element a line, dates as `2025-01-31 12:00:00
        /// +0000` (UTC, as mdls prints them), booleans `1`/`0`.
        case listing
        /// One tab-separated column (`mdq --attr`): strings raw with tabs
        /// and newlines made spaces, lists joined with `,`, dates and
        /// numbers as in `.listing`.
        case column
    }

    /// Appends the value as text in `style`.
    ///
    /// No Foundation formatter is involved: numbers and dates are written
    /// digit by digit, so a column costs well under a microsecond.
    public func appendText(to out: inout [UInt8], style: TextStyle) {
        switch self {
        case .text(let bytes):
            if style == .listing {
                Self.appendQuoted(bytes, to: &out)
            } else {
                for byte in bytes { out.append(byte == 0x09 || byte == 0x0A ? 0x20 : byte) }
            }
        case .url:
            let bytes = urlBytes ?? []
            if style == .listing { Self.appendQuoted(bytes, to: &out) } else { out += bytes }
        case .integer(let value):
            Self.appendDecimal(value, to: &out)
        case .real(let value):
            if value == value.rounded(), abs(value) < 1e15 {
                Self.appendDecimal(Int64(value), to: &out)
            } else {
                out += Array(String(value).utf8)
            }
        case .date(let time):
            Self.appendDate(time, separator: UInt8(ascii: " "), to: &out)
            out += Array(" +0000".utf8)
        case .bool(let value):
            out.append(value ? UInt8(ascii: "1") : UInt8(ascii: "0"))
        case .list(let strings):
            if style == .column {
                for (i, string) in strings.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    out += Array(string.utf8)
                }
                return
            }
            out += Array("(\n".utf8)
            for (i, string) in strings.enumerated() {
                out += Array(i > 0 ? ",\n    ".utf8 : "    ".utf8)
                Self.appendQuoted(Array(string.utf8), to: &out)
            }
            out += Array("\n)".utf8)
        }
    }

    /// The value as text in `style`.
    public func text(style: TextStyle) -> String {
        var out: [UInt8] = []
        appendText(to: &out, style: style)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `time` as ISO 8601 in UTC to the second,
    /// `2025-01-31T12:00:00Z`: the form jq's `fromdateiso8601` reads (the
    /// fraction of a second is left out).
    public static func appendISO8601(_ time: Timestamp, to out: inout [UInt8]) {
        appendDate(time, separator: UInt8(ascii: "T"), to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// `"` + bytes with `\` and `"` escaped + `"`.
    private static func appendQuoted(_ bytes: [UInt8], to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }

    /// A signed decimal number.
    static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        var count = 0
        // At most 20 digits, collected least significant first.
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[i]) }
        }
    }

    /// `YYYY-MM-DD` + separator + `hh:mm:ss`, UTC, whole seconds (rounded down).
    private static func appendDate(_ time: Timestamp, separator: UInt8, to out: inout [UInt8]) {
        let civil = TextFormat.CivilTime(time)
        let year = civil.year
        func two(_ value: Int64) {
            out.append(UInt8(ascii: "0") + UInt8(value / 10))
            out.append(UInt8(ascii: "0") + UInt8(value % 10))
        }
        if year >= 0 && year < 10_000 {
            two(year / 100)
            two(year % 100)
        } else {
            appendDecimal(year, to: &out)
        }
        out.append(UInt8(ascii: "-"))
        two(civil.month)
        out.append(UInt8(ascii: "-"))
        two(civil.day)
        out.append(separator)
        two(civil.hour)
        out.append(UInt8(ascii: ":"))
        two(civil.minute)
        out.append(UInt8(ascii: ":"))
        two(civil.second)
    }
}
