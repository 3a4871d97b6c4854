import SystemPackage
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// A live query of `text` over `scope` on `engine` (nil: the process's
/// shared engine), started, its first results gathered, notifications
/// unbatched.
func startLiveQuery(_ text: String, scope: FilePath, engine: LiveEngine? = nil) throws -> (MetadataQuery, QueryRecorder)
{
    let query = engine.map { engine in MetadataQuery(engineProvider: { engine }) } ?? MetadataQuery()
    query.predicate = try MetadataPredicate(text)
    query.searchScopes = [.directory(scope)]
    query.notificationBatchingInterval = 0
    let recorder = QueryRecorder(query)
    #expect(query.start())
    #expect(recorder.waitForFinish())
    return (query, recorder)
}

/// Waits until `query` equals what `expected` reads from the disk for its
/// predicate (paths and attributes), then checks its updates replay from
/// `initial` to that state.
func expectLiveQueryConverges(
    _ query: MetadataQuery, _ recorder: QueryRecorder, initial: [MetadataItem], _ text: String, _ context: String,
    expected: (MetadataPredicate) throws -> [[UInt8]: MetadataItem]
) throws {
    let predicate = try MetadataPredicate(text)
    var differences: [String] = []
    let converged = recorder.wait(timeout: 30) {
        guard let fresh = try? expected(predicate) else { return false }
        differences = attributeDifferences(query.results, fresh)
        return differences.isEmpty
    }
    #expect(converged, "\(context) \(text): \(differences.prefix(8))")
    // Updates are posted on the delivery queue, the results changing with
    // them: both are read there, between two deliveries.
    let (problems, state, current) = query.deliveryQueue.sync {
        let (problems, state) = replay(recorder.deliveredUpdates, on: initial)
        return (problems, state, query.results)
    }
    #expect(problems.isEmpty, "\(context): \(problems.prefix(5))")
    let results = Dictionary(current.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    let onlyReplayed = state.filter { results[$0.key] == nil }.map { "\($0.key) \($0.value.path)" }
    let onlyInResults = results.filter { state[$0.key] == nil }.map { "\($0.key) \($0.value.path)" }
    #expect(
        onlyReplayed.isEmpty && onlyInResults.isEmpty,
        "\(context): replayed updates differ: only replayed \(onlyReplayed.prefix(8)), only in results \(onlyInResults.prefix(8))"
    )
}

extension LiveEngine {
    /// Holds every names-first fill at its start (`fillHook`) until the
    /// returned gate is set; a test sets it in a `defer` too.
    func holdFills() -> ConditionLocked<Bool> {
        let release = ConditionLocked(false)
        fillHook.withLock {
            $0 = { _ = release.wait(until: { $0 }, deadline: .now + .seconds(60)) { _ in } }
        }
        return release
    }
}
