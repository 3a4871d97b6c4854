import Foundation
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The key paths Apple code writes on file names (`%K.pathExtension`,
/// `lastPathComponent`, `stringByDeletingPathExtension`) read that part of
/// the name; every operator works on them; other key paths are refused
/// with the message they always had; and a predicate with one survives its
/// own text (the form sent to the daemon).
struct KeyPathPredicateTests {
    static let cases: [(String, String, Bool)] = [
        ("kMDItemFSName.pathExtension IN {'txt', 'md'}", "notes.md", true),
        ("kMDItemFSName.pathExtension IN {'txt', 'md'}", "notes.pdf", false),
        ("kMDItemFSName.pathExtension LIKE '*'", "README", true),
        ("kMDItemFSName.pathExtension == ''", "README", true),
        ("kMDItemFSName.pathExtension == ''", ".bashrc", true),
        ("kMDItemFSName.pathExtension ==[c] 'GZ'", "archive.tar.gz", true),
        ("kMDItemPath.pathExtension == 'jpg'", "photo.jpg", true),
        ("kMDItemURL.lastPathComponent BEGINSWITH 'pho'", "photo.jpg", true),
        ("kMDItemPath.lastPathComponent.pathExtension == 'jpg'", "photo.jpg", true),
        ("kMDItemFSName.stringByDeletingPathExtension == 'archive.tar'", "archive.tar.gz", true),
        ("kMDItemFSName.deletingPathExtension ENDSWITH 'tar'", "archive.tar.gz", true),
        ("NOT kMDItemFSName.pathExtension MATCHES 'pn?g'", "photo.jpg", true),
    ]

    @Test(arguments: cases)
    func keyPathsReadPartsOfTheName(query: String, name: String, expected: Bool) throws {
        let predicate = try MetadataPredicate(query)
        #expect(CompiledPredicate(predicate).makeEvaluator().matches(TestSubject(name)) == expected, "\(query)")
        // Its own text parses to the same predicate.
        let again = try MetadataPredicate(predicate.predicateFormat)
        #expect(CompiledPredicate(again).makeEvaluator().matches(TestSubject(name)) == expected)
    }

    @Test func formatSpecifierKeysTakeKeyPathsToo() throws {
        let predicate = try MetadataPredicate(
            format: "%K.pathExtension IN %@",
            arguments: [.string("kMDItemFSName"), .list([.string("txt"), .string("md")])])
        #expect(CompiledPredicate(predicate).makeEvaluator().matches(TestSubject("a.txt")))
    }

    @Test(arguments: [
        "kMDItemFSSize.pathExtension == 'x'", "kMDItemPath.stringByDeletingPathExtension == 'x'",
        "kMDItemFSName.uppercaseString == 'X'",
    ])
    func otherKeyPathsAreRefused(query: String) {
        let error = #expect(throws: MetadataError.self) { try MetadataPredicate(query) }
        #expect(error?.message.contains("key paths are not supported") == true, "\(String(describing: error))")
    }
}
