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
@testable import MetadataIndex

/// Pruned paths (the system index's `PRUNEPATHS`): a folder at a pruned
/// path is an entry, what is inside it is not, whatever moves where. Once
/// the disk is quiet, a live query equals a fresh crawl with everything
/// under a pruned path taken out (computed here from the paths alone),
/// attributes included, and its updates replay to that state.
extension LiveSuites {
    @Suite(.timeLimit(.minutes(3)))
    struct PrunedPathTests {
        /// Pruned paths the storm's folder names reach (`tmp`, `docs/sub`,
        /// `sub/deep`), relative to the scope.
        static let pruned = ["tmp", "docs/sub", "sub/deep"]

        /// A pruned folder name (the storm makes folders of that name).
        static let prunedName = "photos"

        /// What a fresh crawl of `scope` finds outside the pruned folders'
        /// contents: every path with no pruned path strictly above it, and
        /// no folder of the pruned name above it below the scope.
        static func expected(_ scope: FilePath, _ predicate: MetadataPredicate) throws -> [[UInt8]: MetadataItem] {
            let prefixes = pruned.map { Array((scope.string + "/" + $0 + "/").utf8) }
            let base = scope.string.count + 1
            return try freshItems(roots: [CrawlRoot(path: scope)], predicate).filter { path, _ in
                let below = String(decoding: path, as: UTF8.self).dropFirst(base).split(separator: "/").dropLast()
                return !prefixes.contains { path.starts(with: $0) } && !below.contains(Substring(prunedName))
            }
        }

        struct Setup {
            let temp: TemporaryDirectory
            let scope: FilePath
            let outside: FilePath
            let engine: LiveEngine
            let retained: RetainedScope

            init() throws {
                temp = try TemporaryDirectory()
                scope = try temp.folder("scope")
                outside = try temp.folder("outside")
                for folder in ["tmp/inner", "docs/sub/x", "sub/deep", "keep", "keep/photos/in"] {
                    _ = try temp.folder("scope/" + folder)
                }
                try temp.file("scope/keep/photos/in/p.png")
                for file in ["tmp/a.txt", "tmp/inner/b.txt", "docs/sub/c.txt", "docs/sub/x/d.txt", "sub/deep/e.txt"] {
                    try temp.file("scope/" + file)
                }
                try temp.file("scope/keep/kept.txt")
                engine = try LiveEngine()
                retained = try engine.retain(ScopeRequest(path: scope, rules: Self.rules(scope)))
            }

            static func rules(_ scope: FilePath) -> ScopeRules {
                ScopeRules(
                    prunedFolderPaths: Set(PrunedPathTests.pruned.map { Array((scope.string + "/" + $0).utf8) }),
                    prunedFolderNames: [Array(PrunedPathTests.prunedName.utf8)])
            }
        }

        func startQuery(_ text: String, _ setup: Setup) throws -> (MetadataQuery, QueryRecorder) {
            try startLiveQuery(text, scope: setup.scope, engine: setup.engine)
        }

        func expectConverges(
            _ query: MetadataQuery, _ recorder: QueryRecorder, initial: [MetadataItem], _ setup: Setup, _ text: String,
            _ context: String
        ) throws {
            try expectLiveQueryConverges(query, recorder, initial: initial, text, context) {
                try Self.expected(setup.scope, $0)
            }
        }

        /// The first answer leaves out what is inside pruned folders and
        /// keeps the folders themselves.
        @Test func prunedFoldersAreEntriesWithoutTheirContents() throws {
            let setup = try Setup()
            defer { setup.engine.shutdown() }
            let (query, _) = try startQuery("TRUEPREDICATE", setup)
            defer { query.stop() }
            let paths = Set(query.results.map(\.path.string))
            let base = setup.scope.string
            for kept in ["/tmp", "/docs/sub", "/sub/deep", "/keep/kept.txt", "/docs", "/sub"] {
                #expect(paths.contains(base + kept), "\(kept) is an entry")
            }
            #expect(paths.contains(base + "/keep/photos"))
            for left in [
                "/tmp/a.txt", "/tmp/inner", "/docs/sub/c.txt", "/docs/sub/x", "/sub/deep/e.txt", "/keep/photos/in",
            ] {
                #expect(!paths.contains(base + left), "\(left) is inside a pruned folder")
            }
            #expect(setup.engine.holds(ScopeRequest(path: setup.scope, rules: Setup.rules(setup.scope))))
            #expect(
                !setup.engine.holds(ScopeRequest(path: setup.scope, rules: ScopeRules())),
                "held exactly: nothing pruned is asked")
        }

        /// Moves that change what lies at a pruned path: the pruned folder
        /// renamed away (its contents come in), another folder renamed onto
        /// the path (its contents leave), a folder above a pruned path
        /// renamed (what was pruned is not any more, and what now sits at
        /// the path is), a pruned folder deleted and made again.
        @Test func movesAcrossPrunedPathsConverge() throws {
            let setup = try Setup()
            defer { setup.engine.shutdown() }
            let text = "TRUEPREDICATE"
            let (query, recorder) = try startQuery(text, setup)
            defer { query.stop() }
            let initial = recorder.initialResults
            let base = setup.scope.string
            func move(_ from: String, _ to: String) {
                #expect(rename(base + "/" + from, base + "/" + to) == 0, "\(from)")
            }
            move("tmp", "was-tmp")
            move("keep", "tmp")
            move("docs", "docs2")
            move("sub", "docs")
            _ = mkdir(base + "/sub", 0o755)
            _ = mkdir(base + "/sub/deep", 0o755)
            FileManager.default.createFile(atPath: base + "/sub/deep/new.txt", contents: nil)
            FileManager.default.createFile(atPath: base + "/tmp/later.txt", contents: nil)
            try expectConverges(query, recorder, initial: initial, setup, text, "moves")
        }

        /// A pruned folder's dates are the disk's even when something is
        /// made inside it between the listing of its parent (which read
        /// them) and its watch (slowed down there on purpose): in the first
        /// gather (a pruned path) and in the crawl of a tree moved in (a
        /// folder of the pruned name).
        @Test(arguments: [false, true])
        func aPrunedFolderChangedBeforeItsWatchKeepsItsDates(movedIn: Bool) throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            let outside = try temp.folder("outside")
            let pruned = movedIn ? try temp.folder("outside/t/\(Self.prunedName)") : try temp.folder("scope/tmp")
            let engine = try LiveEngine(crawlThreads: 1)
            defer { engine.shutdown() }
            let made = Locked(false)
            let name = Array(pruned.lastComponent!.string.utf8)
            engine.crawlHook.withLock {
                $0 = { id in
                    let path = engine.state.withLock { $0.pathBytes(of: id.rawValue) }
                    guard path.count > name.count, path.suffix(name.count + 1) == [0x2F] + name,
                        !made.withLock({ $0 })
                    else { return }
                    made.withLock { $0 = true }
                    // Past the timestamp clock's tick, so the dates differ.
                    usleep(20_000)
                    let late = String(decoding: path, as: UTF8.self) + "/late.txt"
                    _ = FileManager.default.createFile(atPath: late, contents: nil)
                }
            }
            let retained = try engine.retain(ScopeRequest(path: scope, rules: Setup.rules(scope)))
            _ = retained
            let (query, recorder) = try startLiveQuery("TRUEPREDICATE", scope: scope, engine: engine)
            defer { query.stop() }
            let initial = recorder.initialResults
            if movedIn {
                #expect(rename(outside.appending("t").string, scope.appending("t").string) == 0)
            }
            try expectLiveQueryConverges(query, recorder, initial: initial, "TRUEPREDICATE", "moved in: \(movedIn)") {
                try Self.expected(scope, $0)
            }
            #expect(made.withLock { $0 }, "the watch was slowed down")
        }

        /// A seeded storm whose folder names keep landing on the pruned
        /// paths, under two queries: both converge.
        @Test(arguments: [UInt64(11), 12, 13])
        func aStormAcrossPrunedPathsConverges(seed: UInt64) throws {
            let setup = try Setup()
            defer { setup.engine.shutdown() }
            let texts = ["TRUEPREDICATE", "kMDItemFSName LIKE[c] '*.txt' OR kMDItemFSSize > 10"]
            var queries: [(MetadataQuery, QueryRecorder, [MetadataItem])] = []
            for text in texts {
                let (query, recorder) = try startQuery(text, setup)
                queries.append((query, recorder, recorder.initialResults))
            }
            var storm = Storm(scope: setup.scope.string, outside: setup.outside.string, seed: seed)
            storm.run(operations: 1500)
            for ((query, recorder, initial), text) in zip(queries, texts) {
                try expectConverges(query, recorder, initial: initial, setup, text, "seed \(seed)")
                query.stop()
            }
        }

        /// A snapshot keeps the pruned paths: restored, the engine holds the
        /// same scope exactly.
        @Test func aSnapshotKeepsThePrunedPaths() throws {
            let setup = try Setup()
            defer { setup.engine.shutdown() }
            let file = setup.temp.path.appending("snapshot")
            try setup.engine.saveSnapshot(to: file)
            let restored = try LiveEngine.restoring(from: file, crawlThreads: nil, fanotify: nil).engine
            defer { restored.shutdown() }
            #expect(restored.holds(ScopeRequest(path: setup.scope, rules: Setup.rules(setup.scope))))
            #expect(!restored.holds(ScopeRequest(path: setup.scope, rules: ScopeRules())))
        }
    }
}
