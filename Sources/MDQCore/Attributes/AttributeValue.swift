import Foundation
public import MDQSystem

/// The value of one attribute of one item, typed: what the attribute table
/// reads, predicates compare, sorting and grouping key on, and `mdq` prints.
///
/// Names and paths keep their raw bytes (a Linux name need not be UTF-8);
/// `foundationValue` gives the `Any` Apple's `NSMetadataItem` would return.
public enum AttributeValue: Sendable, Hashable {
    /// Text: a name, a path, a type identifier (bytes, not always UTF-8).
    case text([UInt8])
    /// A whole number (a size in bytes).
    case integer(Int64)
    /// A number with a fraction (a percentage).
    case real(Double)
    case date(Timestamp)
    case bool(Bool)
    /// A `file://` URL of an absolute path; folders end in `/`.
    case url(path: [UInt8], isFolder: Bool)
    /// Several strings (`kMDItemContentTypeTree`).
    case list([String])

    /// The value as `NSMetadataItem.value(forAttribute:)` returns it:
    /// `String`, `Int` (sizes), `Double`, `Date`, `Bool`, `URL` or
    /// `[String]`. Bytes that are not UTF-8 become U+FFFD.
    public var foundationValue: Any {
        switch self {
        case .text(let bytes): String(decoding: bytes, as: UTF8.self)
        case .integer(let value): Int(clamping: value)
        case .real(let value): value
        case .date(let time): Date(timeIntervalSince1970: time.secondsSinceEpoch)
        case .bool(let value): value
        case .url(let path, let isFolder):
            URL(fileURLWithPath: String(decoding: path, as: UTF8.self), isDirectory: isFolder)
        case .list(let strings): strings
        }
    }

    /// The value as a number, for numeric comparisons and sorting: sizes,
    /// reals, `true` as 1, dates as seconds since 2001-01-01 (Apple's
    /// reference date); nil for text, URLs and lists.
    var number: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .real(let value): value
        case .bool(let value): value ? 1 : 0
        case .date(let time): time.secondsSinceEpoch - PredicateValue.referenceDateOffset
        case .text, .url, .list: nil
        }
    }

    /// A path's `kMDItemURL`: a file URL of this machine's path; another
    /// host's path (`NAME:/path`) is the text `file://NAME/path`, never a
    /// `URL`, since Foundation on Linux opens a file URL's path on this
    /// machine whatever host it names (a program ported from Apple code
    /// would read or remove this machine's file at that path).
    package static func fileURL(_ path: [UInt8], isFolder: Bool) -> AttributeValue {
        guard FileURL.host(of: path[...]) != nil else { return .url(path: path, isFolder: isFolder) }
        var text: [UInt8] = []
        FileURL.encode(path, isFolder: isFolder, into: &text)
        return .text(text)
    }

    /// The `file://` URL's bytes, percent-encoded as `URL.absoluteString` writes them.
    var urlBytes: [UInt8]? {
        guard case .url(let path, let isFolder) = self else { return nil }
        var out: [UInt8] = []
        FileURL.encode(path, isFolder: isFolder, into: &out)
        return out
    }
}
