import Foundation
import MetadataCompat  // the one line an Apple-platform file adds

let query = NSMetadataQuery()
query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
query.predicate = NSPredicate(format: "%K LIKE %@", NSMetadataItemFSNameKey, "*.txt")
query.sortDescriptors = [NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: true)]

let observer = NotificationCenter.default.addObserver(
    forName: .NSMetadataQueryDidUpdate, object: query, queue: .main
) { note in
    query.disableUpdates()
    defer { query.enableUpdates() }
    let added = note.userInfo?[NSMetadataQueryUpdateAddedItemsKey] as? [NSMetadataItem] ?? []
    for item in added {
        let url = item.value(forAttribute: NSMetadataItemURLKey) as? URL
        let size = item.value(forAttribute: NSMetadataItemFSSizeKey) as? Int64
        print("+", url?.path ?? "?", size ?? 0)
    }
}
query.start()
RunLoop.main.run()
