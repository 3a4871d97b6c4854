import MetadataIndex

// One-shot, streaming: nothing is stat'ed that is not asked for.
let search = OneShotSearch(
    roots: [CrawlRoot(path: "/home/me/Sync/Documents")],
    predicate: try MetadataPredicate("kMDItemFSName LIKE[c] '*.pdf'"))
try search.run(onBatch: { batch in
    for i in 0..<batch.count { print(batch[i].path) }
})

// Or gather everything into the in-memory index and query it.
let index = FileIndex()
try index.gather([CrawlRoot(path: "/home/me/Sync")])
for id in index.entries(matching: try MetadataPredicate("kMDItemDisplayName BEGINSWITH[cd] 'resume'")) {
    print(index.path(of: id), index.metadata(of: id).size ?? 0)
}
