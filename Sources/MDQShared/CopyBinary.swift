/// Rows in the binary format of PostgreSQL's `COPY … FROM STDIN (FORMAT
/// binary)`: each row its field count, each field its length (-1 for NULL)
/// and its value as the column's type sends it (integers big-endian, text
/// as its UTF-8 bytes, a `timestamptz` as microseconds since 2000).
///
/// A publish sends a million rows a host: in text, each number and date
/// was written as digits here and read back by the server (a date's text
/// alone cost about a microsecond on each side); in binary, both copy
/// bytes. The caller writes each field as its column's exact type (a
/// `smallint` column takes `int16`), as the server checks.
package struct CopyBinary {
    package var bytes: [UInt8] = []

    package init() {}

    /// What the stream starts with: the signature, no flags, no extension.
    package static let header: [UInt8] =
        Array("PGCOPY\n".utf8) + [0xFF, 0x0D, 0x0A, 0x00] + [0, 0, 0, 0] + [0, 0, 0, 0]
    /// What the stream ends with: a row of -1 fields.
    package static let trailer: [UInt8] = [0xFF, 0xFF]

    /// Starts a row of `fields` fields.
    package mutating func row(fields: Int16) {
        append(fields)
    }

    package mutating func int16(_ value: Int16) {
        append(Int32(2))
        append(value)
    }

    package mutating func int32(_ value: Int32) {
        append(Int32(4))
        append(value)
    }

    package mutating func int64(_ value: Int64) {
        append(Int32(8))
        append(value)
    }

    /// A `text` field: the bytes as they are (the caller makes sure they
    /// are UTF-8 and hold no NUL).
    package mutating func text(_ value: some Collection<UInt8>) {
        append(Int32(value.count))
        bytes.append(contentsOf: value)
    }

    package mutating func text(_ value: String) {
        var value = value
        value.withUTF8 { text($0) }
    }

    /// A `bytea` field.
    package mutating func bytea(_ value: some Collection<UInt8>) {
        text(value)
    }

    /// A `tsvector` field of lexemes without positions, as PostgreSQL
    /// sends one: their count, then each lexeme NUL-terminated and its
    /// count of positions (0). The caller gives them distinct, in the
    /// server's order (bytes compared, a prefix first), each UTF-8 without
    /// NUL and under 2 KiB, less than 1 MiB in all (`TextWords`).
    package mutating func tsvector(_ lexemes: [[UInt8]]) {
        append(Int32(4 + lexemes.reduce(0) { $0 + $1.count + 3 }))
        append(Int32(lexemes.count))
        for lexeme in lexemes {
            bytes.append(contentsOf: lexeme)
            bytes.append(0)
            append(UInt16(0))
        }
    }

    /// A `jsonb` field: its version (1) and the JSON text.
    package mutating func jsonb(_ text: [UInt8]) {
        append(Int32(1 + text.count))
        bytes.append(1)
        bytes.append(contentsOf: text)
    }

    package mutating func null() {
        append(Int32(-1))
    }

    /// A `timestamptz` field from nanoseconds since 1970 (UTC), to the
    /// microsecond PostgreSQL keeps (the earlier one).
    package mutating func timestamp(nanosecondsSinceEpoch nanoseconds: Int64) {
        let microseconds = nanoseconds / 1000 - (nanoseconds % 1000 < 0 ? 1 : 0)
        // 1970 to 2000: 10,957 days.
        int64(microseconds - 946_684_800_000_000)
    }

    private mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }
}
