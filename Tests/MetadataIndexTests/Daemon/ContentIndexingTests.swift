import Foundation
import Glibc
import MDQWire
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

extension LiveSuites {
    /// The daemon's content indexing: files imported as they settle, live
    /// queries on what is inside them, the store kept equal to the index
    /// across renames, deletions, restarts and damage.
    @Suite(.serialized, .timeLimit(.minutes(3)))
    struct ContentIndexingTests {
        static let predicate = "kMDItemTextContent CONTAINS[c] 'invoice'"

        /// A daemon importing with a short settle time (the worker beside
        /// the test binary).
        static func start(
            _ paths: DaemonPaths, log: @escaping @Sendable (String) -> Void = { _ in }
        ) throws -> IndexDaemon {
            var content = IndexDaemon.ContentIndexing(workers: 2, settle: 0.05)
            content.workerExecutable = ImportWorkerPool.Configuration.standard.executable
            return try IndexDaemon.start(paths: paths, crawlThreads: 2, content: content, log: log)
        }

        static func waitUntil(_ condition: () throws -> Bool) rethrows -> Bool {
            try TestSupport.waitUntil(timeout: 30, condition)
        }

        /// The files a fresh crawl that imports every file finds for
        /// `predicate`.
        static func fresh(_ tree: FilePath, _ predicate: String = predicate) throws -> Set<String> {
            let found = try freshItems(roots: [CrawlRoot(path: tree)], MetadataPredicate(predicate))
            return Set(found.keys.map { String(decoding: $0, as: UTF8.self) })
        }

        /// What the daemon answers (one-shot) for `predicate` over `tree`.
        static func answered(_ paths: DaemonPaths, _ tree: FilePath, _ predicate: String = predicate) throws -> Set<
            String
        > {
            let answer = try DaemonClient.connect(paths).query(
                Array(predicate.utf8), scopes: [ScopeRequest(path: tree, rules: ScopeRules())], output: .paths)
            return Set(answer.paths.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
        }

        /// A live query served by the daemon on `tree`, delivering at once,
        /// started and gathered.
        static func liveQuery(
            _ paths: DaemonPaths, _ tree: FilePath, _ predicate: String = predicate, fetching: [String] = []
        ) throws -> (MetadataQuery, QueryRecorder) {
            let query = MetadataQuery(source: .daemon(paths))
            query.predicate = try MetadataPredicate(predicate)
            query.searchScopes = [.directory(tree)]
            query.fetchedAttributes = fetching
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            return (query, recorder)
        }

        static func pending(_ paths: DaemonPaths) throws -> Int {
            try DaemonClient.connect(paths).status().content?.pending ?? -1
        }

        static func write(_ path: FilePath, _ text: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path.string))
        }

        /// Writes a new version beside the file and renames it over the
        /// file, as editors save.
        static func atomicSave(_ path: FilePath, _ text: String) throws {
            let temporary = path.removingLastComponent().appending(".\(path.lastComponent!.string).tmp")
            try write(temporary, text)
            #expect(rename(temporary.string, path.string) == 0)
        }

        /// One-shot answers and status: what the daemon imported is
        /// searched by content, with PDF text and page counts alike.
        @Test func theDaemonAnswersOnWhatIsInsideFiles() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            try Self.write(tree.appending("a.txt"), "The INVOICE for March")
            try Self.write(tree.appending("b.md"), "# Notes\nnothing to pay")
            try Self.write(tree.appending("c.html"), "<p>in<b>voice</b> is split by markup: not a match</p>")
            let fixtures = FilePath(#filePath).removingLastComponent().removingLastComponent().removingLastComponent()
                .appending("Fixtures/import")
            #expect(copyfile(fixtures.appending("invoice.pdf"), tree.appending("scan.pdf")))
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.start(paths)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            let expected = try Self.fresh(tree)
            #expect(expected == [tree.appending("a.txt").string, tree.appending("scan.pdf").string])
            #expect(try Self.answered(paths, tree) == expected)
            #expect(
                try Self.answered(paths, tree, "kMDItemNumberOfPages == 2") == [tree.appending("scan.pdf").string])
            let status = try DaemonClient.connect(paths).status()
            #expect(status.content?.stored == 4)
        }

        /// A live query on text hears each create, edit, atomic save,
        /// rename and delete once the import lands, and ends where a fresh
        /// crawl does; its updates replay to its results; a rename is not
        /// imported again.
        @Test func aLiveContentQueryFollowsEdits() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            for i in 0..<20 {
                try Self.write(tree.appending("doc-\(i).txt"), i % 4 == 0 ? "invoice \(i)" : "receipt \(i)")
            }
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.start(paths)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            let (query, recorder) = try Self.liveQuery(paths, tree)
            let initial = recorder.initialResults
            #expect(initial.count == 5)
            func converged() -> Bool {
                recorder.wait(timeout: 30) {
                    guard let fresh = try? Self.fresh(tree) else { return false }
                    return Set(query.results.map { String(decoding: $0.pathBytes, as: UTF8.self) }) == fresh
                }
            }
            // Create, edit in place, atomic save, each way.
            try Self.write(tree.appending("new.txt"), "an invoice appears")
            try Self.write(tree.appending("doc-0.txt"), "paid")
            try Self.atomicSave(tree.appending("doc-1.txt"), "Invoice, saved atomically")
            try Self.atomicSave(tree.appending("doc-4.txt"), "no longer")
            #expect(converged())
            // Every import of those edits landed (an edit in place can be
            // read twice, once half written: the results converge on the
            // first reading that matches, the count on the last).
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            let importedBefore = daemon.content!.importedCount
            #expect(rename(tree.appending("doc-8.txt").string, tree.appending("renamed.txt").string) == 0)
            #expect(unlink(tree.appending("doc-12.txt").string) == 0)
            #expect(converged())
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            #expect(daemon.content!.importedCount == importedBefore, "a rename is not imported again")
            query.deliveryQueue.sync {}
            let (problems, _) = replay(recorder.deliveredUpdates, on: initial)
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            #expect(query.errors.isEmpty)
            query.stop()
            // The deleted file's import is gone with it.
            #expect(daemon.content!.store.count == 20)
        }

        /// A seeded storm of writes, atomic saves, renames and deletions
        /// under a live content query converges to a fresh crawl, and the
        /// store holds exactly the files on disk.
        @Test(arguments: [3, 17])
        func aStormConvergesToAFreshImport(seed: UInt64) throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.start(paths)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            let (query, recorder) = try Self.liveQuery(paths, tree)
            var random = SeededGenerator(seed: seed)
            let words = ["invoice", "INVOICE due", "receipt", "notes", ""]
            for _ in 0..<300 {
                let name = tree.appending("f\(random.next() % 12).txt")
                let other = tree.appending("f\(random.next() % 12).txt")
                let text = words[Int(random.next() % UInt64(words.count))] + " \(random.next() % 1000)"
                switch random.next() % 5 {
                case 0, 1: try Self.write(name, text)
                case 2: try Self.atomicSave(name, text)
                case 3: _ = rename(name.string, other.string)
                default: _ = unlink(name.string)
                }
                if random.next() % 8 == 0 { usleep(UInt32(random.next() % 3000)) }
            }
            let converged = recorder.wait(timeout: 30) {
                guard (try? Self.pending(paths)) == 0, let fresh = try? Self.fresh(tree) else { return false }
                return Set(query.results.map { String(decoding: $0.pathBytes, as: UTF8.self) }) == fresh
            }
            #expect(converged)
            query.deliveryQueue.sync {}
            let (problems, _) = replay(recorder.deliveredUpdates, on: [])
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            let onDisk = try FileManager.default.contentsOfDirectory(atPath: tree.string).filter {
                $0.hasSuffix(".txt")
            }
            #expect(Self.waitUntil { daemon.content!.store.count == onDisk.count })
            query.stop()
        }

        /// After a restart the store is checked against the index: files
        /// deleted while the daemon was down are dropped, files changed are
        /// imported again, new files are imported.
        @Test func aRestartChecksTheStoreAgainstTheDisk() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            try Self.write(tree.appending("keep.txt"), "invoice kept")
            try Self.write(tree.appending("gone.txt"), "invoice deleted while down")
            try Self.write(tree.appending("edit.txt"), "nothing yet")
            let paths = IndexDaemonTests.paths(temp)
            do {
                let daemon = try Self.start(paths)
                _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
                #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
                #expect(try Self.answered(paths, tree).count == 2)
                daemon.stop()
            }
            #expect(unlink(tree.appending("gone.txt").string) == 0)
            try Self.write(tree.appending("edit.txt"), "now an invoice, edited while down")
            try Self.write(tree.appending("new.txt"), "invoice made while down")
            let daemon = try Self.start(paths)
            defer { daemon.stop() }
            #expect(
                try Self.waitUntil {
                    try Self.pending(paths) == 0 && Self.answered(paths, tree) == Self.fresh(tree)
                })
            #expect(try Self.answered(paths, tree).count == 3)
            #expect(Self.waitUntil { daemon.content!.store.count == 3 })
        }

        /// A store that is not a database is discarded with one log line and
        /// rebuilt; the daemon answers as before.
        @Test func aDamagedStoreIsRebuilt() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            try Self.write(tree.appending("a.txt"), "invoice")
            let paths = IndexDaemonTests.paths(temp)
            do {
                let daemon = try Self.start(paths)
                _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
                #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
                daemon.stop()
            }
            for suffix in ["-wal", "-shm"] { unlink(paths.contentStore.string + suffix) }
            try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: paths.contentStore.string))
            let lines = Locked<[String]>([])
            let daemon = try Self.start(paths) { line in lines.withLock { $0.append(line) } }
            defer { daemon.stop() }
            #expect(lines.withLock { $0.contains { $0.contains("discarded") } })
            #expect(
                try Self.waitUntil {
                    try Self.pending(paths) == 0 && Self.answered(paths, tree) == [tree.appending("a.txt").string]
                })
        }

        /// The full-text index only narrows: over texts with the awkward
        /// cases (camelCase, hyphens, diacritics, digits, case, a word
        /// inside a word), every predicate on the text answers through the
        /// daemon what a crawl that reads every file answers.
        @Test func theFullTextIndexNeverHidesAMatch() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            let words = [
                "invoice", "INVOICE", "Invoicé", "myInvoice", "in-voice", "reinvoiced", "invoice2024", "2024",
                "tax", "return", "Tax-Return", "taxreturn", "voice", "naïve", "NAIVE", "Straße", "x",
            ]
            var random = SeededGenerator(seed: 5)
            for i in 0..<60 {
                let text = (0..<(1 + Int(random.next() % 6))).map { _ in words[Int(random.next() % 17)] }
                try Self.write(tree.appending("t\(i).txt"), text.joined(separator: i % 2 == 0 ? " " : ", "))
            }
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.start(paths)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            let narrowed = [
                "kMDItemTextContent LIKE[cdw] 'invoice*'", "kMDItemTextContent ==[cw] 'invoice'",
                "kMDItemTextContent LIKE[w] 'Invoice*'", "kMDItemTextContent CONTAINS[c] 'voice'",
                "kMDItemTextContent CONTAINS[cd] 'naive'", "kMDItemTextContent LIKE[c] '*voice*'",
                "kMDItemTextContent CONTAINS 'INVOICE'",
                "kMDItemTextContent LIKE[cdw] 'tax*' && kMDItemFSName LIKE 't1*'",
                "kMDItemTextContent LIKE[cdw] 'tax*' || kMDItemTextContent CONTAINS[c] '2024'",
                "kMDItemTextContent LIKE[cdw] 'return*' && NOT kMDItemTextContent CONTAINS[c] 'tax'",
                "kMDItemTextContent BEGINSWITH[c] 'my'", "kMDItemTextContent CONTAINS[cd] 'strasse'",
                "kMDItemTextContent CONTAINS[c] 'ras'",
            ]
            let unnarrowed = [
                "kMDItemTextContent LIKE[cdw] 'tax retu*'", "kMDItemTextContent LIKE[cw] 'strasse'",
                "NOT kMDItemTextContent CONTAINS[c] 'invoice'", "kMDItemTextContent CONTAINS[c] 'in-voice'",
            ]
            for text in narrowed + unnarrowed {
                let predicate = try MetadataPredicate(text)
                #expect((CompiledPredicate(predicate).textPrefilter != nil) == narrowed.contains(text), "\(text)")
                #expect(try Self.answered(paths, tree, text) == Self.fresh(tree, text), "\(text)")
            }
            #expect(try !Self.answered(paths, tree, "kMDItemTextContent LIKE[cdw] 'invoice*'").isEmpty)
        }

        /// A scope added with no content imports nothing (inside an indexed
        /// folder it excludes a subfolder), keeps that across a restart,
        /// and imports once added again with content.
        @Test func aNamesOnlyScopeImportsNothing() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            try Self.write(tree.appending("a.txt"), "invoice")
            let private_ = try temp.folder("tree/private")
            try Self.write(private_.appending("b.txt"), "invoice, private")
            let paths = IndexDaemonTests.paths(temp)
            do {
                let daemon = try Self.start(paths)
                defer { daemon.stop() }
                let client = try DaemonClient.connect(paths)
                _ = try client.addScope(ScopeRequest(path: private_, rules: ScopeRules()), content: false)
                _ = try client.addScope(ScopeRequest(path: tree, rules: ScopeRules()))
                #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
                #expect(try Self.answered(paths, tree) == [tree.appending("a.txt").string])
                #expect(daemon.content!.store.count == 1)
                // Names are still indexed there.
                let names = try DaemonClient.connect(paths).query(
                    Array("kMDItemFSName == 'b.txt'".utf8), scopes: nil, output: .count)
                #expect(names.count == 1)
            }
            let daemon = try Self.start(paths)
            defer { daemon.stop() }
            #expect(try DaemonClient.connect(paths).status().namesOnlyScopes == [private_])
            try Self.write(private_.appending("c.txt"), "invoice again")
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 && daemon.content!.store.count == 1 })
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: private_, rules: ScopeRules()))
            #expect(
                try Self.waitUntil {
                    try Self.pending(paths) == 0 && Self.answered(paths, tree).count == 3
                })
            #expect(try DaemonClient.connect(paths).status().namesOnlyScopes.isEmpty)
        }

        /// A file that kills its importer costs one worker and that file:
        /// it is recorded as failed with the reason and not tried again
        /// until it changes; the other files are imported and the daemon
        /// answers throughout.
        @Test func aFileThatKillsItsImporterCostsOneFile() throws {
            let temp = try TemporaryDirectory()
            let script = try temp.file("worker", contents: FakeImportWorker.script)
            #expect(chmod(script.string, 0o755) == 0)
            // The fake worker counts its crashes in this file, beside it.
            let crashes = try temp.file("crashes", contents: "")
            setenv("MDQ_REAL_WORKER", ImportWorkerPool.Configuration.standard.executable.string, 1)
            let tree = try temp.folder("tree")
            try Self.write(tree.appending("crash.txt"), "invoice that kills")
            for i in 0..<5 { try Self.write(tree.appending("ok-\(i).txt"), "invoice \(i)") }
            let paths = IndexDaemonTests.paths(temp)
            var content = IndexDaemon.ContentIndexing(workers: 1, settle: 0.05)
            content.workerExecutable = script
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2, content: content)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            #expect(try Self.answered(paths, tree).count == 5)
            let failed = try Self.answered(paths, tree, "kMDQItemImportError LIKE '*crashed*'")
            #expect(failed == [tree.appending("crash.txt").string])
            // A rename or a restart of the query does not try it again.
            #expect(rename(tree.appending("crash.txt").string, tree.appending("crash-renamed.txt").string) == 0)
            try Self.write(tree.appending("ok-9.txt"), "invoice 9")
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 && Self.answered(paths, tree).count == 6 })
            #expect((try? String(contentsOfFile: crashes.string, encoding: .utf8)) == "x")
            // Changed, it is tried again.
            try Self.write(tree.appending("crash-renamed.txt"), "invoice that kills, edited")
            #expect(
                Self.waitUntil { (try? String(contentsOfFile: crashes.string, encoding: .utf8)) == "xx" })
        }

        /// While files wait to be imported, answers and subscriptions on
        /// imported attributes say how many; once imported, they do not.
        @Test func answersSayHowManyFilesAreStillToBeImported() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            for i in 0..<8 { try Self.write(tree.appending("f\(i).txt"), "invoice \(i)") }
            let paths = IndexDaemonTests.paths(temp)
            // A long settle keeps the files waiting while the test looks.
            var content = IndexDaemon.ContentIndexing(workers: 1, settle: 3)
            content.workerExecutable = ImportWorkerPool.Configuration.standard.executable
            let daemon = try IndexDaemon.start(paths: paths, crawlThreads: 2, content: content)
            defer { daemon.stop() }
            _ = try DaemonClient.connect(paths).addScope(ScopeRequest(path: tree, rules: ScopeRules()))
            for i in 0..<8 { try Self.write(tree.appending("f\(i).txt"), "invoice \(i), again") }
            #expect(try Self.waitUntil { try Self.pending(paths) >= 8 })
            func gathered() throws -> JSONValue? {
                guard case .success(let socket) = UnixSocket.connect(to: paths.socket) else { return nil }
                let request =
                    #"{"id":1,"command":"subscribe","protocol":2,"interval":0,"predicate":"kMDItemTextContent CONTAINS 'invoice'","scopes":[{"path":""#
                    + tree.string + "\"}]}\n"
                _ = withBytes(of: Array(request.utf8)) { socket.write($0) }
                var reader = LineReader(socket: socket, maximum: 1 << 20, timeout: 10_000)
                while case .line(let bytes) = reader.next(idle: 10_000) {
                    let value = try JSONValue.parse(bytes)
                    if value["event"]?.string == "didFinishGathering" { return value }
                }
                return nil
            }
            let waiting = try gathered()
            #expect((waiting?["importing"]?.integer ?? 0) >= 8, "\(String(describing: waiting))")
            let answer = try DaemonClient.connect(paths).query(
                Array("kMDItemTextContent CONTAINS 'again'".utf8), scopes: nil, output: .count)
            #expect(answer.importing >= 8)
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            #expect(try gathered()?["importing"] == nil)
            let done = try DaemonClient.connect(paths).query(
                Array("kMDItemTextContent CONTAINS 'again'".utf8), scopes: nil, output: .count)
            #expect(done.importing == 0 && done.count == 8)
        }

        /// Sets a file's freedesktop tags (`user.xdg.tags`) without touching
        /// its contents or modification time, as a file manager does.
        static func setTags(_ path: FilePath, _ tags: String) throws {
            let script = "import os, sys; os.setxattr(sys.argv[1], 'user.xdg.tags', sys.argv[2].encode())"
            let set = try Shell.run("/usr/bin/env", ["python3", "-c", script, path.string, tags])
            try #require(set.status == 0, "\(set.stderrText)")
        }

        /// Items carry the imported values a client asks for, from the
        /// daemon's store, in one-shot answers and live queries alike (and
        /// none when it asks for none). A tag changed alone, which leaves the
        /// modification time as it was, reaches live items as a text edit
        /// does; the items end with the values a fresh import reads, and the
        /// updates replay to them.
        @Test func itemsCarryTheImportedValuesAskedFor() throws {
            let temp = try TemporaryDirectory()
            let tree = try temp.folder("tree")
            for i in 0..<6 {
                let file = tree.appending("note-\(i).txt")
                try Self.write(file, "note \(i)")
                try Self.setTags(file, "draft, n\(i)")
            }
            let paths = IndexDaemonTests.paths(temp)
            let daemon = try Self.start(paths)
            defer { daemon.stop() }
            let scopes = [ScopeRequest(path: tree, rules: ScopeRules())]
            _ = try DaemonClient.connect(paths).addScope(scopes[0])
            #expect(try Self.waitUntil { try Self.pending(paths) == 0 })
            let names = "kMDItemFSName LIKE '*.txt'"
            let plain = try DaemonClient.connect(paths).query(Array(names.utf8), scopes: scopes, output: .entries)
            #expect(plain.entries.count == 6)
            #expect(plain.entries.allSatisfy { $0.imported == nil })
            let asked = try DaemonClient.connect(paths).query(
                Array(names.utf8), scopes: scopes, output: .entries, attributes: [.userTags, .textContent])
            #expect(asked.entries.count == 6)
            for entry in asked.entries {
                let name = String(decoding: entry.pathBytes, as: UTF8.self)
                let i = name.dropLast(4).split(separator: "-").last.map(String.init) ?? "?"
                #expect(entry.imported?[.userTags] == .list(["draft", "n\(i)"]), "\(name)")
                #expect(entry.imported?[.textContent] == .text(Array("note \(i)".utf8)), "\(name)")
            }

            let (query, recorder) = try Self.liveQuery(paths, tree, names, fetching: ["kMDItemUserTags"])
            let initial = recorder.initialResults
            #expect(initial.count == 6)
            #expect(initial.allSatisfy { $0.value(of: .userTags) != nil })
            try Self.setTags(tree.appending("note-0.txt"), "final")
            try Self.write(tree.appending("note-1.txt"), "rewritten")
            try Self.setTags(tree.appending("note-1.txt"), "redone")
            try Self.write(tree.appending("new.txt"), "new")
            try Self.setTags(tree.appending("new.txt"), "fresh")
            #expect(unlink(tree.appending("note-2.txt").string) == 0)
            // What a fresh import of each file reads.
            func expected() -> [String: AttributeValue?] {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: tree.string)) ?? []
                var tags: [String: AttributeValue?] = [:]
                for name in files where name.hasSuffix(".txt") {
                    tags[tree.appending(name).string] =
                        ImportReport.importFile(at: tree.appending(name)).values[.userTags]
                }
                return tags
            }
            func seen(_ items: [MetadataItem]) -> [String: AttributeValue?] {
                Dictionary(uniqueKeysWithValues: items.map { ($0.path.string, $0.value(of: .userTags)) })
            }
            let converged = recorder.wait(timeout: 30) { seen(query.results) == expected() }
            #expect(converged, "\(seen(query.results)) vs \(expected())")
            #expect(seen(query.results)[tree.appending("note-0.txt").string] == .list(["final"]))
            query.deliveryQueue.sync {}
            let (problems, replayed) = replay(recorder.deliveredUpdates, on: initial)
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            #expect(seen(Array(replayed.values)) == seen(query.results))
            query.stop()
        }

        /// Without content indexing the daemon says it cannot answer, so
        /// clients read the files themselves.
        @Test func withoutContentIndexingTheDaemonSaysSo() throws {
            let temp = try TemporaryDirectory()
            let (daemon, tree, paths) = try IndexDaemonTests.indexingDaemon(temp)
            defer { daemon.stop() }
            #expect(try DaemonClient.connect(paths).status().content == nil)
            do {
                _ = try Self.answered(paths, tree)
                Issue.record("answered without content indexing")
            } catch {
                #expect((error as? MetadataError)?.message.contains("content indexing is off") == true, "\(error)")
            }
        }
    }
}

/// Copies a file; false when it cannot.
private func copyfile(_ from: FilePath, _ to: FilePath) -> Bool {
    (try? FileManager.default.copyItem(atPath: from.string, toPath: to.string)) != nil
}
