import Foundation
import Glibc
import Synchronization
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// The crawler against the filesystem: real trees in fresh temp folders.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct CrawlerTests {
    /// Every path in an index, relative to its single root, as raw bytes.
    func indexedPaths(_ index: FileIndex) -> Set<[UInt8]> {
        var result: Set<[UInt8]> = []
        index.forEachEntry { id in
            guard !index.isRoot(id) else { return }
            let root = index.path(of: index.root(of: id)).bytes
            result.insert(Array(index.path(of: id).bytes.dropFirst(root.count + 1)))
        }
        return result
    }

    /// What `find` lists under `root` (relative paths, raw bytes, NUL-separated).
    func findPaths(_ root: FilePath, hidden: Bool) throws -> Set<[UInt8]> {
        var arguments = [root.string, "-mindepth", "1"]
        if !hidden { arguments += ["(", "-name", ".*", "-prune", ")", "-o"] }
        arguments += ["-printf", "%P\\0"]
        let output = try Shell.run("/usr/bin/find", arguments)
        #expect(output.status == 0, "\(output.stderrText)")
        return Set(output.stdout.split(separator: 0, omittingEmptySubsequences: true).map { Array($0) })
    }

    /// A realistic container of 3,000 files from the repository's
    /// generator (hidden files, odd names, symlinks), made once and only
    /// read.
    static let generatedContainer = TemporaryDirectory.Shared { temp in
        let made = try Shell.run(
            "/usr/bin/env",
            [
                "python3", Shell.makeTreeScript!, temp.path.appending("container").string,
                "--files", "3000", "--container", "--seed", "7",
            ])
        try #require(made.status == 0, "\(made.stderrText)")
    }

    @Test(.enabled(if: Shell.makeTreeScript != nil), arguments: [false, true])
    func gatherFindsWhatFindFinds(hidden: Bool) throws {
        let tree = try Self.generatedContainer.path().appending("container")
        let index = FileIndex()
        let summary = try index.gather(
            [CrawlRoot(path: tree)], options: CrawlOptions(includeHidden: hidden, threadCount: 3))
        #expect(summary.warnings.isEmpty)
        let expected = try findPaths(tree, hidden: hidden)
        let actual = indexedPaths(index)
        #expect(actual.count == expected.count)
        #expect(
            actual == expected,
            "missing \(expected.subtracting(actual).count), extra \(actual.subtracting(expected).count)")
        index._checkInvariants()
    }

    /// The documents and data scopes of a generated container cover
    /// exactly what `find` lists in `Documents/` and outside it.
    @Test(.enabled(if: Shell.makeTreeScript != nil))
    func eachContainerScopeCoversWhatFindFinds() throws {
        let tree = try Self.generatedContainer.path().appending("container")
        let container = UbiquityContainer(path: tree)
        let all = try findPaths(tree, hidden: false)
        let documents = Array("Documents".utf8)
        let inDocuments = all.filter { $0.starts(with: documents + [0x2F]) }
        try #require(!inDocuments.isEmpty)

        let documentsIndex = FileIndex()
        try documentsIndex.gather(container.crawlRoots(for: [.ubiquitousDocuments]))
        #expect(indexedPaths(documentsIndex) == Set(inDocuments.map { Array($0.dropFirst(documents.count + 1)) }))

        let dataIndex = FileIndex()
        try dataIndex.gather(container.crawlRoots(for: [.ubiquitousData]))
        #expect(indexedPaths(dataIndex) == all.subtracting(inDocuments).subtracting([documents]))
    }

    @Test func recordsKindsSizesAndTimesWithoutFollowingSymlinks() throws {
        let temp = try TemporaryDirectory()
        try temp.file("a/file.txt", contents: "hello")
        try temp.folder("a/empty")
        try temp.symlink("a/link", to: "/")  // would be a huge tree if followed
        try temp.symlink("a/loop", to: "loop")
        #expect(mkfifo(temp.path.appending("a/fifo").string, 0o644) == 0)
        let index = FileIndex()
        try index.gather([CrawlRoot(path: temp.path)])
        func entry(_ path: String) throws -> EntryID {
            var current = index.roots[0]
            for part in path.split(separator: "/") {
                current = try #require(index.child(named: Array(part.utf8), in: current), "no \(path)")
            }
            return current
        }
        #expect(index.kind(of: try entry("a/file.txt")) == .file)
        #expect(index.metadata(of: try entry("a/file.txt")).size == 5)
        #expect(index.kind(of: try entry("a/empty")) == .folder)
        #expect(index.kind(of: try entry("a/link")) == .symlink)
        #expect(index.kind(of: try entry("a/loop")) == .symlink)
        #expect(index.kind(of: try entry("a/fifo")) == .other)
        #expect(index.children(of: try entry("a/link")).isEmpty)
        #expect(index.count == 7)  // root, a, file, empty, link, loop, fifo
        var stat = Glibc.stat()
        #expect(lstat(temp.path.appending("a/file.txt").string, &stat) == 0)
        let metadata = index.metadata(of: try entry("a/file.txt"))
        #expect(metadata.inode == UInt64(stat.st_ino))
        #expect(
            metadata.modificationTime?.nanosecondsSinceEpoch
                == Int64(stat.st_mtim.tv_sec) * 1_000_000_000 + Int64(stat.st_mtim.tv_nsec))
    }

    @Test func dataScopeLeavesOutDocuments() throws {
        let temp = try TemporaryDirectory()
        try temp.file("Documents/in-docs.txt")
        try temp.file("Library/in-data.txt")
        try temp.file("top.txt")
        let index = FileIndex()
        let container = UbiquityContainer(path: temp.path)
        try index.gather(container.crawlRoots(for: [.ubiquitousData]))
        let names = Set(indexedPaths(index).map { String(decoding: $0, as: UTF8.self) })
        #expect(names == ["Library", "Library/in-data.txt", "top.txt"])
    }

    @Test func pathsLongerThanPathMaxAreCrawled() throws {
        let temp = try TemporaryDirectory()
        // 40 levels of 200-byte names under deep/: about 8 KB, twice PATH_MAX.
        let leafPath = try temp.deepFile(under: "deep", leaf: "leaf.txt")
        let index = FileIndex()
        let summary = try index.gather([CrawlRoot(path: temp.path)])
        #expect(summary.warnings.isEmpty)
        #expect(index.count == 43)
        let leafID = try #require(index.entries(matching: try MetadataPredicate("kMDItemFSName == 'leaf.txt'")).first)
        #expect(index.path(of: leafID).bytes == leafPath)
        #expect(index.path(of: leafID).bytes.count > Int(PATH_MAX))
        // The one-shot search reaches it too and prints the full path.
        let found = Locked<[[UInt8]]>([])
        try OneShotSearch(
            roots: [CrawlRoot(path: temp.path)], predicate: try MetadataPredicate("kMDItemFSName == 'leaf.txt'")
        )
        .run(onBatch: { batch in found.withLock { $0 += (0..<batch.count).map { Array(batch[$0].pathBytes) } } })
        #expect(found.withLock { $0 } == [index.path(of: leafID).bytes])
    }

    @Test func namesThatAreNotUTF8AreCrawledAndMatched() throws {
        let temp = try TemporaryDirectory()
        try temp.file(Array("caf".utf8) + [0xE9] + Array(".txt".utf8))
        try temp.file([0xFF, 0x0A, 0x09] + Array("x".utf8))
        let index = FileIndex()
        try index.gather([CrawlRoot(path: temp.path)])
        #expect(indexedPaths(index) == [Array("caf".utf8) + [0xE9] + Array(".txt".utf8), [0xFF, 0x0A, 0x09, 0x78]])
        #expect(index.count(matching: try MetadataPredicate("kMDItemFSName LIKE '*.txt'")) == 1)
        #expect(index.count(matching: try MetadataPredicate("kMDItemFSName BEGINSWITH '\\yFF\\n'")) == 1)
    }

    @Test func missingOrNonFolderRootsAreErrorsNamingThePath() throws {
        let temp = try TemporaryDirectory()
        let file = try temp.file("plain.txt")
        let missing = temp.path.appending("nope")
        #expect {
            try FileIndex().gather([CrawlRoot(path: missing)])
        } throws: { error in
            let error = error as? MetadataError
            return error?.code == .scopeNotFound && error?.path == missing
        }
        #expect {
            try FileIndex().gather([CrawlRoot(path: file)])
        } throws: { error in
            (error as? MetadataError)?.code == .scopeNotFolder
        }
    }

    @Test func overlappingRootsAreCrawledOnce() throws {
        let temp = try TemporaryDirectory()
        try temp.file("a/b/c.txt")
        let roots = CrawlRoot.removingOverlaps([
            CrawlRoot(path: temp.path.appending("a/b")), CrawlRoot(path: temp.path),
            CrawlRoot(path: temp.path.appending("a/./b")),
        ])
        #expect(roots == [CrawlRoot(path: temp.path)])
        // Documents and data of one container do not overlap.
        let container = UbiquityContainer(path: temp.path)
        let split = CrawlRoot.removingOverlaps(
            container.crawlRoots(for: [.ubiquitousDocuments]) + container.crawlRoots(for: [.ubiquitousData]))
        #expect(split.count == 2)
    }

    @Test func oneShotSearchAgreesWithTheIndex() throws {
        let temp = try TemporaryDirectory()
        for i in 0..<200 {
            try temp.file("d\(i % 7)/sub\(i % 3)/file\(i).\(["png", "txt", "PNG", "md"][i % 4])")
        }
        try temp.file("Documents/R\u{E9}sum\u{E9}.pages")
        let queries = [
            "kMDItemFSName LIKE[c] '*.png'", "kMDItemPath CONTAINS '/sub1/'", "kMDItemDisplayName ENDSWITH '7'",
            "kMDItemFSName LIKE[cd] 'resume*'", "NOT kMDItemFSName CONTAINS 'file'",
        ]
        let index = FileIndex()
        try index.gather([CrawlRoot(path: temp.path)])
        for query in queries {
            let predicate = try MetadataPredicate(query)
            let expected = Set(index.entries(matching: predicate).map { index.path(of: $0).bytes })
            let found = Locked<Set<[UInt8]>>([])
            let summary = try OneShotSearch(roots: [CrawlRoot(path: temp.path)], predicate: predicate)
                .run(onBatch: { batch in
                    found.withLock { for i in 0..<batch.count { $0.insert(Array(batch[i].pathBytes)) } }
                })
            #expect(found.withLock { $0 } == expected, "\(query)")
            #expect(summary.matchCount == expected.count)
            #expect(!expected.isEmpty, "\(query) should match something")
        }
    }
}
