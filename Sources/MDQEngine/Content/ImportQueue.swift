/// The files waiting for their content to be imported, kept so that taking
/// the next batch costs O(batch × log pending), never a pass over all that
/// wait: a backlog of a million files is imported at the pace of a backlog
/// of ten.
///
/// **Order.** Changes seen while live come first, once settled, in the
/// order they settle (the file a user just saved is what they search for
/// next); then transient failures retried, at their time; then the
/// backlog (a first crawl, a reconcile after a restart), the most recently
/// modified first, to the second (what a user is likeliest to look for;
/// old archives last), ties by id.
///
/// **Memory.** A file in the backlog costs one heap entry of 8 bytes (its
/// recency and its id), and every index slot one byte saying which queue
/// holds it: about 9 bytes a pending file, so a backlog of 10 million
/// holds in about 90 MB. Settling changes, few at a time, cost 16 bytes
/// each and a generation in a table of their own. Re-queuing a file (a
/// change while it waits) or dropping it (removed) only changes its
/// state; the old entry is skipped when it comes up.
struct ImportQueue {
    /// One settling change or retry in the timed heap.
    struct Timed: Comparable {
        /// When it is due, in ns since `origin`.
        var due: Int64
        var id: UInt32
        var generation: UInt32

        static func < (a: Timed, b: Timed) -> Bool {
            (a.due, a.id) < (b.due, b.id)
        }
    }

    /// One file of the backlog: its recency (seconds before the end of
    /// time, so the most recent is smallest) above its id.
    struct Backlog: Comparable {
        var bits: UInt64

        init(id: UInt32, modified: Int64) {
            // Nanoseconds to seconds, clamped to what 32 bits hold (to
            // 2106); unknown times (.min) come last.
            let seconds = modified == .min ? 0 : UInt32(clamping: max(0, modified / 1_000_000_000))
            bits = UInt64(UInt32.max - seconds) << 32 | UInt64(id)
        }

        var id: UInt32 { UInt32(truncatingIfNeeded: bits) }

        static func < (a: Backlog, b: Backlog) -> Bool { a.bits < b.bits }
    }

    /// Where a slot's file waits (one byte).
    private enum Place: UInt8 {
        case none, timed, backlog
    }

    /// Settling changes and retries, by when they are due.
    private var timed = MinHeap<Timed>()
    /// The current generation of each file in `timed` (an entry of an
    /// older one was queued again).
    private var generations: [UInt32: UInt32] = [:]
    private var backlog = MinHeap<Backlog>()
    /// Where each id waits, by id.
    private var places: [Place] = []
    private var nextGeneration: UInt32 = 1
    /// Files queued now.
    private(set) var count = 0
    /// Heap entries taken out so far, current or stale: what taking
    /// batches has cost (tests check it follows the batches, not the
    /// backlog).
    private(set) var visited = 0
    private let origin = ContinuousClock.now

    /// Whether `id` waits.
    func contains(_ id: UInt32) -> Bool { place(id) != .none }

    /// Queues `id` to be imported at `due` (a change settling, a retry),
    /// replacing where it waited before.
    mutating func enqueue(_ id: UInt32, due: ContinuousClock.Instant) {
        setPlace(id, .timed)
        let generation = nextGeneration
        nextGeneration = nextGeneration == .max ? 1 : nextGeneration + 1
        generations[id] = generation
        timed.insert(Timed(due: nanoseconds(due), id: id, generation: generation))
    }

    /// Queues `id` in the backlog, unless it waits already.
    mutating func enqueueBacklog(_ id: UInt32, modified: Int64) {
        guard !contains(id) else { return }
        setPlace(id, .backlog)
        backlog.insert(Backlog(id: id, modified: modified))
    }

    /// Forgets `id` (its file was removed).
    mutating func remove(_ id: UInt32) {
        guard contains(id) else { return }
        setPlace(id, .none)
    }

    /// When the next file is due: now when the backlog holds one, nil when
    /// nothing waits.
    mutating func nextDue() -> ContinuousClock.Instant? {
        while let entry = timed.min, !isCurrent(entry) {
            timed.removeMin()
            visited += 1
        }
        while let entry = backlog.min, place(entry.id) != .backlog {
            backlog.removeMin()
            visited += 1
        }
        if backlog.min != nil { return .now }
        return timed.min.map { origin + .nanoseconds($0.due) }
    }

    /// Takes up to `limit` files due by `now`: settled changes and retries
    /// first, then the backlog.
    mutating func take(_ limit: Int, now: ContinuousClock.Instant = .now) -> [UInt32] {
        var taken: [UInt32] = []
        let cutoff = nanoseconds(now)
        while taken.count < limit, let entry = timed.min, entry.due <= cutoff {
            timed.removeMin()
            visited += 1
            if isCurrent(entry) {
                setPlace(entry.id, .none)
                taken.append(entry.id)
            }
        }
        while taken.count < limit, let entry = backlog.removeMin() {
            visited += 1
            // A file removed and queued again may have two entries: the
            // first taken stands for both.
            if place(entry.id) == .backlog {
                setPlace(entry.id, .none)
                taken.append(entry.id)
            }
        }
        return taken
    }

    /// Gives back the memory of a queue emptied (a first import of a whole
    /// tree leaves megabytes of capacity).
    mutating func shrinkIfEmpty() {
        guard count == 0 else { return }
        timed = MinHeap()
        backlog = MinHeap()
        generations = [:]
        places = []
    }

    private func place(_ id: UInt32) -> Place {
        Int(id) < places.count ? places[Int(id)] : .none
    }

    private mutating func setPlace(_ id: UInt32, _ place: Place) {
        if Int(id) >= places.count {
            guard place != .none else { return }
            places.append(contentsOf: repeatElement(.none, count: max(Int(id) + 1 - places.count, places.count / 2)))
        }
        let before = places[Int(id)]
        if before == .none && place != .none { count += 1 }
        if before != .none && place == .none { count -= 1 }
        if before == .timed && place != .timed { generations[id] = nil }
        places[Int(id)] = place
    }

    private func isCurrent(_ entry: Timed) -> Bool {
        place(entry.id) == .timed && generations[entry.id] == entry.generation
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
