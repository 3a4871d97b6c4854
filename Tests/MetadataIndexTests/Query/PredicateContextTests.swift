import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Predicates on the ubiquitous keys evaluate to what items report, on the
/// one-shot search and the index scan alike, given the query's container.
struct PredicateContextTests {
    /// A container with a conflict copy, and a folder outside it.
    struct Fixture {
        let temp: TemporaryDirectory
        let container: UbiquityContainer
        let roots: [CrawlRoot]

        init() throws {
            temp = try TemporaryDirectory()
            try temp.file("box/Documents/a.txt", contents: "1")
            try temp.file("box/Documents/a (conflicted copy 2025-01-31).txt", contents: "12")
            try temp.file("box/data.bin", contents: "123")
            try temp.file("elsewhere/b.txt", contents: "1234")
            container = UbiquityContainer(path: temp.path.appending("box"))
            roots = [CrawlRoot(path: temp.path.appending("box")), CrawlRoot(path: temp.path.appending("elsewhere"))]
        }

        /// The names whose item (read as `mdq ls` reads it) reports `value` for `key`.
        func namesReporting(_ key: String, _ predicate: (Any?) -> Bool) throws -> Set<String> {
            var names = Set<String>()
            for path in [
                "box/Documents", "box/Documents/a.txt", "box/Documents/a (conflicted copy 2025-01-31).txt",
                "box/data.bin", "elsewhere/b.txt",
            ] {
                let item = try MetadataItem(path: temp.path.appending(path), container: container)
                if predicate(item.value(forAttribute: key)) { names.insert(item.name) }
            }
            return names
        }

        func oneShot(_ query: String, container: UbiquityContainer?) throws -> Set<String> {
            let names = Locked<Set<String>>([])
            let search = OneShotSearch(roots: roots, predicate: try MetadataPredicate(query), container: container)
            try search.run(onBatch: { batch in
                names.withLock { names in
                    for i in 0..<batch.count { names.insert(String(decoding: batch[i].nameBytes, as: UTF8.self)) }
                }
            })
            return names.withLock { $0 }
        }

        func scanned(_ query: String, container: UbiquityContainer?) throws -> Set<String> {
            let index = FileIndex()
            try index.gather(roots)
            var scan = IndexScan(index: index, predicate: CompiledPredicate(try MetadataPredicate(query)))
            scan.ubiquity = container.map { UbiquityContext(container: $0) }
            scan.threads = 2
            return Set(scan.matchingEntries().map { String(decoding: index.name(of: EntryID($0)), as: UTF8.self) })
        }
    }

    static let cases: [(query: String, key: String, holds: @Sendable (Any?) -> Bool)] = [
        ("NSMetadataItemIsUbiquitousKey == YES", MetadataItem.isUbiquitousKey, { $0 as? Bool == true }),
        ("NSMetadataItemIsUbiquitousKey == NO", MetadataItem.isUbiquitousKey, { $0 as? Bool == false }),
        (
            "NSMetadataUbiquitousItemDownloadingStatusKey == 'NSMetadataUbiquitousItemDownloadingStatusCurrent'",
            MetadataItem.downloadingStatusKey, { $0 as? String == MetadataItem.downloadingStatusCurrent }
        ),
        ("NSMetadataUbiquitousItemIsDownloadingKey == NO", MetadataItem.isDownloadingKey, { $0 as? Bool == false }),
        (
            "NSMetadataUbiquitousItemHasUnresolvedConflictsKey == YES", MetadataItem.hasUnresolvedConflictsKey,
            { $0 as? Bool == true }
        ),
        (
            "NSMetadataUbiquitousItemPercentDownloadedKey < 100", MetadataItem.percentDownloadedKey,
            { ($0 as? Double).map { $0 < 100 } == true }
        ),
        (
            "NSMetadataUbiquitousItemPercentDownloadedKey >= 100", MetadataItem.percentDownloadedKey,
            { ($0 as? Double).map { $0 >= 100 } == true }
        ),
        ("NSMetadataUbiquitousItemIsUploadedKey == YES", MetadataItem.isUploadedKey, { $0 as? Bool == true }),
        (
            "NSMetadataUbiquitousItemContainerDisplayNameKey == 'box'", MetadataItem.containerDisplayNameKey,
            { $0 as? String == "box" }
        ),
        (
            "NSMetadataUbiquitousItemIsExternalDocumentKey == NO", MetadataItem.isExternalDocumentKey,
            { $0 as? Bool == false }
        ),
        ("NSMetadataUbiquitousItemDownloadingStatusKey == nil", MetadataItem.downloadingStatusKey, { $0 == nil }),
        (
            "kMDQItemConflictOriginalPath ENDSWITH '/a.txt'", MetadataItem.conflictOriginalPathKey,
            {
                ($0 as? String)?.hasSuffix("/a.txt") == true
            }
        ),
    ]

    @Test(arguments: 0..<cases.count)
    func ubiquitousKeysMatchWhatItemsReport(index: Int) throws {
        let fixture = try Fixture()
        let (query, key, holds) = Self.cases[index]
        let expected = try fixture.namesReporting(key, holds)
        #expect(try fixture.oneShot(query, container: fixture.container) == expected, "one-shot: \(query)")
        #expect(try fixture.scanned(query, container: fixture.container) == expected, "scan: \(query)")
    }

    /// The truth the fixture is built on, so the table above cannot pass vacuously.
    @Test func theFixtureHasUbiquitousAndLocalItemsAndAConflict() throws {
        let fixture = try Fixture()
        #expect(
            try fixture.oneShot("NSMetadataItemIsUbiquitousKey == YES", container: fixture.container)
                == ["Documents", "a.txt", "a (conflicted copy 2025-01-31).txt", "data.bin"])
        #expect(
            try fixture.oneShot("NSMetadataUbiquitousItemHasUnresolvedConflictsKey == YES", container: nil)
                == ["a.txt"])
    }

    /// Without a container nothing is ubiquitous, as items outside one report.
    @Test func withoutAContainerNothingIsUbiquitous() throws {
        let fixture = try Fixture()
        for query in ["NSMetadataItemIsUbiquitousKey == YES", "NSMetadataUbiquitousItemPercentDownloadedKey == 100"] {
            #expect(try fixture.oneShot(query, container: nil).isEmpty)
            #expect(try fixture.scanned(query, container: nil).isEmpty)
        }
        #expect(try fixture.scanned("NSMetadataItemIsUbiquitousKey == NO", container: nil).count == 5)
    }

    /// Predicates that do not read the ubiquitous keys ask for no context.
    @Test func onlyPredicatesOnTheKeysNeedTheContext() throws {
        #expect(CompiledPredicate(try MetadataPredicate("kMDItemFSName LIKE '*.txt'")).requirements.isEmpty)
        #expect(
            CompiledPredicate(try MetadataPredicate("kMDItemFSSize > 1 OR NSMetadataItemIsUbiquitousKey == YES"))
                .requirements == [.metadata, .ubiquity])
        #expect(
            CompiledPredicate(try MetadataPredicate("NSMetadataUbiquitousItemHasUnresolvedConflictsKey == NO"))
                .requirements == [.conflicts])
    }

    @Test(arguments: [
        // The key paths Apple code uses on names work (KeyPathPredicateTests); others are refused.
        ("kMDItemFSSize.pathExtension == 'list'", "key paths are not supported", "kMDItemFSName LIKE '*.list'", 13),
        ("kMDItemFSName.uppercaseString == 'X'", "key paths are not supported", "compare an attribute", 13),
        ("kMDItemPath.stringByDeletingPathExtension == 'x'", "key paths are not supported", "compare an attribute", 11),
    ])
    func keyPathsAreClearErrors(query: String, message: String, advice: String, offset: Int) {
        #expect {
            try MetadataPredicate(format: query, MetadataAttribute.fsName.rawValue)
        } throws: { error in
            guard let error = error as? MetadataError else { return false }
            return error.message.contains(message) && error.message.contains(advice) && error.offset == offset
        }
    }
}
