import Foundation
import MDQCore
package import MDQSystem

/// A live query across hosts: gathered from one snapshot of the shared
/// index, then kept equal to it as hosts publish.
///
/// It listens for the publishers' notifications (`NOTIFY mdq`, one per
/// batch) and reads the hosts' sequences at least once per wait (a
/// notification missed while reconnecting costs a wait, not a result).
/// A host whose sequence moved is asked for its rows changed since the
/// sequence its results stand for (`mdq.changes`: the entries changed, and
/// those below folders that were renamed or changed permissions), each
/// checked by mdq's own matcher: what matches and is new is added, what
/// matches and was there is changed, what no longer matches or is gone is
/// removed. The cost is that of the changes, not of the results. A host
/// reloaded (a new generation), or whose tombstones since were purged, is
/// searched again whole and compared by entry id. A host
/// gone offline keeps its results, marked stale, and a problem names it;
/// once back, its results catch up as it publishes, with no new gather.
package final class SharedLiveQuery {
    /// A result's key: its host and its id there.
    package struct Key: Hashable, Sendable {
        package var host: Int
        package var identity: UInt64

        package init(host: Int, identity: UInt64) {
            self.host = host
            self.identity = identity
        }
    }

    package struct Update: Sendable {
        package var added: [SharedEntry] = []
        package var changed: [SharedEntry] = []
        package var removed: [SharedEntry] = []
        /// Hosts that went offline (with their last contact) or came back.
        package var problems: [String] = []

        package var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty && problems.isEmpty }
    }

    let reader: SharedReader
    let search: SharedReader.Search
    let evaluator: PredicateEvaluator
    /// For a predicate on a file's words: its translation, which the
    /// database tests on each host's changed rows (`evaluator` then checks
    /// the rest, `PredicateSQL.recheck`).
    private let bySQL: PredicateSQL?
    /// Hosts searched again whole since the gather (reloads, purged
    /// tombstones): for tests.
    package private(set) var searchedAgain = 0
    /// When the hosts were last read.
    private var lastRead = ContinuousClock.now
    /// The longest time between two reads of the hosts, in seconds.
    static let hostsInterval: Int64 = 1
    /// The results now.
    package private(set) var results: [Key: SharedEntry] = [:]
    /// The most results kept (nil: no bound): past it, the search ends
    /// with `SharedReader.Refusal.tooManyResults`. The system index sets
    /// it for its users' searches, so that none holds millions of entries
    /// in its memory.
    package var mostResults: Int?
    /// The hosts gone offline since the gather, by name, with what the
    /// problem said (`Update.problems`); a host back leaves it.
    package private(set) var offline: [String: String] = [:]
    /// Per host, the sequence, generation and identity sequence its
    /// results stand for, and whether it was offline when last read.
    private var cursors: [Int: (sequence: Int64, generation: Int64, identities: Int64, offline: Bool)] = [:]
    /// Each host's name, by number (a host removed is named by it).
    private var names: [Int: String] = [:]

    package init(reader: SharedReader, search: SharedReader.Search) throws(SharedIndexError) {
        self.reader = reader
        self.search = search
        // A file's words only the database tests: a changed row is then
        // asked of it, and the rest of the predicate checked here.
        let translated = try? PredicateSQL(search.predicate)
        if let translated, translated.condition.testsWords {
            bySQL = translated
            evaluator = PredicateEvaluator(CompiledPredicate(translated.recheck))
        } else {
            bySQL = nil
            evaluator = PredicateEvaluator(CompiledPredicate(search.predicate))
        }
        _ = try reader.connection.execute("LISTEN mdq")
    }

    /// The first results, from one snapshot.
    ///
    /// - Throws: `SharedReader.Refusal`, `SharedIndexError`.
    package func gather() throws -> [SharedEntry] {
        let (found, seen) = try read(search)
        results = found
        for host in seen { note(host) }
        return Array(found.values)
    }

    /// The matches of `search` by key, and the hosts as of the snapshot
    /// they were read in.
    private func read(_ search: SharedReader.Search) throws -> ([Key: SharedEntry], [SharedHost]) {
        var found: [Key: SharedEntry] = [:]
        var seen: [SharedHost] = []
        let most = mostResults ?? Int.max
        try reader.search(
            search,
            each: { entry in
                found[Key(host: entry.hostID, identity: entry.identity)] = entry
                // Past the bound, the read stops.
                return found.count <= most
            }, hosts: { seen = $0 })
        if found.count > most { throw SharedReader.Refusal.tooManyResults(most) }
        return (found, seen)
    }

    /// Results of `host` now stand for its state in that row; a host
    /// offline when gathered is one from the start.
    private func note(_ host: SharedHost) {
        let isOffline = host.state == "offline"
        cursors[host.id] = (host.sequence, host.generation, host.identitySequence, isOffline)
        names[host.id] = host.name
        offline[host.name] = isOffline ? Self.offlineProblem(host) : nil
    }

    /// What a problem says of a host offline.
    static func offlineProblem(_ host: SharedHost) -> String {
        "\(host.name) is offline since \(host.lastContact ?? "?"): its results are as of then"
    }

    /// Waits up to `timeout` seconds for hosts to publish, then returns
    /// what changed in the results (nil when nothing did).
    ///
    /// - Parameter interrupt: a descriptor whose becoming readable ends
    ///   the wait early (the caller drains it); then the hosts are read
    ///   only if a notification came too, or a second passed.
    package func next(timeout: Double, interrupt: Int32? = nil) throws -> Update? {
        var descriptors = [pollfd(fd: reader.connection.socket, events: Int16(POLLIN), revents: 0)]
        if let interrupt { descriptors.append(pollfd(fd: interrupt, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&descriptors, nfds_t(descriptors.count), Int32(max(0, timeout) * 1000))
        let notified = descriptors[0].revents != 0
        if !notified, descriptors.count > 1, descriptors[1].revents != 0,
            ContinuousClock.now - lastRead < .seconds(Self.hostsInterval)
        {
            return nil
        }
        lastRead = .now
        _ = try reader.connection.notifications()
        var update = Update()
        let hosts = try reader.hosts()
        // Hosts gone from the shared index: their results go.
        for id in cursors.keys where !hosts.contains(where: { $0.id == id }) {
            forget(id, into: &update)
        }
        for host in hosts {
            guard let cursor = cursors[host.id] else {
                // A host registered since, that this query covers.
                if search.covers(host.name) { try searchAgain(host, into: &update) }
                continue
            }
            let isOffline = host.state == "offline"
            if isOffline != cursor.offline {
                let problem = isOffline ? Self.offlineProblem(host) : "\(host.name) is back"
                update.problems.append(problem)
                offline[host.name] = isOffline ? problem : nil
            }
            cursors[host.id]!.offline = isOffline
            guard
                host.sequence != cursor.sequence || host.generation != cursor.generation
                    || host.identitySequence != cursor.identities
            else { continue }
            try refresh(host, into: &update)
        }
        return update.isEmpty ? nil : update
    }

    /// Reads what changed on `host` since its cursor and applies it.
    private func refresh(_ host: SharedHost, into update: inout Update) throws {
        guard let cursor = cursors[host.id] else { return }
        // Kept as read: what was a result (to change or remove it), or
        // matches now; not what is gone or hidden from the user and was
        // never a result (a removed or closed tree's every entry). Past
        // the most results, the read stops.
        // New matches are judged once, as they are read; results, once
        // all are read.
        var matching: Set<Key> = []
        let most = mostResults ?? Int.max
        // What the database says matches, for a predicate on words.
        var byDatabase: Set<UInt64> = []
        let bySQL = self.bySQL
        let read: SharedReader.Changes
        do {
            // The results read where they are: a copy in the closure made the
            // loop below copy them all at its first change (a million results,
            // 400 ms a batch).
            read = try reader.changes(
                search, host: host.id, since: cursor.sequence, generation: cursor.generation,
                identities: cursor.identities,
                keep: { (entry: SharedEntry, gone: Bool) throws -> Bool in
                    let key = Key(host: entry.hostID, identity: entry.identity)
                    if self.results[key] != nil { return true }
                    guard !gone, self.evaluator.matches(SharedSubject(entry)) else { return false }
                    matching.insert(key)
                    // A predicate on words: kept until the database says
                    // which match, not past a bound (the host is then
                    // searched again, its answer bounded).
                    if bySQL == nil, matching.count > most { throw SharedReader.Refusal.tooManyResults(most) }
                    if bySQL != nil, matching.count > max(most, Self.mostChangedKept) { throw ChangedPastBound() }
                    return true
                }, matched: bySQL.map { translated in (translated, { byDatabase = $0 }) })
        } catch is ChangedPastBound {
            try searchAgain(host, into: &update)
            return
        }
        switch read {
        case .since(let now, let rows):
            for (entry, gone) in rows {
                let key = Key(host: entry.hostID, identity: entry.identity)
                let matches =
                    (matching.contains(key) || evaluator.matches(SharedSubject(entry)))
                    && (bySQL == nil || byDatabase.contains(entry.identity))
                if !gone && matches {
                    try apply(entry, key: key, into: &update)
                } else if let known = results.removeValue(forKey: key) {
                    update.removed.append(known)
                }
            }
            cursors[host.id]!.sequence = now.sequence
        case .searchAgain:
            try searchAgain(host, into: &update)
        case .forgotten:
            forget(host.id, into: &update)
        }
    }

    /// The most changed rows of one host a live search of words keeps
    /// while the database is asked which match; past it, the host is
    /// searched again.
    static let mostChangedKept = 100_000

    /// More changed rows than a live search of words keeps.
    private struct ChangedPastBound: Error {}

    /// A host no longer in the shared index: its results go.
    private func forget(_ id: Int, into update: inout Update) {
        for (key, entry) in results where key.host == id {
            update.removed.append(entry)
            results[key] = nil
        }
        cursors[id] = nil
        // Gone, it is offline no more: its problem goes with its results.
        if let name = names.removeValue(forKey: id), offline.removeValue(forKey: name) != nil {
            update.problems.append("\(name) is no longer in the shared index")
        }
    }

    /// Searches `host` again whole and compares by entry id.
    private func searchAgain(_ host: SharedHost, into update: inout Update) throws {
        searchedAgain += 1
        var narrowed = search
        narrowed.hosts = [host.name]
        narrowed.scopes = search.scopes.filter { $0.host == host.name }
        narrowed.checksFolders = false
        let found: [Key: SharedEntry]
        let seen: [SharedHost]
        do {
            (found, seen) = try read(narrowed)
        } catch SharedReader.Refusal.unknownHost(_, _) {
            // Removed since the hosts were read.
            forget(host.id, into: &update)
            return
        }
        for (key, entry) in results where key.host == host.id && found[key] == nil {
            update.removed.append(entry)
            results[key] = nil
        }
        for (key, entry) in found { try apply(entry, key: key, into: &update) }
        if let now = seen.first(where: { $0.id == host.id }) { note(now) }
    }

    /// A match now: added, or changed when its path, kind or metadata moved.
    private func apply(_ entry: SharedEntry, key: Key, into update: inout Update) throws {
        if let known = results[key] {
            if known.pathBytes != entry.pathBytes || known.metadata != entry.metadata || known.kind != entry.kind {
                update.changed.append(entry)
            }
        } else {
            update.added.append(entry)
        }
        results[key] = entry
        if let mostResults, results.count > mostResults { throw SharedReader.Refusal.tooManyResults(mostResults) }
    }
}
