import Foundation
import MetadataCompat
import MetadataIndex
import SystemPackage
import Testing

extension CompatSuites {
    /// `value(forAttribute:)` answers with the types Apple's does, so the
    /// casts Apple code writes succeed.
    @Suite(.serialized, .timeLimit(.minutes(1)))
    struct NSMetadataItemValueTests {
        /// One query result: `Documents/report.txt` (12 bytes) in the only
        /// container, found through the default container.
        func report(in root: ContainersRoot) throws -> (NSMetadataQuery, NSMetadataItem) {
            let notes = try root.container("iCloud~com~example~notes")
            try Data("twelve bytes".utf8).write(
                to: URL(fileURLWithPath: notes.appending("Documents/report.txt").string))
            let query = NSMetadataQuery()
            let recorder = CompatRecorder(query)
            query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
            query.predicate = NSPredicate(format: "%K == %@", NSMetadataItemFSNameKey, "report.txt")
            #expect(query.start())
            #expect(recorder.waitForFinish())
            let item = try #require(query.results.first as? NSMetadataItem)
            return (query, item)
        }

        @Test func numbersAreNSNumbersThatCastLikeApples() throws {
            let root = try ContainersRoot()
            let environment = root.activate()
            defer { environment.restore() }
            let (query, item) = try report(in: root)
            defer { query.stop() }
            let size = item.value(forAttribute: NSMetadataItemFSSizeKey)
            #expect(size is NSNumber)
            #expect(size as? Int64 == 12)
            #expect(size as? Int == 12)
            #expect(size as? Double == 12)
            #expect((size as? NSNumber)?.int64Value == 12)
            let percent = item.value(forAttribute: NSMetadataUbiquitousItemPercentDownloadedKey)
            #expect(percent is NSNumber)
            #expect(percent as? Double == 100)
            #expect(percent as? Int == 100)
            let uploaded = item.value(forAttribute: NSMetadataUbiquitousItemIsUploadedKey)
            #expect(uploaded is NSNumber)
            #expect(uploaded as? Bool == true)
            #expect((uploaded as? NSNumber)?.boolValue == true)
            #expect(item.value(forAttribute: NSMetadataUbiquitousItemIsDownloadingKey) as? Bool == false)
            #expect(item.value(forAttribute: NSMetadataItemIsUbiquitousKey) as? Bool == true)
            #expect(item.value(forAttribute: NSMetadataUbiquitousItemHasUnresolvedConflictsKey) as? Bool == false)
        }

        @Test func urlsDatesAndTextHaveTheirFoundationTypes() throws {
            let root = try ContainersRoot()
            let environment = root.activate()
            defer { environment.restore() }
            let (query, item) = try report(in: root)
            defer { query.stop() }
            let path = root.path.appending("iCloud~com~example~notes/Documents/report.txt").string
            let url = try #require(item.value(forAttribute: NSMetadataItemURLKey) as? URL)
            #expect(url.isFileURL && url.path == path)
            #expect(item.value(forAttribute: NSMetadataItemPathKey) as? String == path)
            #expect(item.value(forAttribute: NSMetadataItemFSNameKey) as? String == "report.txt")
            #expect(item.value(forAttribute: NSMetadataItemDisplayNameKey) as? String == "report")
            let modified = try #require(item.value(forAttribute: NSMetadataItemFSContentChangeDateKey) as? Date)
            #expect(abs(modified.timeIntervalSinceNow) < 3600)
            #expect(item.value(forAttribute: NSMetadataItemContentTypeKey) as? String == "public.plain-text")
            #expect(
                (item.value(forAttribute: NSMetadataItemContentTypeTreeKey) as? [String])?.contains("public.text")
                    == true)
            #expect(
                item.value(forAttribute: NSMetadataUbiquitousItemDownloadingStatusKey) as? String
                    == NSMetadataUbiquitousItemDownloadingStatusCurrent)
            #expect(
                item.value(forAttribute: NSMetadataUbiquitousItemContainerDisplayNameKey) as? String
                    == "iCloud~com~example~notes")
            // Keys Spotlight reads from contents, and unknown keys: no value.
            #expect(item.value(forAttribute: NSMetadataItemTitleKey) == nil)
            #expect(item.value(forAttribute: "kMDItemNoSuchKey") == nil)
            let values = try #require(item.values(forAttributes: [NSMetadataItemFSNameKey, NSMetadataItemTitleKey]))
            #expect(values.keys.sorted() == [NSMetadataItemFSNameKey])
            #expect(item.attributes.contains(NSMetadataItemFSSizeKey))
            // The same object again, and its index; NSNotFound for others.
            #expect(query.result(at: 0) as? NSMetadataItem === item)
            #expect(query.index(ofResult: item) == 0)
            #expect(query.index(ofResult: NSMetadataItem()) == NSNotFound)
            #expect(query.index(ofResult: "report.txt") == NSNotFound)
            #expect(query.value(ofAttribute: NSMetadataItemFSSizeKey, forResultAt: 0) as? Int64 == 12)
        }

        /// An item made from a URL reads the file now; inside a container it
        /// has the iCloud keys.
        @Test func anItemCanBeMadeFromAURL() throws {
            let root = try ContainersRoot()
            let notes = try root.container("iCloud~com~example~notes")
            let file = notes.appending("Documents/a.txt")
            try Data("abc".utf8).write(to: URL(fileURLWithPath: file.string))
            let environment = root.activate()
            defer { environment.restore() }
            let item = try #require(NSMetadataItem(url: URL(fileURLWithPath: file.string)))
            #expect(item.value(forAttribute: NSMetadataItemFSSizeKey) as? Int64 == 3)
            #expect(item.value(forAttribute: NSMetadataItemIsUbiquitousKey) as? Bool == true)
            #expect(NSMetadataItem(url: URL(fileURLWithPath: file.string + ".missing")) == nil)
            #expect(NSMetadataItem(url: URL(string: "https://example.com/a.txt")!) == nil)
        }
    }
}
