package import MDQCore
package import MDQSystem
package import SystemPackage

/// What the engine knows of one matching entry at the moment it reported
/// it: enough to build an item without touching the index again.
package struct EntrySnapshot: Sendable, Equatable {
    /// The engine's entry id, reused by the engine after the entry is
    /// reported gone (so subscribers map it to identities of their own); or,
    /// for a query served by the daemon, the daemon's item id.
    package var entry: UInt64
    package var pathBytes: [UInt8]
    package var kind: EntryKind
    package var metadata: EntryMetadata
    /// A conflict copy of the entry sits beside it.
    package var hasUnresolvedConflicts: Bool
    /// For a conflict copy, the path of the entry it conflicts with.
    package var conflictOriginalPathBytes: [UInt8]?
    /// What the importers read from inside the file, for the imported
    /// attributes the subscriber asked for: nil when it asked for none or
    /// the content indexer has no import of the file.
    package var imported: ImportedValues? = nil

    package init(
        entry: UInt64, pathBytes: [UInt8], kind: EntryKind, metadata: EntryMetadata,
        hasUnresolvedConflicts: Bool = false,
        conflictOriginalPathBytes: [UInt8]? = nil, imported: ImportedValues? = nil
    ) {
        self.entry = entry
        self.pathBytes = pathBytes
        self.kind = kind
        self.metadata = metadata
        self.hasUnresolvedConflicts = hasUnresolvedConflicts
        self.conflictOriginalPathBytes = conflictOriginalPathBytes
        self.imported = imported
    }
}

/// One message from the engine to a subscriber, in order.
package enum SubscriptionMessage: Sendable {
    /// Every matching entry. The first message of a subscription; later,
    /// after `resynchronize`, a fresh one (`isFresh`) that replaces all the
    /// subscriber knew (watchman's fresh instance).
    case snapshot([EntrySnapshot], isFresh: Bool)
    /// Entries that started matching, entries that changed and still
    /// match, and entries that stopped matching (or are gone), since the
    /// previous message.
    case changes(added: [EntrySnapshot], changed: [EntrySnapshot], removed: [UInt64])
    /// The first message of a subscription resumed from a clock (`since`):
    /// what was added, changed and removed after it, instead of every
    /// match; `count` is how many match now. `removed` may name entries the
    /// subscriber never had (they changed since, and match no more).
    case resumed(added: [EntrySnapshot], changed: [EntrySnapshot], removed: [UInt64], count: Int)
    /// The subscriber fell behind and messages were dropped: it must call
    /// `LiveEngine.resynchronize(_:)`, which queues a fresh snapshot.
    case resynchronize
    /// The engine's problems inside the subscription's scopes, all of them,
    /// whenever they change (empty when the last one is resolved).
    case problems([EngineProblem])
}

extension SubscriptionMessage {
    /// A subscription's first message, queued whatever its size: the
    /// results are what the capacity is measured against.
    var isFirst: Bool {
        switch self {
        case .snapshot(_, false), .resumed: true
        default: false
        }
    }
}

/// A client's end of a subscription: a mailbox the engine fills and the
/// client empties, on its own thread, never under the engine's lock.
///
/// The mailbox is bounded. When more entries are queued than `capacity`
/// (a client that stopped reading), the engine drops what is queued and
/// leaves one `.resynchronize` message: memory stays bounded, nothing is
/// silently lost, and the client catches up with a fresh snapshot.
package final class Subscription: Sendable {
    package let id: UInt64
    /// Entries (snapshots and removed ids) the mailbox holds before it
    /// overflows.
    package let capacity: Int
    private let wake: @Sendable () -> Void
    private let mailbox = Locked(Mailbox())

    private struct Mailbox {
        var messages: [SubscriptionMessage] = []
        var weight = 0
        var overflowed = false
        var closed = false
        /// The engine's tick when it posted the newest message queued.
        var tick: UInt64 = 0
    }

    package init(id: UInt64, capacity: Int, wake: @escaping @Sendable () -> Void) {
        self.id = id
        self.capacity = capacity
        self.wake = wake
    }

    /// Queues a message; returns whether the client should be woken (it
    /// had nothing queued). Called by the engine under its lock, with its
    /// tick (`ChangeClock`): what the subscriber knows once it has read
    /// this message.
    package func post(_ message: SubscriptionMessage, tick: UInt64 = 0) -> Bool {
        mailbox.withLock { box in
            guard !box.closed else { return false }
            let wasEmpty = box.messages.isEmpty
            let weight = Self.weight(of: message)
            if case .snapshot(_, true) = message {
                // A fresh snapshot replaces whatever was queued.
                box.messages.removeAll()
                box.weight = 0
                box.overflowed = false
            } else if box.overflowed {
                return false
            } else if box.weight + weight > capacity, !message.isFirst {
                box.messages = [.resynchronize]
                box.weight = 0
                box.overflowed = true
                return wasEmpty
            }
            box.messages.append(message)
            // The results themselves are not a backlog: the capacity bounds
            // the changes queued after them (a snapshot larger than the
            // capacity would otherwise make the next change overflow, and
            // the fresh snapshot asked for then, again, for ever).
            if case .snapshot = message {} else { box.weight += weight }
            box.tick = max(box.tick, tick)
            return wasEmpty
        }
    }

    /// Wakes the client; the engine calls this after releasing its lock.
    package func notify() {
        wake()
    }

    /// Whether nothing is queued.
    var isEmpty: Bool { mailbox.withLock { $0.messages.isEmpty } }

    /// Takes every queued message, oldest first.
    package func take() -> [SubscriptionMessage] {
        mailbox.withLock { box in
            defer {
                box.messages.removeAll()
                box.weight = 0
            }
            return box.messages
        }
    }

    /// Takes every queued message, oldest first, with the engine's tick
    /// when it posted the last of them.
    package func takeStamped() -> (messages: [SubscriptionMessage], tick: UInt64) {
        mailbox.withLock { box in
            defer {
                box.messages.removeAll()
                box.weight = 0
            }
            return (box.messages, box.tick)
        }
    }

    /// Ends the subscription on the client side: nothing more is queued.
    package func close() {
        mailbox.withLock { box in
            box.closed = true
            box.messages.removeAll()
        }
    }

    private static func weight(of message: SubscriptionMessage) -> Int {
        switch message {
        case .snapshot(let entries, _): entries.count
        case .changes(let added, let changed, let removed), .resumed(let added, let changed, let removed, _):
            added.count + changed.count + removed.count
        case .resynchronize, .problems: 1
        }
    }
}

/// A scope a subscription asks for: a folder and what belongs to it.
package struct ScopeRequest: Sendable, Hashable {
    package var path: FilePath
    package var rules: ScopeRules

    package init(path: FilePath, rules: ScopeRules) {
        self.path = path
        self.rules = rules
    }
}

/// Something that keeps the engine's view of a scope from being complete
/// or live, as a value: the query turns it into an error for people.
package enum EngineProblem: Sendable, Hashable {
    /// Folders the watch limit kept unwatched (changes inside them are not
    /// seen): how many, the first one by path, and the per-user limit.
    case watchLimit(unwatched: Int, example: FilePath, limit: Int)
    /// A folder that could not be listed (permissions): what is inside it
    /// is missing from the results until it can be read.
    case unreadableFolder(FilePath, Errno)
    /// A folder that could be listed but not watched for another reason
    /// than the limit: its changes are not seen.
    case unwatchableFolder(FilePath, Errno)
    /// A scope's folder is gone (deleted or moved away); it is watched for
    /// from its nearest existing ancestor and crawled when it returns.
    case missingScope(FilePath)
    /// A query served by the index daemon lost it (or never reached it) at
    /// this socket: its results are not live until it reconnects.
    case daemonUnreachable(FilePath)
    /// The socket where the query's daemon should be is not this user's
    /// daemon (its folder, file or process is another user's): nothing was
    /// sent to it.
    case daemonRefused(FilePath, String)
    /// The query went past its budget (`QueryLimit`) and was ended: the
    /// message says why and what to do. Not about a folder (an empty path).
    case tooExpensive(String)
    /// A query across hosts: the shared index unreachable, or refusing
    /// the search. Not about a folder.
    case sharedIndex(String)
    /// A query across hosts: a host offline, its results kept as of its
    /// last contact (stale); the message says since when.
    case hostOffline(host: String, message: String)
    /// A query across hosts: a folder of another host (`NAME:/path`) that
    /// its host would not let the user search, and why, as the shared
    /// index says it (`ENOENT`, `ENOTDIR`, `EACCES`, `ENAMETOOLONG`,
    /// `symlink`, `unindexed`): the search is refused, as a local one of a
    /// missing or closed scope would be.
    case hostFolder(FilePath, problem: String)

    /// The folder the problem is about.
    package var path: FilePath {
        switch self {
        case .watchLimit(_, let path, _), .unreadableFolder(let path, _), .unwatchableFolder(let path, _),
            .missingScope(let path), .daemonUnreachable(let path), .daemonRefused(let path, _),
            .hostFolder(let path, _):
            path
        case .tooExpensive, .sharedIndex, .hostOffline: FilePath()
        }
    }
}
