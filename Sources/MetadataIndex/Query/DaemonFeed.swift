import Glibc
package import MDQCore
import MDQDaemon
import MDQEngine
package import MDQLive
import MDQShared
import MDQSystem
import SystemPackage

/// A part of a live query over hosts that this host's system index
/// answers: a subscription to it, whose messages wake the follower through
/// a pipe (`descriptor`) that the follower's wait on the database also
/// watches, its entries kept so that a fresh answer is told as what
/// changed.
///
/// - `ownHost`: this host's entries, from its index (fresh to the
///   millisecond, as the user may see it), named `NAME:/path` like every
///   host's, with ids apart from the others' (the high bit set).
/// - `otherHosts`: the other hosts' entries, which the system index
///   searches in the shared index for a user with no database credential
///   of their own (`subscribe-hosts`), named by it; their ids are the
///   feed's own, kept by path when a new stream (the system index
///   restarted) gives each entry another id.
package final class DaemonFeed {
    /// This host's name, for `ownHost`; nil for `otherHosts`.
    package let name: String?
    private let source: DaemonSource
    private let subscription: Subscription
    /// Readable when the system index said something.
    private let pipe: WakePipe
    package var descriptor: Int32 { pipe.descriptor }
    /// The current matches, by their id here.
    package private(set) var entries: [UInt64: EntrySnapshot] = [:]
    /// For `otherHosts`: the system index's ids of the current matches,
    /// and the id each has here.
    private var ids: [UInt64: UInt64] = [:]
    private var nextID: UInt64 = 1
    /// Whether the system index's first answer came.
    private(set) var gathered = false
    package private(set) var problems: [EngineProblem] = []

    static let idBit: UInt64 = 1 << 63

    private init(name: String?, source: DaemonSource, pipe: WakePipe, subscribe: (WakePipe) -> Subscription) {
        self.name = name
        self.source = source
        self.pipe = pipe
        subscription = subscribe(pipe)
    }

    /// This host's part: a subscription to its system index, or nil when
    /// it does not run.
    /// - Parameters:
    ///   - paths: the system index's folders (`.system` unless a test
    ///     runs its own).
    ///   - scopes: the folders of it asked for, as `ownScopes` gives
    ///     them; nil for all of it that this user can reach.
    package static func ownHost(
        name: String, paths: DaemonPaths = .system, scopes: [ScopeRequest]? = nil, predicate: MetadataPredicate,
        budget: Double?, capacity: Int, fetching: Set<MetadataAttribute> = []
    ) -> DaemonFeed? {
        guard let scopes = scopes ?? Self.scopes(paths), let pipe = try? WakePipe() else { return nil }
        let source = DaemonSource(paths: paths)
        return DaemonFeed(name: name, source: source, pipe: pipe) { pipe in
            source.subscribe(
                scopes: scopes, predicate: predicate, container: nil, budget: budget, capacity: capacity,
                progress: nil, fetching: fetching, viewer: nil, wake: { pipe.signal() }
            ).0
        }
    }

    /// The other hosts' part, followed by the system index in the shared
    /// index: nil when it does not run or does not take `subscribe-hosts`.
    /// What it refuses (a host unknown, a search it cannot narrow, no
    /// `SEARCH`) comes as the feed's problem, once.
    static func otherHosts(
        _ hosts: HostsSubscription, paths: DaemonPaths = .system, predicate: MetadataPredicate, budget: Double?,
        capacity: Int, fetching: Set<MetadataAttribute> = []
    ) throws(MetadataError) -> DaemonFeed? {
        guard let client = try? DaemonClient.connectSystem(paths),
            let features = (try? client.hello())?.features, features.contains("subscribe-hosts")
        else { return nil }
        // Values of what importers read, and searches by them, from a
        // system index that gives them (an older one would answer without
        // them, or refuse them as unpublished).
        let imported = SharedReader.Search.importedAttributes(of: predicate, shown: fetching)
        if !imported.isEmpty && !features.contains("search-hosts-attributes") {
            throw DaemonProtocol.olderAcrossHosts(imported)
        }
        let pipe: WakePipe
        do {
            pipe = try WakePipe()
        } catch {
            throw MetadataError.daemon("cannot make a pipe: \(error)")
        }
        let source = DaemonSource(paths: paths)
        return DaemonFeed(name: nil, source: source, pipe: pipe) { pipe in
            source.subscribeHosts(
                hosts, predicate: predicate, budget: budget, capacity: capacity, fetching: fetching,
                wake: { pipe.signal() })
        }
    }

    /// The folders of the system index this user can open (the daemon
    /// refuses a subscription with one the user cannot reach); nil when it
    /// does not run or none is.
    static func scopes(_ paths: DaemonPaths) -> [ScopeRequest]? {
        guard
            let scopes = try? DaemonClient.connectSystem(paths).indexedScopes().map(\.scope).filter({
                (try? DirectoryHandle.open(path: $0.path).get()) != nil
            }), !scopes.isEmpty
        else { return nil }
        return scopes
    }

    /// This host's folders as the system index is asked for them: hidden
    /// entries included, as in every search across hosts.
    package static func folderScopes(_ folders: [[UInt8]]) -> [ScopeRequest] {
        folders.map { ScopeRequest(path: FilePath.fromBytes($0), rules: ScopeRules(includeHidden: true)) }
    }

    /// Why this user may not search one of this host's `folders`
    /// (`--onlyin NAME:/path`), as a local search says it of its scope,
    /// the folder named `NAME:/path` (`name`); nil when they may open
    /// each. A symbolic link is said as another host's is (the shared
    /// index searches no folder through one).
    package static func check(_ folders: [[UInt8]], named name: String) -> MetadataError? {
        for folder in folders {
            let named = FilePath.onHost(name, folder)
            // It, or a folder on the way to it.
            let slashes = folder.indices.filter { $0 > 0 && folder[$0] == UInt8(ascii: "/") } + [folder.count]
            for end in slashes {
                if case .success(let status) = FileStatus.of(pathBytes: Array(folder[..<end])),
                    status.kind == .symlink
                {
                    return MetadataError.hostScope("symlink", path: named)
                }
            }
            if case .failure(let error) = DirectoryHandle.open(path: FilePath.fromBytes(folder)) {
                return MetadataError.scope(error, path: named)
            }
        }
        return nil
    }

    /// This host's `folders` (absolute paths' bytes) as its system index
    /// searches them for this user: each opened here as a folder by them,
    /// as a local search checks its scopes, and held by the index (one
    /// above every folder it indexes from stands for those below it,
    /// `DaemonClient.ownFolders`; its `/` for all of it that this user can
    /// reach, as the host searched whole). Fails as a local search's scope
    /// does, each folder named `NAME:/path` (`name`); a folder the index
    /// does not hold, as another host's is (`unindexed`); one it could not
    /// be asked of, as the daemon's error.
    package static func ownScopes(
        _ folders: [[UInt8]], named name: String, paths: DaemonPaths = .system
    ) -> Swift.Result<[ScopeRequest], MetadataError> {
        func named(_ path: [UInt8]) -> FilePath { FilePath.onHost(name, path) }
        if folders.contains(Array("/".utf8)) {
            guard let all = scopes(paths) else {
                return .failure(MetadataError.daemon("this host's system index does not answer"))
            }
            return .success(all)
        }
        if let refused = check(folders, named: name) { return .failure(refused) }
        let client: DaemonClient
        do {
            client = try DaemonClient.connectSystem(paths)
        } catch {
            return .failure(error)
        }
        let scopes = folderScopes(client.ownFolders(folders))
        // A search that matches nothing: the index says whether it holds
        // the folders, and scans nothing.
        let asked = Swift.Result { () throws(MetadataError) in
            try client.query(Array("FALSEPREDICATE".utf8), scopes: scopes, output: .count, limit: 1)
        }
        switch asked {
        case .success: return .success(scopes)
        case .failure(let error) where error.refusal != nil:
            return .failure(
                MetadataError.hostScope("unindexed", path: named(DaemonClient.folder(refusedBy: error, among: scopes))))
        case .failure(let error): return .failure(error)
        }
    }

    /// Whether this host's system index would answer an `ownHost` feed
    /// for this user.
    package static func answers(paths: DaemonPaths = .system) -> Bool { scopes(paths) != nil }

    /// This host's name in the shared index: the one its system index
    /// publishes under (`--host-name` or `HOST_NAME`), else what its
    /// configuration file or its host name says.
    package static func ownHostName(paths: DaemonPaths = .system) -> String? {
        (try? DaemonClient.connectSystem(paths).status())?.publishing?.hostName ?? SystemConfiguration.sharedHostName
    }

    package func close() {
        source.unsubscribe(subscription)
    }

    /// What came since the last call, as the query's messages say it.
    package struct Changes {
        package var added: [EntrySnapshot] = []
        package var changed: [EntrySnapshot] = []
        package var removed: [UInt64] = []
        package var problemsChanged = false

        package var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
    }

    /// Empties the pipe and the subscription's mailbox.
    package func drain() -> Changes {
        pipe.drain()
        var changes = Changes()
        for message in subscription.take() {
            switch message {
            case .snapshot(let all, _):
                // The first answer, or a fresh one: told as the differences.
                gathered = true
                var now: [UInt64: EntrySnapshot] = [:]
                for entry in named(fresh: all) { now[entry.entry] = entry }
                for (id, entry) in now {
                    if let known = entries[id] {
                        if known != entry { changes.changed.append(entry) }
                    } else {
                        changes.added.append(entry)
                    }
                }
                changes.removed += entries.keys.filter { now[$0] == nil }
                entries = now
            case .changes(let added, let changed, let removed), .resumed(let added, let changed, let removed, _):
                gathered = true
                // Removed first: an id given again is another entry's.
                for id in removed {
                    guard let known = local(removing: id), entries.removeValue(forKey: known) != nil else { continue }
                    changes.removed.append(known)
                }
                // Added or changed as this feed knows them (a change to
                // one never added is news: added).
                for entry in (added + changed).map(named) {
                    if entries.updateValue(entry, forKey: entry.entry) == nil {
                        changes.added.append(entry)
                    } else {
                        changes.changed.append(entry)
                    }
                }
            case .resynchronize:
                source.resynchronize(subscription)
            case .problems(let now):
                changes.problemsChanged = changes.problemsChanged || now != problems
                problems = now
            }
        }
        return changes
    }

    /// Waits up to `timeout` seconds (at most a day) for the system
    /// index's first answer, while `wanted`.
    package func waitForGathering(timeout: Double, while wanted: () -> Bool = { true }) {
        let seconds = timeout.isNaN ? 0 : min(max(timeout, 0), 86_400)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !gathered && ContinuousClock.now < deadline && wanted() {
            wait(milliseconds: 100)
            // What it held is in `entries` now; the first answer is sent whole.
            _ = drain()
        }
    }

    /// Waits up to `milliseconds` for the system index to say something.
    package func wait(milliseconds: Int32) {
        var descriptor = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, milliseconds)
    }

    /// Its entries as they are now, what came before taken in (and not
    /// told as changes: for a snapshot).
    package func current() -> [EntrySnapshot] {
        _ = drain()
        return Array(entries.values)
    }

    /// An entry as the query knows it: this host's named and set apart;
    /// another host's with its id here (a new one for an entry not known).
    private func named(_ entry: EntrySnapshot) -> EntrySnapshot {
        var named = entry
        if let name {
            named.entry = entry.entry | Self.idBit
            named.pathBytes = Array((name + ":").utf8) + entry.pathBytes
        } else if let known = ids[entry.entry] {
            named.entry = known
        } else {
            named.entry = nextID
            ids[entry.entry] = nextID
            nextID += 1
        }
        return named
    }

    /// A whole answer's entries as the query knows them: another host's
    /// entry at a path a current match has keeps that match's id (the
    /// system index's ids are its stream's).
    private func named(fresh all: [EntrySnapshot]) -> [EntrySnapshot] {
        guard name == nil else { return all.map(named) }
        var byPath: [[UInt8]: UInt64] = [:]
        for (id, entry) in entries { byPath[entry.pathBytes] = id }
        ids = [:]
        return all.map { entry in
            var named = entry
            if let known = byPath.removeValue(forKey: entry.pathBytes) {
                named.entry = known
            } else {
                named.entry = nextID
                nextID += 1
            }
            ids[entry.entry] = named.entry
            return named
        }
    }

    /// The id here of the system index's `id`, forgotten.
    private func local(removing id: UInt64) -> UInt64? {
        guard name == nil else { return id | Self.idBit }
        return ids.removeValue(forKey: id)
    }
}
