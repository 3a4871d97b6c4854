import Foundation
import MetadataCompat
import MetadataIndex

/// Records an `NSMetadataQuery`'s notifications from the default center, as
/// Apple code observes them, and waits for conditions against a deadline
/// (never a fixed sleep).
final class CompatRecorder: @unchecked Sendable {
    enum Kind: Sendable { case start, progress, finish, update }

    struct Record: @unchecked Sendable {
        var kind: Kind
        var object: AnyObject?
        var added: [NSMetadataItem] = []
        var changed: [NSMetadataItem] = []
        var removed: [NSMetadataItem] = []
    }

    let records = Locked<[Record]>([])
    private var tokens: [any NSObjectProtocol] = []

    init(_ query: NSMetadataQuery) {
        let pairs: [(Notification.Name, Kind)] = [
            (.NSMetadataQueryDidStartGathering, .start), (.NSMetadataQueryGatheringProgress, .progress),
            (.NSMetadataQueryDidFinishGathering, .finish), (.NSMetadataQueryDidUpdate, .update),
        ]
        for (name, kind) in pairs {
            tokens.append(
                NotificationCenter.default.addObserver(forName: name, object: query, queue: nil) { [records] note in
                    var record = Record(kind: kind, object: note.object as AnyObject?)
                    func items(_ key: String) -> [NSMetadataItem] { note.userInfo?[key] as? [NSMetadataItem] ?? [] }
                    record.added = items(NSMetadataQueryUpdateAddedItemsKey)
                    record.changed = items(NSMetadataQueryUpdateChangedItemsKey)
                    record.removed = items(NSMetadataQueryUpdateRemovedItemsKey)
                    records.withLock { $0.append(record) }
                })
        }
    }

    deinit {
        for token in tokens { NotificationCenter.default.removeObserver(token) }
    }

    var kinds: [Kind] { records.withLock { $0.map(\.kind) } }
    var updates: [Record] { records.withLock { $0.filter { $0.kind == .update } } }

    /// Waits until `condition` holds, polling every 5 ms, up to `timeout`
    /// seconds.
    @discardableResult
    func wait(timeout: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }

    func waitForFinish() -> Bool {
        wait { kinds.contains(.finish) }
    }
}

extension NSMetadataQuery {
    /// The results' names (`NSMetadataItemFSNameKey`), in order.
    var resultNames: [String] {
        results.compactMap { ($0 as? NSMetadataItem)?.value(forAttribute: NSMetadataItemFSNameKey) as? String }
    }
}
