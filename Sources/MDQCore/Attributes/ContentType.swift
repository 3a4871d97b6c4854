public import MDQSystem

/// `kMDItemContentType` and `kMDItemContentTypeTree`: the uniform type
/// identifier of an item, from its kind and extension, and every type it
/// conforms to.
///
/// Folders are `public.folder` unless their extension names a package
/// (`Safari.app` is `com.apple.application-bundle`); symlinks are
/// `public.symlink`; files with an unknown or no extension are
/// `public.data`; other special files are `public.item`. Extensions compare
/// case-insensitively (`IMG.JPG` is `public.jpeg`).
///
/// Lookups allocate nothing: extensions of up to 16 bytes are packed into
/// two words and found in a table of small type numbers.
public enum ContentType {
    /// A type with its conformance tree, precomputed.
    package struct Info: Sendable {
        let identifier: String
        let identifierBytes: [UInt8]
        /// The type itself first, then what it conforms to, breadth first.
        let tree: [String]
        let treeBytes: [[UInt8]]
        /// A package or bundle type: what a folder with this extension is.
        let isFolderType: Bool
        /// Conforms to `public.directory`: never the type of a plain file.
        let isDirectoryType: Bool
    }

    /// An extension of up to 16 bytes, ASCII-lowercased and zero-padded.
    struct ExtensionKey: Hashable {
        var low: UInt64
        var high: UInt64

        init?(_ bytes: UnsafeRawBufferPointer) {
            guard !bytes.isEmpty, bytes.count <= 16 else { return nil }
            var words: (UInt64, UInt64) = (0, 0)
            for (i, byte) in bytes.enumerated() {
                let lowered = UInt64(byte &- 0x41 < 26 ? byte | 0x20 : byte)
                if i < 8 { words.0 |= lowered << UInt64(8 * i) } else { words.1 |= lowered << UInt64(8 * (i - 8)) }
            }
            (low, high) = words
        }
    }

    package static let types: [Info] = {
        var identifiers = Set(ContentTypeTable.byExtension.values)
        identifiers.formUnion(["public.folder", "public.symlink", "public.data", "public.item"])
        return identifiers.sorted().map { identifier in
            var tree: [String] = []
            var queue = [identifier]
            while !queue.isEmpty {
                let next = queue.removeFirst()
                guard !tree.contains(next) else { continue }
                tree.append(next)
                queue += ContentTypeTable.parents[next] ?? []
            }
            return Info(
                identifier: identifier, identifierBytes: Array(identifier.utf8), tree: tree,
                treeBytes: tree.map { Array($0.utf8) },
                isFolderType: tree.contains("com.apple.package") || tree.contains("com.apple.bundle"),
                isDirectoryType: tree.contains("public.directory"))
        }
    }()

    private static let numbers: [String: Int] = Dictionary(
        uniqueKeysWithValues: types.enumerated().map { ($0.element.identifier, $0.offset) })

    private static let byExtension: [ExtensionKey: Int] = {
        var table: [ExtensionKey: Int] = [:]
        for (ext, identifier) in ContentTypeTable.byExtension {
            Array(ext.utf8).withUnsafeBytes { bytes in
                if let key = ExtensionKey(bytes) { table[key] = numbers[identifier] }
            }
        }
        return table
    }()

    package static let folder = numbers["public.folder"]!
    static let symlink = numbers["public.symlink"]!
    static let data = numbers["public.data"]!
    static let item = numbers["public.item"]!

    /// The type number of an entry with this name and kind.
    static func type(ofName name: UnsafeRawBufferPointer, kind: EntryKind) -> Int {
        switch kind {
        case .symlink: return symlink
        case .file, .folder:
            guard let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > 0, dot + 1 < name.count,
                let key = ExtensionKey(UnsafeRawBufferPointer(rebasing: name[(dot + 1)...])),
                let type = byExtension[key]
            else { return kind == .folder ? folder : data }
            if kind == .folder {
                // Only package and bundle types apply to folders (`X.app`, `Y.framework`).
                return types[type].isFolderType ? type : folder
            }
            return types[type].isDirectoryType ? data : type
        default: return item
        }
    }

    /// The uniform type identifier of an item with this name and kind.
    public static func identifier(forName name: [UInt8], kind: EntryKind) -> String {
        name.withUnsafeBytes { types[type(ofName: $0, kind: kind)].identifier }
    }

    /// The identifier followed by every type it conforms to
    /// (`public.png`, `public.image`, `public.data`, `public.item`, `public.content`).
    public static func tree(forName name: [UInt8], kind: EntryKind) -> [String] {
        name.withUnsafeBytes { types[type(ofName: $0, kind: kind)].tree }
    }

    /// The conformance tree of an identifier (just the identifier when mdq
    /// does not know it).
    public static func tree(of identifier: String) -> [String] {
        numbers[identifier].map { types[$0].tree } ?? [identifier]
    }

    /// Whether `identifier` is `other` or conforms to it.
    public static func conforms(_ identifier: String, to other: String) -> Bool {
        tree(of: identifier).contains(other)
    }

    /// The identifier mdq knows that equals `text` without regard to case.
    package static func knownIdentifier(caseInsensitive text: String) -> String? {
        let lowered = text.lowercased()
        return types.first { $0.identifier.lowercased() == lowered }?.identifier
    }

    /// Every type mdq gives entries.
    package static var allIdentifiers: [String] { types.map(\.identifier) }

    /// Every type mdq gives entries that is, or conforms to, `other`.
    package static func identifiers(conformingTo other: String) -> [String] {
        types.filter { $0.tree.contains(other) }.map(\.identifier)
    }

    /// The number of extensions mdq knows.
    public static var knownExtensionCount: Int { byExtension.count }
}
