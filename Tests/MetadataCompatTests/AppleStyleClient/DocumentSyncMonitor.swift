//
//  DocumentSyncMonitor.swift
//
//  Watches the app's iCloud Documents folder with NSMetadataQuery and
//  decides what the sync engine has to do. Written for Apple platforms;
//  the only line added for Linux is `import MetadataCompat`.
//

import Foundation
import MetadataCompat

/// Something the sync engine has to do, by path relative to the container.
enum SyncDecision: Hashable, CustomStringConvertible {
    case upload(String)
    case delete(String)
    case move(from: String, to: String)
    case download(String)
    case resolveConflict(String)

    var description: String {
        switch self {
        case .upload(let path): return "upload \(path)"
        case .delete(let path): return "delete \(path)"
        case .move(let from, let to): return "move \(from) -> \(to)"
        case .download(let path): return "download \(path)"
        case .resolveConflict(let path): return "resolve conflict \(path)"
        }
    }
}

/// Lives on the main queue: the query posts there, and every method is
/// called there.
final class DocumentSyncMonitor: @unchecked Sendable {
    private let query = NSMetadataQuery()
    private var observers: [any NSObjectProtocol] = []
    private let containerURL: URL

    /// What we last saw of each document, by query item.
    private var knownURLs: [NSMetadataItem: URL] = [:]
    private var knownSizes: [NSMetadataItem: Int64] = [:]
    private var knownDates: [NSMetadataItem: Date] = [:]

    private(set) var decisions: [SyncDecision] = []
    private(set) var isGathering = false
    private(set) var isReady = false

    init?(containerIdentifier: String?, fileExtension: String) {
        guard FileManager.default.ubiquityIdentityToken != nil,
            let containerURL = FileManager.default.url(forUbiquityContainerIdentifier: containerIdentifier)
        else {
            return nil  // iCloud is not available
        }
        self.containerURL = containerURL

        query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
        query.predicate = NSPredicate(format: "%K LIKE %@", NSMetadataItemFSNameKey, "*.\(fileExtension)")
        query.sortDescriptors = [NSSortDescriptor(key: NSMetadataItemFSNameKey, ascending: true)]
        query.notificationBatchingInterval = 0.2
        query.operationQueue = .main
    }

    func start() {
        let center = NotificationCenter.default
        observers.append(
            center.addObserver(forName: .NSMetadataQueryDidStartGathering, object: query, queue: .main) {
                [weak self] _ in
                self?.isGathering = true
            })
        observers.append(
            center.addObserver(forName: .NSMetadataQueryDidFinishGathering, object: query, queue: .main) {
                [weak self] notification in
                self?.queryDidFinishGathering(notification)
            })
        observers.append(
            center.addObserver(forName: .NSMetadataQueryDidUpdate, object: query, queue: .main) {
                [weak self] notification in
                self?.queryDidUpdate(notification)
            })
        if !query.start() {
            print("DocumentSyncMonitor: the metadata query did not start")
        }
    }

    func stop() {
        query.stop()
        for observer in observers {
            NotificationCenter.default.removeObserver(observer)
        }
        observers.removeAll()
    }

    // MARK: - Notifications

    private func queryDidFinishGathering(_ notification: Notification) {
        dispatchPrecondition(condition: .onQueue(.main))
        query.disableUpdates()
        defer { query.enableUpdates() }

        for case let item as NSMetadataItem in query.results {
            reconcile(item)
        }
        isGathering = false
        isReady = true
    }

    private func queryDidUpdate(_ notification: Notification) {
        dispatchPrecondition(condition: .onQueue(.main))
        query.disableUpdates()
        defer { query.enableUpdates() }

        let userInfo = notification.userInfo ?? [:]
        let removed = userInfo[NSMetadataQueryUpdateRemovedItemsKey] as? [NSMetadataItem] ?? []
        let added = userInfo[NSMetadataQueryUpdateAddedItemsKey] as? [NSMetadataItem] ?? []
        let changed = userInfo[NSMetadataQueryUpdateChangedItemsKey] as? [NSMetadataItem] ?? []

        for item in removed {
            guard let url = knownURLs.removeValue(forKey: item) else { continue }
            knownSizes[item] = nil
            knownDates[item] = nil
            decisions.append(.delete(relativePath(of: url)))
        }
        for item in added + changed {
            reconcile(item)
        }
    }

    // MARK: - Decisions

    private func reconcile(_ item: NSMetadataItem) {
        guard let url = item.value(forAttribute: NSMetadataItemURLKey) as? URL else { return }
        let path = relativePath(of: url)

        let status = item.value(forAttribute: NSMetadataUbiquitousItemDownloadingStatusKey) as? String
        if status == NSMetadataUbiquitousItemDownloadingStatusNotDownloaded {
            try? FileManager.default.startDownloadingUbiquitousItem(at: url)
            decisions.append(.download(path))
            return
        }
        if item.value(forAttribute: NSMetadataUbiquitousItemIsDownloadingKey) as? Bool == true {
            return  // wait until it is here
        }
        if let percent = item.value(forAttribute: NSMetadataUbiquitousItemPercentDownloadedKey) as? Double,
            percent < 100
        {
            return
        }

        if item.value(forAttribute: NSMetadataUbiquitousItemHasUnresolvedConflictsKey) as? Bool == true {
            decisions.append(.resolveConflict(path))
            knownURLs[item] = url
            return
        }

        let size = item.value(forAttribute: NSMetadataItemFSSizeKey) as? Int64 ?? 0
        let modified = item.value(forAttribute: NSMetadataItemFSContentChangeDateKey) as? Date

        if let previousURL = knownURLs[item], previousURL != url {
            decisions.append(.move(from: relativePath(of: previousURL), to: path))
        }
        if knownURLs[item] == nil || knownSizes[item] != size || knownDates[item] != modified {
            decisions.append(.upload(path))
        }
        knownURLs[item] = url
        knownSizes[item] = (item.value(forAttribute: NSMetadataItemFSSizeKey) as? NSNumber)?.int64Value
        knownDates[item] = modified
    }

    private func relativePath(of url: URL) -> String {
        let base = containerURL.standardizedFileURL.path
        let path = url.standardizedFileURL.path
        guard path.hasPrefix(base + "/") else { return path }
        return String(path.dropFirst(base.count + 1))
    }
}
