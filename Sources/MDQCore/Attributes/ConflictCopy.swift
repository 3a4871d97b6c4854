import MDQSystem

/// Conflict copies as sync tools write them beside the file they conflict
/// with, for `NSMetadataUbiquitousItemHasUnresolvedConflictsKey`:
///
/// - Dropbox and Nextcloud: `report (conflicted copy 2025-01-31).txt`,
///   `report (Ann's conflicted copy 2025-01-31 1).txt`,
///   `report (conflicted copy 2025-01-31 101112).txt`: a parenthesised
///   note containing `conflicted copy` just before the extension;
/// - Syncthing: `report.sync-conflict-20250131-101112-ABCDEFG.txt`.
///
/// Names are bytes; only ASCII markers are looked for, so any name is safe.
public enum ConflictCopy {
    private static let note = Array("conflicted copy".utf8)
    private static let syncthing = Array(".sync-conflict-".utf8)

    /// The name of the item `name` is a conflict copy of, or nil when it is
    /// not one.
    public static func originalName(of name: [UInt8]) -> [UInt8]? {
        name.withUnsafeBytes { originalName(of: $0) }
    }

    static func originalName(of name: UnsafeRawBufferPointer) -> [UInt8]? {
        // Cheap reject: both forms spell "conflict".
        guard name.count > 10, contains(name, Array("conflict".utf8)) else { return nil }
        if let original = syncthingOriginal(name) { return original }
        return parenthesisedOriginal(name)
    }

    /// `stem.sync-conflict-YYYYMMDD-HHMMSS-ID[.ext]` -> `stem[.ext]`.
    private static func syncthingOriginal(_ name: UnsafeRawBufferPointer) -> [UInt8]? {
        guard let at = find(name, syncthing), at > 0 else { return nil }
        var i = at + syncthing.count
        func digits(_ n: Int) -> Bool {
            guard i + n <= name.count else { return false }
            for k in i..<i + n where !(0x30...0x39).contains(name[k]) { return false }
            i += n
            return true
        }
        guard digits(8), i < name.count, name[i] == UInt8(ascii: "-") else { return nil }
        i += 1
        guard digits(6), i < name.count, name[i] == UInt8(ascii: "-") else { return nil }
        i += 1
        let idStart = i
        while i < name.count, isAlphanumeric(name[i]) { i += 1 }
        guard i > idStart, i == name.count || name[i] == UInt8(ascii: ".") else { return nil }
        return Array(name[..<at]) + Array(name[i...])
    }

    /// `stem (… conflicted copy …)[.ext]` -> `stem[.ext]`.
    private static func parenthesisedOriginal(_ name: UnsafeRawBufferPointer) -> [UInt8]? {
        // The note closes either at the end or just before the extension.
        var close = name.count - 1
        if name[close] != UInt8(ascii: ")") {
            guard let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > 0 else { return nil }
            close = dot - 1
        }
        guard close > 0, name[close] == UInt8(ascii: ")") else { return nil }
        var open = close - 1
        while open > 0 && name[open] != UInt8(ascii: "(") { open -= 1 }
        guard open > 1, name[open] == UInt8(ascii: "("), name[open - 1] == UInt8(ascii: " "),
            contains(UnsafeRawBufferPointer(rebasing: name[open..<close]), note)
        else { return nil }
        return Array(name[..<(open - 1)]) + Array(name[(close + 1)...])
    }

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
    }

    private static func contains(_ text: UnsafeRawBufferPointer, _ literal: [UInt8]) -> Bool {
        find(text, literal) != nil
    }

    private static func find(_ text: UnsafeRawBufferPointer, _ literal: [UInt8]) -> Int? {
        guard text.count >= literal.count else { return nil }
        for start in 0...(text.count - literal.count) {
            var k = 0
            while k < literal.count && text[start + k] == literal[k] { k += 1 }
            if k == literal.count { return start }
        }
        return nil
    }
}

extension FileIndex {
    /// The entry that `id` (a conflict copy by its name) conflicts with, if
    /// it exists beside it.
    package func conflictOriginal(of id: UInt32) -> UInt32? {
        guard let parent = parent(of: EntryID(id)),
            let original = ConflictCopy.originalName(of: nameBytes(id))
        else { return nil }
        return child(named: original, in: parent)?.rawValue
    }

    /// Calls `body` with each child of `folder`.
    func forEachChild(of folder: UInt32, _ body: (UInt32) -> Void) {
        var child = firstChildColumn[folder]
        while child != Self.none {
            body(child)
            child = nextSiblingColumn[child]
        }
    }
}

/// Which entries have conflict copies beside them, worked out once per
/// folder (one pass over its children) for a batch of items.
package struct ConflictCache {
    private var originals: [UInt32: Set<UInt32>] = [:]

    package init() {}

    /// Whether some sibling of `id` is a conflict copy of it.
    package mutating func hasCopies(_ id: UInt32, in index: FileIndex) -> Bool {
        guard let parent = index.parent(of: EntryID(id))?.rawValue else { return false }
        if let known = originals[parent] { return known.contains(id) }
        var found = Set<UInt32>()
        index.forEachChild(of: parent) { child in
            if let original = index.conflictOriginal(of: child) { found.insert(original) }
        }
        originals[parent] = found
        return found.contains(id)
    }
}

/// The conflict facts of one listed folder: which names it holds and which
/// of them have a conflict copy beside them, for a crawl that evaluates
/// `NSMetadataUbiquitousItemHasUnresolvedConflictsKey` as it lists.
struct ConflictListing: Sendable {
    private var names = Set<[UInt8]>()
    private var withCopies = Set<[UInt8]>()

    package init() {}

    /// Records one name of the folder.
    mutating func insert(_ name: UnsafeRawBufferPointer) {
        names.insert(Array(name))
        if let original = ConflictCopy.originalName(of: name) { withCopies.insert(original) }
    }

    /// Whether a conflict copy of `name` is in the folder.
    package func hasCopies(_ name: UnsafeRawBufferPointer) -> Bool {
        !withCopies.isEmpty && withCopies.contains(Array(name))
    }

    /// For a conflict copy, the name of the item it conflicts with when
    /// the folder holds it.
    func original(of name: UnsafeRawBufferPointer) -> [UInt8]? {
        ConflictCopy.originalName(of: name).flatMap { names.contains($0) ? $0 : nil }
    }
}
