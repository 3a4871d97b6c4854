import Foundation
package import MDQCore
package import MDQEngine
package import MDQSystem
import MDQWire

/// The system index's publisher: keeps this host's partitions of the
/// shared index equal to its live index.
///
/// It runs on a thread of its own and talks to the database only from
/// there; it reads the index a slice at a time under the engine's lock and
/// never holds that lock while it waits for the database, so a slow or
/// absent database never blocks the local index. What it has to send is
/// not queued: it is the engine's journal of changed identities since the
/// clock the database holds (`LiveEngine.publishedChanges(since:limit:)`),
/// each entry once however often it changed, read with the clock under
/// one lock when they fit one batch (so the database shows the index as it
/// was at one moment), else as each entry is when its batch is sent. Its
/// memory is one batch.
///
/// - A new host, or one whose recorded clock this index's journal no
///   longer reaches (another index, a journal overrun while the database
///   was away), is published whole into tables aside and swapped in, in
///   one transaction (`reload`).
/// - Otherwise it sends the changes since the recorded clock, in batches;
///   each batch is one transaction that also moves the host's sequence
///   (and, with the last batch of a catch-up, its clock) and notifies
///   readers (`NOTIFY mdq`).
/// - Exactly one publisher per host: the host's row names its machine
///   (another machine claiming the name is refused), and a session-long
///   advisory lock keeps a second publisher of the same machine out.
package final class SharedPublisher: Sendable {
    package struct Configuration: Sendable {
        /// The database, as libpq reads it (`postgresql://…`).
        package var url: String
        /// This host's name in the shared index.
        package var hostName: String
        /// `/etc/machine-id`'s value: what tells a clone from the host.
        package var machineID: String
        /// The identity domain: whose users' names mean the numbers this
        /// host gives them. Each host is its own (its name): a user is
        /// judged on it by the number and groups it gives that name, and
        /// no other host's publisher can change them.
        package var domain: String
        /// Seconds between batches while changes come.
        package var interval = 0.1
        /// Most changed entries read and sent as one batch, at one moment
        /// of the index. As many as the index's journal keeps: whatever it
        /// holds when the database comes back goes in one transaction, so
        /// the shared index never shows a state between two moments (two
        /// entries at one path, an entry without its folder). Past it, a
        /// backlog is sent in batches of this size, each as it is read.
        package var batchEntries = ChangeJournal.defaultCapacity
        /// Slots read under one hold of the engine's lock in a full publish.
        package var sliceSlots = 1 << 15
        /// The longest wait before trying the database again.
        package var maximumBackoff = 30.0
        /// Seconds a tombstone is kept at least (at most twice as long):
        /// a live query further behind than that searches the host again.
        package var tombstoneLifetime = 600.0

        package init(url: String, hostName: String, machineID: String) {
            self.url = url
            self.hostName = hostName
            self.machineID = machineID
            domain = hostName
        }
    }

    /// What the publisher is doing, for `mdq system status` and tests.
    package struct Status: Sendable, Equatable {
        package var state = "connecting"
        /// The host's number in the shared index, once registered.
        package var hostID: Int?
        /// The host's sequence in the database after the last batch.
        package var sequence: Int64 = 0
        /// The engine clock the database's rows stand for.
        package var clock: String?
        /// Rows sent since the publisher started (entries and folders).
        package var rowsSent = 0
        /// Full publishes done since it started.
        package var reloads = 0
        package var lastError: String?
    }

    private struct Control {
        var stopping = false
        var wake = false
    }

    package let configuration: Configuration
    let engine: LiveEngine
    let log: @Sendable (String) -> Void
    private let control = ConditionLocked(Control())
    package let status = Locked(Status())
    private let finished = ConditionLocked(false)

    package init(
        configuration: Configuration, engine: LiveEngine, log: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.engine = engine
        self.log = log
    }

    /// Starts the publisher's thread.
    package func start() {
        WorkerThreads.detach(name: "mdq-publish") { [self] in
            run()
            finished.mutateAndBroadcast { $0 = true }
        }
    }

    /// Stops publishing (the host is marked offline when the database can
    /// be told) and waits up to `timeout` seconds for the thread to end.
    package func stop(timeout: Double = 5) {
        control.mutateAndBroadcast { $0.stopping = true }
        finished.wait(until: { $0 }, deadline: .now + .milliseconds(Int(timeout * 1000))) { _ in }
    }

    /// Wakes the publisher to look for changes now (tests; the daemon
    /// after a batch).
    package func wake() {
        control.mutateAndBroadcast { $0.wake = true }
    }

    private var isStopping: Bool { control.withLock { $0.stopping } }

    /// Sleeps `seconds`, or less if woken or stopped; returns false when stopping.
    private func pause(_ seconds: Double) -> Bool {
        control.wait(
            until: { $0.stopping || $0.wake }, deadline: .now + .milliseconds(Int(seconds * 1000))
        ) { control in
            control.wake = false
            return !control.stopping
        }
    }

    private func run() {
        let first = min(0.5, configuration.maximumBackoff)
        var backoff = first
        while !isStopping {
            do {
                let connection = try PostgresConnection(url: configuration.url)
                var session = try PublishingSession(publisher: self, connection: connection)
                backoff = first
                try session.run()
                session.markOffline()
                return
            } catch {
                let message = "cannot publish to the shared index: \(error.message)"
                let changed = status.withLock { status in
                    defer {
                        status.lastError = message
                        status.state = "waiting"
                    }
                    return status.lastError != message
                }
                if changed { log(message + " (trying again)") }
                guard pause(backoff) else { return }
                backoff = min(configuration.maximumBackoff, backoff * 2)
            }
        }
    }

    fileprivate func stopping() -> Bool { isStopping }
    fileprivate func sleep(_ seconds: Double) -> Bool { pause(seconds) }
}

/// One connection's worth of publishing: registered, locked, then loading
/// or catching up, then following the engine until an error or a stop.
private struct PublishingSession {
    let publisher: SharedPublisher
    let connection: PostgresConnection
    let hostID: Int
    var sequence: Int64
    var clock: EngineClock?
    var classes: ClassBook
    var rows: RowWriter
    /// What the index's daemon imported from files, when it imports
    /// (`CONTENT`): each file's words are published from it.
    let content: (any ImportedContent)?
    /// When the oldest change of the index not yet sent was made (at the
    /// latest); nil when every change is.
    var behindSince: ContinuousClock.Instant?
    /// Whether the host's row says it is behind (`behind_since`).
    var behindWritten = true
    var configuration: SharedPublisher.Configuration { publisher.configuration }

    init(publisher: SharedPublisher, connection: PostgresConnection) throws(SharedIndexError) {
        self.publisher = publisher
        self.connection = connection
        let configuration = publisher.configuration
        guard let state = try SharedSchema.state(of: connection) else {
            throw SharedIndexError("the database holds no shared index: 'mdq shared init URL' creates it")
        }
        if let problem = SharedSchema.compatibility(with: state, publishing: true) {
            throw SharedIndexError(problem)
        }
        // The host, registered on first contact; a name another machine
        // holds is refused (a clone, or a name given twice).
        func hostRow() throws(SharedIndexError) -> PostgresRows {
            try connection.execute(
                """
                SELECT host_id, machine_id, last_seq, clock, publisher_role, session_user AS me, row_version,
                       publishes_content, substring(publisher_version FROM '^mdq schema ([0-9]+)$') AS last_publisher
                FROM mdq.host WHERE name = $1
                """, [configuration.hostName])
        }
        var host = try hostRow()
        if host.rows.isEmpty {
            do {
                _ = try connection.execute(
                    "SELECT mdq.add_host($1, $2, $3)",
                    [configuration.hostName, configuration.machineID, configuration.domain])
            } catch  where error.sqlState == "23505" {
                // Unique violation: this machine is registered under another
                // name, or another publisher registered this name just now.
                let other = try connection.execute(
                    "SELECT name FROM mdq.host WHERE machine_id = $1", [configuration.machineID]
                ).first("name")
                if let other, other != configuration.hostName {
                    throw SharedIndexError(
                        "this machine (machine id \(configuration.machineID)) publishes as \(other) already; "
                            + "the schema's owner removes it first (SELECT mdq.remove_host('\(other)')) to publish it as "
                            + "\(configuration.hostName)")
                }
            }
            host = try hostRow()
        }
        guard let id = host.first("host_id").flatMap(Int.init), let machine = host.first("machine_id") else {
            throw SharedIndexError("the host \(configuration.hostName) could not be registered")
        }
        // A host a publishing role registered is that role's alone: this
        // session must be it (a role that registered a name first cannot
        // have another machine's index written into its partitions).
        if let role = host.first("publisher_role"), role != host.first("me") {
            throw SharedIndexError(
                "the host name \(configuration.hostName) is published by the database role \(role), not by "
                    + "\(host.first("me") ?? "this one"): connect as \(role), or give this host another name "
                    + "(--host-name)")
        }
        guard machine == configuration.machineID else {
            throw SharedIndexError(
                "the host name \(configuration.hostName) is published by another machine (machine id \(machine); "
                    + "this one is \(configuration.machineID)): a cloned machine must get a new "
                    + "/etc/machine-id, or this one another name (--host-name)")
        }
        let locked = try connection.execute(
            "SELECT pg_try_advisory_lock(\(SharedHost.publisherLock), $1::int) AS held", [String(id)])
        guard locked.first("held") == "t" else {
            throw SharedIndexError(
                "another publisher is publishing \(configuration.hostName) (host \(id)) already; "
                    + "this one waits for it to stop")
        }
        hostID = id
        sequence = host.first("last_seq").flatMap(Int64.init) ?? 0
        // Rows written before this version's columns are written again
        // whole, once.
        let rowVersion = host.first("row_version").flatMap(Int.init) ?? 0
        let imported = publisher.engine.importedContent
        content = imported
        // Rows of a host without content have held all they hold since
        // version 9; a host's files' attributes came with version 12.
        let wanted = imported == nil ? SharedSchema.rowVersionWithoutContent : SharedSchema.rowVersion
        clock = rowVersion < wanted ? nil : host.first("clock").flatMap(EngineClock.init)
        // A publisher older than the attributes published this host since
        // (an mdq downgraded, then upgraded): it left them stale or
        // dropped, and its rows do not say so.
        if imported != nil, let last = host.first("last_publisher").flatMap(Int.init), last < SharedSchema.rowVersion {
            clock = nil
        }
        // Files' words: published whole once when they were not (the
        // host's rows have none), and taken out, by a reload too (a new
        // generation: live searches of words search the host again), when
        // this index imports none.
        if (imported != nil) != (host.first("publishes_content") == "t") { clock = nil }
        classes = try ClassBook(hostID: id, connection: connection)
        rows = RowWriter(hostID: id)
        rows.typeIDs = try registerTypes()
        publisher.status.withLock {
            $0.hostID = id
            $0.sequence = sequence
            $0.clock = clock?.description
            $0.lastError = nil
        }
        // Behind until it finds its rows are its index (a publisher that
        // keeps failing before then is not said to be up to date), since
        // when the row says, if it says.
        let behind = try connection.execute(
            """
            UPDATE mdq.host SET publisher_version = $2, last_contact = now(), last_error = NULL,
                                behind_since = coalesce(behind_since, clock_timestamp())
            WHERE host_id = $1
            RETURNING extract(epoch FROM clock_timestamp() - behind_since)::float8 AS seconds
            """, [String(id), "mdq schema \(SharedSchema.current)"])
        if let seconds = behind.first("seconds").flatMap(Double.init), seconds.isFinite, seconds >= 0 {
            behindSince = .now - .milliseconds(Int64(min(seconds, 1e9) * 1000))
        }
        try publishIdentities()
        // Shaped like this host's own partitions: a publishing role may
        // read those, not every host's.
        _ = try connection.execute(
            """
            CREATE TEMP TABLE IF NOT EXISTS mdq_entry_changes (LIKE mdq.entry_\(id) INCLUDING DEFAULTS)
                ON COMMIT DELETE ROWS;
            CREATE TEMP TABLE IF NOT EXISTS mdq_folder_changes (LIKE mdq.folder_\(id) INCLUDING DEFAULTS)
                ON COMMIT DELETE ROWS;
            CREATE TEMP TABLE IF NOT EXISTS mdq_content_changes (LIKE mdq.content_\(id) INCLUDING DEFAULTS)
                ON COMMIT DELETE ROWS;
            SET synchronous_commit = off
            """)
    }

    mutating func run() throws(SharedIndexError) {
        var lastContact = ContinuousClock.now
        var identitiesWritten = ContinuousClock.now
        // The sequence when the last purge ran: the next purge, a lifetime
        // later, removes the tombstones up to it.
        var purge = (at: ContinuousClock.now, sequence: sequence)
        while !publisher.stopping() {
            if ContinuousClock.now - purge.at > .milliseconds(Int(configuration.tombstoneLifetime * 1000)) {
                try purgeTombstones(through: purge.sequence)
                purge = (.now, sequence)
            }
            let state = publisher.engine.publishingState()
            guard state.ready else {
                setState("waiting for the index to be read")
                guard publisher.sleep(configuration.interval * 5) else { return }
                continue
            }
            if let clock, clock == state.clock {
                setState("live")
                behindSince = nil
                if ContinuousClock.now - lastContact > .seconds(10) || behindWritten {
                    _ = try connection.execute(
                        """
                        UPDATE mdq.host SET last_contact = now(), state = 'live', behind_since = NULL
                        WHERE host_id = $1
                        """, [String(hostID)])
                    lastContact = .now
                    behindWritten = false
                }
                if ContinuousClock.now - identitiesWritten > .seconds(300) {
                    // Users added, removed or moved between groups since.
                    try publishIdentities()
                    identitiesWritten = .now
                }
                guard publisher.sleep(configuration.interval) else { return }
                continue
            }
            if behindSince == nil { behindSince = .now }
            if let clock,
                let changes = publisher.engine.publishedChanges(since: clock, limit: configuration.batchEntries)
            {
                switch changes {
                case .batch(let read, let now):
                    setState("live")
                    let engine = publisher.engine
                    let identities = read.entries.map(\.identity) + read.removed
                    let limit = configuration.batchEntries
                    let recorded = try sendBatch(read, clock: now) { below, attempt in
                        // Read again whole at one moment, with the folders
                        // below (the index may have moved on meanwhile), its
                        // clock the one recorded. Bounded, in a transaction:
                        // after a few tries, or a second of the index busy,
                        // or more than a few batches changed since, the
                        // same entries and the folders below as they are.
                        let deadline = ContinuousClock.now + .seconds(1)
                        reading: while attempt < 8 && ContinuousClock.now < deadline {
                            switch engine.publishedChanges(since: clock, limit: 4 * limit, below: below) {
                            case .batch(let again, let at)?: return (again, at)
                            case .busy?: usleep(1000)
                            case .backlog?, nil: break reading
                            }
                        }
                        return (engine.publishedEntries(identities, below: below, ancestors: true), nil)
                    }
                    published(through: recorded ?? now)
                case .backlog(let identities, let now):
                    setState("catching up")
                    try publish(identities, through: now)
                case .busy:
                    // A batch is being applied: its changes come with the next.
                    guard publisher.sleep(0.005) else { return }
                }
            } else {
                try reload(slots: state.slots)
            }
            lastContact = .now
        }
    }

    /// Removes the tombstones at or below `through`, and says so in the
    /// host's row (`purged_seq`), in one transaction: a reader whose
    /// cursor is older learns it must search the host again.
    private func purgeTombstones(through: Int64) throws(SharedIndexError) {
        guard through > 0 else { return }
        let host = String(hostID)
        try connection.transaction { () throws(SharedIndexError) in
            for table in ["entry", "folder"] {
                _ = try connection.execute(
                    "DELETE FROM mdq.\(table)_\(host) WHERE deleted_seq IS NOT NULL AND deleted_seq <= $1",
                    [String(through)])
            }
            _ = try connection.execute(
                "UPDATE mdq.host SET purged_seq = greatest(purged_seq, $2) WHERE host_id = $1", [host, String(through)])
        }
    }

    mutating func markOffline() {
        _ = try? connection.execute(
            "UPDATE mdq.host SET state = 'offline', last_contact = now() WHERE host_id = $1", [String(hostID)])
    }

    private func setState(_ state: String) {
        publisher.status.withLock { $0.state = state }
    }

    // MARK: Changes

    /// Sends the entries with these identities as they are now, in batches
    /// (a backlog: each as it is when read; what changed since `now` is
    /// sent again after); the last batch records `now` as the host's clock.
    private mutating func publish(_ identities: [UInt64], through now: EngineClock) throws(SharedIndexError) {
        var start = 0
        repeat {
            let end = min(identities.count, start + configuration.batchEntries)
            let chunk = identities[start..<end]
            let engine = publisher.engine
            try sendBatch(engine.publishedEntries(chunk, ancestors: true), clock: end == identities.count ? now : nil) {
                below, _ in (engine.publishedEntries(chunk, below: below, ancestors: true), nil)
            }
            start = end
        } while start < identities.count
        published(through: now)
    }

    /// The index is published up to `now`.
    private mutating func published(through now: EngineClock) {
        clock = now
        publisher.status.withLock { $0.clock = now.description }
    }

    /// One batch, one transaction: the rows upserted, the removed marked
    /// (tombstones), the sequence moved, readers told. Folders whose path
    /// or permissions changed take every folder below them (another path
    /// or list class now): the batch is read again with those (`again`,
    /// given the folders), at one moment, until it holds every folder it
    /// needs, so it never mixes two states of the index.
    ///
    /// - Parameter again: reads the batch again with the folders below
    ///   those given (the attempt counted from 0), with the clock it is
    ///   the index at, or nil when it is not read at one moment.
    /// - Returns: the clock recorded.
    @discardableResult
    private mutating func sendBatch(
        _ first: LiveEngine.PublishedRead, clock now: EngineClock?,
        again: (Set<UInt64>, Int) -> (LiveEngine.PublishedRead, EngineClock?)
    ) throws(SharedIndexError) -> EngineClock? {
        let seq = sequence + 1
        let host = String(hostID)
        var sent = 0
        var clock = now
        let readAt = ContinuousClock.now
        var behind = behindSince
        try connection.transaction { () throws(SharedIndexError) in
            var read = first
            var below: Set<UInt64> = []
            var attempt = 0
            var folders: [PublishedEntry] = []
            // The folder rows decide whether the batch is read again; the
            // entry rows are copied once, from the read that stands.
            while true {
                folders = read.entries.filter { $0.metadata.kind == .folder && $0.path != nil }
                guard !folders.isEmpty else { break }
                let listClasses = folders.map { classes.listClass($0.listRestrictions ?? []) }
                try copyFolders(folders, listClasses: listClasses, seq: seq)
                // Folders that moved or whose permissions changed.
                let relinked = try connection.execute(
                    """
                    SELECT c.folder_id FROM mdq_folder_changes c JOIN mdq.folder_\(hostID) f USING (folder_id)
                    WHERE f.deleted_seq IS NULL AND (f.path, f.raw_path, f.list_class)
                          IS DISTINCT FROM (c.path, c.raw_path, c.list_class)
                    """
                ).rows.compactMap { $0[0].flatMap(UInt64.init) }
                let missing = relinked.filter { !below.contains($0) && !read.inside.contains($0) }
                if missing.isEmpty { break }
                below.formUnion(missing)
                let (reread, at) = again(below, attempt)
                attempt += 1
                read = reread
                // Read at one later moment: that clock is recorded (a crash
                // that lost what it covers reloads the host). Read as they
                // are: only the first batch's identities, as of its clock.
                if clock != nil { clock = at ?? now }
                _ = try connection.execute("DELETE FROM mdq_folder_changes")
            }
            let files = read.entries.filter { $0.parent != nil }
            if !files.isEmpty {
                var next = 0
                try connection.copy("COPY mdq_entry_changes (\(RowWriter.entryColumns)) FROM STDIN (FORMAT binary)") {
                    text in
                    let end = min(files.count, next + 1000)
                    for entry in files[next..<end] {
                        rows.entry(entry, accessClass: classes.entryClass(entry.metadata.access), seq: seq, into: &text)
                    }
                    next = end
                    return next < files.count
                }
                _ = try connection.execute(RowWriter.mergeEntries(hostID))
                if let content { try sendWords(of: files, from: content, seq: seq) }
            }
            // The live folders among those the batch touches, before and
            // after: what it adds to the host's count (not a count of every
            // folder, a batch at a time).
            // Folders whose contents the index no longer holds (pruned, or
            // another filesystem mounted on them) lose their rows.
            let unlisted = read.entries.filter { $0.metadata.kind == .folder && $0.path == nil }.map(\.identity)
            let touched = PostgresArray.numbers(
                (folders.map(\.identity) + read.removed + unlisted).map { Int64(bitPattern: $0) })
            func liveFolders() throws(SharedIndexError) -> Int {
                guard !folders.isEmpty || !read.removed.isEmpty || !unlisted.isEmpty else { return 0 }
                return try connection.execute(
                    """
                    SELECT count(*) AS n FROM mdq.folder_\(hostID)
                    WHERE folder_id = ANY($1::bigint[]) AND deleted_seq IS NULL
                    """, [touched]
                ).first("n").flatMap(Int.init) ?? 0
            }
            let foldersBefore = try liveFolders()
            if !folders.isEmpty { _ = try connection.execute(RowWriter.mergeFolders(hostID)) }
            // The classes the batch's rows name.
            try classes.flush(connection)
            let removed = read.removed
            if !removed.isEmpty {
                _ = try connection.execute(
                    """
                    UPDATE mdq.entry_\(hostID) SET deleted_seq = $2, seq = $2
                    WHERE entry_id = ANY($1::bigint[]) AND deleted_seq IS NULL
                    """, [PostgresArray.numbers(removed), String(seq)])
                if content != nil {
                    _ = try connection.execute(
                        "DELETE FROM mdq.content_\(hostID) WHERE entry_id = ANY($1::bigint[])",
                        [PostgresArray.numbers(removed)])
                }
            }
            // The rows of folders removed, and of those no longer listed.
            if !removed.isEmpty || !unlisted.isEmpty {
                _ = try connection.execute(
                    """
                    UPDATE mdq.folder_\(hostID) SET deleted_seq = $2, seq = $2
                    WHERE folder_id = ANY($1::bigint[]) AND deleted_seq IS NULL
                    """, [PostgresArray.numbers((removed + unlisted).map { Int64(bitPattern: $0) }), String(seq)])
            }
            // Behind: since the batch was read, when the index has moved
            // on from what it records; not at all when it has not.
            let index = publisher.engine.publishingState()
            if let clock { behind = index.clock == clock ? nil : readAt }
            let folderCount = "folders + \(try liveFolders() - foldersBefore)"
            _ = try connection.execute(
                """
                UPDATE mdq.host SET last_seq = $2, clock = coalesce($3, clock), state = 'live',
                       last_contact = now(), last_error = NULL, entries = $4, folders = \(folderCount),
                       behind_since = clock_timestamp() - make_interval(secs => $5::float8)
                WHERE host_id = $1
                """,
                [
                    host, String(seq), clock?.description, String(index.entries),
                    behind.map { String((ContinuousClock.now - $0) / .seconds(1)) },
                ])
            _ = try connection.execute("SELECT pg_notify('mdq', $1)", ["\(hostID):\(seq)"])
            sent += read.entries.count + removed.count
        }
        sequence = seq
        behindSince = behind
        behindWritten = behind != nil
        publisher.status.withLock {
            $0.sequence = seq
            $0.rowsSent += sent
        }
        return clock
    }

    /// The words of the batch's entries (`entries`, copied already into
    /// `mdq_entry_changes`): a file's words as its last import holds them
    /// (as a local search reads them), none for another entry or a file
    /// not imported; an entry whose words changed gets the batch's
    /// sequence, as a changed row does.
    private mutating func sendWords(of entries: [PublishedEntry], from content: any ImportedContent, seq: Int64)
        throws(SharedIndexError)
    {
        // Sent a few megabytes at a time: a file's words may be a megabyte.
        var next = 0
        try connection.copy("COPY mdq_content_changes (\(RowWriter.contentColumns)) FROM STDIN (FORMAT binary)") {
            text in
            while next < entries.count && text.bytes.count < RowWriter.wordsChunk {
                rows.words(of: entries[next], from: content, seq: seq, into: &text)
                next += 1
            }
            return next < entries.count
        }
        // Words gone (a file emptied, no longer imported, no longer a
        // file): the entry takes the batch's sequence, as a changed row.
        _ = try connection.execute(
            """
            WITH gone AS (
                DELETE FROM mdq.content_\(hostID) c USING mdq_entry_changes x
                WHERE c.entry_id = x.entry_id
                  AND NOT EXISTS (SELECT 1 FROM mdq_content_changes n WHERE n.entry_id = x.entry_id)
                RETURNING c.entry_id)
            UPDATE mdq.entry_\(hostID) e SET seq = $1::bigint FROM gone
            WHERE e.entry_id = gone.entry_id AND e.seq < $1::bigint
            """, [String(seq)])
        _ = try connection.execute(RowWriter.mergeWords(hostID), [String(seq)])
    }

    private mutating func copyFolders(_ folders: [PublishedEntry], listClasses: [Int32], seq: Int64)
        throws(SharedIndexError)
    {
        var next = 0
        try connection.copy("COPY mdq_folder_changes (\(RowWriter.folderColumns)) FROM STDIN (FORMAT binary)") { text in
            let end = min(folders.count, next + 1000)
            for i in next..<end { rows.folder(folders[i], listClass: listClasses[i], seq: seq, into: &text) }
            next = end
            return next < folders.count
        }
    }

    // MARK: Full publish

    /// Publishes the whole index into tables aside, builds their indexes,
    /// and swaps them in; then the changes made meanwhile follow as usual.
    private mutating func reload(slots: Int) throws(SharedIndexError) {
        setState("reloading")
        let started = ContinuousClock.now
        let start = publisher.engine.publishingState().clock
        let seq = sequence + 1
        _ = try connection.execute("SELECT mdq.reload_begin($1::smallint)", [String(hostID)])
        // Behind since the index it reloads was read, until it is sent.
        _ = try connection.execute(
            "UPDATE mdq.host SET behind_since = coalesce(behind_since, clock_timestamp()) WHERE host_id = $1",
            [String(hostID)])
        behindWritten = true
        var entryCount = 0
        var folderCount = 0
        // Entries, then folders: two passes over the slots, each a slice
        // of the index at a time under the engine's lock.
        var slot = 0
        entryCount = try connection.copy(
            "COPY mdq.entry_\(hostID)_reload (\(RowWriter.entryColumns)) FROM STDIN (FORMAT binary)"
        ) { (text) throws(SharedIndexError) in
            let end = slot + configuration.sliceSlots
            for entry in publisher.engine.publishedEntries(slots: slot..<end, rows: .entries) {
                rows.entry(entry, accessClass: classes.entryClass(entry.metadata.access), seq: seq, into: &text)
            }
            slot = end
            return slot < max(slots, publisher.engine.publishingState().slots) && !publisher.stopping()
        }
        slot = 0
        folderCount = try connection.copy(
            "COPY mdq.folder_\(hostID)_reload (\(RowWriter.folderColumns)) FROM STDIN (FORMAT binary)"
        ) { (text) throws(SharedIndexError) in
            let end = slot + configuration.sliceSlots
            for folder in publisher.engine.publishedEntries(slots: slot..<end, rows: .folders) {
                rows.folder(
                    folder, listClass: classes.listClass(folder.listRestrictions ?? []), seq: seq, into: &text)
            }
            slot = end
            return slot < max(slots, publisher.engine.publishingState().slots) && !publisher.stopping()
        }
        // Files' words, a third pass.
        if let content {
            slot = 0
            // A slice's files at a time, sent a few megabytes at a time.
            var files: [PublishedEntry] = []
            var next = 0
            try connection.copy(
                "COPY mdq.content_\(hostID)_reload (\(RowWriter.contentColumns)) FROM STDIN (FORMAT binary)"
            ) { (text) throws(SharedIndexError) in
                while text.bytes.count < RowWriter.wordsChunk {
                    if next == files.count {
                        guard slot < max(slots, publisher.engine.publishingState().slots), !publisher.stopping()
                        else { return false }
                        let end = slot + configuration.sliceSlots
                        files = publisher.engine.publishedEntries(slots: slot..<end, rows: .entries).filter {
                            $0.fileKey != nil
                        }
                        next = 0
                        slot = end
                        continue
                    }
                    rows.words(of: files[next], from: content, seq: seq, into: &text)
                    next += 1
                }
                return true
            }
        }
        guard !publisher.stopping() else { return }
        // The classes the rows name, before the swap shows them.
        try classes.flush(connection)
        let copied = ContinuousClock.now
        setState("reloading: indexing")
        _ = try connection.execute("SELECT mdq.reload_index($1::smallint)", [String(hostID)])
        let indexed = ContinuousClock.now
        // The swap detaches a partition, which waits for every reader of
        // the table: it waits at most two seconds at a time (readers queue
        // behind a waiting swap), and tries again.
        var attempt = 0
        while true {
            do {
                try connection.transaction { () throws(SharedIndexError) in
                    _ = try connection.execute("SET LOCAL lock_timeout = '2s'")
                    _ = try connection.execute(
                        "SELECT mdq.reload_swap($1::smallint, $2, $3, $4, $5)",
                        [String(hostID), String(seq), start.description, String(entryCount), String(folderCount)])
                    _ = try connection.execute(
                        "UPDATE mdq.host SET row_version = $2, publishes_content = $3 WHERE host_id = $1",
                        [String(hostID), String(SharedSchema.rowVersion), content == nil ? "f" : "t"])
                    _ = try connection.execute("SELECT pg_notify('mdq', $1)", ["\(hostID):\(seq)"])
                }
                break
            } catch  where error.sqlState == "55P03" && attempt < 30 {
                attempt += 1
                guard publisher.sleep(0.5) else { return }
            }
        }
        sequence = seq
        clock = start
        func seconds(_ from: ContinuousClock.Instant, _ to: ContinuousClock.Instant) -> String {
            String(format: "%.1f", (to - from) / .seconds(1))
        }
        let now = ContinuousClock.now
        publisher.log(
            "published \(entryCount) entries and \(folderCount) folders to the shared index as "
                + "\(configuration.hostName) in \(seconds(started, now)) s (rows \(seconds(started, copied)) s, "
                + "indexes \(seconds(copied, indexed)) s, swap \(seconds(indexed, now)) s)")
        publisher.status.withLock {
            $0.sequence = seq
            $0.clock = start.description
            $0.rowsSent += entryCount + folderCount
            $0.reloads += 1
        }
    }

    // MARK: Types

    /// Every content type this mdq gives entries, registered in the shared
    /// index, by its number there (rows keep the number).
    private func registerTypes() throws(SharedIndexError) -> [String: Int32] {
        let identifiers = PostgresArray.strings(ContentType.allIdentifiers)
        var numbers: [String: Int32] = [:]
        for row in try connection.execute(
            "SELECT type_id, identifier FROM mdq.register_types($1::text[])", [identifiers]
        ).rows {
            if let id = row[0].flatMap(Int32.init), let identifier = row[1] { numbers[identifier] = id }
        }
        return numbers
    }

    // MARK: Identities

    /// This host's users, by name, with their numbers and groups: how a
    /// reader judges a user of the same name on this host.
    private func publishIdentities() throws(SharedIndexError) {
        var names: [String] = []
        var uids: [UInt32] = []
        var groups: [String] = []
        for user in LocalUsers.all() {
            names.append(user.name)
            uids.append(user.uid)
            // Sorted: the order the name service gives is not a change.
            groups.append(PostgresArray.numbers(user.groups.sorted()))
        }
        guard !names.isEmpty else { return }
        // Rows that did not change are not written; when some did, or
        // went, the host's identity sequence moves, so live queries judge
        // their results again.
        let written = try connection.execute(
            """
            WITH written AS (
                INSERT INTO mdq.identity (domain, user_name, uid, gids)
                SELECT $1, u.name, u.uid, u.gids::bigint[]
                FROM unnest($2::text[], $3::bigint[], $4::text[]) AS u(name, uid, gids)
                ON CONFLICT (domain, user_name) DO UPDATE SET uid = EXCLUDED.uid, gids = EXCLUDED.gids
                WHERE (mdq.identity.uid, mdq.identity.gids) IS DISTINCT FROM (EXCLUDED.uid, EXCLUDED.gids)
                RETURNING 1
            ), removed AS (
                -- A user this host no longer has is a stranger on it.
                DELETE FROM mdq.identity WHERE domain = $1 AND user_name <> ALL($2::text[]) RETURNING 1
            ), moved AS (
                -- In the same statement: every host of the domain.
                UPDATE mdq.host SET identity_seq = identity_seq + 1
                WHERE domain = $1 AND (SELECT count(*) FROM written) + (SELECT count(*) FROM removed) > 0
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM written) + (SELECT count(*) FROM removed) AS changed
            """,
            [
                configuration.domain, PostgresArray.strings(names), PostgresArray.numbers(uids),
                PostgresArray.strings(groups),
            ])
        if written.first("changed") != "0" {
            _ = try connection.execute("SELECT pg_notify('mdq', $1)", ["\(hostID):identities"])
        }
    }
}

/// The rows of one host for COPY (binary).
private struct RowWriter {
    let hostID: Int
    let folder = UnicodeFolder(options: [.caseInsensitive, .diacriticInsensitive])
    /// Content types by extension (and kind): the same few hundred over
    /// and over.
    var types: [[UInt8]: String] = [:]
    /// The shared index's number of each type mdq gives.
    var typeIDs: [String: Int32] = [:]

    init(hostID: Int) {
        self.hostID = hostID
    }

    /// The columns each row gives, in order (a binary row says how many).
    private static let entryColumnNames = [
        "host_id", "entry_id", "parent_id", "kind", "name", "raw_name", "fold", "ext", "size", "mtime", "btime",
        "type_id", "inode", "read_class", "seq",
    ]
    private static let folderColumnNames = [
        "host_id", "folder_id", "parent_id", "path", "raw_path", "list_class", "seq",
    ]
    static let entryColumns = entryColumnNames.joined(separator: ", ")
    static let contentColumns = "host_id, entry_id, words, attrs, seq"
    /// The bytes of words rows sent at once (each file's words up to a
    /// megabyte).
    static let wordsChunk = 8 << 20
    static let folderColumns = folderColumnNames.joined(separator: ", ")

    /// Upserts the batch's entries; a row the batch holds unchanged (an
    /// entry below a moved folder: its path is its folder's) is not
    /// written again, and keeps its sequence.
    static func mergeEntries(_ host: Int) -> String {
        """
        INSERT INTO mdq.entry_\(host) AS e (\(entryColumns))
        SELECT \(entryColumns) FROM mdq_entry_changes
        ON CONFLICT (host_id, entry_id) DO UPDATE SET
            parent_id = EXCLUDED.parent_id, kind = EXCLUDED.kind, name = EXCLUDED.name,
            raw_name = EXCLUDED.raw_name, fold = EXCLUDED.fold, ext = EXCLUDED.ext, size = EXCLUDED.size,
            mtime = EXCLUDED.mtime, btime = EXCLUDED.btime, type_id = EXCLUDED.type_id,
            inode = EXCLUDED.inode, read_class = EXCLUDED.read_class, seq = EXCLUDED.seq, deleted_seq = NULL
        WHERE e.deleted_seq IS NOT NULL
           OR (e.parent_id, e.kind, e.name, e.raw_name, e.size, e.mtime, e.btime, e.type_id, e.inode, e.read_class)
              IS DISTINCT FROM (EXCLUDED.parent_id, EXCLUDED.kind, EXCLUDED.name, EXCLUDED.raw_name, EXCLUDED.size,
                                EXCLUDED.mtime, EXCLUDED.btime, EXCLUDED.type_id, EXCLUDED.inode, EXCLUDED.read_class)
        """
    }

    /// Upserts the batch's words (`$1` the batch's sequence); an entry
    /// whose words changed takes the sequence too.
    static func mergeWords(_ host: Int) -> String {
        """
        WITH changed AS (
            INSERT INTO mdq.content_\(host) AS c (\(contentColumns))
            SELECT \(contentColumns) FROM mdq_content_changes
            ON CONFLICT (host_id, entry_id) DO UPDATE SET words = EXCLUDED.words, attrs = EXCLUDED.attrs,
                                                          seq = EXCLUDED.seq
            WHERE (c.words, c.attrs) IS DISTINCT FROM (EXCLUDED.words, EXCLUDED.attrs)
            RETURNING entry_id)
        UPDATE mdq.entry_\(host) e SET seq = $1::bigint FROM changed
        WHERE e.entry_id = changed.entry_id AND e.seq < $1::bigint
        """
    }

    static func mergeFolders(_ host: Int) -> String {
        """
        INSERT INTO mdq.folder_\(host) AS f (\(folderColumns))
        SELECT \(folderColumns) FROM mdq_folder_changes
        ON CONFLICT (host_id, folder_id) DO UPDATE SET
            parent_id = EXCLUDED.parent_id, path = EXCLUDED.path, raw_path = EXCLUDED.raw_path,
            list_class = EXCLUDED.list_class, seq = EXCLUDED.seq, deleted_seq = NULL
        WHERE f.deleted_seq IS NOT NULL
           OR (f.parent_id, f.path, f.raw_path, f.list_class)
              IS DISTINCT FROM (EXCLUDED.parent_id, EXCLUDED.path, EXCLUDED.raw_path, EXCLUDED.list_class)
        """
    }

    mutating func entry(_ entry: PublishedEntry, accessClass: Int32?, seq: Int64, into row: inout CopyBinary) {
        row.row(fields: Int16(Self.entryColumnNames.count))
        row.int16(Int16(hostID))
        row.int64(Int64(bitPattern: entry.identity))
        row.int64(Int64(bitPattern: entry.parent ?? 0))
        row.int16(Int16(entry.metadata.kind.rawValue))
        let text = Self.name(entry.name, into: &row)
        // The folding only when it is not the name itself (most names).
        let folded = Self.utf8(folder.folded(entry.name))
        if folded == text { row.null() } else { row.text(folded) }
        let kind = entry.metadata.kind
        // What follows the last dot, folded (folders too: `X.app`); for a
        // name that starts with its only dot (`.png`), what follows it,
        // though `kMDItemFSName.pathExtension` says it has none: so that
        // `*.png` is this column alone.
        if let dot = folded.lastIndex(of: UInt8(ascii: ".")) {
            row.text(folded[(dot + 1)...])
        } else {
            row.text([])
        }
        if let size = entry.metadata.size, kind != .folder { row.int64(Int64(clamping: size)) } else { row.null() }
        if let mtime = entry.metadata.modificationTime {
            row.timestamp(nanosecondsSinceEpoch: mtime.nanosecondsSinceEpoch)
        } else {
            row.null()
        }
        if let btime = entry.metadata.birthTime {
            row.timestamp(nanosecondsSinceEpoch: btime.nanosecondsSinceEpoch)
        } else {
            row.null()
        }
        if let type = typeIDs[contentType(entry.name, kind: kind)] { row.int32(type) } else { row.null() }
        row.int64(Int64(bitPattern: entry.metadata.inode))
        if let accessClass { row.int32(accessClass) } else { row.null() }
        row.int64(seq)
    }

    /// A file's row of content, when its last import holds text with
    /// words (`TextWords`) or other attributes (as JSON,
    /// `ImportedValues.writeJSON`); nothing otherwise.
    func words(of entry: PublishedEntry, from content: any ImportedContent, seq: Int64, into row: inout CopyBinary) {
        guard let key = entry.fileKey, var values = content.values(for: key, text: true) else { return }
        var words: [[UInt8]] = []
        if case .text(let text)? = values[.textContent] { words = TextWords.words(of: text).words }
        values[.textContent] = nil
        guard !words.isEmpty || !values.isEmpty else { return }
        row.row(fields: 5)
        row.int16(Int16(hostID))
        row.int64(Int64(bitPattern: entry.identity))
        if words.isEmpty { row.null() } else { row.tsvector(words) }
        if values.isEmpty {
            row.null()
        } else {
            var json = JSONWriter()
            values.writeJSON(to: &json, withoutNUL: true)
            row.jsonb(json.bytes)
        }
        row.int64(seq)
    }

    func folder(_ folder: PublishedEntry, listClass: Int32, seq: Int64, into row: inout CopyBinary) {
        row.row(fields: Int16(Self.folderColumnNames.count))
        row.int16(Int16(hostID))
        row.int64(Int64(bitPattern: folder.identity))
        if let parent = folder.parent { row.int64(Int64(bitPattern: parent)) } else { row.null() }
        Self.name(folder.path ?? [], into: &row)
        row.int32(listClass)
        row.int64(seq)
    }

    /// A name (or path) as text, and as bytes too when they are not UTF-8
    /// (the text then shows U+FFFD where they are not); the text.
    @discardableResult
    private static func name(_ bytes: [UInt8], into row: inout CopyBinary) -> [UInt8] {
        let text = utf8(bytes)
        row.text(text)
        if text == bytes { row.null() } else { row.bytea(bytes) }
        return text
    }

    /// The bytes as UTF-8: as they are when they are (ASCII at a glance),
    /// else decoded, U+FFFD where they are not.
    private static func utf8(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.allSatisfy({ $0 < 0x80 }) { return bytes }
        return Array(String(decoding: bytes, as: UTF8.self).utf8)
    }

    private mutating func contentType(_ name: [UInt8], kind: EntryKind) -> String {
        // The type follows the kind and the extension (a name starting
        // with its only dot has none).
        var key: [UInt8] = [kind.rawValue]
        if let dot = name.lastIndex(of: UInt8(ascii: ".")) { key += [dot > 0 ? 1 : 0] + name[dot...] }
        if key.count > 32 { return ContentType.identifier(forName: name, kind: kind) }
        if let known = types[key] { return known }
        let type = ContentType.identifier(forName: name, kind: kind)
        types[key] = type
        return type
    }
}
