import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// `?`, LIKE and substring boundaries count characters as people see them:
/// extended grapheme clusters of the canonically decomposed text.
struct GraphemeMatchingTests {
    static let hangul = "\u{D55C}\u{AD6D}\u{C5B4}"  // 한국어, composed (NFD: 8 jamo)
    static let thumbsUp = "\u{1F44D}\u{1F3FD}"  // 👍🏽, with a skin tone
    static let japan = "\u{1F1EF}\u{1F1F5}"  // 🇯🇵
    static let france = "\u{1F1EB}\u{1F1F7}"  // 🇫🇷
    static let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"  // 👨‍👩‍👧
    static let kiyeok = "\u{1100}"  // ᄀ, the initial jamo of 국

    @Test(arguments: [
        ("kMDItemFSName LIKE '???.txt'", hangul + ".txt", true),
        ("kMDItemFSName LIKE '???.txt'", hangul.decomposedStringWithCanonicalMapping + ".txt", true),
        ("kMDItemFSName LIKE '????.txt'", hangul + ".txt", false),
        ("kMDItemFSName CONTAINS '\(kiyeok)'", "\u{AD6D}.txt", false),
        ("kMDItemFSName BEGINSWITH '\(kiyeok)'", "\u{AD6D}.txt", false),
        ("kMDItemFSName BEGINSWITH '\u{D55C}'", hangul + ".txt", true),
        ("kMDItemFSName LIKE '?.png'", thumbsUp + ".png", true),
        ("kMDItemFSName LIKE '\u{1F44D}*'", thumbsUp + ".png", false),
        ("kMDItemFSName LIKE '??.png'", japan + france + ".png", true),
        ("kMDItemFSName LIKE '?.png'", japan + france + ".png", false),
        ("kMDItemFSName ENDSWITH '\u{1F1F5}\u{1F1EB}\u{1F1F7}.png'", japan + france + ".png", false),
        ("kMDItemFSName ENDSWITH '\(france).png'", japan + france + ".png", true),
        ("kMDItemFSName LIKE '?.png'", family + ".png", true),
        ("kMDItemFSName BEGINSWITH '\u{1F468}'", family + ".png", false),
        ("kMDItemFSName LIKE[d] '?.png'", family + ".png", true),
        ("kMDItemFSName LIKE 'e?.txt'", "ee\u{301}\u{323}.txt", true),
        ("kMDItemFSName LIKE '???'", "a\r\nb", false),
        ("kMDItemFSName LIKE '??'", "\u{E9}\r\n", true),
        // A prepended mark (U+0600) joins the character after it.
        ("kMDItemFSName ENDSWITH '1.txt'", "\u{0600}1.txt", false),
        ("kMDItemFSName CONTAINS '1'", "\u{0600}1.txt", false),
        ("kMDItemFSName ENDSWITH '.txt'", "\u{0600}1.txt", true),
    ])
    func clustersAreOneCharacter(query: String, name: String, expected: Bool) throws {
        #expect(try evaluate(query, TestSubject(name)) == expected)
        // The index scan's column loops agree.
        let index = FileIndex()
        let root = index.addRoot(path: "/g", metadata: EntryMetadata(kind: .folder))
        index.insert(name: Array(name.utf8), in: root, metadata: EntryMetadata(kind: .file, size: 1))
        #expect(index.count(matching: try MetadataPredicate(query)) == (expected ? 1 : 0))
    }

    /// Boundaries from the folder agree with Swift's own `Character`s for
    /// a spread of scripts and sequences.
    @Test(arguments: [
        hangul, hangul.decomposedStringWithCanonicalMapping, thumbsUp, japan + france + "\u{1F1EF}", family,
        "e\u{301}\u{323}x", "\u{915}\u{94D}\u{937}", "\u{E01}\u{E33}", "a\r\nb", "\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}",
        "\u{200D}\u{1F469}", "\u{1F9D1}\u{1F3FB}\u{200D}\u{1F4BB}", "\u{0600}12", "x\u{200C}y",
        "\u{1F44D}x\u{200D}\u{1F469}", "\u{1F1EF}x\u{1F1F5}\u{1F1EB}", "a\u{0600}b\u{0600}\u{E9}",
        "\u{1F468}\u{1F3FD}\u{200D}\u{1F469}", "\u{AC00}\u{1100}\u{1161}\u{11A8}\u{11A8}",
        "\u{2764}\u{FE0F}\u{200D}\u{1F525}a",
        "\u{995}\u{9CD}\u{9B7}", "\u{915}\u{94D}\u{200D}\u{937}", "\u{915}\u{94D}a",
        "\u{D15}\u{D4D}\u{D15}\u{D4D}\u{D15}",
    ])
    func boundariesAgreeWithSwift(text: String) {
        let folder = UnicodeFolder(options: [])
        Array(text.utf8).withUnsafeBytes { folder.fold($0) }
        let boundaries = folder.folded.boundaries
        let clusters = text.decomposedStringWithCanonicalMapping.count
        #expect(boundaries.dropLast().filter { $0 }.count == clusters, "\(text.unicodeScalars.map(\.value))")
    }
}
