import Foundation
import MDQLive
import MetadataIndex
import SystemPackage

/// `mdq --live`: runs a live query until interrupted, printing as it goes.
struct LiveSession {
    let predicate: MetadataPredicate
    /// This process's engine, or the index daemon.
    let source: MetadataQuery.Source
    /// The scopes with the command line's rules (hidden items, exclusions).
    let scopeRequests: [ScopeRequest]?
    /// Scopes by name instead (hosts of the shared index across hosts).
    var searchScopes: [SearchScope] = []
    let container: UbiquityContainer?
    var sortDescriptors: [MetadataSortDescriptor] = []
    /// Imported attributes the printer shows (values from the daemon's store).
    var fetchedAttributes: [String] = []
    let interval: Double?
    let printer: LivePrinter
    /// Seconds a search of the shared index may take (`--budget`).
    var budget: Double?

    func run() -> Never {
        let query = MetadataQuery(source: source)
        query.predicate = predicate
        query.scopeRequests = scopeRequests
        if !searchScopes.isEmpty { query.searchScopes = searchScopes }
        query.container = container
        query.sortDescriptors = sortDescriptors
        query.fetchedAttributes = fetchedAttributes
        query.budget = budget
        if let interval { query.notificationBatchingInterval = interval }
        let center = NotificationCenter.default
        let printer = self.printer
        var tokens: [any NSObjectProtocol] = []
        tokens.append(
            center.addObserver(forName: .metadataQueryDidStartGathering, object: query, queue: nil) { _ in
                printer.didStart()
            })
        tokens.append(
            center.addObserver(forName: .metadataQueryGatheringProgress, object: query, queue: nil) { note in
                printer.progress(note.userInfo?["gathered"] as? Int ?? 0)
            })
        tokens.append(
            center.addObserver(forName: .metadataQueryDidFinishGathering, object: query, queue: nil) { _ in
                printer.didFinish(query.results)
            })
        tokens.append(
            center.addObserver(forName: .metadataQueryDidUpdate, object: query, queue: nil) { note in
                guard let update = note.userInfo?[MetadataQuery.updateKey] as? MetadataQuery.Update else { return }
                printer.didUpdate(update, count: query.resultCount)
            })
        tokens.append(
            center.addObserver(forName: .metadataQueryDidReportProblem, object: query, queue: nil) { note in
                guard let error = note.userInfo?[MetadataQuery.problemKey] as? MetadataError else { return }
                printer.warn(error)
            })
        tokens.append(
            center.addObserver(forName: .metadataQueryDidResolveProblem, object: query, queue: nil) { note in
                guard let error = note.userInfo?[MetadataQuery.problemKey] as? MetadataError else { return }
                printer.resolve(error)
            })
        ProcessEnvironment.onInterrupt { _ in
            // Stop first (no notification after this returns), then make
            // sure no line is half written, then leave.
            query.stop()
            printer.quiesce()
            ProcessExit.exit(0)
        }
        guard query.start() else {
            Diagnostics.error("the query could not start")
            ProcessExit.exit(1)
        }
        // The main thread only waits; notifications come on the query's queue.
        while true {
            _ = withExtendedLifetime(tokens) { sleep(3600) }
        }
    }
}
