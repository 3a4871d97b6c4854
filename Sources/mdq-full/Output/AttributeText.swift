import MDQLive
import MetadataIndex

/// Attribute values as `--attr` prints them: tab-separated columns after
/// the path, or an `attributes` object in JSON; and as `mdq ls` prints them.
///
/// Values come typed from the attribute table (`MetadataItem.value(of:)`)
/// and are written byte by byte, with no Foundation formatter, so each
/// `--attr` costs well under a microsecond per result. In JSON, dates are
/// ISO 8601 strings in UTC to the second (`"2025-01-31T12:00:00Z"`), the
/// form jq's `fromdateiso8601` reads; the exact times, to the nanosecond,
/// are the object's own `modified` and `created` fields. Text that is not
/// UTF-8 shows U+FFFD in JSON (the path's exact bytes are in `pathBase64`).
enum AttributeText {
    /// An item's value of `key` in a column: one line, unquoted; `(null)`
    /// when missing.
    static func column(_ item: MetadataItem, key: String) -> String {
        var out: [UInt8] = []
        appendColumn(item, key: key, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func appendColumn(_ item: MetadataItem, key: String, host: [UInt8]? = nil, to out: inout [UInt8]) {
        if let value = value(of: item, key, host: host) {
            value.appendText(to: &out, style: .column)
        } else {
            out += Array("(null)".utf8)
        }
    }

    /// The typed value of `key` (a raw key or a constant name); for an
    /// item of another host (`host`, its path the host's own), its URL is
    /// that host's (`file://NAME/path`), not a file of this machine.
    static func value(of item: MetadataItem, _ key: String, host: [UInt8]? = nil) -> AttributeValue? {
        guard let attribute = MetadataAttribute(key: key) else { return nil }
        if let host, attribute == .url {
            return .fileURL(host + [UInt8(ascii: ":")] + item.pathBytes, isFolder: item.kind == .folder)
        }
        return item.value(of: attribute)
    }

    /// The path followed by a tab and each attribute's column.
    static func appendLine(_ item: MetadataItem, attributes: [String], host: [UInt8]? = nil, to out: inout [UInt8]) {
        out += item.pathBytes
        if Personality.mdfindLines.load(ordering: .relaxed) {
            // mdfind -attr: `path   key = value`, values as mdls prints them.
            for key in attributes {
                out += Array("   \(MetadataAttribute(key: key)?.rawValue ?? key) = ".utf8)
                if let value = value(of: item, key, host: host) {
                    value.appendText(to: &out, style: .listing)
                } else {
                    out += Array("(null)".utf8)
                }
            }
            return
        }
        for key in attributes {
            out.append(0x09)
            appendColumn(item, key: key, host: host, to: &out)
        }
    }

    /// The item's JSON object, with an `attributes` object when asked for.
    static func appendJSON(_ item: MetadataItem, attributes: [String], host: [UInt8]? = nil, to out: inout [UInt8]) {
        JSONLine.append(item, to: &out)
        guard !attributes.isEmpty else { return }
        out.removeLast()  // the closing brace
        out.append(UInt8(ascii: ","))
        appendAttributes(item, attributes, host: host, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// `"attributes":{key: value, ...}` with JSON values (null when missing).
    static func appendAttributes(_ item: MetadataItem, _ keys: [String], host: [UInt8]? = nil, to out: inout [UInt8]) {
        out += Array("\"attributes\":{".utf8)
        for (i, key) in keys.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONLine.appendString(Array(key.utf8)[...], to: &out)
            out.append(UInt8(ascii: ":"))
            appendJSONValue(value(of: item, key, host: host), to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// A value as JSON: strings, numbers, `true`/`false`, arrays, dates as
    /// `"2025-01-31T12:00:00Z"`, `null` when missing.
    static func appendJSONValue(_ value: AttributeValue?, to out: inout [UInt8]) {
        switch value {
        case nil: out += Array("null".utf8)
        case .text(let bytes)?: JSONLine.appendString(bytes[...], to: &out)
        case .url?: JSONLine.appendString((value?.text(style: .column)).map { Array($0.utf8) }?[...] ?? [], to: &out)
        case .date(let time)?:
            out.append(UInt8(ascii: "\""))
            AttributeValue.appendISO8601(time, to: &out)
            out.append(UInt8(ascii: "\""))
        case .bool(let flag)?: out += Array((flag ? "true" : "false").utf8)
        case .integer?, .real?: value!.appendText(to: &out, style: .column)
        case .list(let strings)?:
            out.append(UInt8(ascii: "["))
            for (i, element) in strings.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONLine.appendString(Array(element.utf8)[...], to: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }
}
