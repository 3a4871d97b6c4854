import Foundation
import MetadataIndex

let query = MetadataQuery()
query.container = try UbiquityContainer(identifier: "iCloud~com~example~notes")
query.searchScopes = [.ubiquitousDocuments]
query.predicate = try MetadataPredicate("kMDItemFSName LIKE[c] '*.md'")
query.sortDescriptors = [MetadataSortDescriptor(key: "kMDItemFSName")]

let observer = NotificationCenter.default.addObserver(
    forName: .metadataQueryDidUpdate, object: query, queue: nil
) { note in
    query.disableUpdates()
    defer { query.enableUpdates() }
    let added = note.userInfo?[MetadataQuery.addedItemsKey] as? [MetadataItem] ?? []
    for item in added { print("+", item.path, item.value(forAttribute: "kMDItemFSSize") ?? "") }
}
query.start()  // posts did start gathering before it returns

// or, with Swift concurrency:
for await event in query.events {
    if case .didUpdate(let update) = event { print(update.added.count, "added") }
}
