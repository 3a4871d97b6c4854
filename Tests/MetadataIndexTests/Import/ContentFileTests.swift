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

/// `ContentFile.read` gives exactly the bytes asked for, within the file and
/// the budget, whatever the file's size said when it was opened: small and
/// large files, reads from an offset, past the end, a budget that runs out,
/// and a file that grew (or shrank) after it was opened.
struct ContentFileTests {
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    @Test func readsAreExactWithinTheFileAndTheBudget() throws {
        let temp = try TemporaryDirectory()
        for size in [0, 1, 4095, 4096, 70_000] {
            let contents = Self.bytes(size, seed: UInt64(size))
            try temp.file(Array("f\(size)".utf8), contents: contents)
            let path = temp.path.appending("f\(size)")
            let whole = try ContentFile.open(path, budget: 1 << 20).get()
            #expect(try whole.read(at: 0, count: 1 << 20).get() == contents, "\(size) bytes")
            let capped = try ContentFile.open(path, budget: 1000).get()
            #expect(try capped.read(at: 0, count: 5000).get() == Array(contents.prefix(1000)), "\(size) bytes, budget")
            let middle = try ContentFile.open(path, budget: 1 << 20).get()
            let from = size / 2
            #expect(try middle.read(at: Int64(from), count: 100).get() == Array(contents[from..<min(size, from + 100)]))
            #expect(try middle.read(at: Int64(size + 10), count: 100).get().isEmpty, "past the end")
        }
    }

    @Test func aFileThatGrewOrShrankIsReadAsItIsNow() throws {
        let temp = try TemporaryDirectory()
        let first = Self.bytes(10, seed: 1)
        try temp.file(Array("grows".utf8), contents: first)
        let path = temp.path.appending("grows")
        let growing = try ContentFile.open(path, budget: 1 << 20).get()
        let more = Self.bytes(300_000, seed: 2)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path.string))
        handle.seekToEndOfFile()
        handle.write(Data(more))
        try handle.close()
        // Read in doubling parts past the size seen at open, to the end.
        #expect(try growing.read(at: 0, count: 1 << 20).get() == first + more)

        try temp.file(Array("shrinks".utf8), contents: Self.bytes(50_000, seed: 3))
        let shrinkPath = temp.path.appending("shrinks")
        let shrinking = try ContentFile.open(shrinkPath, budget: 1 << 20).get()
        #expect(truncate(shrinkPath.string, 100) == 0)
        #expect(try shrinking.read(at: 0, count: 1 << 20).get() == Array(Self.bytes(50_000, seed: 3).prefix(100)))
    }
}
