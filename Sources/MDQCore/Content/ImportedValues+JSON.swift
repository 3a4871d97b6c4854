import Foundation
import MDQSystem
package import MDQWire

extension ImportedValues {
    /// The values as a JSON object keyed by attribute (`kMDItemTitle`…),
    /// as the daemon's protocol and the shared index hold them: text as a
    /// string, or `{"base64":…}` when it is not UTF-8; integers and reals
    /// as numbers (a real always with a point or an exponent); booleans;
    /// lists as arrays of strings; a date as
    /// `{"date":"2025-01-31T12:00:00Z","dateEpoch":1738324800.308604997}`
    /// (the ISO 8601 text to the second, for people; the exact seconds);
    /// a URL as `{"url":path,"folder":bool}`.
    ///
    /// - Parameter withoutNUL: for PostgreSQL's `jsonb`, which takes no
    ///   `\u0000`: a text holding a NUL is written as base64 (exactly), a
    ///   NUL in a list's string as U+FFFD.
    package func writeJSON(to out: inout JSONWriter, withoutNUL: Bool = false) {
        out.raw("{")
        for (i, (attribute, value)) in values.sorted(by: { $0.key.rawValue < $1.key.rawValue }).enumerated() {
            if i > 0 { out.raw(",") }
            out.string(attribute.rawValue)
            out.raw(":")
            switch value {
            case .text(let bytes):
                if String(validating: bytes, as: UTF8.self) != nil && !(withoutNUL && bytes.contains(0)) {
                    out.string(bytes)
                } else {
                    out.raw("{\"base64\":")
                    out.string(Data(bytes).base64EncodedString())
                    out.raw("}")
                }
            case .integer(let number):
                out.integer(number)
            case .real(let number):
                // "\(3.0)" is "3.0": read back as a real, not an integer.
                out.double(number)
            case .bool(let flag):
                out.bool(flag)
            case .list(let strings):
                out.raw("[")
                for (j, string) in strings.enumerated() {
                    if j > 0 { out.raw(",") }
                    out.string(withoutNUL ? string.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : string)
                }
                out.raw("]")
            case .date(let time):
                out.raw("{")
                ItemDates.append(.date, time, to: &out.bytes)
                out.raw("}")
            case .url(let path, let isFolder):
                out.raw("{")
                out.bytesField("url", path)
                out.field("folder")
                out.bool(isFolder)
                out.raw("}")
            }
        }
        out.raw("}")
    }

    /// Values written by `writeJSON`; nil for anything but an object.
    /// Keys that are not imported attributes and values of no known shape
    /// are dropped.
    package init?(json value: JSONValue) {
        guard case .object(let fields) = value else { return nil }
        var values = ImportedValues()
        for (key, field) in fields {
            guard let attribute = MetadataAttribute(key: key), attribute.isImported else { continue }
            switch field {
            case .string(let bytes): values[attribute] = .text(bytes)
            case .integer(let number): values[attribute] = .integer(number)
            case .double(let number), .decimal(let number, _): values[attribute] = .real(number)
            case .bool(let flag): values[attribute] = .bool(flag)
            case .array(let items): values[attribute] = .list(items.compactMap(\.string))
            case .object:
                if let encoded = field["base64"]?.string, let data = Data(base64Encoded: encoded) {
                    values[attribute] = .text(Array(data))
                } else if let date = ItemDates.read(.date, from: field) {
                    values[attribute] = .date(date)
                } else if let path = field.bytesField("url") {
                    values[attribute] = .url(path: path, isFolder: field["folder"]?.bool ?? false)
                }
            case .null: break
            }
        }
        self = values
    }
}
