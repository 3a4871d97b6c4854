import Foundation
import MetadataIndex

/// libFuzzer entry: one input, read both as NSPredicate format text and
/// as an mdfind query. Whatever parses must print and parse back to an
/// equal predicate and evaluate over a small index; whatever is rejected
/// must say where, inside the input. A violated property traps, which
/// libFuzzer reports as a crash with the input that caused it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPredicate(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        let predicate = try MetadataPredicate(formatBytes: input)
        guard let reparsed = try? MetadataPredicate(predicate.predicateFormat), reparsed == predicate else {
            fatalError("round trip failed: \(predicate.predicateFormat)")
        }
        _ = Sample.index.count(matching: predicate)
    } catch {
        check(error, input)
    }
    do {
        let predicate = try MetadataPredicate(spotlightQueryBytes: input, now: Sample.now, timeZone: Sample.utc)
        _ = Sample.index.count(matching: predicate)
    } catch {
        check(error, input)
    }
    return 0
}

private func check(_ error: MetadataError, _ input: [UInt8]) {
    guard error.code == .querySyntax else { fatalError("unexpected error kind: \(error)") }
    guard let offset = error.offset, offset >= 0, offset <= input.count else {
        fatalError("rejection without an offset inside the input: \(error.message) at \(String(describing: error.offset))")
    }
    _ = error.description
}

/// A small index of awkward names to evaluate parsed predicates on.
private enum Sample {
    static let now = Date(timeIntervalSince1970: 1_738_281_600)
    static let utc = TimeZone(identifier: "UTC")!
    nonisolated(unsafe) static let index: FileIndex = {
        let index = FileIndex()
        let root = index.addRoot(path: "/fuzz", metadata: EntryMetadata(kind: .folder))
        let names: [[UInt8]] = [
            Array("photo.png".utf8), Array("Report 2024.PDF".utf8), Array("caf\u{E9}.txt".utf8),
            Array("cafe\u{301}.txt".utf8), Array("\u{5831}\u{544A}".utf8), Array(".hidden".utf8), [0x66, 0xFF, 0x2E, 0x63],
            Array(String(repeating: "a", count: 255).utf8), Array("\u{D55C}\u{AD6D}\u{C5B4}.txt".utf8),
            Array("\u{1F44D}\u{1F3FD}\u{1F1EF}\u{1F1F5}.png".utf8), Array("\u{0600}1 MyReport.txt".utf8),
        ]
        for (i, name) in names.enumerated() {
            index.insert(
                name: name, in: root,
                metadata: EntryMetadata(
                    kind: i == 4 ? .folder : .file, size: UInt64(i * 1000),
                    modificationTime: Timestamp(nanosecondsSinceEpoch: Int64(i) * 86_400_000_000_000)))
        }
        return index
    }()
}

// SwiftPM links an executable's `main` to `<module>_main`, so libFuzzer's
// own `main` is not used; this one hands the command line to libFuzzer.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("fuzz_predicate_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { data, size in fuzzPredicate(data, size) }
}
