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

extension LiveSuites {
    /// The system index answers each user only what that user may see:
    /// checked against the kernel's own answer for that user (`access(2)`
    /// under `setpriv`), on random
    /// permission trees (modes, owners, groups, sticky and set-group-id
    /// folders), for users with and without the trees' groups, before and
    /// after `chmod`/`chown`/`setfacl` storms across the trees. POSIX ACLs
    /// count: named users and groups, masks, an owning group denied.
    @Suite(
        .serialized, .timeLimit(.minutes(3)),
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/setfacl")))
    struct PermissionFilterTests {
        /// The engine judges users as the system index does: with folders'
        /// ACLs read (a process reads them once it serves other users).
        init() { FileStatus.readFolderACLs() }

        /// Users by number (no account needed): two owners with groups of
        /// their own, one in both groups, one in none.
        static let viewers: [Viewer] = [
            Viewer(user: 41001, groups: [42001]),
            Viewer(user: 41002, groups: [42002, 42001, 42003]),
            Viewer(user: 41003, groups: [42003]),
            Viewer(user: 0, groups: [0]),
        ]
        static let modes: [mode_t] = [
            0o755, 0o750, 0o751, 0o711, 0o700, 0o705, 0o770, 0o701, 0o744, 0o1777, 0o2750, 0o070, 0o055,
        ]
        static let owners: [uid_t] = [0, 41001, 41002]
        static let groups: [gid_t] = [0, 42001, 42002]

        /// A random tree of folders and files, each folder with a random
        /// mode, owner and group; returns the folders.
        static func plant(_ root: String, random: inout SeededGenerator) -> [String] {
            var folders = [root]
            var made = [String]()
            for i in 0..<60 {
                let parent = folders.randomElement(using: &random)!
                if parent.split(separator: "/").count > root.split(separator: "/").count + 4 { continue }
                let path = parent + "/d\(i)"
                guard mkdir(path, 0o755) == 0 else { continue }
                folders.append(path)
                made.append(path)
                for j in 0..<Int.random(in: 0..<3, using: &random) {
                    let file = open(path + "/f\(j).txt", O_WRONLY | O_CREAT, 0o644)
                    if file >= 0 { close(file) }
                }
            }
            for folder in made { scramble(folder, random: &random) }
            return made
        }

        /// ACLs given to some folders: named users and groups, a mask that
        /// limits them, an owning group denied whatever the mode says.
        static let acls = [
            "u:41003:rx", "g:42001:---", "u:41001:r,m::rx", "g::---,g:42002:rwx", "u:41002:rwx,m::r",
            "u:41002:x,g:42003:rx", "g:42003:r-x,o::---",
            // A mask of --- makes Linux skip the ACL for the group's bits.
            "u:41003:rx,m::---", "g:42002:rx,m::---,o::r-x",
            // Reading granted by one group's entry, searching by another's.
            "g:42002:r--,g:42003:--x,m::rwx",
        ]

        static func scramble(_ folder: String, random: inout SeededGenerator) {
            _ = chown(folder, owners.randomElement(using: &random)!, groups.randomElement(using: &random)!)
            _ = chmod(folder, modes.randomElement(using: &random)!)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: _ = try? Shell.run("/usr/bin/setfacl", ["-m", acls.randomElement(using: &random)!, folder])
            case 1: _ = try? Shell.run("/usr/bin/setfacl", ["-b", folder])
            default: break
            }
        }

        /// The rule, asked of the kernel as `viewer` (`pathsVisible`): a
        /// walk from `/`, or from `root` for a viewer who opened it.
        static func found(_ root: String, as viewer: Viewer) throws -> Set<String> {
            try pathsVisible(
                pathsBelow(root), user: viewer.user, groups: viewer.groups.sorted(),
                from: viewer.reachedScopes ? root : "/")
        }

        static func answered(_ engine: LiveEngine, _ scope: ScopeRequest, as viewer: Viewer) throws -> Set<String> {
            guard
                case .success(let answer) = try engine.answer(
                    scopes: [scope], predicate: .alwaysTrue, output: .paths, viewer: viewer)
            else { return [] }
            return Set(answer.paths.split(separator: 0).map { String(decoding: $0, as: UTF8.self) })
        }

        /// Each viewer is answered exactly what the kernel lets them see
        /// under `root`.
        static func expectEachViewerAnswered(
            _ engine: LiveEngine, _ scope: ScopeRequest, _ root: String, _ context: String
        ) throws {
            for viewer in viewers {
                let expected = try found(root, as: viewer)
                let answered = try answered(engine, scope, as: viewer)
                #expect(
                    answered == expected,
                    "\(context), uid \(viewer.user): extra \(answered.subtracting(expected).sorted().prefix(3)), missing \(expected.subtracting(answered).sorted().prefix(3))"
                )
            }
        }

        /// A planted tree (`plant`) in a fresh folder others may pass
        /// through, and the generator that planted it.
        static func plantedTree(seed: UInt64) throws -> (
            temp: TemporaryDirectory, root: String, folders: [String], random: SeededGenerator
        ) {
            let temp = try TemporaryDirectory()
            #expect(chmod(temp.path.string, 0o755) == 0)
            let root = try temp.folder("tree").string
            var random = SeededGenerator(seed: seed)
            let folders = plant(root, random: &random)
            return (temp, root, folders, random)
        }

        @Test(arguments: [UInt64(1), 2, 3, 4, 5])
        func eachUserIsAnsweredWhatTheKernelLetsThemSee(seed: UInt64) throws {
            var (temp, root, folders, random) = try Self.plantedTree(seed: seed)
            defer { _ = temp }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let scope = ScopeRequest(path: FilePath(root), rules: ScopeRules(includeHidden: true))
            let retained = try engine.retain(scope)
            defer { engine.release(retained) }
            // The trees hide something from each user (else the test
            // proves nothing), and the root sees everything.
            let everything = try Self.found(root, as: Self.viewers[3])
            for viewer in Self.viewers.dropLast() {
                #expect(try Self.found(root, as: viewer).count < everything.count, "uid \(viewer.user)")
            }
            try Self.expectEachViewerAnswered(engine, scope, root, "seed \(seed)")
            // Permissions change under the live index: every answer follows.
            for folder in folders.shuffled(using: &random).prefix(20) { Self.scramble(folder, random: &random) }
            for viewer in Self.viewers {
                let expected = try Self.found(root, as: viewer)
                var last: Set<String> = []
                let followed = waitUntil(timeout: 10) {
                    last = (try? Self.answered(engine, scope, as: viewer)) ?? []
                    return last == expected
                }
                #expect(
                    followed,
                    "seed \(seed), uid \(viewer.user) after chmod: extra \(last.subtracting(expected).sorted().prefix(3)), missing \(expected.subtracting(last).sorted().prefix(3))"
                )
            }
        }

        /// A names-first index answers names before its files' sizes and
        /// dates are read, and shows each user no more than the kernel lets
        /// them see then too: every folder's permissions are read with its
        /// parent's listing, before any name inside it answers.
        @Test(arguments: [UInt64(6), 7, 8])
        func aNamesFirstIndexShowsEachUserWhatTheKernelLetsThemSeeBeforeItIsFilled(seed: UInt64) throws {
            let (temp, root, _, _) = try Self.plantedTree(seed: seed)
            defer { _ = temp }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let release = engine.holdFills()
            defer { release.mutateAndBroadcast { $0 = true } }
            let scope = ScopeRequest(path: FilePath(root), rules: ScopeRules(includeHidden: true))
            let retained = try engine.retain(scope, namesFirst: true)
            defer { engine.release(retained) }
            #expect(engine.isFilling)
            try Self.expectEachViewerAnswered(engine, scope, root, "seed \(seed), before the fill")
        }

        /// A live query served to a user follows permission changes: what a
        /// `chmod`, `chown` or `setfacl` hides from the user is removed from
        /// its results, what it shows is added, folders moved across
        /// permission boundaries take their contents along, and the updates
        /// replay to the same state.
        @Test(arguments: [UInt64(11), 12, 13])
        func aLiveQueryFollowsPermissionChanges(seed: UInt64) throws {
            var (temp, root, folders, random) = try Self.plantedTree(seed: seed)
            defer { _ = temp }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            for viewer in Self.viewers.prefix(3) {
                let query = MetadataQuery(engineProvider: { engine })
                query.predicate = .alwaysTrue
                query.state.withLock {
                    $0.configuration.scopeRequests = [
                        ScopeRequest(path: FilePath(root), rules: ScopeRules(includeHidden: true))
                    ]
                    $0.configuration.viewer = viewer
                }
                query.notificationBatchingInterval = 0
                let recorder = QueryRecorder(query)
                #expect(query.start())
                #expect(recorder.waitForFinish())
                let initial = recorder.initialResults
                #expect(Set(initial.map(\.path.string)) == (try Self.found(root, as: viewer)), "uid \(viewer.user)")
                for folder in folders.shuffled(using: &random).prefix(15) { Self.scramble(folder, random: &random) }
                // A folder moved under another, across their permissions.
                let moving = folders.shuffled(using: &random).prefix(2)
                if let source = moving.first, let target = moving.last, !target.hasPrefix(source + "/"),
                    !source.hasPrefix(target + "/"), source != target
                {
                    _ = rename(source, target + "/moved-\(seed)")
                }
                let expected = try Self.found(root, as: viewer)
                var last: Set<String> = []
                let followed = recorder.wait(timeout: 10) {
                    last = Set(query.results.map(\.path.string))
                    return last == expected
                }
                #expect(
                    followed,
                    "seed \(seed) uid \(viewer.user): extra \(last.subtracting(expected).sorted().prefix(3)), missing \(expected.subtracting(last).sorted().prefix(3))"
                )
                query.deliveryQueue.sync {}
                let (problems, state) = replay(recorder.deliveredUpdates, on: initial)
                #expect(problems.isEmpty, "\(problems.prefix(3))")
                #expect(Set(state.keys) == Set(query.results.map(\.id)))
                query.stop()
            }
        }

        /// A viewer who opened a folder (the system index's scopes) walks
        /// from it: for every folder of random trees that the user can
        /// reach, the answer is what a walk from it finds as that user,
        /// and above it nothing is judged (a folder under a 0711 one is
        /// searched, where a walk from `/` could not list the 0711 one).
        @Test(arguments: [UInt64(21), 22, 23])
        func aWalkStartsAtTheFolderTheViewerOpened(seed: UInt64) throws {
            let (temp, root, folders, _) = try Self.plantedTree(seed: seed)
            defer { _ = temp }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let retained = try engine.retain(ScopeRequest(path: FilePath(root), rules: ScopeRules(includeHidden: true)))
            defer { engine.release(retained) }
            var checked = 0
            var deeper = 0
            for var viewer in Self.viewers.dropLast() {
                viewer.reachedScopes = true
                let reached = try foldersReached(folders, user: viewer.user, groups: viewer.groups.sorted())
                for folder in folders where reached[folder] == "" {
                    let scope = ScopeRequest(path: FilePath(folder), rules: ScopeRules(includeHidden: true))
                    let expected = try Self.found(folder, as: viewer)
                    let answered = try Self.answered(engine, scope, as: viewer)
                    #expect(
                        answered == expected,
                        "seed \(seed), uid \(viewer.user) from \(folder): extra \(answered.subtracting(expected).sorted().prefix(3)), missing \(expected.subtracting(answered).sorted().prefix(3))"
                    )
                    checked += 1
                    var fromTop = viewer
                    fromTop.reachedScopes = false
                    if try Self.found(folder, as: fromTop) != expected { deeper += 1 }
                }
            }
            // The trees have folders a user reaches but could not walk to
            // from `/` (else the test proves nothing new).
            #expect(checked > 10 && deeper > 0, "checked \(checked), \(deeper) differ from a walk from /")
        }

        /// A live query on a folder its user opened answers that folder:
        /// moved away, it answers nothing more (what it showed is removed),
        /// and another folder made at its path is not taken for it.
        @Test func anOpenedScopeIsThatFolderNotItsPath() throws {
            let temp = try TemporaryDirectory()
            #expect(chmod(temp.path.string, 0o755) == 0)
            let root = try temp.folder("tree").string
            for name in ["a.txt", "b.txt"] { try temp.file("tree/opened/" + name) }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let retained = try engine.retain(ScopeRequest(path: FilePath(root), rules: ScopeRules()))
            defer { engine.release(retained) }
            var viewer = Self.viewers[2]
            viewer.reachedScopes = true
            let query = MetadataQuery(engineProvider: { engine })
            query.predicate = .alwaysTrue
            query.state.withLock {
                $0.configuration.scopeRequests = [ScopeRequest(path: FilePath(root + "/opened"), rules: ScopeRules())]
                $0.configuration.viewer = viewer
            }
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            #expect(recorder.initialResults.count == 2)
            #expect(rename(root + "/opened", root + "/elsewhere") == 0)
            #expect(recorder.wait(timeout: 10) { query.results.isEmpty }, "\(query.results.map(\.path))")
            try temp.file("tree/opened/c.txt")
            // Another folder at the path: a file made in it, then one made
            // where the query does look; once that is known, the first
            // would have been too.
            try temp.file("tree/elsewhere/seen-by-nobody.txt")
            #expect(
                waitUntil(timeout: 10) {
                    (try? engine.answer(
                        scopes: [ScopeRequest(path: FilePath(root), rules: ScopeRules())], predicate: .alwaysTrue,
                        output: .count))
                        .flatMap { try? $0.get().count } == 6
                })
            query.deliveryQueue.sync {}
            #expect(query.results.isEmpty, "\(query.results.map(\.path))")
            let (problems, state) = replay(recorder.deliveredUpdates, on: recorder.initialResults)
            #expect(problems.isEmpty && state.isEmpty, "\(problems.prefix(3))")
            query.stop()
        }

        /// The kernel's rule, case by case: an ACL whose mask is `---` is
        /// skipped for the group's bits; the owner's bits decide for the
        /// owner, whatever the ACL says; a group entry granting reading
        /// and another granting searching let the walk through, as its two
        /// calls are judged apart; a folder only searchable hides its names
        /// from a walk from `/`.
        @Test func theKernelsRuleCaseByCase() throws {
            let temp = try TemporaryDirectory()
            #expect(chmod(temp.path.string, 0o755) == 0)
            let root = try temp.folder("tree").string
            #expect(chmod(root, 0o755) == 0)
            let cases: [(String, mode_t, uid_t, gid_t, String?)] = [
                ("masked", 0o755, 0, 0, "u:41003:---,m::---"),
                ("owner", 0o055, 41001, 42001, "u:41001:rwx,m::rwx"),
                ("split", 0o770, 0, 0, "g:42002:r--,g:42003:--x,m::rwx"),
                ("searchonly", 0o711, 41001, 42001, nil),
            ]
            for (name, mode, owner, group, acl) in cases {
                let folder = root + "/" + name
                #expect(mkdir(folder, 0o755) == 0)
                #expect(mkdir(folder + "/inner", 0o755) == 0)
                FileManager.default.createFile(atPath: folder + "/inner/file.txt", contents: nil)
                #expect(chown(folder, owner, group) == 0)
                #expect(chmod(folder, mode) == 0)
                if let acl { try Shell.run("/usr/bin/setfacl", ["-m", acl, folder]) }
            }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let scope = ScopeRequest(path: FilePath(root), rules: ScopeRules(includeHidden: true))
            let retained = try engine.retain(scope)
            defer { engine.release(retained) }
            for viewer in Self.viewers {
                #expect(
                    try Self.answered(engine, scope, as: viewer) == (try Self.found(root, as: viewer)),
                    "uid \(viewer.user)")
            }
            // Spelled out, so the oracle itself is checked too.
            let stranger = try Self.answered(engine, scope, as: Self.viewers[2])
            #expect(stranger.contains(root + "/masked/inner/file.txt"))  // mask --- : the others' r-x
            #expect(!stranger.contains(root + "/searchonly/inner"))  // 0711: not listable
            let owner = try Self.answered(engine, scope, as: Self.viewers[0])
            #expect(!owner.contains(root + "/owner/inner"))  // owner bits ---
            #expect(owner.contains(root + "/searchonly/inner/file.txt"))
            let member = try Self.answered(engine, scope, as: Self.viewers[1])
            #expect(member.contains(root + "/split/inner/file.txt"))
        }

        /// Nothing a hidden name does to a test tells of it: a pattern that
        /// backtracks past its per-name cap on a name only root may see
        /// ends root's query as too expensive, but a user's query never
        /// tests that name (what they may not see is left out before any
        /// test), so it answers, and the same whatever hidden names exist.
        @Test func hiddenNamesAreNeverTested() throws {
            let temp = try TemporaryDirectory()
            #expect(chmod(temp.path.string, 0o755) == 0)
            let root = try temp.folder("tree").string
            #expect(chmod(root, 0o755) == 0)
            try temp.file("tree/open/visible.txt")
            try temp.file("tree/closed/" + String(repeating: "a", count: 60))
            #expect(chmod(root + "/closed", 0o700) == 0)
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let scope = ScopeRequest(path: FilePath(root), rules: ScopeRules())
            let retained = try engine.retain(scope)
            defer { engine.release(retained) }
            let pattern = try MetadataPredicate("kMDItemFSName MATCHES '(a+)+b'")
            #expect(throws: MetadataError.self) {
                _ = try engine.answer(scopes: [scope], predicate: pattern, output: .count, viewer: Self.viewers[3])
            }
            for viewer in Self.viewers.dropLast() {
                let answered = try engine.answer(scopes: [scope], predicate: pattern, output: .count, viewer: viewer)
                #expect((try? answered.get().count) == 0, "uid \(viewer.user)")
            }
            // A live query alike: gathered, no error.
            let query = MetadataQuery(engineProvider: { engine })
            query.predicate = pattern
            query.state.withLock {
                $0.configuration.scopeRequests = [scope]
                $0.configuration.viewer = Self.viewers[2]
            }
            query.notificationBatchingInterval = 0
            let recorder = QueryRecorder(query)
            #expect(query.start())
            #expect(recorder.waitForFinish())
            #expect(query.errors.isEmpty, "\(query.errors)")
            query.stop()
        }

        /// An ACL too long for the first read is read whole (a named user
        /// denied among 70 entries is denied), and one that cannot be
        /// parsed closes its folder to all but its owner: the check never
        /// fails open.
        @Test func longAndUnreadableACLsNeverOpenAFolder() throws {
            let temp = try TemporaryDirectory()
            #expect(chmod(temp.path.string, 0o755) == 0)
            let root = try temp.folder("tree").string
            #expect(chmod(root, 0o755) == 0)
            try temp.file("tree/long/inner/file.txt")
            let entries = (0..<70).map { "u:\(50_000 + $0):r-x" }.joined(separator: ",")
            try Shell.run("/usr/bin/setfacl", ["-m", "u:41003:---," + entries, root + "/long"])
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let scope = ScopeRequest(path: FilePath(root), rules: ScopeRules())
            let retained = try engine.retain(scope)
            defer { engine.release(retained) }
            let stranger = try Self.answered(engine, scope, as: Self.viewers[2])
            #expect(stranger == (try Self.found(root, as: Self.viewers[2])))
            #expect(!stranger.contains(root + "/long/inner"))
            #expect(try Self.answered(engine, scope, as: Self.viewers[0]).contains(root + "/long/inner"))
            // A malformed ACL, as the index would read it: closed to others.
            let closed = [0x02, 0, 0, 0, 0xFF].withUnsafeBytes { EntryAccess.acl(parsing: UnsafeRawBufferPointer($0)) }
            let access = EntryAccess(mode: 0o755, owner: 41001, group: 42001, acl: closed)
            #expect(!Self.viewers[2].mayWalk(access))
            #expect(Self.viewers[0].mayWalk(access))
        }

        /// The folders above the scope count too, for a walk from `/`: a
        /// scope inside a folder another user may not list shows that user
        /// nothing, unless they opened the scope themselves.
        @Test func foldersAboveTheScopeCount() throws {
            let temp = try TemporaryDirectory()
            #expect(chmod(temp.path.string, 0o700) == 0)
            let root = try temp.folder("tree").string
            try temp.file("tree/open/file.txt")
            #expect(chmod(root, 0o755) == 0)
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let scope = ScopeRequest(path: FilePath(root), rules: ScopeRules())
            let retained = try engine.retain(scope)
            defer { engine.release(retained) }
            #expect(try Self.answered(engine, scope, as: Self.viewers[0]).isEmpty)
            #expect(try Self.answered(engine, scope, as: Self.viewers[3]).count == 2)
            // Searchable but not listable: a walk from `/` stops there; a
            // user who opened the scope walks from it.
            #expect(chmod(temp.path.string, 0o711) == 0)
            #expect(try Self.answered(engine, scope, as: Self.viewers[0]).isEmpty)
            var opener = Self.viewers[0]
            opener.reachedScopes = true
            #expect(try Self.answered(engine, scope, as: opener).count == 2)
            #expect(chmod(temp.path.string, 0o755) == 0)
            #expect(try Self.answered(engine, scope, as: Self.viewers[0]).count == 2)
        }
    }
}
