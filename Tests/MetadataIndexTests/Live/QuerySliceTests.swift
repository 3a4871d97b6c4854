import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

extension LiveSuites {
    /// A one-shot query's slices are sized by how long each holds the
    /// engine's lock, not by how long it waited for its turn: a query
    /// queued behind slow neighbours (another client's slices, the trigram
    /// builder after a restart) keeps its slices and finishes in as many
    /// turns, instead of shrinking them to a few slots at a time. (Before,
    /// a restarted daemon of 10M entries took 6 s to answer its first
    /// query, one turn in two spent behind the trigram builder.)
    @Suite(.serialized, .timeLimit(.minutes(2)))
    struct QuerySliceTests {
        @Test func aQueryQueuedBehindSlowTurnsKeepsItsSlices() throws {
            let temp = try TemporaryDirectory()
            let scope = try temp.folder("scope")
            for i in 0..<2000 { try temp.file("scope/d\(i % 10)/f\(i).txt") }
            let engine = try LiveEngine(crawlThreads: 2)
            defer { engine.shutdown() }
            let request = ScopeRequest(path: scope, rules: ScopeRules())
            let retained = try engine.retain(request)
            defer { _ = retained }
            let slice = 256
            engine.streamSliceSlots.withLock { $0 = slice }
            let slots = engine.state.withLock { $0.index.slotCount }
            // A neighbour whose every turn takes 25 ms, longer than a slow
            // slice (20 ms): each of the query's turns waits that long.
            let stop = Atomic<Bool>(false)
            let neighbour = Thread {
                while !stop.load(ordering: .relaxed) { engine.sliceTurns.withTurn { usleep(25_000) } }
            }
            neighbour.start()
            defer { stop.store(true, ordering: .relaxed) }
            var parts = 0
            var streamed = 0
            let answered = try engine.answer(
                scopes: [request], predicate: try MetadataPredicate("TRUEPREDICATE"), output: .paths,
                stream: { _, count in
                    parts += 1
                    streamed += count
                    return true
                })
            guard case .success = answered else {
                Issue.record("not covered")
                return
            }
            #expect(streamed == 2010, "every file and folder once")
            // One part per slice with matches: the slices stayed whole.
            #expect(parts <= slots / slice + 2, "\(parts) parts for \(slots) slots in slices of \(slice)")
        }
    }
}
