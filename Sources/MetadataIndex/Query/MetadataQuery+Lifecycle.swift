import Foundation
import MDQCore
import MDQEngine
import MDQImport
import MDQLive
import MDQSystem
import SystemPackage

extension MetadataQuery {
    /// Starts gathering.
    ///
    /// Did start gathering is posted before this returns, on
    /// `operationQueue` when one is set (waiting for it). One exception:
    /// called on the main queue outside an operation with the main queue as
    /// `operationQueue` (main-actor code in a program that called
    /// `dispatchMain()`), it is posted first thing after the caller's work
    /// returns, as waiting for the queue the caller holds would never end.
    ///
    /// - Returns: false when there is no predicate or the query is already
    ///   running; otherwise true, after posting did start gathering.
    @discardableResult
    public func start() -> Bool {
        let generation = state.withLock { s -> Int? in
            guard s.configuration.predicate != nil, s.phase != .gathering, s.phase != .live else { return nil }
            s.generation += 1
            s.phase = .gathering
            s.results = ResultSet(factory: ItemFactory(container: nil), descriptors: [])
            s.scopeErrors = []
            s.problems = []
            s.reported = [:]
            s.deliveryScheduled = false
            s.lastProgressPost = nil
            return s.generation
        }
        guard let generation else { return false }
        post(.didStartGathering, generation: generation, synchronously: true)
        if WorkerThreads.start(name: "mdq-gather", { [self] in gather(generation: generation) }) == nil {
            // No thread to be had: gather here rather than not at all.
            gather(generation: generation)
        }
        return true
    }

    /// Stops the query: no notification is posted after this returns; the
    /// results stay readable. `start()` begins anew.
    public func stop() {
        let taken = gate.withGate {
            state.withLock { s -> ((any QuerySource)?, Subscription?, [WeakEventBuffer])? in
                guard s.phase == .gathering || s.phase == .live else { return nil }
                s.phase = .stopped
                s.generation += 1
                defer {
                    s.subscription = nil
                    s.streams = [:]
                }
                return (s.engine, s.subscription, Array(s.streams.values))
            }
        }
        guard let (engine, subscription, streams) = taken else { return }
        for stream in streams { stream.buffer?.finish() }
        if let engine, let subscription { engine.unsubscribe(subscription) }
    }

    /// The engine's scope requests for the configured scopes, errors for
    /// scopes that cannot be made (ubiquitous scopes without a container),
    /// and the container the query uses: the one set, else for ubiquitous
    /// scopes the default container (`UbiquityContainer.defaultContainer()`).
    func scopeRequests(_ configuration: Configuration) -> ([ScopeRequest], [MetadataError], UbiquityContainer?) {
        if let exact = configuration.scopeRequests { return (exact, [], configuration.container) }
        func rules(hidden: Bool, rootChildren: Set<[UInt8]> = []) -> ScopeRules {
            ScopeRules(
                includeHidden: hidden, excludedFolderNames: configuration.excludedFolderNames,
                excludedRootChildNames: rootChildren)
        }
        let localHidden = configuration.includeHidden ?? false
        let ubiquitousHidden = configuration.includeHidden ?? true
        var requests: [ScopeRequest] = []
        var errors: [MetadataError] = []
        var ubiquitous: Set<SearchScope> = []
        var container = configuration.container
        for scope in configuration.scopes where scope.hosts == nil {
            if let directory = scope.directory {
                requests.append(ScopeRequest(path: directory, rules: rules(hidden: localHidden)))
            } else if scope == .userHome {
                let home = FilePath(ProcessEnvironment.variable("HOME") ?? "/")
                requests.append(ScopeRequest(path: home, rules: rules(hidden: localHidden)))
            } else {
                ubiquitous.insert(scope)
            }
        }
        if !ubiquitous.isEmpty {
            do throws(MetadataError) {
                if container == nil { container = try UbiquityContainer.defaultContainer() }
                let resolved = container!
                for root in resolved.crawlRoots(for: ubiquitous) {
                    requests.append(
                        ScopeRequest(
                            path: root.path,
                            rules: rules(hidden: ubiquitousHidden, rootChildren: root.excludedChildNames)
                        ))
                }
            } catch {
                errors.append(error)
                // Code ported from Apple platforms rarely reads the query's
                // errors: say it where a person will see it, once.
                Self.reportOnce(error)
            }
        }
        return (requests, errors, container)
    }

    /// Subscribes to the engine (crawling what is not live yet) on the
    /// gathering thread.
    private func gather(generation: Int) {
        let configuration = state.withLock { $0.configuration }
        let engine: any QuerySource
        do throws(MetadataError) {
            // Hosts of the shared index are searched there (they and local
            // scopes are not mixed in one query).
            let hostScopes = configuration.scopes.filter { $0.hosts != nil }
            if !hostScopes.isEmpty {
                guard hostScopes.count == configuration.scopes.count else {
                    throw MetadataError.invalidArgument(
                        "a query of hosts (SearchScope.hosts, .allHosts, .host(_:folder:)) takes no other scope: make "
                            + "one query per kind")
                }
                let names = hostScopes.compactMap(\.hosts)
                let folders = hostScopes.compactMap { scope in
                    scope.hostFolder.map { (host: scope.hosts![0], path: $0.bytes) }
                }
                engine = SharedSource(
                    hosts: names.contains([]) ? [] : Array(Set(names.joined())).sorted(), folders: folders)
            } else {
                engine = try engineProvider()
            }
        } catch {
            state.withLock { $0.scopeErrors.append(error) }
            post(.didFinishGathering(resultCount: 0), generation: generation, synchronously: false, finishing: true)
            return
        }
        if let imported = configuration.predicate?.importedAttributes, !imported.isEmpty,
            let live = engine as? LiveEngine, live.state.withLock({ $0.content == nil })
        {
            // This process imports nothing: matching nothing would be a
            // silent lie, so the query says why it cannot run (the index
            // daemon imports, `Source.daemon`).
            let keys = imported.map(\.rawValue).sorted().joined(separator: ", ")
            let error = MetadataError.invalidArgument(
                "live queries in this process cannot test \(keys): attributes read from inside files are kept live "
                    + "by the index daemon (Source.daemon; mdq daemon start)")
            state.withLock { $0.scopeErrors.append(error) }
            post(.problem(error), generation: generation, synchronously: false)
            post(.didFinishGathering(resultCount: 0), generation: generation, synchronously: false, finishing: true)
            return
        }
        let (requests, errors, container) = scopeRequests(configuration)
        let factory = ItemFactory(container: container)
        let current = state.withLock { s -> Bool in
            guard s.generation == generation else { return false }
            s.results = ResultSet(factory: factory, descriptors: configuration.sortDescriptors)
            s.scopeErrors += errors
            s.engine = engine
            return true
        }
        guard current else { return }
        let (subscription, scopeErrors) = engine.subscribe(
            scopes: requests, predicate: configuration.predicate!, container: container,
            budget: configuration.budget, capacity: 1 << 20,
            progress: { [weak self] count in self?.progress(count, generation: generation) },
            fetching: configuration.fetching, viewer: configuration.viewer,
            wake: { [weak self] in
                guard let self else { return }
                self.deliveryQueue.async { [weak self] in self?.drain(generation: generation) }
            })
        let kept = state.withLock { s -> Bool in
            guard s.generation == generation else { return false }
            s.subscription = subscription
            s.scopeErrors += scopeErrors
            return true
        }
        guard kept else {
            engine.unsubscribe(subscription)
            return
        }
        for error in errors + scopeErrors {
            post(.problem(error), generation: generation, synchronously: false)
        }
        // The first message may have come before the subscription was
        // stored (its wake-up then found none): take it now.
        deliveryQueue.async { [weak self] in self?.drain(generation: generation) }
    }

    private func progress(_ count: Int, generation: Int) {
        let due = state.withLock { s -> Bool in
            guard s.generation == generation, s.phase == .gathering else { return false }
            let now = ContinuousClock.now
            if let last = s.lastProgressPost, now - last < .seconds(s.configuration.interval) { return false }
            s.lastProgressPost = now
            return true
        }
        if due { post(.gatheringProgress(gathered: count), generation: generation, synchronously: false) }
    }

    /// Takes the engine's messages into the results (on the delivery
    /// queue): the first results end gathering; changes wait for delivery.
    func drain(generation: Int) {
        guard
            let (engine, subscription) = state.withLock({ s -> ((any QuerySource), Subscription)? in
                guard s.generation == generation, let engine = s.engine, let subscription = s.subscription else {
                    return nil
                }
                return (engine, subscription)
            })
        else { return }
        let messages = subscription.take()
        guard !messages.isEmpty else { return }
        var resynchronize = false
        let outcome = state.withLock { s -> (finished: Int?, found: [EngineProblem], resolved: [EngineProblem])? in
            guard s.generation == generation else { return nil }
            var finished: Int?
            for message in messages {
                switch message {
                case .snapshot(let entries, let isFresh):
                    if s.phase == .gathering && !isFresh {
                        s.results.install(entries)
                        finished = entries.count
                    } else {
                        s.results.resynchronize(entries)
                    }
                case .changes(let added, let changed, let removed):
                    s.results.apply(added: added, changed: changed, removed: removed)
                case .resumed(let added, let changed, let removed, let count):
                    // A query resumes only what it gathered before: the
                    // changes since then are ordinary changes.
                    s.results.apply(added: added, changed: changed, removed: removed)
                    if s.phase == .gathering { finished = count }
                case .resynchronize:
                    resynchronize = true
                case .problems(let problems):
                    s.problems = problems
                }
            }
            // Report each problem once, and once when it no longer holds;
            // one that comes back is reported again.
            let current = Set(s.problems.map(\.reportKey))
            let resolved = s.reported.filter { !current.contains($0.key) }.map(\.value)
            s.reported = s.reported.filter { current.contains($0.key) }
            let found = s.problems.filter { problem in
                guard s.reported[problem.reportKey] == nil else { return false }
                s.reported[problem.reportKey] = problem
                return true
            }
            return (finished, found, resolved)
        }
        guard let outcome else { return }
        if resynchronize { engine.resynchronize(subscription) }
        // Problems known with the first results come before their end (a
        // host offline from the start: its results are stale already).
        if !outcome.found.isEmpty || !outcome.resolved.isEmpty {
            let watching = engine.watchCount
            for problem in outcome.resolved {
                post(.problemResolved(problem.error(watching: watching)), generation: generation, synchronously: false)
            }
            for problem in outcome.found {
                post(.problem(problem.error(watching: watching)), generation: generation, synchronously: false)
            }
        }
        if let count = outcome.finished {
            post(.didFinishGathering(resultCount: count), generation: generation, synchronously: false, finishing: true)
        }
        scheduleDelivery(now: false)
    }

    /// Arranges delivery of the pending changes after the batching interval
    /// (at once when `now` or the interval is 0).
    func scheduleDelivery(now: Bool) {
        let plan = state.withLock { s -> (Int, TimeInterval)? in
            guard s.phase == .live, s.disableCount == 0, !s.deliveryScheduled, s.results.hasPendingChanges else {
                return nil
            }
            s.deliveryScheduled = true
            return (s.generation, now ? 0 : s.configuration.interval)
        }
        guard let (generation, delay) = plan else { return }
        let fire: @Sendable () -> Void = { [weak self] in
            self?.state.withLock { $0.deliveryScheduled = false }
            self?.post(nil, generation: generation, synchronously: false)
        }
        if delay <= 0 {
            deliveryQueue.async(execute: fire)
        } else {
            deliveryQueue.asyncAfter(deadline: .now() + delay, execute: fire)
        }
    }

    /// Posts an event (or, for `nil`, the pending changes as updates) on the
    /// delivery queue or the operation queue; checks at posting time that
    /// the query was not stopped or restarted meanwhile. The results change
    /// when their update is posted, on the queue it is posted on.
    ///
    /// - Parameter finishing: the event ends gathering (the query goes live).
    func post(_ event: Event?, generation: Int, synchronously: Bool, finishing: Bool = false) {
        let work: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            self.gate.withGate {
                var updates: [Update] = []
                var handler: (@Sendable (Event) -> Void)?
                let proceed = self.state.withLock { s -> [EventBuffer]? in
                    handler = s.eventHandler
                    guard s.generation == generation, s.phase != .stopped else { return nil }
                    if finishing { s.phase = .live }
                    if event == nil {
                        guard s.disableCount == 0 else { return nil }
                        updates = s.results.takeUpdates(limit: Self.maximumChangesPerUpdate)
                        if updates.isEmpty { return nil }
                    }
                    s.streams = s.streams.filter { $0.value.buffer != nil }
                    return s.streams.values.compactMap(\.buffer)
                }
                guard let streams = proceed else { return }
                if let event {
                    let name: Notification.Name
                    var userInfo: [String: Any]?
                    switch event {
                    case .didStartGathering: name = .metadataQueryDidStartGathering
                    case .gatheringProgress(let gathered):
                        name = .metadataQueryGatheringProgress
                        userInfo = ["gathered": gathered]
                    case .didFinishGathering: name = .metadataQueryDidFinishGathering
                    case .didUpdate: name = .metadataQueryDidUpdate
                    case .problem(let error):
                        name = .metadataQueryDidReportProblem
                        userInfo = [Self.problemKey: error]
                    case .problemResolved(let error):
                        name = .metadataQueryDidResolveProblem
                        userInfo = [Self.problemKey: error]
                    }
                    notificationCenter.post(name: name, object: self, userInfo: userInfo)
                    for stream in streams { stream.yield(event) }
                    handler?(event)
                }
                for update in updates {
                    notificationCenter.post(
                        name: .metadataQueryDidUpdate, object: self,
                        userInfo: [
                            Self.addedItemsKey: update.added, Self.changedItemsKey: update.changed,
                            Self.removedItemsKey: update.removed, Self.updateKey: update,
                        ])
                    for stream in streams { stream.yield(.didUpdate(update)) }
                    handler?(.didUpdate(update))
                }
            }
            if finishing {
                // Changes made while the results were computed follow at once.
                self.scheduleDelivery(now: true)
            }
        }
        let queue = state.withLock { $0.configuration.operationQueue?.queue }
        if synchronously {
            if let queue, OperationQueue.current !== queue {
                if queue === OperationQueue.main && MainQueue.isCurrent {
                    // The caller holds the main queue outside an operation
                    // (main-actor code after `dispatchMain()`): waiting for
                    // it would never end, and posting here would too for
                    // observers registered with the main queue (Foundation
                    // waits for that queue to run them). First in line
                    // instead: it runs when the caller's work returns,
                    // before any later notification.
                    queue.addOperation(work)
                } else {
                    queue.addOperations([BlockOperation(block: work)], waitUntilFinished: true)
                }
            } else {
                work()
            }
        } else if let queue {
            queue.addOperation(work)
        } else {
            deliveryQueue.async(execute: work)
        }
    }

    /// Messages already written to stderr by this process.
    private static let reported = Locked<Set<String>>([])

    /// Writes `error` to stderr unless this process already did.
    static func reportOnce(_ error: MetadataError) {
        let line = "mdq: " + error.description
        guard reported.withLock({ $0.insert(line).inserted }) else { return }
        ProcessEnvironment.writeToStandardError(line + "\n")
    }
}
