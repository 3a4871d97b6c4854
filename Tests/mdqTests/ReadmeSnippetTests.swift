import Foundation
import Testing

/// The documents' Swift blocks compile as written: each ```swift block of
/// README.md and of `Documentation/*.md` is, byte for byte, an
/// `Examples/Snippets/*/main.swift` that the package builds as an
/// executable (so `swift build` and CI compile every one), and each
/// snippet appears in one of those documents at least.
struct ReadmeSnippetTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md and every `Documentation/*.md`, as paths from the root.
    static func documents() throws -> [String] {
        let folder = root.appendingPathComponent("Documentation")
        let pages = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "Documentation/\($0)" }
        return ["README.md"] + pages
    }

    /// The ```swift blocks of the documents, without their fences, each
    /// with the document it is in.
    static func documentBlocks() throws -> [(document: String, text: String)] {
        var blocks: [(document: String, text: String)] = []
        for document in try documents() {
            let text = try String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)
            var current: [Substring]?
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if current == nil, line == "```swift" {
                    current = []
                } else if current != nil, line == "```" {
                    blocks.append((document, current!.joined(separator: "\n") + "\n"))
                    current = nil
                } else {
                    current?.append(line)
                }
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

    @Test func everyDocumentBlockIsABuiltSnippet() throws {
        let blocks = try Self.documentBlocks()
        let snippets = try Self.snippetFiles()
        #expect(!blocks.isEmpty)
        for block in blocks {
            #expect(
                snippets.values.contains(block.text),
                "\(block.document): a Swift block not in Examples/Snippets:\n\(block.text)")
        }
        for (name, text) in snippets {
            #expect(
                blocks.contains { $0.text == text },
                "Examples/Snippets/\(name) is in neither README.md nor Documentation/*.md")
        }
    }

    @Test func everySnippetIsATargetOfThePackage() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for name in try Self.snippetFiles().keys {
            #expect(manifest.contains("path: \"Examples/Snippets/\(name)\""), "\(name) has no target")
        }
    }
}
