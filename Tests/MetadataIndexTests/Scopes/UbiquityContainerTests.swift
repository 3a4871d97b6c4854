import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Container identifiers in Apple's spelling and the folder's, the default
/// container, and where external document registrations live. Each test
/// passes its own containers root and state folder: nothing here reads the
/// process environment.
struct UbiquityContainerTests {
    @Test(arguments: [
        ("iCloud.com.example.app", "iCloud~com~example~app"),
        ("iCloud~com~example~app", "iCloud~com~example~app"),
        ("Notes", "Notes"),
        ("com.example.Notes", "com~example~Notes"),
    ])
    func identifiersNameTildeFolders(identifier: String, folder: String) {
        #expect(UbiquityContainer.folderName(forIdentifier: identifier) == folder)
    }

    @Test func bothSpellingsResolveToTheSameFolder() throws {
        let temp = try TemporaryDirectory()
        let folder = try temp.folder("iCloud~com~example~notes")
        let dotted = try UbiquityContainer(identifier: "iCloud.com.example.notes", root: temp.path)
        let tilde = try UbiquityContainer(identifier: "iCloud~com~example~notes", root: temp.path)
        #expect(dotted.path == folder)
        #expect(tilde.path == folder)
    }

    /// A folder named with dots (made by hand) is found when no tilde
    /// folder exists; the tilde folder wins when both do.
    @Test func aDottedFolderIsFoundWhenThereIsNoTildeFolder() throws {
        let temp = try TemporaryDirectory()
        let dottedFolder = try temp.folder("com.example.plain")
        #expect(try UbiquityContainer(identifier: "com.example.plain", root: temp.path).path == dottedFolder)
        let tildeFolder = try temp.folder("com~example~plain")
        #expect(try UbiquityContainer(identifier: "com.example.plain", root: temp.path).path == tildeFolder)
    }

    @Test func aMissingContainerNamesTheFolderTried() throws {
        let temp = try TemporaryDirectory()
        let error = try #require(throws: MetadataError.self) {
            try UbiquityContainer(identifier: "iCloud.com.example.gone", root: temp.path)
        }
        #expect(error.code == .containerNotFound)
        #expect(error.path == temp.path.appending("iCloud~com~example~gone"))
        #expect(error.message.contains("iCloud.com.example.gone"))
    }

    @Test(arguments: ["", ".", "..", "a/b", "../escape"])
    func malformedIdentifiersAreRefused(identifier: String) throws {
        let temp = try TemporaryDirectory()
        let error = try #require(throws: MetadataError.self) {
            try UbiquityContainer(identifier: identifier, root: temp.path)
        }
        #expect(error.code == .invalidArgument)
    }

    // MARK: The default container

    @Test func theOnlyContainerIsTheDefault() throws {
        let temp = try TemporaryDirectory()
        let only = try temp.folder("iCloud~com~example~notes/Documents").removingLastComponent()
        try temp.folder(".Trash")  // hidden: not a container
        try temp.file("README")  // a file: not a container
        #expect(try UbiquityContainer.defaultContainer(in: temp.path, setting: nil).path == only)
    }

    @Test func severalContainersNeedTheSetting() throws {
        let temp = try TemporaryDirectory()
        try temp.folder("iCloud~com~example~notes")
        let photos = try temp.folder("iCloud~com~example~photos")
        let error = try #require(throws: MetadataError.self) {
            try UbiquityContainer.defaultContainer(in: temp.path, setting: nil)
        }
        #expect(error.code == .containerNotFound)
        #expect(error.path == temp.path)
        #expect(error.message.contains("MDQ_DEFAULT_CONTAINER"))
        #expect(error.message.contains("'iCloud~com~example~notes', 'iCloud~com~example~photos'"))
        // Named in either spelling, or by path.
        #expect(
            try UbiquityContainer.defaultContainer(in: temp.path, setting: "iCloud.com.example.photos").path == photos)
        #expect(
            try UbiquityContainer.defaultContainer(in: temp.path, setting: "iCloud~com~example~photos").path == photos)
        #expect(try UbiquityContainer.defaultContainer(in: temp.path, setting: photos.string + "/").path == photos)
    }

    @Test func noDefaultContainerIsAnErrorNamingWhy() throws {
        let temp = try TemporaryDirectory()
        let empty = try #require(throws: MetadataError.self) {
            try UbiquityContainer.defaultContainer(in: temp.path, setting: nil)
        }
        #expect(empty.code == .containerNotFound)
        #expect(empty.message.contains("no ubiquity container"))
        let missingRoot = try #require(throws: MetadataError.self) {
            try UbiquityContainer.defaultContainer(in: temp.path.appending("nope"), setting: nil)
        }
        #expect(missingRoot.path == temp.path.appending("nope"))
        let missingSetting = try #require(throws: MetadataError.self) {
            try UbiquityContainer.defaultContainer(in: temp.path, setting: "iCloud.com.example.gone")
        }
        #expect(missingSetting.path == temp.path.appending("iCloud~com~example~gone"))
    }

    // MARK: External documents

    /// Registrations live in the state folder, one file per container, and
    /// nothing is written inside the container; two containers keep their
    /// own lists.
    @Test func registrationsLiveInTheStateFolder() throws {
        let temp = try TemporaryDirectory()
        try temp.folder("A/Documents")
        try temp.folder("B/Documents")
        let elsewhere = try temp.folder("Elsewhere")
        let state = temp.path.appending("state")
        let a = UbiquityContainer(path: temp.path.appending("A"), stateDirectory: state)
        let b = UbiquityContainer(path: temp.path.appending("B"), stateDirectory: state)
        try a.registerExternalDocuments(elsewhere)
        #expect(a.externalDocumentFolders == [elsewhere])
        #expect(b.externalDocumentFolders.isEmpty)
        #expect(a.externalDocumentsRegistry.removingLastComponent() == state.appending("external-documents"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: a.path.string) == ["Documents"])
        try a.unregisterExternalDocuments(elsewhere)
        #expect(a.externalDocumentFolders.isEmpty)
    }

    /// Folders registered by an older mdq, in the container, are still
    /// found, and carried over by the next registration.
    @Test func legacyRegistrationsInsideTheContainerAreCarriedOver() throws {
        let temp = try TemporaryDirectory()
        let old = try temp.folder("Old")
        let new = try temp.folder("New")
        try temp.file("C/.mdq/external-documents", contents: old.string + "\0")
        let container = UbiquityContainer(path: temp.path.appending("C"), stateDirectory: temp.path.appending("state"))
        #expect(container.externalDocumentFolders == [old])
        try container.registerExternalDocuments(new)
        #expect(container.externalDocumentFolders == [old, new])
        try container.unregisterExternalDocuments(old)
        try container.unregisterExternalDocuments(new)
        #expect(container.externalDocumentFolders.isEmpty, "the emptied registry still overrides the legacy one")
    }
}

/// Which folders of the containers root are containers.
struct ContainerFolderNameTests {
    @Test(arguments: [
        ("iCloud~com~example~notes", true), ("com~apple~CloudDocs", true), ("ABCDE12345~com~example~app", true),
        ("com.example.plain", true), ("iCloud~com~my-app_2~x", true), ("outside-1234", false), ("Documents", false),
        (".Trash", false), ("iCloud~com", false), ("a~~b", false), ("tmp", false), ("my folder~x~y", false),
        ("iCloud~com~example~notes~", false),
    ])
    func containersAreFoldersShapedLikeIdentifiers(name: String, isContainer: Bool) {
        #expect(Array(name.utf8).withUnsafeBytes(UbiquityContainer.isContainerFolderName) == isContainer)
    }

    /// A sync client's own folders beside its container (where it moves
    /// files out of the container) do not hide the default container.
    @Test func otherFoldersInTheRootLeaveTheDefaultAlone() throws {
        let temp = try TemporaryDirectory()
        let notes = try temp.folder("iCloud~com~example~notes/Documents").removingLastComponent()
        for other in ["outside-4242", "tmp", "Downloads", ".Trash"] { try temp.folder(other) }
        #expect(try UbiquityContainer.defaultContainer(in: temp.path, setting: nil).path == notes)
    }
}
