import Foundation
import MetadataCompat
import MetadataIndex
import SystemPackage
import Testing

extension CompatSuites {
    /// What a sync client does right after a query reports a conflict, on
    /// real conflict copies: list the versions, keep one, mark the others
    /// resolved, remove them; and the resource values it reads meanwhile.
    @Suite(.serialized, .timeLimit(.minutes(1)))
    struct FileVersionTests {
        func write(_ text: String, _ path: FilePath) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path.string))
        }

        func read(_ url: URL) throws -> String { try String(contentsOf: url, encoding: .utf8) }

        @Test func conflictVersionsAreListedReplacedResolvedAndRemoved() throws {
            let root = try ContainersRoot()
            let box = try root.container("iCloud~com~example~versions")
            let documents = box.appending("Documents")
            try write("mine", documents.appending("note.txt"))
            try write("laptop", documents.appending("note (conflicted copy 2025-03-02 laptop).txt"))
            try write("phone", documents.appending("note.sync-conflict-20250302-101010-ABCDEFG.txt"))
            try write("other", documents.appending("other.txt"))
            let environment = root.activate()
            defer { environment.restore() }
            let note = URL(fileURLWithPath: documents.appending("note.txt").string)

            let current = try #require(NSFileVersion.currentVersionOfItem(at: note))
            #expect(current.url == note)
            #expect(!current.isConflict && current.isResolved)
            let conflicts = try #require(NSFileVersion.unresolvedConflictVersionsOfItem(at: note))
            #expect(
                Set(conflicts.map(\.url.lastPathComponent)) == [
                    "note (conflicted copy 2025-03-02 laptop).txt", "note.sync-conflict-20250302-101010-ABCDEFG.txt",
                ])
            #expect(conflicts.allSatisfy { $0.isConflict && !$0.isResolved })
            let laptop = try #require(conflicts.first { $0.url.lastPathComponent.contains("laptop") })
            #expect(laptop.localizedNameOfSavingComputer == "conflicted copy 2025-03-02 laptop")

            // Keep the laptop's version: its content becomes the file's.
            #expect(try laptop.replaceItem(at: note) == note)
            #expect(try read(note) == "laptop")
            #expect(throws: (any Error).self) { try current.remove() }

            // Resolve one: it leaves the unresolved list; removal deletes
            // only what was marked.
            laptop.isResolved = true
            #expect(NSFileVersion.unresolvedConflictVersionsOfItem(at: note)?.count == 1)
            try NSFileVersion.removeOtherVersionsOfItem(at: note)
            #expect(!FileManager.default.fileExists(atPath: laptop.url.path))
            let phone = try #require(NSFileVersion.unresolvedConflictVersionsOfItem(at: note)?.first)
            #expect(FileManager.default.fileExists(atPath: phone.url.path))
            phone.isResolved = true
            try NSFileVersion.removeOtherVersionsOfItem(at: note)
            #expect(NSFileVersion.otherVersionsOfItem(at: note) == [])
            #expect(try read(note) == "laptop")
            #expect(NSFileVersion.currentVersionOfItem(at: URL(fileURLWithPath: "/nonexistent/x")) == nil)
        }

        @Test func ubiquitousResourceValuesOfAContainerItem() throws {
            let root = try ContainersRoot()
            let box = try root.container("iCloud~com~example~values")
            let documents = box.appending("Documents")
            try write("a", documents.appending("draft.txt"))
            try write("b", documents.appending("draft (conflicted copy).txt"))
            let outside = try root.temp.folder("outside")
            try write("c", outside.appending("loose.txt"))
            let environment = root.activate()
            defer { environment.restore() }
            let keys: Set<URLResourceKey> = [
                .pathKey, .ubiquitousItemDownloadingStatusKey, .ubiquitousItemIsDownloadingKey,
                .ubiquitousItemHasUnresolvedConflictsKey, .isUbiquitousItemKey,
            ]
            let draft = try URL(fileURLWithPath: documents.appending("draft.txt").string).resourceValues(forKeys: keys)
            #expect(draft.ubiquitousItemDownloadingStatus == .current)
            #expect(NSFileVersion.unresolvedConflictVersionsOfItem(at: URL(fileURLWithPath: draft.path!))?.count == 1)
            let loose = try URL(fileURLWithPath: outside.appending("loose.txt").string).resourceValues(forKeys: keys)
            #expect(loose.ubiquitousItemDownloadingStatus == nil)
            #expect(Notification.Name.NSUbiquityIdentityDidChange.rawValue == "NSUbiquityIdentityDidChangeNotification")
        }
    }
}
