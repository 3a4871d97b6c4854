import Foundation
import Testing

/// The README's Swift blocks compile as written: each is, byte for byte, an
/// `Examples/Snippets/*/main.swift` that the package builds as an
/// executable (so `swift build` and CI compile every one).
struct ReadmeSnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The ```swift blocks of the README, without their fences.
    static func readmeBlocks() throws -> [String] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [String] = []
        var current: [Substring]?
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    static func snippetFiles() throws -> [String: String] {
        let folder = root.appendingPathComponent("Examples/Snippets")
        var files: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            let file = folder.appendingPathComponent(name).appendingPathComponent("main.swift")
            files[name] = try String(contentsOf: file, encoding: .utf8)
        }
        return files
    }

    @Test func everyReadmeBlockIsABuiltSnippet() throws {
        let blocks = try Self.readmeBlocks()
        let snippets = try Self.snippetFiles()
        #expect(!blocks.isEmpty)
        for block in blocks {
            #expect(snippets.values.contains(block), "README block not in Examples/Snippets:\n\(block)")
        }
        for (name, text) in snippets {
            #expect(blocks.contains(text), "Examples/Snippets/\(name) is not in the README")
        }
    }

    @Test func everySnippetIsATargetOfThePackage() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for name in try Self.snippetFiles().keys {
            #expect(manifest.contains("path: \"Examples/Snippets/\(name)\""), "\(name) has no target")
        }
    }
}
