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
@testable import MDQWatch
@testable import MetadataIndex

/// The seam the watcher uses: `willList` runs once per folder, after the
/// folder is open and before it is listed.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct CrawlSeamTests {
    /// A sink that creates a file in every folder from `willList` and
    /// records what each listing then contained.
    final class RecordingSink: CrawlSink, @unchecked Sendable {
        let listed = Locked<[[UInt8]: Set<[UInt8]>]>([:])
        let willListCalls = Locked<[[UInt8]]>([])

        func makeWorker() {}

        func beginRoot(_ root: CrawlRoot, status: FileStatus) -> [UInt8] { root.path.bytes }

        func willList(_ folder: [UInt8], directory: FileDescriptor, worker: inout Void) -> Bool {
            willListCalls.withLock { $0.append(folder) }
            let fd = openat(directory.rawValue, "made-in-willList", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            if fd >= 0 { close(fd) }
            return true
        }

        func didList(
            _ folder: [UInt8], batch: borrowing CrawlBatch, directory: FileDescriptor, worker: inout Void,
            subfolders: inout [[UInt8]?]
        ) {
            var names: Set<[UInt8]> = []
            for entry in batch.entries {
                let name = batch.withName(of: entry) { Array($0) }
                names.insert(name)
                if entry.descend { subfolders.append(folder + [0x2F] + name) }
            }
            listed.withLock { $0[folder] = names }
        }

        func path(of folder: [UInt8], child name: UnsafeRawBufferPointer?) -> FilePath {
            FilePath.fromBytes(folder + (name.map { [0x2F] + Array($0) } ?? []))
        }

        func warn(_ warning: CrawlWarning, worker: inout Void) {}
    }

    @Test func willListRunsBeforeEachListing() throws {
        let temp = try TemporaryDirectory()
        for folder in ["a", "a/b", "a/b/c", "d", "e/f"] { try temp.folder(folder) }
        let sink = RecordingSink()
        try Crawler(sink: sink, options: CrawlOptions(threadCount: 2)).crawl([CrawlRoot(path: temp.path)])
        let listed = sink.listed.withLock { $0 }
        // Root plus six folders, each announced exactly once.
        #expect(listed.count == 7)
        #expect(sink.willListCalls.withLock { $0.count } == 7)
        #expect(Set(sink.willListCalls.withLock { $0 }).count == 7)
        // What willList created, the listing saw: the watch comes first.
        for (folder, names) in listed {
            #expect(names.contains(Array("made-in-willList".utf8)), "\(String(decoding: folder, as: UTF8.self))")
        }
    }

    /// Folders that vanish after their parent was listed and before they
    /// are opened: no error, no crash, the rest of the tree still crawled.
    @Test func foldersVanishingMidCrawlAreSkipped() throws {
        let temp = try TemporaryDirectory()
        for folder in ["a/x", "a/y/deep", "a/z"] { try temp.file("\(folder)/f.txt") }
        final class VanishingSink: CrawlSink, @unchecked Sendable {
            let inner = RecordingSink()
            let victim: String
            let warnings = Locked<[CrawlWarning]>([])
            init(victim: String) { self.victim = victim }
            func makeWorker() {}
            func beginRoot(_ root: CrawlRoot, status: FileStatus) -> [UInt8] { root.path.bytes }
            func willList(_ folder: [UInt8], directory: FileDescriptor, worker: inout Void) -> Bool { true }
            func didList(
                _ folder: [UInt8], batch: borrowing CrawlBatch, directory: FileDescriptor, worker: inout Void,
                subfolders: inout [[UInt8]?]
            ) {
                var ignored: Void = ()
                inner.didList(folder, batch: batch, directory: directory, worker: &ignored, subfolders: &subfolders)
                // a is listed (y among its subfolders to visit); y goes now.
                if String(decoding: folder, as: UTF8.self).hasSuffix("/a") {
                    try? FileManager.default.removeItem(atPath: victim)
                }
            }
            func path(of folder: [UInt8], child name: UnsafeRawBufferPointer?) -> FilePath {
                inner.path(of: folder, child: name)
            }
            func warn(_ warning: CrawlWarning, worker: inout Void) { warnings.withLock { $0.append(warning) } }
        }
        let sink = VanishingSink(victim: temp.path.appending("a/y").string)
        try Crawler(sink: sink, options: CrawlOptions(threadCount: 1)).crawl([CrawlRoot(path: temp.path)])
        let listed = Set(sink.inner.listed.withLock { $0.keys }.map { String(decoding: $0, as: UTF8.self) })
        let base = temp.path.string
        #expect(listed.isSuperset(of: [base, "\(base)/a", "\(base)/a/x", "\(base)/a/z"]))
        #expect(!listed.contains("\(base)/a/y/deep"))
        // A folder gone before it was opened is not worth a warning; any
        // warning there is about a vanished entry, never an error.
        #expect(
            sink.warnings.withLock { $0 }.allSatisfy { $0.operation == .vanished || $0.error == .noSuchFileOrDirectory }
        )
    }

    @Test func theEngineInitialisesInotify() throws {
        let limit = try MetadataEngine.initializeWatching()
        #expect(limit > 0)
        #expect(InotifyLibrary.shared.isInitialized)
        // Idempotent.
        #expect(try MetadataEngine.initializeWatching() == limit)
    }
}
