import MDQSystem

/// A small integer naming one entry of an index.
///
/// IDs are reused after an entry is removed; hold one only while the entry is
/// known to exist.
public struct EntryID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32

    package init(_ rawValue: UInt32) {
        self.rawValue = rawValue
    }

    public static func < (lhs: EntryID, rhs: EntryID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { "#\(rawValue)" }
}
