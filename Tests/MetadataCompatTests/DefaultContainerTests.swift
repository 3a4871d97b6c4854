import Foundation
import MetadataCompat
import MetadataIndex
import SystemPackage
import Testing

extension CompatSuites {
    /// Apple code asks for its container by identifier, then queries the
    /// ubiquitous scopes without naming one: the container it asked for is
    /// the one searched, whatever else the containers root holds.
    @Suite(.serialized, .timeLimit(.minutes(1)))
    struct DefaultContainerTests {
        @MainActor
        func documents(query: NSMetadataQuery) async -> Set<String> {
            _ = await eventually { !query.isGathering && query.resultCount > 0 }
            return Set(
                (0..<query.resultCount).compactMap {
                    (query.result(at: $0) as? NSMetadataItem)?.value(forAttribute: NSMetadataItemFSNameKey) as? String
                })
        }

        @MainActor
        @Test func theContainerAskedForIsTheDefaultBesideOtherFolders() async throws {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~notes")
            let photos = try root.container("iCloud~com~example~photos")
            try root.temp.folder("containers/outside-\(getpid())")
            try Data("a".utf8).write(to: URL(fileURLWithPath: notes.appending("Documents/note.txt").string))
            try Data("b".utf8).write(to: URL(fileURLWithPath: photos.appending("Documents/photo.txt").string))
            let environment = root.activate()
            defer { environment.restore() }
            // Two containers and a staging folder: nothing is the default
            // until the app asks for one.
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: nil) == nil)
            let asked = FileManager.default.url(forUbiquityContainerIdentifier: "iCloud.com.example.photos")
            #expect(asked?.path == photos.string)
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: nil)?.path == photos.string)
            let query = NSMetadataQuery()
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.predicate = NSPredicate(format: "%K LIKE '*'", NSMetadataItemFSNameKey)
            #expect(query.start())
            #expect(await documents(query: query) == ["photo.txt"])
            query.stop()
        }

        @MainActor
        @Test func aSingleContainerBesideAStagingFolderIsTheDefault() async throws {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~solo")
            try root.temp.folder("containers/outside-\(getpid())")
            try Data("a".utf8).write(to: URL(fileURLWithPath: notes.appending("Documents/only.txt").string))
            let environment = root.activate()
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.predicate = NSPredicate(format: "%K LIKE '*'", NSMetadataItemFSNameKey)
            #expect(query.start())
            #expect(await documents(query: query) == ["only.txt"])
            query.stop()
        }

        /// iCloudDocumentSync's predicate: a key path on the name key.
        @MainActor
        @Test func keyPathPredicatesAsApplesSyncCodeWritesThem() async throws {
            let root = try ContainersRoot()
            let box = try root.container("iCloud~com~example~keypaths")
            for name in ["a.txt", "b.md", "c.pdf", "README"] {
                try Data("x".utf8).write(to: URL(fileURLWithPath: box.appending("Documents/\(name)").string))
            }
            let environment = root.activate(defaultContainer: "iCloud.com.example.keypaths")
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.predicate = NSPredicate(format: "%K.pathExtension IN {'txt', 'md'}", NSMetadataItemFSNameKey)
            #expect(query.start())
            #expect(await documents(query: query) == ["a.txt", "b.md"])
            query.stop()
            let every = NSMetadataQuery()
            every.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            every.predicate = NSPredicate(format: "%K.pathExtension LIKE '*'", NSMetadataItemFSNameKey)
            #expect(every.start())
            #expect(await documents(query: every) == ["a.txt", "b.md", "c.pdf", "README"])
            every.stop()
        }
    }
}
