import Foundation
import Glibc
import SystemPackage
import TestSupport

/// Trees moved into a scope from outside, their folders rotated at once as
/// soon as they arrive (`mv a x; mv b a; mv c b; mv x c`, a few rounds,
/// now and then the folder at `c` moved aside and made again), then a file
/// made in every folder. What a live engine crawls after a move meets names
/// that lead to other folders than it listed, and events that tell of
/// paths since reused.
struct RotatedTrees {
    let scope: FilePath
    let outside: FilePath
    var trees = 12

    /// Moves the trees in and rotates them, as `seed` decides.
    func run(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        for tree in 0..<trees {
            let source = outside.appending("t\(tree)").string
            for name in ["a", "b", "c"] {
                try FileManager.default.createDirectory(
                    atPath: "\(source)/\(name)/inner", withIntermediateDirectories: true)
                Self.write("\(source)/\(name)/inner/\(name).txt")
            }
            let target = scope.appending("t\(tree)").string
            _ = rename(source, target)
            for round in 0..<Int.random(in: 1...3, using: &random) {
                _ = rename("\(target)/a", "\(target)/x")
                _ = rename("\(target)/b", "\(target)/a")
                _ = rename("\(target)/c", "\(target)/b")
                _ = rename("\(target)/x", "\(target)/c")
                if Bool.random(using: &random) {
                    _ = rename("\(target)/c", "\(target)/old\(round)")
                    _ = mkdir("\(target)/c", 0o755)
                    _ = mkdir("\(target)/c/inner", 0o755)
                }
            }
            for name in ["a", "b", "c"] {
                Self.write("\(target)/\(name)/made.txt")
                Self.write("\(target)/\(name)/inner/made.txt")
            }
        }
    }

    /// A file made later in every rotated folder's inner folder.
    func writeLater() {
        for tree in 0..<trees {
            for name in ["a", "b", "c"] { Self.write(scope.appending("t\(tree)/\(name)/inner/later.txt").string) }
        }
    }

    private static func write(_ path: String) {
        FileManager.default.createFile(atPath: path, contents: Data("m".utf8))
    }
}
