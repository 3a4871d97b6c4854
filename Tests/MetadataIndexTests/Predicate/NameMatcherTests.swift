import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// An entry for predicate evaluation without an index.
struct TestSubject: PredicateSubject {
    var name: [UInt8]
    var kind: EntryKind = .file
    var folder: [UInt8] = Array("/scope/folder".utf8)
    var entryMetadata: EntryMetadata?
    /// The ubiquity its folder has (nil: outside any container).
    var ubiquityOfFolder: MetadataItem.Ubiquity?
    /// Whether a conflict copy sits beside it.
    var hasConflictCopy = false

    func metadata() -> EntryMetadata? { entryMetadata }
    func ubiquity() -> MetadataItem.Ubiquity? { ubiquityOfFolder }
    func hasUnresolvedConflicts() -> Bool { hasConflictCopy }
    func conflictOriginalPath() -> [UInt8]? { nil }
    /// What the importers would read from it.
    var importedValues: ImportedValues?
    func imported() -> ImportedValues? { importedValues }

    init(_ name: String, kind: EntryKind = .file) {
        self.name = Array(name.utf8)
        self.kind = kind
    }

    init(bytes: [UInt8]) {
        name = bytes
    }

    func withName<R>(_ body: (UnsafeRawBufferPointer, Bool) -> R) -> R {
        name.withUnsafeBytes { body($0, NameBytes.isASCII($0)) }
    }

    func appendPath(to bytes: inout [UInt8]) {
        bytes += folder + [0x2F] + name
    }
}

func evaluate(_ query: String, _ subject: TestSubject) throws -> Bool {
    CompiledPredicate(try MetadataPredicate(query)).makeEvaluator().matches(subject)
}

struct NameMatcherTests {
    static let nfc = "caf\u{E9}"  // café, composed
    static let nfd = "cafe\u{301}"  // café, decomposed

    @Test(arguments: [
        // LIKE: whole-string, * any run, ? one character
        ("kMDItemFSName LIKE '*.png'", "photo.png", true),
        ("kMDItemFSName LIKE '*.png'", "photo.PNG", false),
        ("kMDItemFSName LIKE[c] '*.png'", "photo.PNG", true),
        ("kMDItemFSName LIKE '*.png'", "photo.png.bak", false),
        ("kMDItemFSName LIKE '*'", "anything", true),
        ("kMDItemFSName LIKE 'IMG_*'", "IMG_0001.jpg", true),
        ("kMDItemFSName LIKE 'IMG_*'", "xIMG_0001.jpg", false),
        ("kMDItemFSName LIKE 'a?c'", "abc", true),
        ("kMDItemFSName LIKE 'a?c'", "ac", false),
        ("kMDItemFSName LIKE 'a?c'", "abbc", false),
        ("kMDItemFSName LIKE '*report*'", "Q3 report.pdf", true),
        ("kMDItemFSName LIKE '*report*'", "Q3 Report.pdf", false),
        ("kMDItemFSName LIKE[c] '*REPORT*'", "Q3 report.pdf", true),
        ("kMDItemFSName LIKE 'a*b*c'", "axxbyyc", true),
        ("kMDItemFSName LIKE 'a*b*c'", "axxbyy", false),
        ("kMDItemFSName LIKE 'a*b*c'", "abcbc", true),
        ("kMDItemFSName LIKE '*a*a*'", "banana", true),
        ("kMDItemFSName LIKE '*?.t?t'", "x.txt", true),
        ("kMDItemFSName LIKE '*?.t?t'", ".txt", false),
        ("kMDItemFSName LIKE 'ab'", "ab", true),
        ("kMDItemFSName LIKE 'ab'", "abc", false),
        ("kMDItemFSName LIKE '**x'", "x", true),
        // backslash makes the next character literal
        ("kMDItemFSName LIKE 'a\\*b'", "a*b", true),
        ("kMDItemFSName LIKE 'a\\*b'", "axb", false),
        ("kMDItemFSName LIKE 'a\\?b'", "axb", false),
        ("kMDItemFSName LIKE 'a\\?b'", "a?b", true),
        ("kMDItemFSName LIKE 'a\\\\\\\\b'", "a\\b", true),
        // == has no wildcards
        ("kMDItemFSName == '*.png'", "a.png", false),
        ("kMDItemFSName == '*.png'", "*.png", true),
        ("kMDItemFSName == 'Notes'", "notes", false),
        ("kMDItemFSName ==[c] 'Notes'", "notes", true),
        ("kMDItemFSName != 'a'", "a", false),
        ("kMDItemFSName != 'a'", "b", true),
        ("kMDItemFSName !=[c] 'A'", "a", false),
        // prefix, suffix, substring
        ("kMDItemFSName BEGINSWITH 'IMG'", "IMG_1.png", true),
        ("kMDItemFSName BEGINSWITH 'IMG'", "img_1.png", false),
        ("kMDItemFSName BEGINSWITH[c] 'IMG'", "img_1.png", true),
        ("kMDItemFSName ENDSWITH '.tar.gz'", "a.tar.gz", true),
        ("kMDItemFSName ENDSWITH '.tar.gz'", "tar.gz", false),
        ("kMDItemFSName CONTAINS 'port'", "report", true),
        ("kMDItemFSName CONTAINS 'xyz'", "report", false),
        ("kMDItemFSName CONTAINS '*'", "a*b", true),
        ("kMDItemFSName CONTAINS '*'", "ab", false),
        // canonical equivalence: NFC pattern vs NFD name and back
        ("kMDItemFSName == '\(nfc).txt'", "\(nfd).txt", true),
        ("kMDItemFSName == '\(nfd).txt'", "\(nfc).txt", true),
        ("kMDItemFSName LIKE '\(nfc)*'", "\(nfd) menu", true),
        ("kMDItemFSName BEGINSWITH '\(nfc)'", "\(nfd)s", true),
        ("kMDItemFSName ENDSWITH '\(nfc)'", "le \(nfd)", true),
        ("kMDItemFSName CONTAINS '\(nfc)'", "le \(nfd) noir", true),
        // without [d], e does not match é (a whole character, not a prefix of one)
        ("kMDItemFSName == 'cafe'", "\(nfd)", false),
        ("kMDItemFSName BEGINSWITH 'cafe'", "\(nfd)", false),
        ("kMDItemFSName LIKE 'cafe*'", "\(nfd)", false),
        ("kMDItemFSName CONTAINS 'e'", "\(nfd)", false),
        ("kMDItemFSName LIKE 'caf?'", "\(nfd)", true),
        ("kMDItemFSName LIKE 'caf?'", "\(nfc)", true),
        ("kMDItemFSName LIKE 'caf??'", "\(nfd)", false),
        // [d] removes diacritics, [c] folds case, [cd] both
        ("kMDItemFSName ==[d] 'cafe'", "\(nfd)", true),
        ("kMDItemFSName ==[d] 'cafe'", "\(nfc)", true),
        ("kMDItemFSName ==[d] 'CAFE'", "\(nfc)", false),
        ("kMDItemFSName ==[cd] 'CAFE'", "\(nfc)", true),
        ("kMDItemFSName ==[c] 'CAF\u{C9}'", "\(nfd)", true),
        ("kMDItemFSName ==[c] 'CAFE'", "\(nfc)", false),
        ("kMDItemFSName LIKE[cd] '*resume*'", "R\u{E9}sum\u{E9} 2025.pdf", true),
        ("kMDItemFSName LIKE[cd] '*UBERSICHT*'", "U\u{308}bersicht.mp3", true),
        ("kMDItemFSName CONTAINS[c] '\u{00DC}ber'", "\u{00FC}bersicht", true),
        ("kMDItemFSName ==[c] 'ΣΟΦΊΑ'", "σοφία", true),
        ("kMDItemFSName LIKE '报告*'", "报告.txt", true),
        ("kMDItemFSName LIKE '??.txt'", "报告.txt", true),
        ("kMDItemFSName LIKE[cd] '*.TXT'", "报告.txt", true),
        // logic
        ("kMDItemFSName LIKE '*.png' OR kMDItemFSName LIKE '*.jpg'", "a.jpg", true),
        ("kMDItemFSName LIKE '*.png' AND kMDItemFSName BEGINSWITH 'a'", "b.png", false),
        ("NOT kMDItemFSName LIKE '*.png'", "a.png", false),
        ("!(kMDItemFSName LIKE '*.png' || kMDItemFSName LIKE '*.jpg')", "a.gif", true),
        ("TRUEPREDICATE", "x", true),
        ("FALSEPREDICATE", "x", false),
        ("FALSEPREDICATE OR TRUEPREDICATE AND NOT FALSEPREDICATE", "x", true),
    ])
    func namePredicates(query: String, name: String, expected: Bool) throws {
        #expect(try evaluate(query, TestSubject(name)) == expected, "\(query) on \(name)")
    }

    @Test(arguments: [
        ("kMDItemDisplayName == 'report'", "report.pdf", EntryKind.file, true),
        ("kMDItemDisplayName == 'archive.tar'", "archive.tar.gz", .file, true),
        ("kMDItemDisplayName == '.bashrc'", ".bashrc", .file, true),
        ("kMDItemDisplayName == 'photos.d'", "photos.d", .folder, true),
        ("kMDItemDisplayName == 'photos'", "photos.d", .folder, false),
        ("kMDItemDisplayName == 'README'", "README", .file, true),
        ("kMDItemDisplayName ENDSWITH 'pdf'", "report.pdf", .file, false),
        ("kMDItemDisplayName ==[cd] 'resume'", "R\u{E9}sum\u{E9}.pages", .file, true),
    ])
    func displayNameDropsTheLastExtension(query: String, name: String, kind: EntryKind, expected: Bool) throws {
        #expect(try evaluate(query, TestSubject(name, kind: kind)) == expected)
    }

    @Test func pathPredicatesSeeTheFullPath() throws {
        var subject = TestSubject("main.swift")
        subject.folder = Array("/home/me/src/.build/debug".utf8)
        #expect(try evaluate("kMDItemPath CONTAINS '/.build/'", subject))
        #expect(try evaluate("kMDItemPath LIKE '/home/*/main.swift'", subject))
        #expect(try !evaluate("kMDItemPath BEGINSWITH '/tmp'", subject))
        #expect(try evaluate("kMDItemPath == '/home/me/src/.build/debug/main.swift'", subject))
        #expect(
            try !evaluate("kMDItemFSName ENDSWITH '.swift' AND NOT kMDItemPath CONTAINS '/.build/'", subject))
    }

    @Test func namesThatAreNotUTF8MatchByteWise() throws {
        let latin1 = TestSubject(bytes: Array("caf".utf8) + [0xE9] + Array(".txt".utf8))
        #expect(try evaluate("kMDItemFSName LIKE '*.txt'", latin1))
        #expect(try evaluate("kMDItemFSName LIKE[cd] 'CAF*'", latin1))
        #expect(try evaluate("kMDItemFSName == 'caf\\yE9.txt'", latin1))
        #expect(try evaluate("kMDItemFSName LIKE 'caf?.txt'", latin1))
        #expect(try !evaluate("kMDItemFSName == 'caf\u{E9}.txt'", latin1))
        let lone = TestSubject(bytes: [0xFF, 0xFE])
        #expect(try evaluate("kMDItemFSName LIKE '??'", lone))
        #expect(try evaluate("kMDItemFSName == '\\yFF\\yFE'", lone))
        #expect(try evaluate("TRUEPREDICATE", lone))
    }

    @Test func shapesAreRecognised() throws {
        func shape(_ pattern: String) throws -> NameMatcher.Shape {
            NameMatcher(try LikePattern(Array(pattern.utf8)), options: []).shape
        }
        #expect(try shape("abc") == .exact(Array("abc".utf8)))
        #expect(try shape("abc*") == .prefix(Array("abc".utf8)))
        #expect(try shape("*.png") == .suffix(Array(".png".utf8)))
        #expect(try shape("*report*") == .contains(Array("report".utf8)))
        #expect(try shape("***") == .anything)
        #expect(try shape("a*b") == .general)
        #expect(try shape("a?b") == .general)
        // Folding happens once, at compile time.
        let folded = NameMatcher(try LikePattern(Array("*.PNG".utf8)), options: .caseInsensitive)
        #expect(folded.shape == .suffix(Array(".png".utf8)))
    }

    @Test func evaluationIsRepeatableWithOneEvaluator() throws {
        // The evaluator reuses its buffers between entries; results must not leak across calls.
        let evaluator = CompiledPredicate(try MetadataPredicate("kMDItemFSName LIKE[cd] 'cafe*'")).makeEvaluator()
        let names = ["\(Self.nfd) 1", "x", "\(Self.nfc)", "CAFÉ", "caffè", "\(Self.nfd)"]
        let expected = [true, false, true, true, false, true]
        for _ in 0..<3 {
            #expect(names.map { evaluator.matches(TestSubject($0)) } == expected)
        }
    }
}
