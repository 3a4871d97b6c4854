import Foundation
import MetadataIndex

/// One JSON object per result, on one line.
///
/// Always valid JSON (RFC 8259), so every parser reads it and no name can
/// inject fields. Linux names are bytes: when a path is not valid UTF-8,
/// `path` and `name` show each bad byte as U+FFFD, and `pathBase64` /
/// `nameBase64` carry the exact bytes, so nothing is lost.
enum JSONLine {
    static func append(_ result: SearchResult, to out: inout [UInt8]) {
        appendObject(
            path: result.pathBytes, name: result.nameBytes, displayName: result.displayNameBytes[...],
            kind: result.kind,
            metadata: result.metadata, to: &out)
        out.append(0x0A)
    }

    /// One live result as a JSON object (no newline).
    static func append(_ item: MetadataItem, to out: inout [UInt8]) {
        let name = item.nameBytes
        appendObject(
            path: item.pathBytes[...], name: name[...],
            displayName: Array(item.displayName.utf8)[...], kind: item.kind, metadata: item.metadata, to: &out)
    }

    private static func appendObject(
        path: ArraySlice<UInt8>, name: ArraySlice<UInt8>, displayName: ArraySlice<UInt8>, kind: EntryKind,
        metadata: EntryMetadata?, to out: inout [UInt8]
    ) {
        out.append(contentsOf: Array("{\"path\":".utf8))
        if !appendString(path, to: &out) {
            out.append(contentsOf: Array(",\"pathBase64\":\"\(Data(path).base64EncodedString())\"".utf8))
        }
        out.append(contentsOf: Array(",\"name\":".utf8))
        if !appendString(name, to: &out) {
            out.append(contentsOf: Array(",\"nameBase64\":\"\(Data(name).base64EncodedString())\"".utf8))
        }
        out.append(contentsOf: Array(",\"displayName\":".utf8))
        appendString(displayName, to: &out)
        out.append(contentsOf: Array(",\"kind\":\"\(kind)\"".utf8))
        if let metadata {
            if kind != .folder, let size = metadata.size {
                out.append(contentsOf: Array(",\"size\":\(size)".utf8))
            }
            if let modified = metadata.modificationTime {
                out.append(contentsOf: Array(",\"modified\":\"\(modified.iso8601)\"".utf8))
            }
            if let created = metadata.birthTime {
                out.append(contentsOf: Array(",\"created\":\"\(created.iso8601)\"".utf8))
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    /// Appends a JSON string; returns false when some byte was not UTF-8
    /// (and was written as U+FFFD).
    @discardableResult
    static func appendString(_ bytes: ArraySlice<UInt8>, to out: inout [UInt8]) -> Bool {
        var exact = true
        out.append(0x22)
        let hex = Array("0123456789abcdef".utf8)
        func escapeUnit(_ unit: UInt16) {
            out.append(contentsOf: [0x5C, UInt8(ascii: "u")])
            out.append(hex[Int(unit >> 12) & 0xF])
            out.append(hex[Int(unit >> 8) & 0xF])
            out.append(hex[Int(unit >> 4) & 0xF])
            out.append(hex[Int(unit) & 0xF])
        }
        var i = bytes.startIndex
        while i < bytes.endIndex {
            let b = bytes[i]
            if b < 0x80 {
                switch b {
                case 0x22: out.append(contentsOf: [0x5C, 0x22])
                case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                case 0..<0x20, 0x7F: escapeUnit(UInt16(b))
                default: out.append(b)
                }
                i += 1
                continue
            }
            let length = validSequenceLength(bytes, at: i)
            if length > 0 {
                out.append(contentsOf: bytes[i..<i + length])
                i += length
            } else {
                out.append(contentsOf: [0xEF, 0xBF, 0xBD])  // U+FFFD
                exact = false
                i += 1
            }
        }
        out.append(0x22)
        return exact
    }

    /// The length of the valid UTF-8 sequence starting at `i`, or 0.
    private static func validSequenceLength(_ bytes: ArraySlice<UInt8>, at i: Int) -> Int {
        let b0 = bytes[i]
        func cont(_ k: Int) -> UInt8? {
            i + k < bytes.endIndex && bytes[i + k] & 0xC0 == 0x80 ? bytes[i + k] : nil
        }
        switch b0 {
        case 0xC2...0xDF:
            return cont(1) != nil ? 2 : 0
        case 0xE0...0xEF:
            guard let c1 = cont(1), cont(2) != nil else { return 0 }
            if b0 == 0xE0 && c1 < 0xA0 { return 0 }  // overlong
            if b0 == 0xED && c1 >= 0xA0 { return 0 }  // surrogates
            return 3
        case 0xF0...0xF4:
            guard let c1 = cont(1), cont(2) != nil, cont(3) != nil else { return 0 }
            if b0 == 0xF0 && c1 < 0x90 { return 0 }
            if b0 == 0xF4 && c1 >= 0x90 { return 0 }
            return 4
        default:
            return 0
        }
    }
}
