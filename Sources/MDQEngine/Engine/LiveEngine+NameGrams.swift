import Glibc
import MDQCore
import MDQSystem

extension LiveEngine {
    /// Keeps a trigram index of the names (`NameGrams`), so that name
    /// searches with a literal of three bytes or more test only the entries
    /// its lists give. The daemon keeps one; in-process engines do not (it
    /// costs memory, about 20 bytes per entry, and a build).
    ///
    /// The lists are built by a thread of their own, 32 Ki slots at a time
    /// under the engine's lock (a few milliseconds each; a turn only when
    /// no query waits for one, `SliceTurns`), so queries and
    /// events go on meanwhile (the slots not covered yet are scanned as
    /// before); then every change keeps them current. When stale postings
    /// (of names freed or renamed) outnumber the live ones, the lists are
    /// built again the same way. Lists restored from a snapshot are kept
    /// as they are: the thread only extends them.
    package func keepNameGrams() {
        let started = state.withLock { s -> Bool in
            guard !s.keepsNameGrams else { return false }
            s.keepsNameGrams = true
            if s.index.nameGrams == nil { s.index.nameGrams = NameGrams(expectedEntries: s.index.count) }
            return true
        }
        guard started else { return }
        nameGramsWanted.mutateAndBroadcast { $0 = true }
        let wanted = nameGramsWanted
        _ = WorkerThreads.start(name: "mdq-name-grams") { [weak self] in
            while true {
                // Woken by `publish` when there is work, or every minute to
                // see whether the engine is gone.
                let work = wanted.wait(until: { $0 }, deadline: .now + .seconds(60)) { wanted -> Bool in
                    defer { wanted = false }
                    return wanted
                }
                guard let engine = self else { return }
                guard work else { continue }
                engine.buildNameGrams()
            }
        }
    }

    /// Extends the trigram lists to every slot, a slice at a time.
    func buildNameGrams() {
        while true {
            let done = sliceTurns.withTurn(for: SliceTurns.indexOwner) {
                state.withLock { s -> Bool in
                    // Complete, or a crawl began: done for now.
                    guard s.nameGramsNeedWork(), let grams = s.index.nameGrams else { return true }
                    if grams.needsRebuild { grams.reset() }
                    return grams.extend(by: 1 << 15, of: s.index)
                }
            }
            if done { return }
            // The engine's lock is not fair: taken again at once, it would
            // keep every other thread out until the lists are done (a fill
            // waited for them, and so did `index.add`'s answer). A pause
            // far shorter than a slice lets a waiter in.
            usleep(50)
        }
    }

    /// The trigram lists for `status` and tests: postings, bytes held, and
    /// whether every slot is covered.
    package var nameGramStatus: (postings: Int, bytes: Int, complete: Bool)? {
        state.withLock { s in s.index.nameGrams.map { ($0.postings, $0.allocatedBytes, $0.isComplete) } }
    }
}

extension EngineState {
    /// Whether the trigram lists lag the index or should be built again,
    /// and may be now: not while a root's first crawl runs (the builder
    /// would take the lock and a core from it; `endCrawl` wakes it after,
    /// to add the crawl's entries in bulk).
    func nameGramsNeedWork() -> Bool {
        guard let grams = index.nameGrams, !roots.values.contains(where: \.gathering) else { return false }
        return !grams.isComplete || grams.needsRebuild
    }
}
