import Foundation
import SystemPackage
import Testing

extension CompatSuites {
    /// `DocumentSyncMonitor`, a client written for Apple platforms, driven
    /// through what a sync client meets on disk; the assertions are what it
    /// decides to do.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    @MainActor
    struct AppleStyleClientTests {
        /// The decisions made since `start`, waiting until `expected` is
        /// among them.
        func waitFor(_ expected: SyncDecision, in monitor: DocumentSyncMonitor, since start: Int) async
            -> [SyncDecision]
        {
            let found = await eventually { monitor.decisions.dropFirst(start).contains(expected) }
            #expect(found, "no \(expected); decided: \(monitor.decisions.dropFirst(start))")
            return Array(monitor.decisions.dropFirst(start))
        }

        @Test func decidesUploadsMovesDeletionsAndConflicts() async throws {
            let root = try ContainersRoot()
            let container = try root.container("iCloud~com~example~notes")
            func file(_ relative: String) -> String { container.appending(relative).string }
            try Data("a".utf8).write(to: URL(fileURLWithPath: file("Documents/alpha.txt")))
            try Data("bb".utf8).write(to: URL(fileURLWithPath: file("Documents/beta.txt")))
            try Data().write(to: URL(fileURLWithPath: file("Documents/cover.png")))
            try FileManager.default.createDirectory(atPath: file("Data"), withIntermediateDirectories: true)

            let environment = root.activate()
            defer { environment.restore() }
            do {
                // The dotted identifier, as Apple code writes it; the query
                // itself has no container and searches the default one.
                let monitor = try #require(
                    DocumentSyncMonitor(containerIdentifier: "iCloud.com.example.notes", fileExtension: "txt"))
                monitor.start()
                defer { monitor.stop() }
                #expect(await eventually { monitor.isReady })
                // Initial sync, in the sort descriptor's order.
                #expect(monitor.decisions == [.upload("Documents/alpha.txt"), .upload("Documents/beta.txt")])

                // Create (written as editors do: a temporary renamed into place).
                var mark = monitor.decisions.count
                try Data("ccc".utf8).write(to: URL(fileURLWithPath: file("Documents/gamma.txt")), options: .atomic)
                var decided = await waitFor(.upload("Documents/gamma.txt"), in: monitor, since: mark)
                #expect(decided.allSatisfy { $0 == .upload("Documents/gamma.txt") })

                // Modify in place.
                mark = monitor.decisions.count
                let handle = try #require(FileHandle(forWritingAtPath: file("Documents/alpha.txt")))
                handle.seekToEndOfFile()
                handle.write(Data("-more".utf8))
                handle.closeFile()
                decided = await waitFor(.upload("Documents/alpha.txt"), in: monitor, since: mark)
                #expect(decided.allSatisfy { $0 == .upload("Documents/alpha.txt") })

                // Rename: the same document under a new name, not a new one.
                mark = monitor.decisions.count
                try FileManager.default.moveItem(
                    atPath: file("Documents/beta.txt"), toPath: file("Documents/delta.txt"))
                decided = await waitFor(
                    .move(from: "Documents/beta.txt", to: "Documents/delta.txt"), in: monitor, since: mark)
                #expect(decided == [.move(from: "Documents/beta.txt", to: "Documents/delta.txt")])

                // Atomic save: write a temporary, rename it over the document.
                mark = monitor.decisions.count
                try Data("a-rewritten".utf8).write(to: URL(fileURLWithPath: file("Documents/alpha.txt.tmp")))
                #expect(rename(file("Documents/alpha.txt.tmp"), file("Documents/alpha.txt")) == 0)
                decided = await waitFor(.upload("Documents/alpha.txt"), in: monitor, since: mark)
                #expect(decided.allSatisfy { $0 == .upload("Documents/alpha.txt") })

                // Move out of the documents scope (into the data part of the
                // container): gone from what is synced.
                mark = monitor.decisions.count
                try FileManager.default.moveItem(atPath: file("Documents/gamma.txt"), toPath: file("Data/gamma.txt"))
                decided = await waitFor(.delete("Documents/gamma.txt"), in: monitor, since: mark)
                #expect(decided == [.delete("Documents/gamma.txt")])

                // Delete.
                mark = monitor.decisions.count
                try FileManager.default.removeItem(atPath: file("Documents/delta.txt"))
                decided = await waitFor(.delete("Documents/delta.txt"), in: monitor, since: mark)
                #expect(decided == [.delete("Documents/delta.txt")])

                // A conflict copy appears beside a document. (It is a file of
                // its own here, so it is also synced as one.)
                mark = monitor.decisions.count
                let copy = "Documents/alpha (conflicted copy 2025-05-01).txt"
                try Data("theirs".utf8).write(to: URL(fileURLWithPath: file(copy)), options: .atomic)
                decided = await waitFor(.resolveConflict("Documents/alpha.txt"), in: monitor, since: mark)
                #expect(Set(decided).isSubset(of: [.resolveConflict("Documents/alpha.txt"), .upload(copy)]))

                // A last file: once it is decided on, every earlier change
                // has been (updates arrive in order).
                mark = monitor.decisions.count
                try Data("z".utf8).write(to: URL(fileURLWithPath: file("Documents/zulu.txt")), options: .atomic)
                _ = await waitFor(.upload("Documents/zulu.txt"), in: monitor, since: mark)

                let all = monitor.decisions
                #expect(!all.contains(.delete("Documents/alpha.txt")), "an atomic save made the client delete")
                #expect(!all.contains(.upload("Documents/delta.txt")), "a rename made the client upload again")
                #expect(!all.contains { if case .download = $0 { true } else { false } })
                #expect(!all.contains { $0.description.contains("cover.png") || $0.description.contains("Data/") })
            }
        }
    }
}
