import Testing

@testable import MDQEngine

/// The content indexer's queue (`ImportQueue`): the order files are taken
/// in, and that a file queued again or removed is taken once or never.
@Suite struct ImportQueueTests {
    @Test func settledChangesComeBeforeTheBacklogWhichGoesMostRecentFirst() {
        var queue = ImportQueue()
        let now = ContinuousClock.now
        // Modification times in nanoseconds; the order is to the second.
        for (id, modified) in [(1, 100), (2, 300), (3, 200), (4, 300), (5, 300)] {
            queue.enqueueBacklog(UInt32(id), modified: Int64(modified) * 1_000_000_000 + Int64(id))
        }
        queue.enqueue(9, due: now - .milliseconds(10))
        queue.enqueue(8, due: now - .milliseconds(20))
        queue.enqueue(7, due: now + .seconds(60))
        #expect(queue.count == 8)
        #expect(queue.take(3, now: now) == [8, 9, 2])
        #expect(queue.take(10, now: now) == [4, 5, 3, 1], "most recent first, ties by id")
        #expect(queue.count == 1)
        #expect(queue.take(10, now: now).isEmpty, "not due yet")
        let due = queue.nextDue()
        #expect(due.map { $0 > now + .seconds(59) } == true)
        #expect(queue.take(10, now: now + .seconds(61)) == [7])
        #expect(queue.count == 0 && queue.nextDue() == nil)
    }

    @Test func aFileQueuedAgainOrRemovedIsTakenOnceOrNever() {
        var queue = ImportQueue()
        let now = ContinuousClock.now
        queue.enqueueBacklog(1, modified: 5)
        queue.enqueueBacklog(1, modified: 9)  // already waiting: kept where it was
        queue.enqueueBacklog(5, modified: 7)
        queue.remove(5)
        queue.enqueueBacklog(5, modified: 3)  // removed, then queued again: taken once
        queue.enqueue(2, due: now - .seconds(1))
        queue.enqueue(2, due: now + .seconds(1))  // changed again: settles again
        queue.enqueue(3, due: now - .seconds(1))
        queue.remove(3)
        queue.enqueueBacklog(4, modified: 1)
        queue.enqueue(4, due: now - .seconds(2))  // a change while in the backlog
        #expect(queue.count == 4)
        #expect(queue.take(10, now: now) == [4, 1, 5])
        #expect(queue.take(10, now: now + .seconds(2)) == [2])
        #expect(queue.count == 0)
        #expect((1...5).allSatisfy { !queue.contains($0) })
        #expect(queue.nextDue() == nil, "stale entries are skipped, not taken")
    }

    /// A batch is taken from a backlog of 200,000 without going over it:
    /// the heap entries a batch visits are counted, not timed (a file
    /// queued again costs one more visit, once).
    @Test func aBatchCostsItsOwnSizeNotTheBacklogs() {
        var queue = ImportQueue()
        for id in 0..<200_000 { queue.enqueueBacklog(UInt32(id), modified: Int64(id % 977)) }
        // 1,000 of them changed while waiting: queued again, settled.
        for id in stride(from: 0, to: 200_000, by: 200) { queue.enqueue(UInt32(id), due: .now - .seconds(1)) }
        var taken = 0
        var seen = Set<UInt32>()
        while queue.count > 0 {
            let before = queue.visited
            let batch = queue.take(64)
            #expect(queue.visited - before <= 64 + 1_000, "a batch went over the backlog")
            #expect(batch.count == min(64, 200_000 - taken))
            for id in batch { #expect(seen.insert(id).inserted) }
            taken += batch.count
        }
        #expect(queue.visited == 201_000, "each entry visited once, stale ones included")
        #expect(taken == 200_000)
        queue.shrinkIfEmpty()
        #expect(queue.nextDue() == nil)
    }
}
