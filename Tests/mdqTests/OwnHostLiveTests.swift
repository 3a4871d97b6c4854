import Foundation
import Glibc
import MDQShared
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// A live query of every host (`SearchScope.allHosts`, `SharedSource`)
/// answers this host from its own system index: entries this host never
/// published are there, named `NAME:/path`, and its changes come as they
/// happen; the other hosts come from the shared index.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: PostgresCluster.isInstalled && getuid() == 0
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
        "needs PostgreSQL 15 and root (a system index in a mount namespace)"))
struct OwnHostLiveTests {
    @Test func thisHostComesFromItsSystemIndexTheOthersFromTheSharedIndex() throws {
        let cluster = try #require(PostgresCluster.shared)
        let url = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: url))
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        // Another host, published.
        let remote = try temp.folder("remote").string
        FileManager.default.createFile(atPath: remote + "/report-alpha.txt", contents: Data())
        let alpha = try PublishedFolder(remote, url: url)
        defer { alpha.close() }
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        #expect(waitUntil(timeout: 20) { (try? reader.hosts().first?.state) == "live" })
        // This host: a system index of its own (its socket and state in
        // this test's folders) over a folder made a mount point in a mount
        // namespace of its own; it publishes nothing.
        let local = try temp.folder("local").string
        FileManager.default.createFile(atPath: local + "/report-here.txt", contents: Data())
        let system = try PrivateSystemIndex(local, in: temp)
        defer { system.close() }
        #expect(
            waitUntil(timeout: 30) { (try? DaemonClient.connectSystem(system.paths).indexedScopes().isEmpty) == false },
            "\(system.logText)")
        let paths = system.paths

        let source = SharedSource(hosts: [], url: url, own: (name: "here", paths: paths))
        let woken = ConditionLocked(0)
        let (subscription, errors) = source.subscribe(
            scopes: [], predicate: try MetadataPredicate("kMDItemFSName LIKE 'report*'"), container: nil,
            budget: 30, capacity: 1 << 16, progress: nil, fetching: [], viewer: nil,
            wake: { woken.mutateAndBroadcast { $0 += 1 } })
        defer { source.unsubscribe(subscription) }
        #expect(errors.isEmpty)
        // The results, replayed from the messages.
        var results: [UInt64: String] = [:]
        func follow(until done: ([UInt64: String]) -> Bool) -> Bool {
            waitUntil(timeout: 30, interval: 0.01) {
                for message in subscription.take() {
                    switch message {
                    case .snapshot(let all, _):
                        results = Dictionary(uniqueKeysWithValues: all.map { ($0.entry, $0.path) })
                    case .changes(let added, let changed, let removed),
                        .resumed(let added, let changed, let removed, _):
                        for entry in added + changed { results[entry.entry] = entry.path }
                        for id in removed { results[id] = nil }
                    case .resynchronize, .problems:
                        break
                    }
                }
                return done(results)
            }
        }
        let gathered = Set(["here:\(local)/report-here.txt", "alpha:\(remote)/report-alpha.txt"])
        #expect(follow { Set($0.values) == gathered }, "\(results.values.sorted())")
        // Changes on this host come from its system index.
        FileManager.default.createFile(atPath: local + "/report-new.txt", contents: Data())
        #expect(follow { $0.values.contains("here:\(local)/report-new.txt") }, "\(results.values.sorted())")
        #expect(unlink(local + "/report-here.txt") == 0)
        #expect(follow { !$0.values.contains("here:\(local)/report-here.txt") }, "\(results.values.sorted())")
        // And the other host's from the shared index.
        FileManager.default.createFile(atPath: remote + "/report-alpha-2.txt", contents: Data())
        #expect(
            follow { $0.values.contains("alpha:\(remote)/report-alpha-2.txt") }, "\(results.values.sorted())")
        #expect(
            try reader.hosts().map(\.name) == ["alpha"],
            "this host is not in the shared index: its system index answered")
        // A query that fell behind gets everything anew, in one snapshot.
        source.resynchronize(subscription)
        var fresh: Set<String>?
        #expect(
            waitUntil(timeout: 20) {
                for case .snapshot(let all, true) in subscription.take() { fresh = Set(all.map(\.path)) }
                return fresh != nil
            })
        #expect(fresh == Set(results.values), "\(fresh ?? [])")

        // This host named among others, though it publishes nothing.
        let named = SharedSource(hosts: ["here", "alpha"], url: url, own: (name: "here", paths: paths))
        let (second, _) = named.subscribe(
            scopes: [], predicate: try MetadataPredicate("kMDItemFSName LIKE 'report*'"), container: nil,
            budget: 30, capacity: 1 << 16, progress: nil, fetching: [], viewer: nil, wake: {})
        defer { named.unsubscribe(second) }
        var both: Set<String> = []
        #expect(
            waitUntil(timeout: 20) {
                for case .snapshot(let all, _) in second.take() { both = Set(all.map(\.path)) }
                return both == Set(results.values)
            }, "\(both.sorted())")

        // Folders of this host (`.host(_:folder:)`) come from its system
        // index too, though it publishes nothing; another host's folder
        // beside them from the shared index.
        for withOther in [false, true] {
            let folders = [(host: "here", path: Array(local.utf8))] + (withOther ? [("alpha", Array(remote.utf8))] : [])
            let inFolders = SharedSource(
                hosts: withOther ? ["here", "alpha"] : ["here"], folders: folders, url: url,
                own: (name: "here", paths: paths))
            let (third, _) = inFolders.subscribe(
                scopes: [], predicate: try MetadataPredicate("kMDItemFSName LIKE 'report*'"), container: nil,
                budget: 30, capacity: 1 << 16, progress: nil, fetching: [], viewer: nil, wake: {})
            defer { inFolders.unsubscribe(third) }
            let expected = Set(results.values.filter { withOther || $0.hasPrefix("here:") })
            var found: Set<String> = []
            var problems: [EngineProblem] = []
            #expect(
                waitUntil(timeout: 20) {
                    for message in third.take() {
                        if case .snapshot(let all, _) = message { found = Set(all.map(\.path)) }
                        if case .problems(let now) = message { problems = now }
                    }
                    return found == expected
                }, "\(withOther): \(found.sorted()) \(problems)")
            #expect(problems.isEmpty, "\(withOther): \(problems)")
        }
    }
}

/// The system index following other hosts for a user with no credential
/// of their own (`subscribe-hosts`, `DaemonFeed.otherHosts`) refuses a
/// folder its host would not let the user search: the feed says it as a
/// scope's problem (`hostFolder`), which a query lists as a local query
/// lists a missing or closed scope, not as the shared index's trouble.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: PostgresCluster.isInstalled && getuid() == 0
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
        "needs PostgreSQL 15 and root (a system index in a mount namespace)"))
struct HostFolderFeedTests {
    @Test func aFolderTheSystemIndexRefusesIsAScopeProblem() throws {
        let temp = try TemporaryDirectory()
        let hosts = try SystemHostSearchTests.Hosts(temp)
        defer { hosts.close() }
        // Root on one host is not root on another: the folder only nobody
        // may list is closed to it.
        for (name, problem, error) in [
            ("missing", "ENOENT", Errno.noSuchFileOrDirectory), ("report-a.txt", "ENOTDIR", .notDirectory),
            ("private", "EACCES", .permissionDenied),
        ] {
            let path = hosts.remote + "/" + name
            let feed = try #require(
                try DaemonFeed.otherHosts(
                    HostsSubscription(hosts: ["alpha"], folders: [("alpha", Array(path.utf8))]),
                    paths: hosts.system.paths, predicate: try MetadataPredicate("kMDItemFSName LIKE '*'"), budget: 30,
                    capacity: 1 << 16))
            defer { feed.close() }
            #expect(
                waitUntil(timeout: 30) {
                    _ = feed.drain(); return !feed.problems.isEmpty
                }, "\(name)")
            let named = FilePath("alpha:" + path)
            #expect(feed.problems == [.hostFolder(named, problem: problem)], "\(name): \(feed.problems)")
            #expect(
                feed.problems.first?.error(watching: 0).description
                    == MetadataError.scope(error, path: named).description,
                "\(name)")
            #expect(feed.current().isEmpty, "\(name)")
        }
    }
}

extension EntrySnapshot {
    fileprivate var path: String { String(decoding: pathBytes, as: UTF8.self) }
}
