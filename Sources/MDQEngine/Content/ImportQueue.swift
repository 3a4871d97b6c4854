/// The files waiting for their content to be imported, kept so that taking
/// the next batch costs O(batch × log pending), never a pass over all that
/// wait: a backlog of a million files is imported at the pace of a backlog
/// of ten.
///
/// **Order.** Changes seen while live come first, once settled, in the
/// order they settle (the file a user just saved is what they search for
/// next); then transient failures retried, at their time; then the
/// backlog (a first crawl, a reconcile after a restart), the most recently
/// modified first (what a user is likeliest to look for; old archives
/// last), ties by id.
///
/// **Memory.** A queued file costs one heap entry (16 bytes: its priority,
/// its id and a generation) plus, for every index slot, 4 bytes saying
/// which generation is current: about 20 bytes a pending file, so a
/// backlog of 10 million holds in about 200 MB. Re-queuing a file (a
/// change while it waits) or dropping it (removed) only bumps its
/// generation; the old entry is skipped when it comes up.
struct ImportQueue {
    /// One waiting file in a heap.
    struct Entry: Comparable {
        /// Smaller first: a time (ns since `origin`) in `timed`, minus the
        /// modification time in `backlog`.
        var priority: Int64
        var id: UInt32
        var generation: UInt32

        static func < (a: Entry, b: Entry) -> Bool {
            (a.priority, a.id) < (b.priority, b.id)
        }
    }

    /// Settling changes and retries, by when they are due.
    private var timed = MinHeap<Entry>()
    /// The backlog, most recently modified first.
    private var backlog = MinHeap<Entry>()
    /// The current generation of each id's entry (0: not queued).
    private var current: [UInt32] = []
    private var nextGeneration: UInt32 = 1
    /// Files queued now.
    private(set) var count = 0
    /// Heap entries taken out so far, current or stale: what taking
    /// batches has cost (tests check it follows the batches, not the
    /// backlog).
    private(set) var visited = 0
    private let origin = ContinuousClock.now

    /// Whether `id` waits.
    func contains(_ id: UInt32) -> Bool { Int(id) < current.count && current[Int(id)] != 0 }

    /// Queues `id` to be imported at `due` (a change settling, a retry),
    /// replacing where it waited before.
    mutating func enqueue(_ id: UInt32, due: ContinuousClock.Instant) {
        let generation = mark(id)
        timed.insert(Entry(priority: nanoseconds(due), id: id, generation: generation))
    }

    /// Queues `id` in the backlog, unless it waits already.
    mutating func enqueueBacklog(_ id: UInt32, modified: Int64) {
        guard !contains(id) else { return }
        let generation = mark(id)
        backlog.insert(Entry(priority: modified == .min ? .max : -modified, id: id, generation: generation))
    }

    /// Forgets `id` (its file was removed).
    mutating func remove(_ id: UInt32) {
        guard contains(id) else { return }
        current[Int(id)] = 0
        count -= 1
    }

    /// When the next file is due: now when the backlog holds one, nil when
    /// nothing waits.
    mutating func nextDue() -> ContinuousClock.Instant? {
        while let entry = timed.min, !isCurrent(entry) {
            timed.removeMin()
            visited += 1
        }
        while let entry = backlog.min, !isCurrent(entry) {
            backlog.removeMin()
            visited += 1
        }
        if backlog.min != nil { return .now }
        return timed.min.map { origin + .nanoseconds($0.priority) }
    }

    /// Takes up to `limit` files due by `now`: settled changes and retries
    /// first, then the backlog.
    mutating func take(_ limit: Int, now: ContinuousClock.Instant = .now) -> [UInt32] {
        var taken: [UInt32] = []
        let cutoff = nanoseconds(now)
        while taken.count < limit, let entry = timed.min, entry.priority <= cutoff {
            timed.removeMin()
            visited += 1
            if isCurrent(entry) { taken.append(release(entry.id)) }
        }
        while taken.count < limit, let entry = backlog.removeMin() {
            visited += 1
            if isCurrent(entry) { taken.append(release(entry.id)) }
        }
        return taken
    }

    /// Gives back the memory of a queue emptied (a first import of a whole
    /// tree leaves megabytes of capacity).
    mutating func shrinkIfEmpty() {
        guard count == 0 else { return }
        timed = MinHeap()
        backlog = MinHeap()
        current = []
    }

    private mutating func mark(_ id: UInt32) -> UInt32 {
        if Int(id) >= current.count {
            current.append(contentsOf: repeatElement(0, count: max(Int(id) + 1 - current.count, current.count / 2)))
        }
        if current[Int(id)] == 0 { count += 1 }
        let generation = nextGeneration
        nextGeneration = nextGeneration == .max ? 1 : nextGeneration + 1
        current[Int(id)] = generation
        return generation
    }

    private mutating func release(_ id: UInt32) -> UInt32 {
        current[Int(id)] = 0
        count -= 1
        return id
    }

    private func isCurrent(_ entry: Entry) -> Bool {
        Int(entry.id) < current.count && current[Int(entry.id)] == entry.generation
    }

    private func nanoseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (instant - origin).components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// A binary min-heap in an array.
struct MinHeap<Element: Comparable> {
    private var items: [Element] = []

    var min: Element? { items.first }
    var count: Int { items.count }

    mutating func insert(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    @discardableResult
    mutating func removeMin() -> Element? {
        guard let first = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                guard left < items.count else { break }
                var smallest = left
                if left + 1 < items.count && items[left + 1] < items[left] { smallest = left + 1 }
                guard items[smallest] < items[parent] else { break }
                items.swapAt(smallest, parent)
                parent = smallest
            }
        }
        return first
    }
}
