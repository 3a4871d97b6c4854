import Foundation
import MDQEngine
import MetadataIndex

/// One JSON object per result, on one line.
///
/// Always valid JSON (RFC 8259), so every parser reads it and no name can
/// inject fields. Linux names are bytes: when a path is not valid UTF-8,
/// `path` and `name` show each bad byte as U+FFFD, and `pathBase64` /
/// `nameBase64` carry the exact bytes, so nothing is lost.
///
/// Dates come twice: `modified` / `created` as ISO 8601 in UTC to the
/// second (`2025-01-31T12:00:00Z`, what jq's `fromdateiso8601` and
/// `fromdate` read), and `modifiedEpoch` / `createdEpoch` as seconds since
/// 1970 with the exact nanoseconds (`1738324800.308604997`).
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
                appendDate(modified, key: ",\"modified\":\"", epochKey: ",\"modifiedEpoch\":", to: &out)
            }
            if let created = metadata.birthTime {
                appendDate(created, key: ",\"created\":\"", epochKey: ",\"createdEpoch\":", to: &out)
            }
        }
        out.append(UInt8(ascii: "}"))
    }

    private static func appendDate(_ date: Timestamp, key: StaticString, epochKey: StaticString, to out: inout [UInt8])
    {
        appendLiteral(key, to: &out)
        TextFormat.appendISO8601(date, fractionalSeconds: false, to: &out)
        out.append(0x22)
        appendLiteral(epochKey, to: &out)
        TextFormat.appendEpochSeconds(date, to: &out)
    }

    /// A date as a JSON string jq's `fromdateiso8601` reads.
    static func appendDate(_ date: Timestamp, to out: inout [UInt8]) {
        out.append(0x22)
        TextFormat.appendISO8601(date, fractionalSeconds: false, to: &out)
        out.append(0x22)
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

    /// Appends a JSON string; returns false when some byte was not UTF-8.
    @discardableResult
    static func appendString(_ raw: UnsafeRawBufferPointer, to out: inout [UInt8]) -> Bool {
        let bytes = raw.bindMemory(to: UInt8.self)
        var exact = true
        out.append(0x22)
        var i = 0
        var run = 0  // start of the bytes copied as they are
        while i < bytes.count {
            // Eight plain bytes at a time: printable ASCII other than `"` and `\`
            // (nearly every byte of a real path).
            if i + 8 <= bytes.count && isPlain(UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self))
            {
                i += 8
                continue
            }
            let b = bytes[i]
            if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
                i += 1
                continue
            }
            if b < 0x80 {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                switch b {
                case 0x22: out += [0x5C, 0x22]
                case 0x5C: out += [0x5C, 0x5C]
                case 0x0A: out += [0x5C, UInt8(ascii: "n")]
                case 0x0D: out += [0x5C, UInt8(ascii: "r")]
                case 0x09: out += [0x5C, UInt8(ascii: "t")]
                default: appendEscapedUnit(b, to: &out)
                }
                i += 1
                run = i
                continue
            }
            let length = validSequenceLength(raw, at: i)
            if length > 0 {
                i += length
            } else {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                out += [0xEF, 0xBF, 0xBD]  // U+FFFD
                exact = false
                i += 1
                run = i
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
        out.append(0x22)
        return exact
    }

    /// Whether none of the eight bytes needs escaping or UTF-8 checking:
    /// each is in 0x20...0x7E and is neither `"` nor `\`.
    @inline(__always)
    private static func isPlain(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // A byte of `v` is zero exactly when its bit 7 is set in `hasZero(v)`.
        func hasZero(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let belowSpace = (word &- 0x2020_2020_2020_2020) & ~word & highs
        let special =
            word & highs | belowSpace | hasZero(word ^ 0x2222_2222_2222_2222) | hasZero(word ^ 0x5C5C_5C5C_5C5C_5C5C)
            | hasZero(word ^ 0x7F7F_7F7F_7F7F_7F7F)
        return special == 0
    }

    /// `\u00XX` for a control character.
    private static func appendEscapedUnit(_ byte: UInt8, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789abcdef"
        out += [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")]
        out.append(hex.utf8Start[Int(byte >> 4)])
        out.append(hex.utf8Start[Int(byte & 0xF)])
    }

    /// The length of the valid UTF-8 sequence starting at `i`, or 0.
    private static func validSequenceLength(_ bytes: UnsafeRawBufferPointer, at i: Int) -> Int {
        let b0 = bytes[i]
        func cont(_ k: Int) -> UInt8? {
            i + k < bytes.count && bytes[i + k] & 0xC0 == 0x80 ? bytes[i + k] : nil
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
