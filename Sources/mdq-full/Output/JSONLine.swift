import Foundation
import MDQLive
import MDQWire
import MetadataIndex

/// One JSON object per result, on one line.
///
/// Always valid JSON (RFC 8259), so every parser reads it and no name can
/// inject fields. Linux names are bytes: when a path is not valid UTF-8,
/// `path` and `name` show each bad byte as U+FFFD, and `pathBase64` /
/// `nameBase64` carry the exact bytes, so nothing is lost.
///
/// The fields are the daemon protocol's item schema (the same names, the
/// same dates: `ItemDates`, ISO 8601 to the second and exact epoch
/// seconds), with `name` and `displayName` for the shell and without the
/// protocol's ids.
///
/// Built byte by byte with `TextFormat` (no Foundation formatter, no
/// `String` per result): `--json` over a million results is bound by the
/// crawl, not by printing.
enum JSONLine {
    /// One search result and a newline.
    static func append(_ result: SearchResult, to out: inout [UInt8]) {
        result.withDisplayName { displayName in
            appendObject(
                path: result.pathBytes, name: result.nameBytes, displayName: displayName, kind: result.kind,
                metadata: result.metadata, to: &out)
        }
        out.append(0x0A)
    }

    /// One live result as a JSON object (no newline).
    static func append(_ item: MetadataItem, to out: inout [UInt8]) {
        let displayName = Array(item.displayName.utf8)
        displayName.withUnsafeBytes { displayName in
            appendObject(
                path: item.pathBytes[...], name: item.nameBytes[...], displayName: displayName, kind: item.kind,
                metadata: item.metadata, to: &out)
        }
    }

    private static func appendObject(
        path: ArraySlice<UInt8>, name: ArraySlice<UInt8>, displayName: UnsafeRawBufferPointer, kind: EntryKind,
        metadata: EntryMetadata?, to out: inout [UInt8]
    ) {
        appendLiteral("{\"path\":", to: &out)
        if !appendString(path, to: &out) { appendBase64(key: ",\"pathBase64\":", path, to: &out) }
        appendLiteral(",\"name\":", to: &out)
        if !appendString(name, to: &out) { appendBase64(key: ",\"nameBase64\":", name, to: &out) }
        appendLiteral(",\"displayName\":", to: &out)
        appendString(displayName, to: &out)
        switch kind {
        case .file: appendLiteral(",\"kind\":\"file\"", to: &out)
        case .folder: appendLiteral(",\"kind\":\"folder\"", to: &out)
        case .symlink: appendLiteral(",\"kind\":\"symlink\"", to: &out)
        case .other: appendLiteral(",\"kind\":\"other\"", to: &out)
        }
        if let metadata {
            if kind != .folder, let size = metadata.size {
                appendLiteral(",\"size\":", to: &out)
                TextFormat.appendDecimal(size, to: &out)
            }
            if let modified = metadata.modificationTime {
                out.append(UInt8(ascii: ","))
                ItemDates.append(.modified, modified, to: &out)
            }
            if let created = metadata.birthTime {
                out.append(UInt8(ascii: ","))
                ItemDates.append(.created, created, to: &out)
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func appendBase64(key: StaticString, _ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) {
        appendLiteral(key, to: &out)
        out.append(0x22)
        out += Array(Data(bytes).base64EncodedString().utf8)
        out.append(0x22)
    }

    static func appendLiteral(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends a JSON string; returns false when some byte was not UTF-8
    /// (and was written as U+FFFD).
    @discardableResult
    static func appendString(_ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) -> Bool {
        bytes.withUnsafeBytes { appendString($0, to: &out) }
    }

    /// Appends a JSON string (`JSONString`, the one escaper); returns false
    /// when some byte was not UTF-8.
    @discardableResult
    static func appendString(_ raw: UnsafeRawBufferPointer, to out: inout [UInt8]) -> Bool {
        JSONString.append(raw, to: &out)
    }
}
