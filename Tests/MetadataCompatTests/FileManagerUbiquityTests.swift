import Foundation
import MetadataCompat
import MetadataIndex
import SystemPackage
import Testing

extension CompatSuites {
    /// `FileManager`'s iCloud methods, as Apple code calls them, over the
    /// containers root: both identifier spellings, nil for the default
    /// container, the identity token, ubiquitous items.
    @Suite(.serialized, .timeLimit(.minutes(1)))
    struct FileManagerUbiquityTests {
        @Test func identifiersResolveInBothSpellings() throws {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~notes")
            try root.container("iCloud~com~example~photos")
            let environment = root.activate()
            defer { environment.restore() }
            let dotted = FileManager.default.url(forUbiquityContainerIdentifier: "iCloud.com.example.notes")
            let tilde = FileManager.default.url(forUbiquityContainerIdentifier: "iCloud~com~example~notes")
            #expect(dotted?.path == notes.string)
            #expect(tilde?.path == notes.string)
            #expect(dotted?.hasDirectoryPath == true)
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: "iCloud.com.example.gone") == nil)
            // Apple's creates a missing container; this one never writes.
            #expect(!FileManager.default.fileExists(atPath: root.path.appending("iCloud~com~example~gone").string))
        }

        /// nil is the default container: the only one, or the one
        /// `MDQ_DEFAULT_CONTAINER` names; with several and no setting there
        /// is none (as when iCloud is unavailable).
        @Test func nilIsTheDefaultContainer() throws {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~notes")
            var environment = root.activate()
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: nil)?.path == notes.string)
            environment.restore()

            let photos = try root.container("iCloud~com~example~photos")
            environment = root.activate()
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: nil) == nil)
            environment.restore()

            environment = root.activate(defaultContainer: "iCloud.com.example.photos")
            #expect(FileManager.default.url(forUbiquityContainerIdentifier: nil)?.path == photos.string)
            environment.restore()
        }

        @Test func theIdentityTokenSaysWhetherThereIsAnAccount() throws {
            let root = try ContainersRoot()
            var environment = root.activate()
            let token = try #require(FileManager.default.ubiquityIdentityToken)
            #expect(token.isEqual(FileManager.default.ubiquityIdentityToken))
            environment.restore()
            environment = root.activate(root: root.path.appending("missing"))
            #expect(FileManager.default.ubiquityIdentityToken == nil)
            environment.restore()
        }

        @Test func itemsInsideAContainerAreUbiquitous() throws {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~notes")
            try Data("x".utf8).write(to: URL(fileURLWithPath: notes.appending("Documents/a.txt").string))
            let outside = try root.temp.file("outside.txt")
            let environment = root.activate()
            defer { environment.restore() }
            let inside = URL(fileURLWithPath: notes.appending("Documents/a.txt").string)
            #expect(FileManager.default.isUbiquitousItem(at: inside))
            #expect(!FileManager.default.isUbiquitousItem(at: URL(fileURLWithPath: outside.string)))
            #expect(!FileManager.default.isUbiquitousItem(at: inside.appendingPathExtension("missing")))
            // The container folder itself is not an item inside one.
            #expect(!FileManager.default.isUbiquitousItem(at: URL(fileURLWithPath: notes.string)))
            try FileManager.default.startDownloadingUbiquitousItem(at: inside)
            #expect(throws: (any Error).self) { try FileManager.default.evictUbiquitousItem(at: inside) }
            #expect(FileManager.default.fileExists(atPath: inside.path))
        }

        /// `setUbiquitous` moves an item into a container and back out.
        @Test func setUbiquitousMovesInAndOut() throws {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~notes")
            let local = URL(fileURLWithPath: try root.temp.file("draft.txt", contents: "d").string)
            let environment = root.activate()
            defer { environment.restore() }
            let cloud = URL(fileURLWithPath: notes.appending("Documents/draft.txt").string)
            #expect(throws: (any Error).self) {
                try FileManager.default.setUbiquitous(false, itemAt: local, destinationURL: cloud)
            }
            try FileManager.default.setUbiquitous(true, itemAt: local, destinationURL: cloud)
            #expect(FileManager.default.isUbiquitousItem(at: cloud))
            #expect(!FileManager.default.fileExists(atPath: local.path))
            try FileManager.default.setUbiquitous(false, itemAt: cloud, destinationURL: local)
            #expect(FileManager.default.fileExists(atPath: local.path))
        }
    }
}
