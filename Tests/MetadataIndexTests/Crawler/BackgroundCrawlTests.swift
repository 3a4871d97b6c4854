import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQSystem

/// A crawl no one waits for (a restart's check against the disk) runs on
/// threads that yield to the rest of the process, and leaves the thread
/// that asked for it at its own priority.
struct BackgroundCrawlTests {
    /// The nice value of the calling thread (field 19 of its stat line).
    static func threadNice() -> Int32 {
        let line = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
        let fields = line.split(separator: ")").last?.split(separator: " ") ?? []
        return fields.count > 16 ? Int32(fields[16]) ?? -99 : -99
    }

    /// A handoff thread runs its jobs one at a time, in order, each after
    /// the last has ended, at the priority it was given; the caller's own
    /// is untouched.
    @Test func aHandoffThreadRunsOneJobAtATimeAtItsPriority() {
        let before = Self.threadNice()
        let thread = HandoffThread(name: "mdq-test-low", priority: .background)
        defer { thread.stop() }
        let log = Mutex<[String]>([])
        for job in 0..<20 {
            thread.run {
                log.withLock { $0.append("start \(job) \(Self.threadNice())") }
                usleep(job % 3 == 0 ? 2_000 : 0)  // a slow job: the next still waits for it
                log.withLock { $0.append("end \(job)") }
            }
        }
        thread.wait()
        let expected = (0..<20).flatMap { ["start \($0) \(max(before, 10))", "end \($0)"] }
        #expect(log.withLock { $0 } == expected)
        #expect(Self.threadNice() == before)
    }

    @Test func backgroundWorkersRunLowerAndTheCallerDoesNot() {
        let before = Self.threadNice()
        let seen = Mutex<[Int: Int32]>([:])
        WorkerThreads.run(count: 3, name: "mdq-test", priority: .background) { index in
            let nice = Self.threadNice()
            seen.withLock { $0[index] = nice }
        }
        #expect(seen.withLock { $0 } == [0: max(before, 10), 1: max(before, 10), 2: max(before, 10)])
        #expect(Self.threadNice() == before, "the caller's priority is its own still")
        WorkerThreads.run(count: 2, name: "mdq-test") { index in
            let nice = Self.threadNice()
            seen.withLock { $0[index] = nice }
        }
        #expect(seen.withLock { $0[1] } == before)
    }

    /// `run(count:)` runs `body` for each of `0..<count`: none for 0, at
    /// either priority.
    @Test func workersRunOncePerIndexAndNotAtAllForNone() {
        for priority in [WorkerThreads.Priority.normal, .background] {
            for count in [0, 1, 3] {
                let ran = Mutex<[Int]>([])
                WorkerThreads.run(count: count, name: "mdq-test", priority: priority) { index in
                    ran.withLock { $0.append(index) }
                }
                #expect(ran.withLock { $0.sorted() } == Array(0..<count), "\(count), \(priority)")
            }
        }
    }

    /// A crawl in the background finds what a crawl in the foreground does.
    @Test func aBackgroundCrawlFindsTheSameEntries() throws {
        let temp = try TemporaryDirectory()
        for i in 0..<120 { try temp.file("tree/d\(i % 6)/f\(i).txt", contents: "\(i)") }
        var names: [Set<String>] = []
        for background in [false, true] {
            var options = CrawlOptions(threadCount: 2)
            options.inBackground = background
            let index = FileIndex()
            try index.gather([CrawlRoot(path: temp.path.appending("tree"))], options: options)
            var found = Set<String>()
            index.forEachEntry { found.insert(index.path(of: $0).string) }
            names.append(found)
        }
        #expect(names[0] == names[1] && names[0].count == 127)
    }
}
