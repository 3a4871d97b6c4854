import Foundation
import Synchronization

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Records a query's notifications, in order, from NotificationCenter, and
/// waits for conditions against a deadline (never a fixed sleep).
final class QueryRecorder: @unchecked Sendable {
    enum Kind: String, Sendable { case start, progress, finish, update }

    struct Record: Sendable {
        var kind: Kind
        var added: [MetadataItem] = []
        var changed: [MetadataItem] = []
        var removed: [MetadataItem] = []
        var update: MetadataQuery.Update?
    }

    let records = Locked<[Record]>([])
    /// The results as the query finished gathering, read in its
    /// notification: where its updates start from. Read later, the results
    /// may already hold an update delivered since.
    let resultsAtFinish = Locked<[MetadataItem]>([])
    private var tokens: [any NSObjectProtocol] = []
    let query: MetadataQuery

    init(_ query: MetadataQuery) {
        self.query = query
        let center = NotificationCenter.default
        let pairs: [(Notification.Name, Kind)] = [
            (.metadataQueryDidStartGathering, .start), (.metadataQueryGatheringProgress, .progress),
            (.metadataQueryDidFinishGathering, .finish), (.metadataQueryDidUpdate, .update),
        ]
        for (name, kind) in pairs {
            tokens.append(
                center.addObserver(forName: name, object: query, queue: nil) { [unowned self] note in
                    var record = Record(kind: kind)
                    if kind == .finish { self.resultsAtFinish.withLock { $0 = self.query.results } }
                    if kind == .update {
                        record.added = note.userInfo?[MetadataQuery.addedItemsKey] as? [MetadataItem] ?? []
                        record.changed = note.userInfo?[MetadataQuery.changedItemsKey] as? [MetadataItem] ?? []
                        record.removed = note.userInfo?[MetadataQuery.removedItemsKey] as? [MetadataItem] ?? []
                        record.update = note.userInfo?[MetadataQuery.updateKey] as? MetadataQuery.Update
                    }
                    self.records.withLock { $0.append(record) }
                })
        }
    }

    deinit {
        for token in tokens { NotificationCenter.default.removeObserver(token) }
    }

    /// `resultsAtFinish`, read.
    var initialResults: [MetadataItem] { resultsAtFinish.withLock { $0 } }

    var kinds: [Kind] { records.withLock { $0.map(\.kind) } }
    var updates: [Record] { records.withLock { $0.filter { $0.kind == .update } } }
    /// Every update delivered, in order.
    var deliveredUpdates: [MetadataQuery.Update] { records.withLock { $0.compactMap(\.update) } }

    /// Waits until `condition` holds, polling every 5 ms, up to `timeout`.
    @discardableResult
    /// Polls `condition` until it holds or `timeout` passes: every 5 ms at
    /// first, backing off to every 50 ms, so an expensive condition (a
    /// fresh crawl) does not compete with the engine it waits for.
    func wait(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        var pause: UInt32 = 5_000
        while Date() < deadline {
            if condition() { return true }
            usleep(pause)
            pause = min(pause * 2, 50_000)
        }
        return condition()
    }

    func waitForFinish(timeout: Double = 30) -> Bool {
        wait(timeout: timeout) { kinds.contains(.finish) }
    }

    /// Result paths relative to `base`.
    func resultNames(relativeTo base: String) -> Set<String> {
        Set(query.results.map { String(String(decoding: $0.pathBytes, as: UTF8.self).dropFirst(base.count + 1)) })
    }
}
