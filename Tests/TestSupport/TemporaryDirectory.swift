import Foundation
import Glibc
import Synchronization
package import SystemPackage

/// A fresh folder under the system temp directory, removed by `remove()`.
///
/// Creates files and folders from raw bytes, so tests can use names that are
/// not UTF-8.
package final class TemporaryDirectory {
    package let path: FilePath

    package init(_ label: String = "mdq-test") throws {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        guard let result = mkdtemp(&template) else { throw Errno(rawValue: errno) }
        path = FilePath(String(cString: result))
    }

    deinit {
        if !kept { remove() }
    }

    package func remove() {
        if (try? FileManager.default.removeItem(atPath: path.string)) != nil { return }
        // A test removed permissions, or made a tree deeper than PATH_MAX
        // (which FileManager cannot remove): make every folder writable and
        // searchable again and let rm, which walks with openat, remove it.
        _ = try? Shell.run("/bin/chmod", ["-R", "u+rwx", path.string])
        _ = try? Shell.run("/bin/rm", ["-rf", path.string])
    }

    /// A fixture built once per test process by `build` and shared by the
    /// tests that only read it (rethrowing its error to each); removed when
    /// the process exits.
    package final class Shared: Sendable {
        private let result: Result<FilePath, any Error>

        package init(_ build: (TemporaryDirectory) throws -> Void) {
            result = Result {
                let temp = try TemporaryDirectory("mdq-fixture")
                try build(temp)
                temp.keep()
                return temp.path
            }
        }

        package func path() throws -> FilePath { try result.get() }
    }

    private var kept = false

    /// Leaves the folder in place until the process exits.
    private func keep() {
        kept = true
        TemporaryDirectory.removeAtExit(path.string)
    }

    private static let atExit: Void = {
        atexit {
            for path in TemporaryDirectory.pathsToRemove.withLock({ $0 }) {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
    }()
    private static let pathsToRemove = Mutex([String]())

    private static func removeAtExit(_ path: String) {
        _ = atExit
        pathsToRemove.withLock { $0.append(path) }
    }

    /// `path/relative` as raw bytes.
    package func bytes(_ relative: [UInt8]) -> [UInt8] {
        Array(path.string.utf8) + [0x2F] + relative
    }

    package func url(_ relative: String) -> FilePath {
        path.appending(relative)
    }

    /// Creates a file (and its parent folders) with the given contents.
    @discardableResult
    package func file(_ relative: String, contents: String = "") throws -> FilePath {
        try file(Array(relative.utf8), contents: Array(contents.utf8))
        return path.appending(relative)
    }

    /// Creates a file whose relative path is raw bytes.
    package func file(_ relative: [UInt8], contents: [UInt8] = []) throws {
        let full = bytes(relative)
        if let slash = full.lastIndex(of: 0x2F) { try makeFolders(Array(full[..<slash])) }
        let fd = full.withCString { open($0, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        defer { close(fd) }
        if !contents.isEmpty {
            _ = contents.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }

    /// Creates a folder (and parents).
    @discardableResult
    package func folder(_ relative: String) throws -> FilePath {
        try makeFolders(bytes(Array(relative.utf8)))
        return path.appending(relative)
    }

    /// Creates `count` empty files called `name(i)` in one folder (made if
    /// needed): one `openat` each on the folder's descriptor, for fixtures
    /// of tens of thousands of files.
    package func files(_ count: Int, in relative: String, name: (Int) -> String) throws {
        let folder = try folder(relative)
        let fd = open(folder.string, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        defer { close(fd) }
        for i in 0..<count {
            let file = openat(fd, name(i), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard file >= 0 else { throw Errno(rawValue: errno) }
            close(file)
        }
    }

    package func symlink(_ relative: String, to target: String) throws {
        let full = bytes(Array(relative.utf8))
        if let slash = full.lastIndex(of: 0x2F) { try makeFolders(Array(full[..<slash])) }
        guard full.withCString({ Glibc.symlink(target, $0) }) == 0 else { throw Errno(rawValue: errno) }
    }

    /// Makes a chain of 40 folders with 200-byte names (about 8 KB, twice
    /// PATH_MAX) under `relative` (created if needed), opening each by
    /// descriptor, with an empty file `leaf` at the bottom; returns the
    /// file's full path bytes.
    package func deepFile(under relative: String, leaf: String) throws -> [UInt8] {
        let component = String(repeating: "d", count: 200)
        var fd = open(try folder(relative).string, O_RDONLY | O_DIRECTORY)
        guard fd >= 0 else { throw Errno(rawValue: errno) }
        var full = Array(path.appending(relative).string.utf8)
        for _ in 0..<40 {
            if mkdirat(fd, component, 0o755) != 0 && errno != EEXIST { throw Errno(rawValue: errno) }
            let next = openat(fd, component, O_RDONLY | O_DIRECTORY)
            close(fd)
            guard next >= 0 else { throw Errno(rawValue: errno) }
            fd = next
            full += [0x2F] + Array(component.utf8)
        }
        defer { close(fd) }
        let file = openat(fd, leaf, O_WRONLY | O_CREAT, 0o644)
        guard file >= 0 else { throw Errno(rawValue: errno) }
        close(file)
        return full + [0x2F] + Array(leaf.utf8)
    }

    /// `mkdir -p`: one `mkdir` when the parent exists (the common case in
    /// fixtures of thousands of files), the missing ancestors otherwise.
    private func makeFolders(_ full: [UInt8]) throws {
        func make() -> Int32? {
            full.withCString { mkdir($0, 0o755) } == 0 || errno == EEXIST ? nil : errno
        }
        guard let failure = make() else { return }
        guard failure == ENOENT, let slash = full.lastIndex(of: 0x2F), slash > 0 else {
            throw Errno(rawValue: failure)
        }
        try makeFolders(Array(full[..<slash]))
        if let failure = make() { throw Errno(rawValue: failure) }
    }
}

extension Array where Element == UInt8 {
    package func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        var terminated = map { CChar(bitPattern: $0) }
        terminated.append(0)
        return try terminated.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }

}
