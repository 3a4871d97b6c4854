import Foundation
import Testing

extension CompatSuites {
    /// Keeps the Apple-style client honest: apart from its one added
    /// `import MetadataCompat`, it uses only what an Apple-platform file
    /// can (no mdq types, no conditional compilation, no Linux modules).
    struct AppleStyleClientSourceTests {
        static let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("AppleStyleClient/DocumentSyncMonitor.swift")

        @Test func onlyTheImportIsLinuxSpecific() throws {
            let lines = try String(contentsOf: Self.source, encoding: .utf8).split(
                separator: "\n", omittingEmptySubsequences: false)
            let code = lines.filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            #expect(code.filter { $0.contains("MetadataCompat") } == ["import MetadataCompat"])
            #expect(code.filter { $0.hasPrefix("import ") }.sorted() == ["import Foundation", "import MetadataCompat"])
            let foreign = [
                "MetadataIndex", "MetadataQuery(", "MetadataItem(", "UbiquityContainer(", "UbiquityContainer.",
                "FilePath", "#if", "Glibc", "MetadataPredicate", "MetadataSortDescriptor", ".errors", "query.container",
                "canImport", "os(Linux)",
            ]
            for line in code {
                for word in foreign where line.contains(word) && !line.contains("NSMetadata") {
                    Issue.record("Linux-specific code in the Apple-style client: \(line)")
                }
            }
        }
    }
}
