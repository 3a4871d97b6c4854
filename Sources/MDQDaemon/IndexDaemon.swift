import Foundation
import MDQCore
package import MDQEngine
import MDQImport
import MDQLive
public import MDQSystem
import MDQWatch
import MDQWire
package import SystemPackage

/// The index daemon: one per user, it keeps the scopes it is asked to index
/// live in one engine, persists the index, and answers one-shot queries and
/// live subscriptions over a Unix socket only its user can reach.
///
/// - Start-up: takes the lock (a second daemon refuses to start), listens
///   (or takes the socket systemd passed), restores the snapshot if one is
///   there and sound (a damaged one is discarded with one warning), keeps
///   its scopes live (restored roots answer at once), then checks them
///   against the disk in the background; until that ends, answers say they
///   may be stale.
/// - It saves the snapshot every `snapshotInterval` while changes
///   accumulate, and on `stop()`.
/// - Connections: one thread each; other users are refused (`SO_PEERCRED`).
///   Requests are bounded (1 MiB, `requestTimeout` to finish a line); a subscriber that
///   reads too slowly is told to resynchronise rather than growing the
///   daemon's memory.
public final class IndexDaemon: Sendable {
    public let paths: DaemonPaths
    package let engine: LiveEngine
    private let listener: UnixSocket
    private let lock: ProcessLock
    private let log: @Sendable (String) -> Void
    /// Milliseconds a request line may take once begun.
    let requestTimeout: Int32
    let state: ConditionLocked<State>
    let started = ContinuousClock.now
    /// Imports what is inside the indexed files, when content indexing is on.
    let content: ContentIndexer?
    /// The system index (`startSystem`): every local user is served, each
    /// answered only what that user may see; watched with fanotify marks.
    public let isSystem: Bool
    /// The fanotify watcher of the system index.
    let fanotify: FanotifyWatcher?
    /// A user daemon's watcher beside a system index: scopes it keeps live
    /// are followed through it instead of with inotify watches.
    let feed: SystemIndexFeed?
    /// Every mount point now, kept by the system index's mount loop: a
    /// query of a folder with none inside it stays on its filesystem.
    let mountPoints = Locked<[String]>([])
    /// The system index's configuration (prunes, mounts named).
    let systemConfiguration: SystemConfiguration?
    /// Mount points named (`--mount`, `MOUNTS`) with no filesystem
    /// mounted there now: not indexed until one is.
    let waitingMounts = Locked<[FilePath]>([])
    /// The mount id (`/proc/self/mountinfo`) of each system scope's mount.
    let scopeMounts = Locked<[FilePath: String]>([:])
    /// What one user may spend of this daemon.
    let limits: ServiceLimits
    /// How the publisher into the shared index across hosts is doing,
    /// read at each `status`; nil when this index does not publish.
    package let publication = Locked<(@Sendable () -> PublicationStatus)?>(nil)
    /// Searches across hosts, answered for this index's users (`SEARCH`):
    /// set by the command that runs the system index.
    package let hostSearch = Locked<(any HostSearching)?>(nil)

    /// Whether `mount` (a `/proc/self/mountinfo` id) is the mount the
    /// system index indexes the folder at `path` through: that of the
    /// deepest of its scopes holding the path. Always true for a user's
    /// daemon (it resolves its own user's paths).
    func isIndexedMount(_ mount: Int, holding path: FilePath) -> Bool {
        guard isSystem else { return true }
        let normalized = path.lexicallyNormalized()
        let held = scopeMounts.withLock { ids in
            ids.filter { normalized.starts(with: $0.key) }.max { $0.key.components.count < $1.key.components.count }
        }
        return held.map { Int($0.value) == mount } ?? false
    }

    /// Whether and how the daemon imports what is inside files.
    public struct ContentIndexing: Sendable {
        /// Import workers at once: the share of the processors importing
        /// may take (each runs at nice 19 in the idle I/O class).
        public var workers: Int
        /// Seconds a file must be left alone before it is imported.
        public var settle: Double
        /// The worker executable, when not the standard one (tests).
        package var workerExecutable: FilePath?

        public init(workers: Int = 1, settle: Double = 0.4) {
            self.workers = max(1, workers)
            self.settle = max(0, settle)
        }
    }

    struct State {
        /// The indexed scopes and, once live, what keeps them so.
        var scopes: [ScopeRequest] = []
        /// Scope folders indexed by name and stat data only (`mdq index
        /// add --no-content`): nothing inside them is imported, unless a
        /// scope deeper inside them asks for it.
        var namesOnly: Set<FilePath> = []
        var retained: [ScopeRequest: RetainedScope] = [:]
        var snapshotWritten: Timestamp?
        var changesAtSnapshot = 0
        var stopping = false
        var stopped = false
        var connections = 0
        /// The sockets of the sessions being served, ended by `stop()`.
        var sessions: [ObjectIdentifier: UnixSocket] = [:]
        /// One-shot queries being answered now (`status`'s `queries`).
        var runningQueries = 0
        /// Queries stopped because their client went away (`status`'s
        /// `cancelledQueries`, so a test can see the daemon noticed).
        var cancelledQueries = 0
        /// Connections served since the daemon started (`status`'s
        /// `connectionsServed`: what one search costs, tests count it).
        var connectionsServed = 0
        /// What each user holds now, against `limits`.
        var usage: [UInt32: Usage] = [:]
        /// Queries since the heap was last trimmed (`endQuery`).
        var queriesSinceTrim = 0
        /// Live queries and connections of all users.
        var subscriptionsInAll = 0
        var connectionsInAll = 0
        var followersInAll = 0
        /// Whose share each user id spends (read at start).
        var subordinates = SubordinateUsers.read()
    }

    /// What one user holds of the daemon now.
    struct Usage {
        var queries = 0
        var subscriptions = 0
        var connections = 0
        var followers = 0
        var isEmpty: Bool { queries == 0 && subscriptions == 0 && connections == 0 && followers == 0 }
    }

    /// What a user may start (`begin`) and has ended (`end`).
    enum Held {
        case query, subscription, connection, follower
    }

    /// Counts `held` against `user`'s limit (the owner's, for a user's
    /// subordinate id) and all users' together; false (nothing counted)
    /// when either is reached.
    func begin(_ held: Held, for user: UInt32) -> Bool {
        state.withLock { s in
            let user = s.subordinates.owner(of: user)
            var usage = s.usage[user] ?? Usage()
            switch held {
            case .query:
                guard usage.queries < limits.queriesPerUser, s.runningQueries < limits.queriesInAll else {
                    return false
                }
                usage.queries += 1
                s.runningQueries += 1
                s.queriesSinceTrim += 1
            case .subscription:
                guard usage.subscriptions < limits.subscriptionsPerUser,
                    s.subscriptionsInAll < limits.subscriptionsInAll
                else { return false }
                usage.subscriptions += 1
                s.subscriptionsInAll += 1
            case .connection:
                guard usage.connections < limits.connectionsPerUser, s.connectionsInAll < limits.connectionsInAll
                else { return false }
                usage.connections += 1
                s.connectionsInAll += 1
            case .follower:
                guard usage.followers < limits.followersPerUser, s.followersInAll < limits.followersInAll else {
                    return false
                }
                usage.followers += 1
                s.followersInAll += 1
            }
            s.usage[user] = usage
            return true
        }
    }

    /// Gives back what `begin` counted. When the last query of a burst
    /// ends, the heap's free pages go back to the kernel: what a burst
    /// took (its threads' buffers, compiled patterns) is returned after it.
    func end(_ held: Held, for user: UInt32) {
        let trim = state.withLock { s -> Bool in
            let user = s.subordinates.owner(of: user)
            var usage = s.usage[user] ?? Usage()
            switch held {
            case .query:
                usage.queries -= 1
                s.runningQueries -= 1
            case .subscription:
                usage.subscriptions -= 1
                s.subscriptionsInAll -= 1
            case .connection:
                usage.connections -= 1
                s.connectionsInAll -= 1
            case .follower:
                usage.followers -= 1
                s.followersInAll -= 1
            }
            s.usage[user] = usage.isEmpty ? nil : usage
            guard held == .query, s.runningQueries == 0, s.queriesSinceTrim >= 8 else { return false }
            s.queriesSinceTrim = 0
            return true
        }
        if trim { ProcessMemory.releaseFreePages(after: 1, threshold: 0) }
    }

    /// Starts a daemon (returns once it listens).
    ///
    /// - Parameters:
    ///   - snapshotInterval: seconds between snapshots while changes
    ///     accumulate.
    ///   - log: receives one line per notable event (start, snapshot
    ///     discarded, scope problems, stop).
    /// - Throws: `MetadataError` `.daemon` when another daemon holds the lock,
    ///   the folders are not private, or the socket cannot be made.
    ///   - systemIndex: where a system index (`mdq system`) would listen:
    ///     scopes it keeps live are followed through it, with no inotify
    ///     watches (nil: every folder is watched with inotify).
    public static func start(
        paths: DaemonPaths = .standard, crawlThreads: Int? = nil, snapshotInterval: Double = 60,
        requestTimeout: Double = 10, content contentIndexing: ContentIndexing? = nil,
        systemIndex: DaemonPaths? = .system, log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(MetadataError) -> IndexDaemon {
        try start(
            paths: paths, crawlThreads: crawlThreads, snapshotInterval: snapshotInterval,
            requestTimeout: requestTimeout, content: contentIndexing, system: nil, systemIndex: systemIndex,
            limits: .user, log: log)
    }

    /// A user daemon with other limits than `ServiceLimits.user` (tests);
    /// `beforeVerifying` runs after a snapshot's scopes are live and before
    /// they are checked against the disk (a test holds the check there).
    package static func start(
        paths: DaemonPaths, crawlThreads: Int? = nil, limits: ServiceLimits = .user,
        beforeVerifying: @escaping @Sendable () -> Void = {}
    ) throws(MetadataError) -> IndexDaemon {
        try start(
            paths: paths, crawlThreads: crawlThreads, snapshotInterval: 60, requestTimeout: 10, content: nil,
            system: nil, systemIndex: nil, limits: limits, log: { _ in }, beforeVerifying: beforeVerifying)
    }

    /// Starts the system index (as root): the local filesystems mounted at
    /// `mounts` (else at the configuration's `MOUNTS`; else every local
    /// disk filesystem mounted now, and then as the mount table changes),
    /// each a scope under the configuration's prunes, hidden entries
    /// included, not crossing into other filesystems; kept live with one
    /// fanotify mark per filesystem, answering every local user over a
    /// socket anyone may connect to, each only what that user may see
    /// (`Viewer`). Names and stat data only, unless the configuration
    /// says `CONTENT`: then what is inside files is imported too, and
    /// each user is answered it for the files that user may read (files'
    /// ACLs are read then: `FileStatus.readFileACLs`). A mount point named
    /// with no filesystem mounted there
    /// waits for one (`waitingMounts`); the folder beneath is not indexed.
    ///
    /// - Parameter beforeAnswering: runs once the index is made and before
    ///   the first connection is answered: what the daemon answers with
    ///   (`hostSearch`, `publication`) is set there, so that no client is
    ///   told it is missing while the daemon starts.
    /// - Throws: `MetadataError` `.watcherUnavailable` without fanotify or
    ///   `CAP_SYS_ADMIN`; `.daemon` as `start`.
    package static func startSystem(
        mounts: [FilePath]?, configuration: SystemConfiguration = .standard, paths: DaemonPaths = .system,
        crawlThreads: Int? = nil, snapshotInterval: Double = 60, requestTimeout: Double = 10,
        contentIndexing: ContentIndexing = ContentIndexing(),
        log: @escaping @Sendable (String) -> Void = { _ in },
        beforeAnswering: (IndexDaemon) -> Void = { _ in }
    ) throws(MetadataError) -> IndexDaemon {
        var configuration = configuration
        if let mounts { configuration.mounts = mounts.map { $0.lexicallyNormalized() } }
        // What each user may see depends on folders' ACLs too, and, for
        // files' words, on files' ACLs.
        if configuration.content { FileStatus.readFileACLs() } else { FileStatus.readFolderACLs() }
        return try start(
            paths: paths, crawlThreads: crawlThreads, snapshotInterval: snapshotInterval,
            requestTimeout: requestTimeout, content: configuration.content ? contentIndexing : nil,
            system: configuration, systemIndex: nil,
            limits: configuration.limits, log: log, beforeAnswering: beforeAnswering)
    }

    /// The system index's scopes for the mount table `table`: the mount
    /// points named that have a filesystem mounted (and those that wait for
    /// one), or the discovered ones.
    static func systemScopes(
        _ configuration: SystemConfiguration, mountTable table: String
    ) -> (scopes: [ScopeRequest], waiting: [FilePath]) {
        guard let named = configuration.mounts else {
            return (LocalFilesystems.parse(table, configuration: configuration).map(configuration.scope), [])
        }
        // A type PRUNEFS names is never indexed, even named.
        let mounts = LocalFilesystems.inEffect(table)
        // Each filesystem once: a path named twice, or a bind mount of one
        // named already, is left out.
        var seenPaths: Set<String> = []
        var seenDevices: Set<String> = []
        let unique = named.filter { seenPaths.insert($0.lexicallyNormalized().string).inserted }
        let mounted = unique.filter { path in
            guard let mount = mounts[path.string], let type = mount.type, !configuration.prunedTypes.contains(type)
            else { return false }
            return seenDevices.insert(mount.device).inserted
        }
        return (mounted.map(configuration.scope), unique.filter { mounts[$0.string]?.type == nil })
    }

    private static func start(
        paths: DaemonPaths, crawlThreads: Int?, snapshotInterval: Double, requestTimeout: Double,
        content contentIndexing: ContentIndexing?, system: SystemConfiguration?, systemIndex: DaemonPaths?,
        limits: ServiceLimits, log: @escaping @Sendable (String) -> Void,
        beforeVerifying: @escaping @Sendable () -> Void = {}, beforeAnswering: (IndexDaemon) -> Void = { _ in }
    ) throws(MetadataError) -> IndexDaemon {
        var paths = paths
        if system != nil {
            try paths.prepareSystem()
        } else {
            try paths.prepare()
        }
        let lock: ProcessLock
        switch ProcessLock.acquire(paths.lock) {
        case .success(let held?): lock = held
        case .success(nil):
            let holder = ProcessLock.holder(of: paths.lock).map { " (pid \($0))" } ?? ""
            throw MetadataError.daemon("a daemon is already running\(holder)", path: paths.socket)
        case .failure(let error):
            throw MetadataError.daemon("cannot take the daemon lock", path: paths.lock, underlying: error)
        }
        let listener: UnixSocket
        if let inherited = UnixSocket.inherited() {
            listener = inherited
        } else {
            // We hold the lock: a socket left there is a crashed daemon's.
            _ = syscallResult { paths.socket.withPlatformString { unlink($0) } }
            switch UnixSocket.listen(at: paths.socket) {
            case .success(let socket):
                listener = socket
                // Every user connects to the system index (and is answered
                // what that user may see).
                if system != nil { _ = syscallResult { paths.socket.withPlatformString { chmod($0, 0o666) } } }
            case .failure(let error):
                throw MetadataError.daemon("cannot listen", path: paths.socket, underlying: error)
            }
        }
        let engine: LiveEngine
        var written: Timestamp?
        // The watcher, as the registry chooses it for this daemon's role.
        let backend = try WatcherRegistry.backend(
            for: system != nil ? .systemIndex : .userDaemon(systemIndex: systemIndex != nil))
        var fanotify: FanotifyWatcher?
        var feed: SystemIndexFeed?
        switch backend {
        case .fanotify: fanotify = try FanotifyWatcher()
        // A user daemon follows what a system index keeps live through it.
        case .systemIndex: feed = systemIndex.flatMap { try? SystemIndexFeed(paths: $0) }
        case .inotify: break
        }
        let watcher: (any FolderWatcher)? = fanotify ?? feed
        if let system { Self.keepSnapshotWithFileACLs(system.content, paths: paths, log: log) }
        do {
            let started = ContinuousClock.now
            let restored = try LiveEngine.restoring(
                from: paths.snapshot, crawlThreads: crawlThreads, watcher: watcher)
            engine = restored.engine
            written = restored.written
            let seconds = String(format: "%.2f", Self.seconds(ContinuousClock.now - started))
            let entries = engine.state.withLock { $0.index.count }
            log("restored the index (\(entries) entries) from \(paths.snapshot.string) in \(seconds) s")
        } catch {
            if error.underlying != .noSuchFileOrDirectory { log("warning: \(error.description); crawling the scopes") }
            engine = try LiveEngine(
                index: FileIndex(), watcher: watcher, watchLimit: nil, crawlThreads: crawlThreads,
                eventCapacity: 1 << 20)
        }
        var (scopes, namesOnly) = Self.readScopes(paths.scopes, log: log)
        var mountTable: String?
        var waiting: [FilePath] = []
        if let system {
            // The mounts asked for (or found) replace the ones kept.
            mountTable = LocalFilesystems.mountTable()
            (scopes, waiting) = systemScopes(system, mountTable: mountTable ?? "")
            namesOnly = []
            for path in waiting { log("nothing is mounted at \(path.string) yet: indexed once something is") }
            let mounts = LocalFilesystems.inEffect(mountTable ?? "")
            for path in system.mounts ?? [] {
                if let type = mounts[path.string]?.type, system.prunedTypes.contains(type) {
                    log("\(path.string) holds a \(type) filesystem, which PRUNEFS leaves out: not indexed")
                }
            }
        }
        let content = contentIndexing.flatMap {
            Self.startContent(
                $0, scopes: scopes.map { ($0.path, !namesOnly.contains($0.path)) }, paths: paths, engine: engine,
                log: log)
        }
        // Files whose sizes and dates were read after their names
        // (`retain(_:namesFirst:)`) have stamps to import by now.
        if let content { engine.onFillEnded.withLock { $0 = { content.requestReconcile() } } }
        let daemon = IndexDaemon(
            paths: paths, engine: engine, listener: listener, lock: lock,
            requestTimeout: Int32(clamping: Int(requestTimeout * 1000)), content: content, fanotify: fanotify,
            feed: feed, systemConfiguration: system, limits: limits, log: log)
        daemon.waitingMounts.withLock { $0 = waiting }
        daemon.state.withLock { s in
            s.scopes = scopes
            s.namesOnly = namesOnly
            s.snapshotWritten = written
        }
        if let mountTable {
            daemon.mountPoints.withLock { $0 = LocalFilesystems.mountPoints(mountTable) }
            let mounts = LocalFilesystems.inEffect(mountTable)
            daemon.scopeMounts.withLock { ids in
                for scope in scopes { ids[scope.path] = mounts[scope.path.string]?.id }
            }
        }
        if system != nil {
            do throws(MetadataError) { try daemon.writeScopes() } catch { log("warning: \(error.description)") }
        }
        // Scopes the snapshot holds are live at once (no crawl): answered
        // before the first connection, flagged stale until verified.
        let (restored, toCrawl) = (scopes.filter(engine.holds), scopes.filter { !engine.holds($0) })
        // A filesystem restored under other prunes is crawled afresh.
        if system != nil { engine.dropUnusedRoots(at: toCrawl.map(\.path)) }
        for scope in restored { daemon.makeLive(scope) }
        beforeAnswering(daemon)
        guard WorkerThreads.start(name: "mdq-accept", { daemon.acceptLoop() }) != nil else {
            throw MetadataError.daemon("cannot start the daemon's threads (the thread limit)")
        }
        WorkerThreads.detach(name: "mdq-scopes") {
            for scope in toCrawl { daemon.makeLive(scope) }
            if !toCrawl.isEmpty { log("the names in \(toCrawl.count) new scopes are answerable") }
            // Built after the first crawls, which it would slow down;
            // kept current from then on.
            engine.keepNameGrams()
            engine.dropUnusedRoots()
            beforeVerifying()
            engine.verify()
            engine.waitUntilFilled()
            content?.requestReconcile()
            log("\(restored.count + toCrawl.count) scopes live and checked against the disk")
        }
        WorkerThreads.detach(name: "mdq-snapshots") { daemon.snapshotLoop(interval: snapshotInterval) }
        if let system {
            WorkerThreads.detach(name: "mdq-mounts") { daemon.mountLoop(system) }
        }
        log("listening on \(paths.socket.string) (pid \(ProcessIdentity.processID))")
        return daemon
    }

    private init(
        paths: DaemonPaths, engine: LiveEngine, listener: UnixSocket, lock: ProcessLock, requestTimeout: Int32,
        content: ContentIndexer?, fanotify: FanotifyWatcher?, feed: SystemIndexFeed?,
        systemConfiguration: SystemConfiguration?, limits: ServiceLimits, log: @escaping @Sendable (String) -> Void
    ) {
        self.content = content
        self.fanotify = fanotify
        self.feed = feed
        self.systemConfiguration = systemConfiguration
        self.limits = limits
        isSystem = systemConfiguration != nil
        self.requestTimeout = requestTimeout
        self.paths = paths
        self.engine = engine
        self.listener = listener
        self.lock = lock
        self.log = log
        state = ConditionLocked(State())
    }

    /// Stops serving, saves the snapshot and removes the socket; returns
    /// when done. Calling it again does nothing.
    public func stop() {
        let first = state.mutateAndBroadcast { s -> Bool in
            defer { s.stopping = true }
            return !s.stopping
        }
        guard first else {
            waitUntilStopped()
            return
        }
        listener.shutdown()
        // Clients are told by the end of their connection (a subscriber, a
        // user daemon following this system index).
        for socket in state.withLock({ Array($0.sessions.values) }) { socket.shutdown() }
        content?.stop()
        content?.pool.shutdown()
        saveSnapshot()
        _ = syscallResult { paths.socket.withPlatformString { unlink($0) } }
        engine.shutdown()
        lock.release()
        log("stopped")
        state.mutateAndBroadcast { $0.stopped = true }
    }

    /// Blocks until `stop()` has finished.
    public func waitUntilStopped() {
        state.wait(until: { $0.stopped }) { _ in }
    }

    // MARK: Scopes

    /// Keeps a scope live; a scope that cannot be opened stays listed (it is
    /// retried at the next start) and its problem logged.
    func makeLive(_ scope: ScopeRequest) {
        follow(scope)
        do {
            let retained = try engine.retain(scope, namesFirst: true)
            state.withLock { $0.retained[scope] = retained }
        } catch {
            unfollowIfUnused(scope.path)
            log("warning: \(error.description)")
        }
    }

    /// Stops following a scope's folder that no live scope uses.
    private func unfollowIfUnused(_ path: FilePath) {
        let normalized = path.lexicallyNormalized()
        guard let feed, feed.followedScopes.contains(normalized) else { return }
        if !state.withLock({ s in s.scopes.contains { $0.path == normalized && s.retained[$0] != nil } }) {
            feed.unfollow(normalized)
        }
    }

    /// Follows `scope` through the system index, when one keeps it live,
    /// before the engine watches its folders (then with no inotify watch).
    private func follow(_ scope: ScopeRequest) {
        guard let feed, !feed.followedScopes.contains(scope.path.lexicallyNormalized()), feed.follow(scope.path)
        else { return }
        log("\(scope.path.string) is followed through the system index (no inotify watches)")
    }

    /// Adds a scope to the indexed ones (crawling it now) and saves the list.
    func addScope(_ scope: ScopeRequest, content: Bool = true) throws(MetadataError) {
        let (known, changed) = state.withLock { s -> (Bool, Bool) in
            let changed = s.namesOnly.contains(scope.path) == content
            if content { s.namesOnly.remove(scope.path) } else { s.namesOnly.insert(scope.path) }
            return (s.scopes.contains(scope), changed)
        }
        if !known {
            state.withLock { $0.scopes.append(scope) }
        }
        if !known || changed {
            try writeScopes()
            updateContentScopes()
        }
        if state.withLock({ $0.retained[scope] == nil }) {
            follow(scope)
            let retained: RetainedScope
            do {
                retained = try engine.retain(scope, namesFirst: true)
            } catch {
                unfollowIfUnused(scope.path)
                throw error
            }
            state.withLock { $0.retained[scope] = retained }
            self.content?.requestReconcile()
        }
    }

    /// A system index that imports what is inside files judges each file
    /// by its ACL too: a snapshot saved without files' ACLs (a run
    /// without `CONTENT`) would judge its files by their mode bits until
    /// each is read again, so it is not restored. The state folder holds
    /// `file-acls` while its snapshots have them.
    private static func keepSnapshotWithFileACLs(
        _ content: Bool, paths: DaemonPaths, log: @Sendable (String) -> Void
    ) {
        let marker = paths.stateDirectory.appending("file-acls")
        let marked = syscallResult { marker.withPlatformString { access($0, F_OK) } }.isSuccess
        if content && !marked {
            if syscallResult({ paths.snapshot.withPlatformString { unlink($0) } }).isSuccess {
                log("the saved index holds no file's ACL (saved without CONTENT): crawling the filesystems anew")
            }
            _ = syscallResult {
                marker.withPlatformString { open($0, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
            }.map { closeDescriptor($0) }
        } else if !content && marked {
            _ = syscallResult { marker.withPlatformString { unlink($0) } }
        }
    }

    /// Opens the import store and starts the indexer; nil (with a log
    /// line) when the workers or the store are not available, so the
    /// daemon serves names and stat data as before.
    private static func startContent(
        _ options: ContentIndexing, scopes: [(FilePath, Bool)], paths: DaemonPaths, engine: LiveEngine,
        log: @escaping @Sendable (String) -> Void
    ) -> ContentIndexer? {
        var configuration = ImportWorkerPool.Configuration.standard
        configuration.workers = options.workers
        if let executable = options.workerExecutable { configuration.executable = executable }
        let pool = ImportWorkerPool(configuration)
        do throws(MetadataError) {
            try pool.checkAvailable()
            let store = try ImportStore.open(at: paths.contentStore, log: log)
            var settings = ContentIndexer.Configuration()
            settings.settle = .milliseconds(Int(options.settle * 1000))
            let indexer = ContentIndexer(store: store, pool: pool, configuration: settings, log: log)
            indexer.setScopes(scopes)
            try indexer.attach(to: engine)
            log("content indexing on: \(options.workers) import worker(s), store \(paths.contentStore.string)")
            return indexer
        } catch {
            log("warning: \(error.description); content indexing is off")
            return nil
        }
    }

    /// Removes the scopes at `path`; returns how many.
    func removeScopes(at path: FilePath) throws(MetadataError) -> Int {
        let normalized = path.lexicallyNormalized()
        let removed = state.withLock { s -> [RetainedScope] in
            let gone = s.scopes.filter { $0.path == normalized }
            s.scopes.removeAll { $0.path == normalized }
            s.namesOnly.remove(normalized)
            return gone.compactMap { s.retained.removeValue(forKey: $0) }
        }
        for scope in removed { engine.release(scope) }
        if let feed, feed.followedScopes.contains(normalized) {
            feed.unfollow(normalized)
            // Scopes inside it are followed on their own now; the engine
            // re-watches what remains (through the feed, or inotify).
            let inside = state.withLock { $0.scopes.filter { $0.path.starts(with: normalized) } }
            for scope in inside { follow(scope) }
            feed.requestRescan()
        }
        try writeScopes()
        updateContentScopes()
        return removed.count
    }

    /// The indexed scopes, and whether each is live yet.
    /// Scope folders indexed without what is inside their files.
    var namesOnlyScopes: Set<FilePath> { state.withLock { $0.namesOnly } }

    /// Tells the content indexer which scopes import (it then drops what
    /// it holds of the others).
    private func updateContentScopes() {
        guard let content else { return }
        let scopes = state.withLock { s in s.scopes.map { ($0.path, !s.namesOnly.contains($0.path)) } }
        content.setScopes(scopes)
        content.requestReconcile()
    }

    var scopeList: [(scope: ScopeRequest, live: Bool)] {
        state.withLock { s in s.scopes.map { ($0, s.retained[$0] != nil) } }
    }

    fileprivate func writeScopes() throws(MetadataError) {
        var out = JSONWriter()
        out.raw("{\"version\":1,\"scopes\":[")
        let (scopes, namesOnly) = state.withLock { ($0.scopes, $0.namesOnly) }
        for (i, scope) in scopes.enumerated() {
            if i > 0 { out.raw(",") }
            DaemonProtocol.write(scope, namesOnly: namesOnly.contains(scope.path), to: &out)
        }
        out.raw("]}\n")
        do {
            var writer = try AtomicFileWriter(replacing: paths.scopes)
            try withBytes(of: out.bytes) { (bytes) throws(Errno) in try writer.write(bytes) }
            try writer.commit()
        } catch {
            throw MetadataError.persistence("cannot save the indexed scopes", path: paths.scopes, underlying: error)
        }
    }

    private static func readScopes(_ path: FilePath, log: (String) -> Void) -> ([ScopeRequest], Set<FilePath>) {
        guard let bytes = try? readWholeFile(path, limit: 1 << 24) else { return ([], []) }
        do {
            let value = try JSONValue.parse(bytes)
            guard let list = value["scopes"]?.array else {
                throw ProtocolError(code: .badState, message: "no scopes")
            }
            var scopes: [ScopeRequest] = []
            var namesOnly: Set<FilePath> = []
            for item in list {
                let scope = try DaemonProtocol.scope(item)
                scopes.append(scope)
                if item["content"]?.bool == false { namesOnly.insert(scope.path) }
            }
            return (scopes, namesOnly)
        } catch {
            log("warning: \(path.string) is unreadable (\(error)); starting with no indexed scopes")
            return ([], [])
        }
    }

    // MARK: Snapshots

    /// Saves the snapshot now (logging a failure).
    func saveSnapshot() {
        let changes = engine.changeCount
        do {
            try engine.saveSnapshot(to: paths.snapshot)
            state.withLock { s in
                s.snapshotWritten = Timestamp.now
                s.changesAtSnapshot = changes
            }
        } catch {
            log("warning: \(error.description)")
        }
    }

    private func snapshotLoop(interval: Double) {
        while true {
            let deadline = ContinuousClock.now + .milliseconds(Int(interval * 1000))
            let stopping = state.wait(until: { $0.stopping }, deadline: deadline) { $0.stopping }
            if stopping { return }
            let due = state.withLock { $0.changesAtSnapshot } != engine.changeCount && !engine.isVerifying
            if due { saveSnapshot() }
        }
    }

    // MARK: Mounts

    /// The system index follows mounts (`/proc/self/mountinfo`, which polls
    /// readable with POLLPRI when the mount table changes): the filesystems
    /// it discovered come and go with the mount table; at a mount point
    /// named (`--mount`), a filesystem unmounted leaves the index, and one
    /// mounted (or mounted over) is indexed afresh.
    private func mountLoop(_ configuration: SystemConfiguration) {
        let descriptor = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            log("warning: cannot read /proc/self/mountinfo: mounts made from now on are not followed")
            return
        }
        defer { close(descriptor) }
        guard var last = Self.contents(of: descriptor) else {
            log("warning: cannot read /proc/self/mountinfo: mounts made from now on are not followed")
            return
        }
        // As the table is now (it may have changed since the start read it).
        let table = String(decoding: last, as: UTF8.self)
        mountPoints.withLock { $0 = LocalFilesystems.mountPoints(table) }
        followMounts(configuration, mountTable: table)
        while !state.withLock({ $0.stopping }) {
            var poller = pollfd(fd: descriptor, events: Int16(POLLPRI | POLLERR), revents: 0)
            guard poll(&poller, 1, 500) > 0 else { continue }
            // A failed read changes nothing: the next change is read whole.
            guard let now = Self.contents(of: descriptor), now != last else { continue }
            last = now
            let table = String(decoding: now, as: UTF8.self)
            mountPoints.withLock { $0 = LocalFilesystems.mountPoints(table) }
            followMounts(configuration, mountTable: table)
        }
    }

    /// The whole mount table, read again from its start; nil when a read
    /// fails. An interrupted read is retried (`syscallResult`): a table
    /// cut short would drop the filesystems missing from it.
    static func contents(of descriptor: CInt) -> [UInt8]? {
        guard case .success = syscallResult({ lseek(descriptor, 0, SEEK_SET) }) else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let read = chunk.withUnsafeMutableBytes { buffer in
                syscallResult { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
            }
            switch read {
            case .failure: return nil
            case .success(0): return bytes
            case .success(let count): bytes += chunk[..<count]
            }
        }
    }

    /// Makes the scopes match the mount table now.
    func followMounts(_ configuration: SystemConfiguration, mountTable: String) {
        let (wanted, waiting) = Self.systemScopes(configuration, mountTable: mountTable)
        waitingMounts.withLock { $0 = waiting }
        let current = state.withLock { $0.scopes }
        // A mount has a new id when it is mounted again or mounted over,
        // even between two reads of the table.
        let mounts = LocalFilesystems.inEffect(mountTable)
        let known = scopeMounts.withLock { $0 }
        let unchanged = wanted.filter { current.contains($0) && known[$0.path] == mounts[$0.path.string]?.id }
        // Marks of filesystems unmounted since went with them: forgotten,
        // so one mounted again is marked again.
        fanotify?.keepFilesystems(of: unchanged.map(\.path))
        for scope in current where !unchanged.contains(scope) {
            _ = try? removeScopes(at: scope.path)
            if !wanted.contains(scope) { log("\(scope.path.string) is no longer mounted: dropped from the index") }
        }
        // The folder a filesystem went from or came to, in the filesystem
        // around it: what the mount hid, or hides now.
        for path in Set(current.map(\.path) + wanted.map(\.path)) {
            if !unchanged.contains(where: { $0.path == path }) { engine.mountChanged(at: path) }
        }
        for scope in wanted where !unchanged.contains(scope) {
            do {
                try addScope(scope)
                log(
                    current.contains(scope)
                        ? "\(scope.path.string) was mounted again (or over): indexed afresh"
                        : "\(scope.path.string) mounted: indexed")
            } catch {
                log("warning: \(error.description)")
            }
        }
        scopeMounts.withLock { ids in
            ids = Dictionary(
                uniqueKeysWithValues: wanted.compactMap { scope in
                    mounts[scope.path.string].map { (scope.path, $0.id) }
                })
        }
    }

    // MARK: Connections

    private func acceptLoop() {
        let me = ProcessIdentity.userID
        while true {
            let accepted = listener.accept()
            if state.withLock({ $0.stopping }) { return }
            guard case .success(let connection) = accepted else {
                if case .failure(let error) = accepted, error != .interrupted && error != .connectionAbort {
                    log("warning: accept failed (\(error)); still listening")
                }
                continue
            }
            guard case .success(let peer) = connection.peer(), peer.uid == me || isSystem else {
                let refusal = ProtocolError(code: .forbidden, message: "this daemon serves only its own user")
                _ = withBytes(of: refusal.line(id: Array("null".utf8))) { connection.write($0, timeout: 100) }
                continue
            }
            // The system index answers each user what that user may see:
            // who it is, and its groups, as the kernel says.
            var viewer: Viewer?
            if isSystem && peer.uid != 0 {
                guard case .success(let groups) = connection.peerGroups() else {
                    let refusal = ProtocolError(code: .forbidden, message: "cannot tell the groups of the client")
                    _ = withBytes(of: refusal.line(id: Array("null".utf8))) { connection.write($0, timeout: 100) }
                    continue
                }
                viewer = Viewer(user: peer.uid, groups: groups)
            }
            guard begin(.connection, for: peer.uid) else {
                let refusal = ProtocolError(
                    code: .busy,
                    message: "too many connections: this daemon takes \(limits.connectionsPerUser) per user"
                        + (isSystem ? " (MAX_CONNECTIONS_PER_USER)" : "") + ", \(limits.connectionsInAll) in all")
                _ = withBytes(of: refusal.line(id: Array("null".utf8))) { connection.write($0, timeout: 100) }
                continue
            }
            let session = DaemonSession(daemon: self, socket: connection, user: peer.uid, viewer: viewer)
            if WorkerThreads.start(name: "mdq-client", { session.run() }) == nil {
                end(.connection, for: peer.uid)
                let refusal = ProtocolError(code: .busy, message: "the daemon cannot take more connections")
                _ = withBytes(of: refusal.line(id: Array("null".utf8))) { connection.write($0, timeout: 100) }
            }
        }
    }

    /// What `mdq daemon status` shows. A user of the system index (a
    /// `viewer`) is shown no count of entries and no problem (which name
    /// folders that user may not see): how it runs and what it covers.
    /// `"publishing":{…}` when this index publishes (its last error for
    /// root alone: it may name the database).
    private func writePublication(to out: inout JSONWriter, withError: Bool) {
        guard let read = publication.withLock({ $0 }) else { return }
        let now = read()
        out.field("publishing")
        out.raw("{")
        out.key("host")
        out.string(now.hostName)
        out.field("state")
        out.string(now.state)
        out.field("sequence")
        out.integer(now.sequence)
        out.field("rowsSent")
        out.integer(now.rowsSent)
        out.field("reloads")
        out.integer(now.reloads)
        if withError, let error = now.lastError {
            out.field("error")
            out.string(error)
        }
        out.raw("}")
    }

    func status(into out: inout JSONWriter, for viewer: Viewer? = nil) {
        if viewer != nil {
            out.key("pid")
            out.integer(ProcessIdentity.processID)
            out.field("uptime")
            out.double(Self.seconds(ContinuousClock.now - started))
            out.field("system")
            out.bool(true)
            out.field("verifying")
            out.bool(engine.isVerifying)
            out.field("filling")
            out.bool(engine.isFilling)
            out.field("scopes")
            DaemonProtocol.write(scopeList, namesOnly: [], to: &out)
            writeFilesystems(to: &out)
            writePublication(to: &out, withError: false)
            return
        }
        let (scopes, written, queries, cancelled, served) = state.withLock { s in
            (
                s.scopes.map { ($0, s.retained[$0] != nil) }, s.snapshotWritten, s.runningQueries, s.cancelledQueries,
                s.connectionsServed
            )
        }
        out.key("pid")
        out.integer(ProcessIdentity.processID)
        out.field("uptime")
        out.double(Self.seconds(ContinuousClock.now - started))
        out.field("entries")
        out.integer(engine.entryCount)
        out.field("watches")
        out.integer(engine.watchCount)
        out.field("watcher")
        out.string((fanotify != nil ? WatcherBackend.fanotify : feed != nil ? .systemIndex : .inotify).rawValue)
        if let feed {
            // Scopes followed through the system index, and their folders
            // (watched with no inotify watch).
            out.field("followed")
            out.raw("[")
            for (i, path) in feed.followedScopes.enumerated() {
                if i > 0 { out.raw(",") }
                out.string(path.bytes)
            }
            out.raw("]")
            out.field("followedFolders")
            out.integer(feed.followedFolders)
        }
        out.field("residentBytes")
        out.integer(ProcessIdentity.residentBytes)
        out.field("verifying")
        out.bool(engine.isVerifying)
        out.field("filling")
        out.bool(engine.isFilling)
        out.field("queries")
        out.integer(queries)
        if let content {
            out.field("content")
            out.raw("{")
            out.key("pending")
            out.integer(content.pendingCount)
            out.field("imported")
            out.integer(content.importedCount)
            out.field("stored")
            out.integer(content.store.count)
            if let confinement = content.pool.confinement {
                out.field("worker")
                out.string(Array(confinement.description.utf8))
            }
            out.raw("}")
        }
        if let grams = engine.nameGramStatus {
            out.field("nameGrams")
            out.raw("{")
            out.key("postings")
            out.integer(grams.postings)
            out.field("bytes")
            out.integer(grams.bytes)
            out.field("complete")
            out.bool(grams.complete)
            out.raw("}")
        }
        out.field("cancelledQueries")
        out.integer(cancelled)
        out.field("connectionsServed")
        out.integer(served)
        if let written {
            out.field("snapshotAge")
            out.double(Double(Timestamp.now.nanosecondsSinceEpoch - written.nanosecondsSinceEpoch) / 1e9)
        }
        out.field("scopes")
        DaemonProtocol.write(scopes, namesOnly: namesOnlyScopes, to: &out)
        if isSystem {
            out.field("system")
            out.bool(true)
            writeFilesystems(to: &out)
            out.field("droppedEvents")
            out.integer(fanotify?.droppedEvents ?? 0)
            out.field("rescans")
            out.integer(engine.rescanCount)
            out.field("foldedRescans")
            out.integer(engine.foldedRescanCount)
            // The kernel's limits, read now: marks per user (one per
            // filesystem here), and the queue this index does not use (its
            // group's is unbounded; its own queue folds a backlog).
            func limit(_ file: String) -> Int? {
                guard let bytes = try? readWholeFile(FilePath(file), limit: 64) else { return nil }
                return Int(String(decoding: bytes, as: UTF8.self).trimmingWhitespace())
            }
            if let marks = limit("/proc/sys/fs/fanotify/max_user_marks") {
                out.field("maxUserMarks")
                out.integer(marks)
            }
            if let queued = limit("/proc/sys/fs/fanotify/max_queued_events") {
                out.field("maxQueuedEvents")
                out.integer(queued)
            }
            writePublication(to: &out, withError: true)
        }
        out.field("problems")
        out.raw("[")
        for (i, problem) in engine.problems.enumerated() {
            if i > 0 { out.raw(",") }
            DaemonProtocol.write(problem, to: &out)
        }
        out.raw("]")
    }

    /// The `filesystems` field: how the system index watches each
    /// filesystem (`{"fsid", "watch": "mark"}`, or `"inotify"` with the
    /// reason the mark was refused); and `waiting`: the mount points named
    /// with nothing mounted on them.
    private func writeFilesystems(to out: inout JSONWriter) {
        out.field("filesystems")
        out.raw("[")
        for (i, (fsid, how)) in (fanotify?.filesystems ?? [:]).sorted(by: { $0.key < $1.key }).enumerated() {
            if i > 0 { out.raw(",") }
            out.raw("{")
            out.key("fsid")
            out.string(Array(String(fsid, radix: 16).utf8))
            out.field("watch")
            switch how {
            case .marked:
                out.string(Array("mark".utf8))
            case .folderByFolder(let error):
                out.string(Array("inotify".utf8))
                out.field("reason")
                out.string(Array(error.description.utf8))
            }
            out.raw("}")
        }
        out.raw("]")
        out.field("waiting")
        out.raw("[")
        for (i, path) in waitingMounts.withLock({ $0 }).enumerated() {
            if i > 0 { out.raw(",") }
            out.string(path.bytes)
        }
        out.raw("]")
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// What a system index's publisher says of itself in `status`.
package struct PublicationStatus: Sendable {
    package var hostName: String
    package var state: String
    /// The host's sequence after the last batch.
    package var sequence: Int64
    package var rowsSent: Int
    package var reloads: Int
    package var lastError: String?

    package init(
        hostName: String, state: String, sequence: Int64, rowsSent: Int, reloads: Int, lastError: String?
    ) {
        self.hostName = hostName
        self.state = state
        self.sequence = sequence
        self.rowsSent = rowsSent
        self.reloads = reloads
        self.lastError = lastError
    }
}
