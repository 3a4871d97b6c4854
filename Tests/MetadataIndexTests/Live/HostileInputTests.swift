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

/// Names, paths and files that trip up naive indexers: crawled, watched and
/// matched like any other, never dropped, never followed out of the scope.
extension LiveSuites {
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct HostileInputTests {
        func pathSet(_ query: MetadataQuery) -> Set<[UInt8]> { Set(query.results.map(\.pathBytes)) }

        func startQuery(_ text: String, in folder: FilePath) throws -> (MetadataQuery, QueryRecorder) {
            try startLiveQuery(text, scope: folder)
        }

        /// Every hostile name, and a path deeper than PATH_MAX, found by the
        /// first crawl and again when created live; `*.txt` matches them
        /// all; the two spellings of café are two items, both matched by a
        /// diacritic-insensitive comparison.
        @Test func hostileNamesAndDeepPathsAreCrawledWatchedAndMatched() throws {
            let temp = try TemporaryDirectory()
            for name in HostileNames.all { try temp.file(Array("before/".utf8) + name) }
            let deepBefore = try temp.deepFile(under: "before", leaf: "deep leaf.txt")
            let (query, recorder) = try startQuery("kMDItemFSName LIKE '*.txt'", in: temp.path)
            let (cafe, cafeRecorder) = try startQuery("kMDItemFSName ==[cd] 'cafe.txt'", in: temp.path)
            #expect(query.resultCount == HostileNames.all.count + 1)
            #expect(query.results.contains { $0.pathBytes == deepBefore })
            #expect(cafe.resultCount == 2)

            try temp.folder("after")
            for name in HostileNames.all { try temp.file(Array("after/".utf8) + name) }
            let deepAfter = try temp.deepFile(under: "after", leaf: "deep leaf.txt")
            let expected = try freshCrawlBytes(
                roots: [CrawlRoot(path: temp.path)], try MetadataPredicate("kMDItemFSName LIKE '*.txt'"))
            #expect(expected.count == 2 * (HostileNames.all.count + 1))
            #expect(expected.contains(deepAfter))
            #expect(
                recorder.wait { pathSet(query) == expected }, "missing \(expected.subtracting(pathSet(query)).count)")
            #expect(cafeRecorder.wait { cafe.resultCount == 4 })
            // Every hostile name round-trips byte for byte.
            let names = Set(query.results.map(\.nameBytes))
            for name in HostileNames.all { #expect(names.contains(name), "\(name)") }
            query.stop()
            cafe.stop()
        }

        /// FIFOs, sockets, device files, symlink loops and symlinks out of
        /// the scope are items (never opened, never followed); nothing
        /// outside the scope appears, live or crawled.
        @Test func oddFilesAreItemsAndSymlinksAreNeverFollowed() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            try temp.file("outside/secret.txt")
            func makeOddFiles(in folder: String) throws {
                let base = try temp.folder("scope/\(folder)")
                #expect(mkfifo(base.appending("fifo").string, 0o644) == 0)
                let socketFD = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                var address = sockaddr_un()
                address.sun_family = sa_family_t(AF_UNIX)
                let socketPath = base.appending("socket").string
                withUnsafeMutableBytes(of: &address.sun_path) { raw in
                    for (i, byte) in socketPath.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
                }
                let bound = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                    }
                }
                #expect(bound == 0)
                close(socketFD)
                if getuid() == 0 {
                    #expect(mknod(base.appending("null-device").string, S_IFCHR | 0o666, (1 << 8) | 3) == 0)
                }
                try temp.symlink("scope/\(folder)/loop-a", to: "loop-b")
                try temp.symlink("scope/\(folder)/loop-b", to: "loop-a")
                try temp.symlink("scope/\(folder)/self", to: ".")
                try temp.symlink("scope/\(folder)/up", to: "..")
                try temp.symlink("scope/\(folder)/out", to: temp.path.appending("outside").string)
                try temp.symlink("scope/\(folder)/root", to: "/")
            }
            try makeOddFiles(in: "before")
            let (query, recorder) = try startQuery("TRUEPREDICATE", in: scope)
            let firstNames = Set(query.results.map(\.name))
            for name in ["fifo", "socket", "loop-a", "loop-b", "self", "up", "out", "root"] {
                #expect(firstNames.contains(name), "\(name)")
            }
            try makeOddFiles(in: "after")
            let expected = try freshCrawlBytes(roots: [CrawlRoot(path: scope)], .alwaysTrue)
            #expect(recorder.wait { pathSet(query) == expected })
            #expect(!query.results.contains { $0.name == "secret.txt" }, "a symlink out of the scope was followed")
            let kinds = Dictionary(query.results.map { ($0.name, $0.contentType) }, uniquingKeysWith: { a, _ in a })
            #expect(kinds["out"] == "public.symlink")
            #expect(kinds["fifo"] == "public.item")
            #expect(query.errors.isEmpty)
            query.stop()
        }

        /// A scope given as a symlink to a folder is searched (the user named
        /// it), like `find -H`; what is inside is never followed.
        @Test func aScopeThatIsASymlinkIsSearched() throws {
            let temp = try TemporaryDirectory()
            try temp.file("real/a.txt")
            try temp.symlink("link", to: temp.path.appending("real").string)
            let (query, recorder) = try startQuery("kMDItemFSName LIKE '*.txt'", in: temp.path.appending("link"))
            #expect(query.results.map(\.name) == ["a.txt"])
            #expect(query.errors.isEmpty, "\(query.errors)")
            try temp.file("real/b.txt")
            #expect(recorder.wait { query.resultCount == 2 })
            query.stop()
        }
    }
}
