import Glibc
package import MDQCore
import MDQDaemon
package import MDQLive
import MDQSystem

/// This host's part of a live query over hosts: a subscription to its
/// system index (fresh to the millisecond, as the user may see it),
/// its entries named `NAME:/path` like every host's, with ids apart from
/// those of the shared index's entries (the high bit set).
///
/// Its messages wake the follower through a pipe (`descriptor`), which the
/// follower's wait on the database also watches.
package final class OwnHostFeed {
    package let name: String
    private let source: DaemonSource
    private let subscription: Subscription
    /// Readable when the system index said something.
    private let pipe: WakePipe
    package var descriptor: Int32 { pipe.descriptor }
    /// The current matches, by their id here.
    package private(set) var entries: [UInt64: EntrySnapshot] = [:]
    /// Whether the system index's first answer came.
    private(set) var gathered = false
    package private(set) var problems: [EngineProblem] = []

    static let idBit: UInt64 = 1 << 63

    /// Subscribes to the system index, or nil when it does not run.
    /// - Parameter paths: the system index's folders (`.system` unless
    ///   a test runs its own).
    package init?(
        name: String, paths: DaemonPaths = .system, predicate: MetadataPredicate, budget: Double?, capacity: Int
    ) {
        guard let scopes = Self.scopes(paths) else { return nil }
        guard let pipe = try? WakePipe() else { return nil }
        self.name = name
        self.pipe = pipe
        source = DaemonSource(paths: paths)
        (subscription, _) = source.subscribe(
            scopes: scopes, predicate: predicate, container: nil, budget: budget, capacity: capacity,
            progress: nil, fetching: [], viewer: nil, wake: { pipe.signal() })
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

    /// Whether this host's system index would answer a feed for this user.
    package static func answers(paths: DaemonPaths = .system) -> Bool { scopes(paths) != nil }

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
                for entry in all.map(named) { now[entry.entry] = entry }
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
                // Added or changed as this feed knows them (a change to
                // one never added is news: added).
                for entry in (added + changed).map(named) {
                    if entries.updateValue(entry, forKey: entry.entry) == nil {
                        changes.added.append(entry)
                    } else {
                        changes.changed.append(entry)
                    }
                }
                for id in removed where entries.removeValue(forKey: id | Self.idBit) != nil {
                    changes.removed.append(id | Self.idBit)
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

    private func named(_ entry: EntrySnapshot) -> EntrySnapshot {
        var named = entry
        named.entry = entry.entry | Self.idBit
        named.pathBytes = Array((name + ":").utf8) + entry.pathBytes
        return named
    }
}
