import Foundation
import Glibc

/// A small, fast, seeded generator (SplitMix64): the same seed gives the
/// same storm on every run.
package struct SeededGenerator: RandomNumberGenerator {
    package var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A seeded generator of filesystem operations inside a scope folder and an
/// outside folder (for moves across the scope boundary).
package struct Storm {
    package let scope: String
    package let outside: String
    var random: SeededGenerator
    /// Relative folders known to exist (may be stale after random ops; every
    /// op tolerates failure).
    var folders: [String] = [""]
    var outsideFolders: [String] = []
    /// Folders the storm never removes, renames or moves (a container's
    /// `Documents`: its queries need their scope root).
    let protected: Set<String>
    let names = ["a.txt", "b.txt", "c.png", "d", "report.pdf", "x", "caf\u{E9}.md", "e.txt", "f"]
    let folderNames = ["docs", "sub", "deep", "photos", "tmp", "z"]

    package init(scope: String, outside: String, seed: UInt64, protected: Set<String> = []) {
        self.scope = scope
        self.outside = outside
        self.protected = protected
        random = SeededGenerator(seed: seed)
        collectFolders(under: "")
    }

    /// Folders the storm may remove, rename or move.
    private var movableFolders: [String] {
        folders.dropFirst().filter { folder in !protected.contains { folder == $0 || $0.hasPrefix(folder + "/") } }
    }

    private mutating func pick<T>(_ values: [T]) -> T { values.randomElement(using: &random)! }
    private func full(_ relative: String) -> String { relative.isEmpty ? scope : scope + "/" + relative }
    private func join(_ folder: String, _ name: String) -> String { folder.isEmpty ? name : folder + "/" + name }

    package mutating func run(operations: Int) {
        for _ in 0..<operations { step() }
    }

    package mutating func step() {
        let folder = pick(folders)
        let name = pick(names)
        let path = full(join(folder, name))
        switch Int.random(in: 0..<100, using: &random) {
        case 0..<8:  // an atomic save: written aside, renamed over the name
            // Editors hide the temporary (`.name.swp`) or not (`name~`).
            let aside = Bool.random(using: &random) ? "." + name + ".tmp" : name + "~"
            let temporary = full(join(folder, aside))
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            if fd >= 0 {
                let bytes = Int.random(in: 1..<64, using: &random)
                _ = [UInt8](repeating: 0x62, count: bytes).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
                _ = rename(temporary, path)
            }
        case 8..<22:  // create or overwrite a file
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            if fd >= 0 {
                let bytes = Int.random(in: 0..<64, using: &random)
                if bytes > 0 {
                    _ = [UInt8](repeating: 0x61, count: bytes).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                }
                close(fd)
            }
        case 22..<25:  // chmod or chown a file (nothing else follows: an attribute event alone)
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return }
            if Bool.random(using: &random) {
                _ = chmod(path, pick([0o600, 0o640, 0o644, 0o755, 0o4755]))
            } else {
                _ = chown(path, pick([0, 65534]), pick([0, 100, 65534]))
            }
        case 25..<33:  // append
            let fd = open(path, O_WRONLY | O_APPEND)
            if fd >= 0 {
                _ = "more".withCString { write(fd, $0, 4) }
                close(fd)
            }
        case 33..<36:
            _ = truncate(path, 0)
        case 36..<48:
            _ = unlink(path)
        case 48..<60:  // rename a file, maybe to another folder
            let target = full(join(pick(folders), pick(names)))
            _ = rename(path, target)
        case 60..<70:  // mkdir
            let relative = join(folder, pick(folderNames))
            if mkdir(full(relative), 0o755) == 0 || errno == EEXIST {
                if !folders.contains(relative) && relative.split(separator: "/").count < 6 { folders.append(relative) }
                // Files made at once inside a new folder: the mkdir race.
                for i in 0..<Int.random(in: 0..<4, using: &random) {
                    let fd = open(full(relative) + "/new\(i).txt", O_WRONLY | O_CREAT, 0o644)
                    if fd >= 0 { close(fd) }
                }
            }
        case 70..<74:  // rm -r a folder
            let movable = movableFolders
            guard !movable.isEmpty else { return }
            let victim = pick(movable)
            removeTree(full(victim))
            folders.removeAll { $0 == victim || $0.hasPrefix(victim + "/") }
        case 74..<82:  // rename or move a folder inside the scope
            let movable = movableFolders
            guard !movable.isEmpty else { return }
            let source = pick(movable)
            let destinationParent = pick(folders)
            if destinationParent == source || destinationParent.hasPrefix(source + "/") { return }
            let destination = join(destinationParent, pick(folderNames) + "\(Int.random(in: 0..<3, using: &random))")
            if rename(full(source), full(destination)) == 0 {
                folders = folders.map {
                    $0 == source
                        ? destination : $0.hasPrefix(source + "/") ? destination + $0.dropFirst(source.count) : $0
                }
            }
        case 82..<88:  // move a folder or file out of the scope
            let movable = movableFolders
            let candidates = !movable.isEmpty && Bool.random(using: &random) ? movable : [join(folder, name)]
            let source = pick(candidates)
            let destination = "out\(Int.random(in: 0..<1_000_000, using: &random))"
            if rename(full(source), outside + "/" + destination) == 0 {
                folders.removeAll { $0 == source || $0.hasPrefix(source + "/") }
                outsideFolders.append(destination)
            }
        case 88..<94:  // move something in from outside
            guard let source = outsideFolders.popLast() else { return }
            let destination = join(folder, "in-" + source)
            if rename(outside + "/" + source, full(destination)) == 0 {
                var isFolder = stat()
                if lstat(full(destination), &isFolder) == 0 && (isFolder.st_mode & S_IFMT) == S_IFDIR {
                    folders.append(destination)
                    collectFolders(under: destination)
                }
            }
        case 94..<97:  // replace a file by a folder of the same name, or back
            var info = stat()
            if lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                removeTree(path)
                let gone = join(folder, name)
                folders.removeAll { $0 == gone || $0.hasPrefix(gone + "/") }
                let fd = open(path, O_WRONLY | O_CREAT, 0o644)
                if fd >= 0 { close(fd) }
            } else {
                _ = unlink(path)
                if mkdir(path, 0o755) == 0 { folders.append(join(folder, name)) }
            }
        default:  // a symlink: dangling, out of the scope, to a folder above (a loop), to /
            _ = unlink(path)
            _ = symlink(pick(["../elsewhere", outside, ".", "..", "/"]), path)
        }
    }

    private mutating func collectFolders(under relative: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: full(relative)) else { return }
        for entry in entries {
            var info = stat()
            let child = join(relative, entry)
            if lstat(full(child), &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                folders.append(child)
                collectFolders(under: child)
            }
        }
    }

    private func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }
}
