import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Content types, conflict copies and item attributes.
struct AttributeTests {
    @Test func theTypeTableIsLargeAndConsistent() {
        #expect(ContentType.knownExtensionCount >= 150)
        for type in ContentType.types {
            #expect(type.tree.first == type.identifier)
            let tree = Set(type.tree)
            #expect(tree.contains("public.item") || tree.contains("public.content"), "\(type.identifier)")
        }
    }

    @Test(
        arguments: [
            ("photo.png", EntryKind.file, "public.png", ["public.image", "public.data", "public.item"]),
            ("IMG_0001.JPG", .file, "public.jpeg", ["public.image"]),
            ("Report.Pdf", .file, "com.adobe.pdf", ["public.data"]),
            ("main.swift", .file, "public.swift-source", ["public.source-code", "public.plain-text", "public.text"]),
            ("notes.md", .file, "net.daringfireball.markdown", ["public.text"]),
            ("song.mp3", .file, "public.mp3", ["public.audio", "public.audiovisual-content"]),
            ("clip.mov", .file, "com.apple.quicktime-movie", ["public.movie"]),
            ("backup.zip", .file, "public.zip-archive", ["public.archive"]),
            ("Budget.numbers", .file, "com.apple.iwork.numbers.sffnumbers", ["public.data"]),
            ("Talk.key", .file, "com.apple.iwork.keynote.sffkey", ["public.data"]),
            ("Letter.pages", .file, "com.apple.iwork.pages.sffpages", ["public.data"]),
            ("Makefile", .file, "public.data", ["public.item"]),
            ("archive.unknownext", .file, "public.data", ["public.item"]),
            (".bashrc", .file, "public.data", ["public.item"]),
            ("photos", .folder, "public.folder", ["public.directory", "public.item"]),
            ("photos.png", .folder, "public.folder", ["public.item"]),
            ("Safari.app", .folder, "com.apple.application-bundle", ["com.apple.package", "public.directory"]),
            ("link.png", .symlink, "public.symlink", ["public.item"]),
            ("fifo", .other, "public.item", []),
        ] as [(String, EntryKind, String, [String])])
    func contentTypes(name: String, kind: EntryKind, type: String, conformsTo: [String]) {
        #expect(ContentType.identifier(forName: Array(name.utf8), kind: kind) == type)
        let tree = ContentType.tree(forName: Array(name.utf8), kind: kind)
        #expect(tree.first == type)
        for parent in conformsTo { #expect(tree.contains(parent), "\(name): \(tree)") }
    }

    @Test(arguments: [
        ("kMDItemContentType == 'public.png'", "a.PNG", true),
        ("kMDItemContentType == 'public.image'", "a.png", false),
        ("kMDItemContentTypeTree == 'public.image'", "a.png", true),
        ("kMDItemContentTypeTree == 'public.image'", "a.txt", false),
        ("kMDItemContentTypeTree != 'public.image'", "a.txt", true),
        ("kMDItemContentTypeTree != 'public.image'", "a.png", false),
        ("NSMetadataItemContentTypeTreeKey IN {'public.movie', 'public.audio'}", "a.mp3", true),
        ("kMDItemContentTypeTree BEGINSWITH 'com.adobe'", "x.pdf", true),
        ("kMDItemContentType LIKE 'public.*' AND kMDItemFSName BEGINSWITH 'a'", "a.heic", true),
    ])
    func contentTypePredicates(query: String, name: String, expected: Bool) throws {
        #expect(try evaluate(query, TestSubject(name)) == expected)
        // The whole-index scan agrees.
        let index = FileIndex()
        let root = index.addRoot(path: "/t", metadata: EntryMetadata(kind: .folder))
        index.insert(name: Array(name.utf8), in: root, metadata: EntryMetadata(kind: .file, size: 1))
        #expect(index.count(matching: try MetadataPredicate(query)) == (expected ? 1 : 0))
    }

    @Test(arguments: [
        ("report (conflicted copy 2025-01-31).txt", "report.txt"),
        ("report (Ann's conflicted copy 2025-01-31 1).txt", "report.txt"),
        ("report (conflicted copy 2025-01-31 101112).txt", "report.txt"),
        ("notes (conflicted copy 2025-01-31)", "notes"),
        ("a.b (conflicted copy).tar", "a.b.tar"),
        ("report.sync-conflict-20250131-101112-ABCDEFG.txt", "report.txt"),
        ("notes.sync-conflict-20250131-101112-ABCDEFG", "notes"),
        ("archive.tar.sync-conflict-20250131-101112-XYZ1234.gz", "archive.tar.gz"),
    ])
    func conflictCopiesNameTheirOriginal(copy: String, original: String) {
        #expect(ConflictCopy.originalName(of: Array(copy.utf8)) == Array(original.utf8))
    }

    @Test(arguments: [
        "report.txt", "report (copy).txt", "conflicted copy.txt", "(conflicted copy).txt",
        "report.sync-conflict-2025-101112-ABC.txt", "report.sync-conflict-20250131-101112-.txt",
        "x.sync-conflict-20250131-101112-AB CD.txt", "report(conflicted copy).txt",
    ])
    func otherNamesAreNotConflictCopies(name: String) {
        #expect(ConflictCopy.originalName(of: Array(name.utf8)) == nil)
        var hostile = Array(name.utf8)
        hostile.insert(0xFF, at: hostile.count / 2)
        _ = ConflictCopy.originalName(of: hostile)
    }

    @Test func itemsFromPathsHaveEveryAttribute() throws {
        let temp = try TemporaryDirectory()
        try temp.file("Documents/photo.png", contents: "12345")
        try temp.file("Documents/empty")
        try temp.file("Documents/.hidden.txt")
        try temp.file("Documents/report.txt")
        try temp.file("Documents/report (conflicted copy 2025-01-31).txt")
        #expect(symlink("photo.png", temp.path.appending("Documents/link").string) == 0)
        let container = UbiquityContainer(path: temp.path)

        let photo = try MetadataItem(path: temp.path.appending("Documents/photo.png"), container: container)
        #expect(photo.value(forAttribute: "kMDItemFSSize") as? Int == 5)
        #expect(photo.value(forAttribute: "kMDItemDisplayName") as? String == "photo")
        #expect(photo.value(forAttribute: "kMDItemContentType") as? String == "public.png")
        #expect((photo.value(forAttribute: "kMDItemContentTypeTree") as? [String])?.contains("public.image") == true)
        #expect(photo.value(forAttribute: MetadataItem.isUbiquitousKey) as? Bool == true)
        #expect(
            photo.value(forAttribute: MetadataItem.downloadingStatusKey) as? String
                == MetadataItem.downloadingStatusCurrent)
        #expect(photo.value(forAttribute: MetadataItem.percentDownloadedKey) as? Double == 100)
        #expect(photo.value(forAttribute: MetadataItem.isUploadedKey) as? Bool == true)
        #expect(
            photo.value(forAttribute: MetadataItem.containerDisplayNameKey) as? String
                == temp.path.lastComponent?.string)
        #expect(photo.value(forAttribute: MetadataItem.hasUnresolvedConflictsKey) as? Bool == false)
        #expect(photo.value(forAttribute: "kMDItemFSContentChangeDate") is Date)
        #expect(photo.attributes.contains("kMDItemFSSize"))

        let folder = try MetadataItem(path: temp.path.appending("Documents"), container: container)
        #expect(folder.value(forAttribute: "kMDItemFSSize") == nil, "folders have no size")
        #expect(!folder.attributes.contains("kMDItemFSSize"))
        #expect(folder.value(forAttribute: "kMDItemContentType") as? String == "public.folder")

        let empty = try MetadataItem(path: temp.path.appending("Documents/empty"))
        #expect(empty.value(forAttribute: "kMDItemFSSize") as? Int == 0)
        #expect(empty.value(forAttribute: "kMDItemDisplayName") as? String == "empty")
        #expect(empty.value(forAttribute: MetadataItem.isUbiquitousKey) as? Bool == false)
        #expect(empty.value(forAttribute: MetadataItem.downloadingStatusKey) == nil)

        let hidden = try MetadataItem(path: temp.path.appending("Documents/.hidden.txt"))
        #expect(hidden.value(forAttribute: "kMDItemDisplayName") as? String == ".hidden")

        let link = try MetadataItem(path: temp.path.appending("Documents/link"))
        #expect(link.kind == .symlink)
        #expect(link.value(forAttribute: "kMDItemContentType") as? String == "public.symlink")

        let report = try MetadataItem(path: temp.path.appending("Documents/report.txt"))
        #expect(report.hasUnresolvedConflicts)
        let copy = try MetadataItem(path: temp.path.appending("Documents/report (conflicted copy 2025-01-31).txt"))
        #expect(!copy.hasUnresolvedConflicts)
        #expect(
            copy.value(forAttribute: MetadataItem.conflictOriginalPathKey) as? String
                == temp.path.appending("Documents/report.txt").string)

        #expect(throws: MetadataError.self) { try MetadataItem(path: temp.path.appending("missing")) }
    }

    /// Sort keys order names as Foundation's case-insensitive numeric
    /// compare (Finder) does.
    @Test func finderOrderMatchesFoundation() {
        let names = [
            "file2", "file10", "File1", "file01", "a", "B", "x.txt", "x2.txt", "x10.txt", "report 2024", "report 999",
            "Report", "z", "_tmp", "9", "10", "1.5", "1.10", "img_0001.JPG", "IMG_0002.jpg", "notes-final",
            "notes final",
        ]
        for a in names {
            for b in names {
                let foundation = a.compare(b, options: [.caseInsensitive, .numeric])
                let ours: ComparisonResult =
                    SortKey.text(SortKey.finderBytes(a)) < SortKey.text(SortKey.finderBytes(b))
                    ? .orderedAscending
                    : (SortKey.text(SortKey.finderBytes(b)) < SortKey.text(SortKey.finderBytes(a))
                        ? .orderedDescending : .orderedSame)
                #expect(ours == foundation, "\(a) vs \(b)")
            }
        }
    }
}
