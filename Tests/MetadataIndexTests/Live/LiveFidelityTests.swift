import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MDQWatch
@testable import MetadataIndex

/// What a sync client does with a live query's updates: uploads what is
/// added or changed, deletes what is removed, keyed by the item's id and
/// the path it was told. The tests check what it ends up deciding.
final class SyncClient: @unchecked Sendable {
    // Touched only on the query's delivery queue, and read after it drains.
    private(set) var files: [UInt64: [UInt8]] = [:]
    private(set) var deleted: [String] = []
    private(set) var uploaded: [String] = []
    private var token: (any NSObjectProtocol)?

    init(_ query: MetadataQuery) {
        token = NotificationCenter.default.addObserver(forName: .metadataQueryDidUpdate, object: query, queue: nil) {
            [unowned self] note in
            guard let update = note.userInfo?[MetadataQuery.updateKey] as? MetadataQuery.Update else { return }
            // Removals first, as a careless client would.
            for item in update.removed {
                deleted.append(item.path.string)
                files[item.id] = nil
            }
            for item in update.changed + update.added {
                uploaded.append(item.path.string)
                files[item.id] = item.pathBytes
            }
        }
    }

    /// Starts from the query's first results.
    func adopt(_ results: [MetadataItem]) {
        for item in results { files[item.id] = item.pathBytes }
    }

    deinit {
        if let token { NotificationCenter.default.removeObserver(token) }
    }
}

extension LiveSuites {
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct LiveFidelityTests {
        func start(
            _ predicate: String, scopes: [SearchScope], interval: Double = 0, engine: LiveEngine? = nil,
            configure: (MetadataQuery) -> Void = { _ in }
        ) throws -> (MetadataQuery, QueryRecorder) {
            let query = engine.map { engine in MetadataQuery(engineProvider: { engine }) } ?? MetadataQuery()
            query.predicate = try MetadataPredicate(predicate)
            query.searchScopes = scopes
            query.notificationBatchingInterval = interval
            configure(query)
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            return (query, recorder)
        }

        func write(_ path: String, _ text: String) {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
            close(fd)
        }

        func modificationTime(_ path: String) -> Timestamp? {
            guard case .success(let status) = FileStatus.of(pathBytes: Array(path.utf8)) else { return nil }
            return status.modificationTime
        }

        /// Editors save by writing a temporary and renaming it over the
        /// file. Whatever the temporary is called, whether the query can see
        /// it, and however updates are batched, the file is changed, never
        /// removed: a client that deletes on `removed` keeps it.
        @Test(arguments: ["notes.txt.tmp", ".notes.txt.swp", "notes.tmp"], [0.0, 0.1])
        func atomicSaveIsAChange(temporary: String, interval: Double) throws {
            let temp = try TemporaryDirectory()
            let base = temp.path.string
            write("\(base)/notes.txt", "one")
            for predicate in ["kMDItemFSName LIKE '*.txt'", "TRUEPREDICATE"] {
                let (query, recorder) = try start(predicate, scopes: [.directory(temp.path)], interval: interval)
                let client = SyncClient(query)
                client.adopt(query.results)
                let original = try #require(query.results.first { $0.name == "notes.txt" })
                for round in 1...3 {
                    write("\(base)/\(temporary)", String(repeating: "x", count: round * 10))
                    #expect(rename("\(base)/\(temporary)", "\(base)/notes.txt") == 0)
                    #expect(
                        recorder.wait {
                            query.results.first { $0.name == "notes.txt" }?.metadata.size == UInt64(round * 10)
                        })
                }
                query.deliveryQueue.sync {}
                #expect(!client.deleted.contains("\(base)/notes.txt"), "\(predicate): \(client.deleted)")
                #expect(client.files[original.id] == Array("\(base)/notes.txt".utf8))
                #expect(query.index(ofResult: original) != nil, "the same item, found by identity")
                let (problems, _) = replay(recorder.deliveredUpdates, on: [])
                #expect(!problems.contains { $0.hasPrefix("removed and added") }, "\(problems)")
                query.stop()
            }
        }

        /// The replacement may come in a later engine batch than the
        /// removal of the file it replaces; within one delivery it is still
        /// a change of the item that was there.
        /// A folder's dates are the disk's even when something is made in
        /// it between the listing of its parent (which read them) and its
        /// watch (the crawl slowed down there on purpose): in the first
        /// gather, and in the crawl of a folder moved into the scope.
        @Test(arguments: [false, true])
        func aFolderChangedBeforeItsWatchKeepsItsDates(movedIn: Bool) throws {
            let temp = try TemporaryDirectory()
            let root = try temp.folder("root")
            let outside = try temp.folder("outside")
            let folder = (movedIn ? outside : root).appending("x")
            #expect(mkdir(folder.string, 0o755) == 0)
            let engine = try LiveEngine(crawlThreads: 1)
            defer { engine.shutdown() }
            let made = Locked(false)
            engine.crawlHook.withLock {
                $0 = { id in
                    let path = engine.state.withLock { $0.pathBytes(of: id.rawValue) }
                    guard path.last == UInt8(ascii: "x"), !made.withLock({ $0 }) else { return }
                    made.withLock { $0 = true }
                    // Past the timestamp clock's tick, so the dates differ.
                    usleep(20_000)
                    let late = String(decoding: path, as: UTF8.self) + "/late.txt"
                    _ = FileManager.default.createFile(atPath: late, contents: nil)
                }
            }
            let (query, recorder) = try start("TRUEPREDICATE", scopes: [.directory(root)], engine: engine)
            if movedIn {
                #expect(rename(folder.string, root.appending("x").string) == 0)
            }
            var differences: [String] = []
            let converged = recorder.wait(timeout: 20) {
                guard let fresh = try? freshItems(roots: [CrawlRoot(path: root)], MetadataPredicate("TRUEPREDICATE"))
                else { return false }
                differences = attributeDifferences(query.results, fresh)
                return differences.isEmpty && fresh.count == 2
            }
            #expect(made.withLock { $0 })
            #expect(converged, "\(differences)")
            query.stop()
        }

        /// Folders swapped between their parent's listing and their own
        /// opening (`mv b t; mv c b; mv t c`, the crawl slowed down there on
        /// purpose): each name then leads to the other folder. Neither is
        /// listed or watched as the other, or its entry would hold the other
        /// folder's contents and hear its events wherever the swap's
        /// renames take it. In the first gather and in the crawl of a tree
        /// moved in, on inotify and on one fanotify mark, the query equals
        /// the disk, and files made afterwards in every folder are found.
        @Test(arguments: [false, true], [false, true])
        func foldersSwappedBeforeTheyAreOpenedAreNotTakenForEachOther(movedIn: Bool, fanotify: Bool) throws {
            // Marks need root and loop devices (CI has both).
            if fanotify && !LoopFilesystem.isAvailable { return }
            let filesystem = fanotify ? try LoopFilesystem() : nil
            let temp = try TemporaryDirectory()
            let base = filesystem?.mountPoint ?? temp.path
            let root = base.appending("root")
            let tree = (movedIn ? base.appending("outside") : root).appending("t")
            for name in ["a", "b", "c"] {
                try FileManager.default.createDirectory(
                    atPath: tree.appending("\(name)/inner").string, withIntermediateDirectories: true)
                write(tree.appending("\(name)/inner/\(name).txt").string, name)
            }
            try FileManager.default.createDirectory(atPath: root.string, withIntermediateDirectories: true)
            let engine = try LiveEngine(crawlThreads: 1, fanotify: fanotify ? FanotifyWatcher() : nil)
            defer { engine.shutdown() }
            let swapped = Locked<String?>(nil)
            engine.crawlHook.withLock {
                $0 = { id in
                    let path = FilePath.fromBytes(engine.state.withLock { $0.pathBytes(of: id.rawValue) })
                    guard let name = path.lastComponent?.string, ["a", "b", "c"].contains(name),
                        path.removingLastComponent().lastComponent?.string == "t", swapped.withLock({ $0 }) == nil
                    else { return }
                    // The first of the three opened swaps the other two,
                    // which the crawl opens by name next.
                    let others = ["a", "b", "c"].filter { $0 != name }
                    let folder = path.removingLastComponent()
                    _ = rename(folder.appending(others[0]).string, folder.appending("swap").string)
                    _ = rename(folder.appending(others[1]).string, folder.appending(others[0]).string)
                    _ = rename(folder.appending("swap").string, folder.appending(others[1]).string)
                    swapped.withLock { $0 = name }
                }
            }
            let (query, recorder) = try start("TRUEPREDICATE", scopes: [.directory(root)], engine: engine)
            let initial = recorder.initialResults
            if movedIn {
                #expect(rename(tree.string, root.appending("t").string) == 0)
            }
            try expectLiveQueryConverges(query, recorder, initial: initial, "TRUEPREDICATE", "swapped") {
                try freshItems(roots: [CrawlRoot(path: root)], $0, hidden: false)
            }
            #expect(swapped.withLock { $0 } != nil, "the crawl met the three folders")
            for name in ["a", "b", "c"] { write(root.appending("t/\(name)/inner/later.txt").string, name) }
            try expectLiveQueryConverges(query, recorder, initial: initial, "TRUEPREDICATE", "later") {
                try freshItems(roots: [CrawlRoot(path: root)], $0, hidden: false)
            }
            query.stop()
        }

        @Test func replacementInALaterBatchIsStillAChange() throws {
            let temp = try TemporaryDirectory()
            let base = temp.path.string
            write("\(base)/a.txt", "old")
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let (query, recorder) = try start("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            let original = query.results[0]
            // What the paused query has taken from the engine so far (the
            // engine publishes a batch just after indexing it).
            func taken(_ test: (MetadataItem) -> Bool) -> Bool {
                query.state.withLock { $0.results.currentItems().contains(where: test) }
            }
            query.disableUpdates()
            #expect(unlink("\(base)/a.txt") == 0)
            #expect(recorder.wait { !taken { $0.name == "a.txt" } }, "the removal is taken on its own")
            // Taken as written (its size may be seen at 0 first).
            write("\(base)/a.txt", "new contents")
            #expect(recorder.wait { taken { $0.name == "a.txt" && $0.metadata.size == 12 } })
            query.enableUpdates()
            #expect(recorder.wait { !recorder.deliveredUpdates.isEmpty })
            query.deliveryQueue.sync {}
            let updates = recorder.deliveredUpdates
            #expect(updates.flatMap(\.removed).isEmpty && updates.flatMap(\.added).isEmpty)
            #expect(updates.flatMap(\.changed).map(\.id) == [original.id])
            #expect(updates.flatMap(\.changed).first?.metadata.size == 12)
            query.stop()
        }

        /// A folder replaced by a folder (renamed over it) is a change of
        /// the folder that was there; what came inside the new one moved.
        @Test func folderReplacedByAFolderIsAChange() throws {
            let temp = try TemporaryDirectory()
            let base = temp.path.string
            _ = try temp.folder("site")
            try temp.file("site.new/index.html", contents: "hi")
            let (query, recorder) = try start("TRUEPREDICATE", scopes: [.directory(temp.path)], interval: 0.2)
            let site = try #require(query.results.first { $0.name == "site" })
            let staging = try #require(query.results.first { $0.name == "site.new" })
            let page = try #require(query.results.first { $0.name == "index.html" })
            #expect(rename("\(base)/site.new", "\(base)/site") == 0)
            #expect(recorder.wait { query.results.contains { $0.path.string == "\(base)/site/index.html" } })
            query.deliveryQueue.sync {}
            let updates = recorder.deliveredUpdates
            #expect(Set(updates.flatMap(\.changed).map(\.id)) == [site.id, page.id])
            #expect(updates.flatMap(\.removed).map(\.id) == [staging.id])
            #expect(updates.flatMap(\.added).isEmpty)
            let moved = try #require(updates.flatMap(\.changed).first { $0.id == page.id })
            #expect(updates.compactMap { $0.previousPath(of: moved) }.first?.string == "\(base)/site.new/index.html")
            query.stop()
        }

        /// A `chmod` or `chown` changes no date or size, only what says
        /// who owns the entry and who may use it: a query testing those
        /// gains and loses the file, one holding it reports it changed,
        /// and every item's owner, group and mode are the disk's.
        @Test func chmodAndChownAreChanges() throws {
            let temp = try TemporaryDirectory()
            let base = temp.path.string
            write("\(base)/a.txt", "x")
            #expect(chmod("\(base)/a.txt", 0o644) == 0)
            _ = try temp.folder("d")
            #expect(chmod("\(base)/d", 0o755) == 0)
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let scopes: [SearchScope] = [.directory(temp.path)]
            let (all, recorder) = try start("TRUEPREDICATE", scopes: scopes, engine: engine)
            let (owned, _) = try start(
                "kMDQItemFSPOSIXPermissions == 0o600 || kMDItemFSOwnerUserID == 65534", scopes: scopes, engine: engine)
            #expect(owned.results.isEmpty)
            let file = try #require(all.results.first { $0.name == "a.txt" })
            func value(_ item: MetadataItem?, _ key: String) -> Int64? {
                (item?.value(forAttribute: key) as? Int).map(Int64.init)
            }
            let steps: [(String, () -> Int32, [String])] = [
                ("chmod 600", { chmod("\(base)/a.txt", 0o600) }, ["a.txt"]),
                ("chown nobody", { chown("\(base)/a.txt", 65534, 100) }, ["a.txt"]),
                ("chmod 644", { chmod("\(base)/a.txt", 0o644) }, ["a.txt"]),
                ("chown root", { chown("\(base)/a.txt", 0, 0) }, []),
                ("chmod the folder", { chmod("\(base)/d", 0o700) }, []),
            ]
            for (step, change, expected) in steps {
                let before = recorder.deliveredUpdates.count
                #expect(change() == 0, "\(step)")
                var status = stat()
                _ = lstat("\(base)/a.txt", &status)
                #expect(
                    recorder.wait {
                        let item = all.results.first { $0.name == "a.txt" }
                        return value(item, "kMDQItemFSPOSIXPermissions") == Int64(status.st_mode & 0o7777)
                            && value(item, "kMDItemFSOwnerUserID") == Int64(status.st_uid)
                            && value(item, "kMDItemFSOwnerGroupID") == Int64(status.st_gid)
                            && value(all.results.first { $0.name == "d" }, "kMDQItemFSPOSIXPermissions")
                                == (step == "chmod the folder" ? 0o700 : 0o755)
                    }, "\(step)")
                #expect(waitUntil(timeout: 10, interval: 0.01) { owned.results.map(\.name) == expected }, "\(step)")
                all.deliveryQueue.sync {}
                let changed = recorder.deliveredUpdates.dropFirst(before).flatMap(\.changed)
                let name = step == "chmod the folder" ? "d" : "a.txt"
                #expect(changed.contains { $0.name == name }, "\(step): a change")
                #expect(
                    recorder.deliveredUpdates.dropFirst(before).allSatisfy { $0.added.isEmpty && $0.removed.isEmpty })
                #expect(all.results.first { $0.name == "a.txt" }?.id == file.id)
            }
            let fresh = try freshItems(roots: [CrawlRoot(path: temp.path)], .alwaysTrue)
            #expect(attributeDifferences(all.results, fresh).isEmpty)
            all.stop()
            owned.stop()
        }

        /// Creating, deleting or moving an entry changes its folder's dates:
        /// the folder is a changed item and its attributes equal the disk's.
        @Test func folderDatesFollowTheirContents() throws {
            let temp = try TemporaryDirectory()
            let base = temp.path.string
            try temp.file("f/old.txt")
            _ = try temp.folder("g")
            let (query, recorder) = try start("kMDItemFSName LIKE '?'", scopes: [.directory(temp.path)])
            func current(_ name: String) -> MetadataItem? { query.results.first { $0.name == name } }
            for step in 0..<3 {
                let before = recorder.deliveredUpdates.count
                switch step {
                case 0: write("\(base)/f/new.txt", "x")
                case 1: #expect(unlink("\(base)/f/old.txt") == 0)
                default: #expect(rename("\(base)/f/new.txt", "\(base)/g/new.txt") == 0)
                }
                let folders = step == 2 ? ["f", "g"] : ["f"]
                #expect(
                    recorder.wait {
                        folders.allSatisfy {
                            current($0)?.metadata.modificationTime == modificationTime("\(base)/\($0)")
                        }
                    }, "step \(step)")
                query.deliveryQueue.sync {}
                let changed = Set(recorder.deliveredUpdates.dropFirst(before).flatMap(\.changed).map(\.name))
                #expect(changed.isSuperset(of: folders), "step \(step): \(changed)")
            }
            let fresh = try freshItems(
                roots: [CrawlRoot(path: temp.path)], try MetadataPredicate("kMDItemFSName LIKE '?'"))
            #expect(attributeDifferences(query.results, fresh).isEmpty)
            query.stop()
        }

        /// A client that caches items (or their positions) across a folder
        /// rename keeps correct identities: every item inside is the same
        /// item, at its new path, with the old one to match on.
        @Test func identitiesSurviveAFolderRename() throws {
            let temp = try TemporaryDirectory()
            let base = temp.path.string
            for i in 0..<5 { try temp.file("album/photo\(i).jpg") }
            let (query, recorder) = try start(
                "kMDItemFSName LIKE '*.jpg'", scopes: [.directory(temp.path)], interval: 0.1
            ) { $0.sortDescriptors = [MetadataSortDescriptor(key: "kMDItemFSName")] }
            let cached = query.results
            let client = SyncClient(query)
            client.adopt(cached)
            #expect(rename("\(base)/album", "\(base)/Album 2025") == 0)
            #expect(recorder.wait { query.results.allSatisfy { $0.path.string.hasPrefix("\(base)/Album 2025/") } })
            query.deliveryQueue.sync {}
            for (position, item) in cached.enumerated() {
                #expect(query.index(ofResult: item) == position)
                #expect(query.result(at: position).id == item.id)
                #expect(client.files[item.id] == Array("\(base)/Album 2025/\(item.name)".utf8))
            }
            #expect(client.deleted.isEmpty)
            let update = try #require(recorder.deliveredUpdates.last)
            #expect(update.changed.allSatisfy { update.previousPath(of: $0)?.string == "\(base)/album/\($0.name)" })
            query.stop()
        }

        /// Excluded folders are results but neither crawled nor watched:
        /// their contents cost no watch and no memory; renaming a folder to
        /// or from an excluded name follows.
        @Test func excludedFoldersCostNoWatches() throws {
            let temp = try TemporaryDirectory()
            let base = temp.path.string
            for folder in ["src/a", "src/b"] { try temp.file("\(folder)/main.swift") }
            for package in 0..<10 { try temp.file("node_modules/p\(package)/lib/index.js") }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let (query, recorder) = try start("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine) {
                $0.excludedFolderNames = ["node_modules"]
            }
            // The scope, src, src/a, src/b, and node_modules itself (for its own dates).
            #expect(engine.watchCount == 5)
            #expect(engine.entryCount == 7, "the scope, src, a, b, two files, node_modules")
            #expect(query.results.contains { $0.name == "node_modules" })
            #expect(!query.results.contains { $0.name == "index.js" })
            // Something made inside is not a result; the folder's own date changes.
            write("\(base)/node_modules/.package-lock.json", "{}")
            #expect(
                recorder.wait {
                    query.results.first { $0.name == "node_modules" }?.metadata.modificationTime
                        == modificationTime("\(base)/node_modules")
                })
            // Renamed out of the excluded name: crawled, watched, reported.
            #expect(rename("\(base)/node_modules", "\(base)/vendor") == 0)
            #expect(recorder.wait { query.results.filter { $0.name == "index.js" }.count == 10 })
            #expect(recorder.wait { engine.watchCount == 5 + 20 })
            // And back: its contents leave, with their watches.
            #expect(rename("\(base)/vendor", "\(base)/node_modules") == 0)
            #expect(recorder.wait { !query.results.contains { $0.name == "index.js" } })
            #expect(recorder.wait { engine.watchCount == 5 })
            let fresh = try freshItems(
                roots: [CrawlRoot(path: temp.path)], .alwaysTrue, hidden: false
            )
            .filter { !$0.key.starts(with: Array("\(base)/node_modules/".utf8)) }
            #expect(recorder.wait { attributeDifferences(query.results, fresh).isEmpty })
            query.stop()
        }

        /// A scope that excludes a folder and one that does not share the
        /// engine's root: the second still finds what is inside it.
        @Test func scopesWithDifferentExclusionsShareARoot() throws {
            let temp = try TemporaryDirectory()
            for package in 0..<3 { try temp.file("node_modules/p\(package)/index.js") }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let (excluding, _) = try start("kMDItemFSName LIKE '*.js'", scopes: [.directory(temp.path)], engine: engine)
            {
                $0.excludedFolderNames = ["node_modules"]
            }
            #expect(excluding.resultCount == 0)
            let (including, recorder) = try start(
                "kMDItemFSName LIKE '*.js'", scopes: [.directory(temp.path)], engine: engine)
            #expect(including.resultCount == 3)
            try temp.file("node_modules/p9/index.js")
            #expect(recorder.wait { including.resultCount == 4 })
            #expect(excluding.resultCount == 0)
            including.stop()
            excluding.stop()
        }

        /// iCloud clients rely on dot-files in the container being reported
        /// (Apple documents the ubiquitous scopes as every file of the
        /// container); folder scopes leave them out as Spotlight does, and
        /// `includesHiddenItems` decides for every scope when set.
        @Test func ubiquitousScopesReportHiddenItems() throws {
            let temp = try TemporaryDirectory()
            try temp.file("container/Documents/.encrypt")
            try temp.file("container/Documents/note.md")
            let container = UbiquityContainer(path: temp.path.appending("container"))
            let (ubiquitous, _) = try start("TRUEPREDICATE", scopes: [.ubiquitousDocuments]) {
                $0.container = container
            }
            #expect(Set(ubiquitous.results.map(\.name)) == [".encrypt", "note.md"])
            let (folder, _) = try start("TRUEPREDICATE", scopes: [.directory(container.documentsPath)])
            #expect(folder.results.map(\.name) == ["note.md"])
            let (forced, _) = try start("TRUEPREDICATE", scopes: [.ubiquitousDocuments]) {
                $0.container = container
                $0.includesHiddenItems = false
            }
            #expect(forced.results.map(\.name) == ["note.md"])
            for query in [ubiquitous, folder, forced] { query.stop() }
        }

        /// Predicates on the ubiquitous keys hold live: the conflict flag
        /// follows conflict copies as they come and go, and only items in
        /// the container are ubiquitous when a query mixes it with a folder.
        @Test func ubiquitousKeysInLivePredicates() throws {
            let temp = try TemporaryDirectory()
            try temp.file("container/Documents/plan.txt")
            try temp.file("local/notes.txt")
            let container = UbiquityContainer(path: temp.path.appending("container"))
            let (conflicted, recorder) = try start(
                "NSMetadataUbiquitousItemHasUnresolvedConflictsKey == YES", scopes: [.ubiquitousDocuments]
            ) { $0.container = container }
            #expect(conflicted.resultCount == 0)
            try temp.file("container/Documents/plan (conflicted copy 2025-01-31).txt")
            #expect(recorder.wait { conflicted.results.map(\.name) == ["plan.txt"] })
            #expect(
                unlink(temp.path.appending("container/Documents/plan (conflicted copy 2025-01-31).txt").string) == 0)
            #expect(recorder.wait { conflicted.resultCount == 0 })
            let (ubiquitous, mixedRecorder) = try start(
                "NSMetadataItemIsUbiquitousKey == YES AND kMDItemFSName LIKE '*.txt'",
                scopes: [.ubiquitousDocuments, .directory(temp.path.appending("local"))]
            ) { $0.container = container }
            #expect(ubiquitous.results.map(\.name) == ["plan.txt"])
            try temp.file("local/more.txt")
            try temp.file("container/Documents/more.txt")
            #expect(
                mixedRecorder.wait {
                    Set(ubiquitous.results.map(\.path.string)) == [
                        temp.path.appending("container/Documents/plan.txt").string,
                        temp.path.appending("container/Documents/more.txt").string,
                    ]
                })
            conflicted.stop()
            ubiquitous.stop()
        }

        /// A problem is reported once, however it grows; `errors` keeps the
        /// current state.
        @Test func problemsAreReportedOnce() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<4 { try temp.file("f\(i)/x.txt") }
            let engine = try LiveEngine(watchLimit: 2, crawlThreads: 2)
            defer { engine.shutdown() }
            let reports = Locked<[MetadataError]>([])
            let (query, recorder) = try start("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine) {
                query in
                _ = NotificationCenter.default.addObserver(
                    forName: .metadataQueryDidReportProblem, object: query, queue: nil
                ) { note in
                    if let error = note.userInfo?[MetadataQuery.problemKey] as? MetadataError {
                        reports.withLock { $0.append(error) }
                    }
                }
            }
            #expect(recorder.wait { reports.withLock { $0.count } == 1 })
            #expect(query.errors.count == 1)
            // More unwatched folders: still one problem, its count updated.
            for i in 4..<8 { try temp.file("f0/sub\(i)/y.txt") }
            _ = try temp.file("marker.txt")
            #expect(recorder.wait { query.results.contains { $0.name == "marker.txt" } })
            query.deliveryQueue.sync {}
            #expect(reports.withLock { $0.count } == 1)
            #expect(reports.withLock { $0.first?.message.contains("inotify watch limit") } == true)
            query.stop()
        }

        /// Folders refused a watch for lack of watches are watched once
        /// watches free up (here the engine's own limit is lifted; another
        /// process of the user freeing its own watches is the same to the
        /// engine): the problem goes, and changes in those folders are
        /// found, including one made while they were unwatched.
        @Test func foldersRefusedForLackOfWatchesAreWatchedOnceWatchesFree() throws {
            let temp = try TemporaryDirectory()
            for i in 0..<6 { try temp.file("f\(i)/x.txt") }
            let interval = LiveEngine.watchRetryInterval.withLock { $0 }
            LiveEngine.watchRetryInterval.withLock { $0 = .milliseconds(100) }
            defer { LiveEngine.watchRetryInterval.withLock { $0 = interval } }
            let engine = try LiveEngine(watchLimit: 2, crawlThreads: 2)
            defer { engine.shutdown() }
            let (query, recorder) = try start("TRUEPREDICATE", scopes: [.directory(temp.path)], engine: engine)
            #expect(recorder.wait { !query.errors.isEmpty })
            #expect(query.errors.first?.message.contains("inotify watch limit") == true, "\(query.errors)")
            // Made while most folders are unwatched: no event tells of it.
            for i in 0..<6 { try temp.file("f\(i)/unseen.txt") }
            engine.setWatchLimit(nil)
            #expect(recorder.wait { engine.watchCount == 7 }, "\(engine.watchCount) watches")
            #expect(recorder.wait { query.errors.isEmpty }, "\(query.errors)")
            #expect(recorder.wait { query.results.filter { $0.name == "unseen.txt" }.count == 6 })
            try temp.file("f5/later.txt")
            #expect(recorder.wait { query.results.contains { $0.name == "later.txt" } })
            query.stop()
        }
    }
}
