package import MDQSystem

/// The packed per-entry word: name length, kind and flags in 32 bits.
///
/// | bits  | field |
/// |-------|-------|
/// | 0-7   | name length (1...255) |
/// | 8-10  | kind (0 = free slot) |
/// | 11    | name is ASCII (the matcher's fast path) |
/// | 12    | has a birth time |
/// | 13    | size did not fit in 32 bits (look in `largeSizes`) |
/// | 14    | inode did not fit in 32 bits (look in `largeInodes`) |
/// | 15    | stat'ed (size and times are known) |
/// | 16-23 | device table index |
/// | 24    | scope root |
/// | 25    | mark (reconciliation: seen by the current rescan) |
/// | 26    | the name's bigram signature is computed (`NameSignatures`) |
package struct EntryBits: Equatable {
    var rawValue: UInt32

    package init(rawValue: UInt32) { self.rawValue = rawValue }

    static let free = EntryBits(rawValue: 0)

    private func bit(_ n: UInt32) -> Bool { rawValue & (1 << n) != 0 }
    private mutating func set(_ n: UInt32, _ on: Bool) {
        if on { rawValue |= 1 << n } else { rawValue &= ~(1 << n) }
    }

    var nameLength: Int {
        @inline(__always) get { Int(rawValue & 0xFF) }
        set { rawValue = rawValue & ~0xFF | UInt32(newValue) }
    }

    var kindRawValue: UInt8 {
        @inline(__always) get { UInt8((rawValue >> 8) & 0x7) }
        set { rawValue = rawValue & ~(0x7 << 8) | UInt32(newValue) << 8 }
    }

    var isFree: Bool { kindRawValue == 0 }
    package var kind: EntryKind { EntryKind(rawValue: kindRawValue) ?? .other }

    var isASCIIName: Bool {
        @inline(__always) get { bit(11) }
        set { set(11, newValue) }
    }
    var hasBirthTime: Bool {
        get { bit(12) }
        set { set(12, newValue) }
    }
    var hasLargeSize: Bool {
        get { bit(13) }
        set { set(13, newValue) }
    }
    var hasLargeInode: Bool {
        get { bit(14) }
        set { set(14, newValue) }
    }
    var isStatted: Bool {
        get { bit(15) }
        set { set(15, newValue) }
    }
    var deviceIndex: Int {
        get { Int((rawValue >> 16) & 0xFF) }
        set { rawValue = rawValue & ~(0xFF << 16) | UInt32(newValue & 0xFF) << 16 }
    }
    var isRoot: Bool {
        get { bit(24) }
        set { set(24, newValue) }
    }
    package var isMarked: Bool {
        get { bit(25) }
        set { set(25, newValue) }
    }
    var hasSignature: Bool {
        @inline(__always) get { bit(26) }
        set { set(26, newValue) }
    }
}
