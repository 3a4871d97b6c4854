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

/// `readWholeFile` gives a file's bytes exactly, whatever its size says:
/// empty, a few bytes, exactly a page, megabytes, and /proc files that
/// report a size of 0; past its limit it refuses.
struct ReadWholeFileTests {
    @Test func filesOfEverySizeAreReadExactly() throws {
        let temp = try TemporaryDirectory()
        var random = SeededGenerator(seed: 12)
        for size in [0, 1, 4095, 4096, 4097, 65_536, 3_000_001] {
            let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
            try temp.file(Array("f\(size)".utf8), contents: bytes)
            let file = temp.path.appending("f\(size)")
            #expect(try readWholeFile(file) == bytes, "\(size) bytes")
        }
    }

    @Test func procFilesThatSayTheyAreEmptyAreReadToTheEnd() throws {
        let status = try readWholeFile("/proc/self/status")
        #expect(String(decoding: status, as: UTF8.self).contains("VmRSS"))
        // /proc/self/maps of a Swift test process is longer than a page.
        #expect(try readWholeFile("/proc/self/maps").count > 4096)
    }

    @Test func aFileOverTheLimitIsRefused() throws {
        let temp = try TemporaryDirectory()
        try temp.file(Array("big".utf8), contents: [UInt8](repeating: 7, count: 10_000))
        let file = temp.path.appending("big")
        #expect(throws: Errno.fileTooLarge) { try readWholeFile(file, limit: 5000) }
        #expect(try readWholeFile(file, limit: 10_000).count == 10_000)
    }
}
