import Foundation
import MetadataIndex
import SystemPackage
import TestSupport

/// A fresh containers root with container folders in it, made this
/// process's `$MDQ_CONTAINERS` (with `$MDQ_DEFAULT_CONTAINER`, and a fresh
/// `$MDQ_STATE_DIR`) while a test runs, as an iCloud account is on a Mac.
///
/// The settings go through `ProcessEnvironment.overrides`, which the
/// library reads in place of the environment: calling `setenv` while other
/// test targets' threads read the environment is unsafe. Only this
/// target's suites set them, one at a time.
final class ContainersRoot {
    let temp: TemporaryDirectory
    /// The root folder.
    let path: FilePath
    /// The state folder (external documents registries) while active.
    let stateDirectory: FilePath

    init() throws {
        temp = try TemporaryDirectory("mdq-compat")
        path = temp.path.appending("containers")
        stateDirectory = temp.path.appending("state")
        try temp.folder("containers")
    }

    /// Makes a container folder (and its `Documents`) under the root.
    @discardableResult
    func container(_ folderName: String) throws -> FilePath {
        try temp.folder("containers/\(folderName)/Documents")
        return path.appending(folderName)
    }

    /// Sets `$MDQ_CONTAINERS` to this root (or to `root`),
    /// `$MDQ_DEFAULT_CONTAINER` to `defaultContainer` (unset when nil) and
    /// `$MDQ_STATE_DIR` to `stateDirectory`, until the returned value's
    /// `restore()`.
    func activate(root: FilePath? = nil, defaultContainer: String? = nil) -> SavedEnvironment {
        let values = [
            "MDQ_CONTAINERS": (root ?? path).string, "MDQ_DEFAULT_CONTAINER": defaultContainer ?? "",
            "MDQ_STATE_DIR": stateDirectory.string,
        ]
        let saved = ProcessEnvironment.overrides.withLock { overrides in
            defer { overrides.merge(values) { $1 } }
            return overrides
        }
        return SavedEnvironment(overrides: saved)
    }

    /// The overrides as they were before `activate`.
    struct SavedEnvironment {
        let overrides: [String: String]

        func restore() {
            ProcessEnvironment.overrides.withLock { $0 = overrides }
        }
    }

    /// Every path inside `folder` with its size and modification time, to
    /// compare before and after: a change means something wrote there.
    static func listing(of folder: FilePath) throws -> [String: String] {
        var result: [String: String] = [:]
        let enumerator = FileManager.default.enumerator(atPath: folder.string)
        while let relative = enumerator?.nextObject() as? String {
            let attributes = try FileManager.default.attributesOfItem(atPath: folder.appending(relative).string)
            let size = attributes[.size].map { "\($0)" } ?? "-"
            let date = (attributes[.modificationDate] as? Date).map { "\($0.timeIntervalSince1970)" } ?? "-"
            result[relative] = "\(size) \(date)"
        }
        return result
    }
}

/// Waits until `condition` holds, checking every 10 ms and letting the main
/// queue run in between (notifications for main-thread queries arrive
/// there), up to a deadline; never a fixed sleep.
@MainActor
func eventually(within timeout: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}
