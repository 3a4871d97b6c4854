import Foundation
public import MetadataIndex
import SystemPackage

/// Timing, memory and live-query helpers shared by the instruments.
public enum Measure {
    /// A duration in seconds.
    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Seconds `body` takes on the continuous clock.
    public static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try body()
        return seconds(clock.now - start)
    }

    /// A `/proc/self/status` field in kB (`"VmRSS:"`, `"VmHWM:"`).
    public static func residentKilobytes(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix(field) {
            return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
        }
        return 0
    }

    /// A new empty folder under /tmp.
    public static func temporaryFolder() -> String {
        var template = Array("/tmp/mdq-bench-XXXXXX".utf8CString)
        return String(cString: mkdtemp(&template)!)
    }

    /// Starts a query over `folder` (interval 0 unless `configure` says
    /// otherwise) and waits for its first results.
    public static func startQuery(
        _ predicate: MetadataPredicate, in folder: String, configure: (MetadataQuery) -> Void = { _ in }
    ) -> MetadataQuery {
        let query = MetadataQuery()
        query.predicate = predicate
        query.searchScopes = [.directory(FilePath(folder))]
        query.notificationBatchingInterval = 0
        configure(query)
        let finished = DispatchSemaphore(value: 0)
        let token = NotificationCenter.default.addObserver(
            forName: .metadataQueryDidFinishGathering, object: query, queue: nil
        ) { _ in finished.signal() }
        query.start()
        finished.wait()
        NotificationCenter.default.removeObserver(token)
        return query
    }
}
