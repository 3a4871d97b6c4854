import Foundation
import MetadataIndex

/// Attribute values as `--attr` prints them: tab-separated columns after
/// the path, or an `attributes` object in JSON.
enum AttributeText {
    /// A value in a column: one line, unquoted; `(null)` when missing.
    static func column(_ value: Any?) -> String {
        switch value {
        case nil: return "(null)"
        case let list as [String]: return list.joined(separator: ",")
        case let string as String:
            return string.replacingOccurrences(of: "\t", with: " ").replacingOccurrences(of: "\n", with: " ")
        default: return ListCommand.text(of: value!, indent: "")
        }
    }

    /// The path followed by a tab and each attribute's column.
    static func appendLine(_ item: MetadataItem, attributes: [String], to out: inout [UInt8]) {
        out += item.pathBytes
        for key in attributes {
            out.append(0x09)
            out += Array(column(item.value(forAttribute: key)).utf8)
        }
    }

    /// The item's JSON object, with an `attributes` object when asked for.
    static func appendJSON(_ item: MetadataItem, attributes: [String], to out: inout [UInt8]) {
        JSONLine.append(item, to: &out)
        guard !attributes.isEmpty else { return }
        out.removeLast()  // the closing brace
        out.append(UInt8(ascii: ","))
        appendAttributes(item, attributes, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// `"attributes":{key: value, ...}` with JSON values (null when missing).
    static func appendAttributes(_ item: MetadataItem, _ keys: [String], to out: inout [UInt8]) {
        out += Array("\"attributes\":{".utf8)
        for (i, key) in keys.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONLine.appendString(Array(key.utf8)[...], to: &out)
            out.append(UInt8(ascii: ":"))
            ListCommand.appendJSONValue(item.value(forAttribute: key), to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}
