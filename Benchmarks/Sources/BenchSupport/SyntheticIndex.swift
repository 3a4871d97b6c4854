import Foundation
public import MetadataIndex
import SystemPackage

/// A deterministic generator (SplitMix64) so every run builds the same index.
public struct Generator: RandomNumberGenerator {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// An in-memory index of synthetic names, like make-tree.py's mix: words in
/// several scripts (a third of them decomposed), `IMG_` names, extensions by
/// frequency, folders of about 25 entries; some words are characters of
/// several scalars (Hangul, emoji sequences), for grapheme-aware matching.
/// No disk.
public enum SyntheticIndex {
    static let words = ["report", "invoice", "photo", "notes", "draft", "final", "budget", "plan", "meeting", "summary",
        "readme", "index", "main", "test", "data", "config", "backup", "image", "scan", "letter",
        "r\u{E9}sum\u{E9}", "\u{DC}bersicht", "\u{62A5}\u{544A}", "\u{5199}\u{771F}", "na\u{EF}ve", "caf\u{E9}",
        "project", "archive", "todo", "log", "chapter", "slide",
        // Characters of several scalars each: Hangul (jamo once decomposed),
        // an emoji with a skin tone, a flag, a ZWJ family.
        "\u{D55C}\u{AD6D}", "\u{C0AC}\u{C9C4}", "\u{1F44D}\u{1F3FD}", "\u{1F1EF}\u{1F1F5}",
        "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"]
    static let extensions: [(String, Int)] = [("txt", 12), ("md", 6), ("png", 10), ("jpg", 10), ("pdf", 6), ("json", 6),
        ("swift", 5), ("c", 4), ("h", 4), ("py", 4), ("html", 3), ("css", 2), ("js", 4), ("docx", 2), ("xlsx", 2),
        ("key", 1), ("numbers", 1), ("pages", 1), ("mp3", 2), ("mov", 1), ("zip", 1), ("tar.gz", 1), ("", 3)]
    /// The newest modification time in the index (dates go back 400 days from it).
    public static let newest: Int64 = 1_700_000_000_000_000_000

    /// Builds an index of `count` entries (every 25th a folder) under `/bench`.
    /// Returns the index and its folders.
    public static func make(count: Int, seed: UInt64 = 42) -> (FileIndex, [EntryID]) {
        var random = Generator(seed: seed)
        let totalWeight = extensions.map(\.1).reduce(0, +)
        func pickExtension() -> String {
            var x = Int.random(in: 0..<totalWeight, using: &random)
            for (ext, weight) in extensions {
                x -= weight
                if x < 0 { return ext }
            }
            return "txt"
        }
        let index = FileIndex()
        let root = index.addRoot(
            path: "/bench", metadata: EntryMetadata(kind: .folder, size: 0, modificationTime: Timestamp(nanosecondsSinceEpoch: 0)))
        var folders = [root]
        let base = newest
        for i in 0..<count {
            if i % 25 == 0 {
                let parent = folders[Int.random(in: max(0, folders.count - 200)..<folders.count, using: &random)]
                let name = "\(words.randomElement(using: &random)!)\(folders.count)"
                folders.append(
                    index.insert(
                        name: Array(name.utf8), in: parent,
                        metadata: EntryMetadata(kind: .folder, size: 0, modificationTime: Timestamp(nanosecondsSinceEpoch: base))))
                continue
            }
            var word = words.randomElement(using: &random)!
            if Int.random(in: 0..<10, using: &random) < 3 { word = word.decomposedStringWithCanonicalMapping }
            let style = Int.random(in: 0..<100, using: &random)
            let stem: String
            switch style {
            case 0..<35: stem = "\(word)_\(i)"
            case 35..<55: stem = "\(word.capitalized) \(words.randomElement(using: &random)!) \(i % 97)"
            case 55..<70: stem = String(format: "IMG_%05d", i % 100_000)
            default: stem = "\(word)\(i)"
            }
            let ext = pickExtension()
            let name = ext.isEmpty ? stem : "\(stem).\(ext)"
            let parent = folders[Int.random(in: max(0, folders.count - 200)..<folders.count, using: &random)]
            let size = [0, 0, 0, 17, 512, 4096, 2_000_000][Int.random(in: 0..<7, using: &random)]
            let mtime = base - Int64.random(in: 0..<(400 * 86_400), using: &random) * 1_000_000_000
            index.insert(
                name: Array(name.utf8), in: parent,
                metadata: EntryMetadata(
                    kind: .file, size: UInt64(size), modificationTime: Timestamp(nanosecondsSinceEpoch: mtime),
                    inode: UInt64(i)))
        }
        return (index, folders)
    }

    /// The predicates the query benchmarks time, by label.
    public static func queries() throws -> [(String, MetadataPredicate)] {
        let weekAgo = Date(timeIntervalSince1970: Double(newest) / 1e9 - 7 * 86_400)
        return [
            ("LIKE '*.png'", try MetadataPredicate("kMDItemFSName LIKE '*.png'")),
            ("LIKE[cd] '*report*'", try MetadataPredicate("kMDItemFSName LIKE[cd] '*report*'")),
            ("LIKE 'IMG_0??1*'", try MetadataPredicate("kMDItemFSName LIKE 'IMG_0??1*'")),
            ("LIKE '????.txt'", try MetadataPredicate("kMDItemFSName LIKE '????.txt'")),
            ("IN {'a.txt','b.txt'}", try MetadataPredicate("kMDItemFSName IN {'a.txt', 'b.txt'}")),
            ("MATCHES '.*[0-9]{4}\\.jpg'", try MetadataPredicate("kMDItemFSName MATCHES '.*[0-9]{4}\\\\.jpg'")),
            (
                "size > 1 MB AND date >= week ago AND name ENDSWITH[c] '.pdf'",
                try MetadataPredicate(
                    format:
                        "kMDItemFSSize > 1000000 AND kMDItemFSContentChangeDate >= %@ AND kMDItemFSName ENDSWITH[c] '.pdf'",
                    weekAgo)
            ),
            ("BEGINSWITH[c] 'report'", try MetadataPredicate("kMDItemFSName BEGINSWITH[c] 'report'")),
            (
                "LIKE[c] '*.jpg' OR '*.png' OR '*.pdf' OR '*.docx' (OR chain)",
                try MetadataPredicate(
                    "kMDItemFSName LIKE[c] '*.jpg' OR kMDItemFSName LIKE[c] '*.png' OR kMDItemFSName LIKE[c] '*.pdf' OR kMDItemFSName ENDSWITH[c] '.docx'"
                )
            ),
        ]
    }
}
