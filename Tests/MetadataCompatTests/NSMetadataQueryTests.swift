import Foundation
import MetadataCompat
import MetadataIndex
import SystemPackage
import Testing

extension CompatSuites {
    /// `NSMetadataQuery` configured as Apple code configures it: scope
    /// constants, URLs and paths; format predicates on the iCloud keys; sort
    /// descriptors; what it refuses and says why.
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct NSMetadataQueryTests {
        /// A container `iCloud~com~example~notes` with
        /// `Documents/{b.txt, a.txt, .encrypt, photo.png}` and `Data/c.txt`.
        func fixture() throws -> (ContainersRoot, FilePath) {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~notes")
            for (name, text) in [
                ("Documents/b.txt", "bb"), ("Documents/a.txt", "a"), ("Documents/.encrypt", ""),
                ("Documents/photo.png", "png"), ("Data/c.txt", "ccc"),
            ] {
                try root.temp.file("containers/iCloud~com~example~notes/\(name)", contents: text)
            }
            return (root, notes)
        }

        /// Starts `query`, waits for did finish gathering and returns the
        /// result names (stopping the query).
        func names(_ query: NSMetadataQuery) -> [String]? {
            let recorder = CompatRecorder(query)
            guard query.start(), recorder.waitForFinish() else { return nil }
            defer { query.stop() }
            return query.resultNames
        }

        @Test func scopesAreConstantsURLsOrPaths() throws {
            let (root, notes) = try fixture()
            let environment = root.activate()
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.predicate = NSPredicate(format: "%K LIKE %@", NSMetadataItemFSNameKey, "*.txt")
            query.sortDescriptors = [NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: true)]
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            #expect(names(query) == ["a.txt", "b.txt"])
            query.searchScopes = [NSMetadataQueryUbiquitousDataScope]
            #expect(names(query) == ["c.txt"])
            query.searchScopes = [URL(fileURLWithPath: notes.appending("Data").string)]
            #expect(names(query) == ["c.txt"])
            query.searchScopes = [notes.appending("Documents").string]
            #expect(names(query) == ["a.txt", "b.txt"])
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope, NSMetadataQueryUbiquitousDataScope]
            query.sortDescriptors = [NSSortDescriptor(key: NSMetadataItemFSSizeKey, ascending: false)]
            #expect(names(query) == ["c.txt", "b.txt", "a.txt"])
        }

        /// What the query cannot carry out makes `start()` return false, and
        /// `errors` says why (Apple's raises an exception).
        @Test func unusableSettingsAreRefusedWithAReason() throws {
            let (root, _) = try fixture()
            let environment = root.activate()
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            #expect(!query.start(), "no predicate")
            query.predicate = NSPredicate(format: "%K.uppercaseString == %@", NSMetadataItemFSNameKey, "TXT")
            #expect(!query.start())
            #expect(query.errors.first?.message.contains("key paths are not supported") == true)
            query.predicate = NSPredicate(format: "%K LIKE %@", NSMetadataItemFSNameKey, "*.txt")
            query.searchScopes = ["relative/folder"]
            #expect(!query.start())
            #expect(query.errors.first?.message.contains("search scope") == true)
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            #expect(query.errors.isEmpty)
            #expect(names(query)?.sorted() == ["a.txt", "b.txt"])
        }

        /// The iCloud keys in predicates evaluate to what the items report;
        /// the conflict flag follows conflict copies as they come and go.
        @Test func ubiquitousKeysInPredicates() throws {
            let (root, notes) = try fixture()
            let environment = root.activate()
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.sortDescriptors = [NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: true)]
            let everything = [".encrypt", "a.txt", "b.txt", "photo.png"]
            query.predicate = NSPredicate(
                format: "%K == %@", NSMetadataUbiquitousItemDownloadingStatusKey,
                NSMetadataUbiquitousItemDownloadingStatusCurrent)
            #expect(names(query) == everything)
            query.predicate = NSPredicate(format: "%K == NO", NSMetadataUbiquitousItemIsDownloadingKey)
            #expect(names(query) == everything)
            query.predicate = NSPredicate(format: "%K == YES", NSMetadataItemIsUbiquitousKey)
            #expect(names(query) == everything)
            query.predicate = NSPredicate(format: "%K < 100", NSMetadataUbiquitousItemPercentDownloadedKey)
            #expect(names(query) == [])
            query.predicate = NSCompoundPredicate(andPredicateWithSubpredicates: [
                NSPredicate(format: "%K == %@", NSMetadataUbiquitousItemIsUploadedKey, NSNumber(value: true)),
                NSPredicate(format: "%K > %d", NSMetadataItemFSSizeKey, 1),
            ])
            #expect(names(query) == ["b.txt", "photo.png"])

            query.predicate = NSPredicate(format: "%K == YES", NSMetadataUbiquitousItemHasUnresolvedConflictsKey)
            query.notificationBatchingInterval = 0.05
            let recorder = CompatRecorder(query)
            #expect(query.start())
            defer { query.stop() }
            #expect(recorder.waitForFinish())
            #expect(query.resultCount == 0)
            let copy = notes.appending("Documents/a (conflicted copy 2025-05-01).txt")
            try Data("theirs".utf8).write(to: URL(fileURLWithPath: copy.string))
            #expect(recorder.wait { query.resultNames == ["a.txt"] })
            try FileManager.default.removeItem(atPath: copy.string)
            #expect(recorder.wait { query.resultCount == 0 })
        }

        /// The ubiquitous scopes report dot-files (Apple documents them as
        /// "all files" of the container); folder scopes leave them out.
        @Test func hiddenFilesAreReportedInUbiquitousScopesOnly() throws {
            let (root, notes) = try fixture()
            let environment = root.activate()
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.predicate = NSPredicate(format: "%K BEGINSWITH %@", NSMetadataItemFSNameKey, ".")
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            #expect(names(query) == [".encrypt"])
            query.searchScopes = [URL(fileURLWithPath: notes.appending("Documents").string)]
            #expect(names(query) == [])
        }

        /// Without a default container the ubiquitous scopes find nothing and
        /// `errors` says why.
        @Test func withoutADefaultContainerErrorsSayWhy() throws {
            let (root, _) = try fixture()
            try root.container("iCloud~com~example~photos")
            let environment = root.activate()
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.predicate = NSPredicate(value: true)
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            #expect(names(query) == [])
            let error = try #require(query.errors.first)
            #expect(error.code == .containerNotFound)
            #expect(error.message.contains("MDQ_DEFAULT_CONTAINER"))
        }

        /// Notifications carry Apple's names and keys, the query as object,
        /// and the same item objects from one update to the next.
        @Test func updatesCarryTheSameItemObjects() throws {
            let (root, notes) = try fixture()
            let environment = root.activate()
            defer { environment.restore() }
            let query = NSMetadataQuery()
            query.predicate = NSPredicate(format: "%K LIKE[c] %@", NSMetadataItemFSNameKey, "*.TXT")
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.notificationBatchingInterval = 0.05
            let recorder = CompatRecorder(query)
            #expect(query.start())
            defer { query.stop() }
            #expect(recorder.waitForFinish())
            #expect(recorder.kinds.first == .start)
            #expect(recorder.records.withLock { $0.allSatisfy { $0.object === query } })
            let position = try #require(query.resultNames.firstIndex(of: "a.txt"))
            let a = try #require(query.result(at: position) as? NSMetadataItem)
            try FileManager.default.moveItem(
                atPath: notes.appending("Documents/a.txt").string, toPath: notes.appending("Documents/z.txt").string)
            #expect(recorder.wait { recorder.updates.contains { $0.changed.contains { $0 === a } } })
            #expect(a.value(forAttribute: NSMetadataItemFSNameKey) as? String == "z.txt")
            #expect(query.index(ofResult: a) != NSNotFound)
            try FileManager.default.removeItem(atPath: notes.appending("Documents/z.txt").string)
            #expect(recorder.wait { recorder.updates.contains { $0.removed.contains { $0 === a } } })
            #expect(query.index(ofResult: a) == NSNotFound)
        }
    }
}
