import Foundation
import Glibc

/// What a user may see, asked of the kernel: the paths among `paths` that a
/// walk done as that user from `start` finds, by `access(2)` run as that
/// user (under `setpriv`, so modes, owners, groups and ACLs, masks
/// included, count exactly as the kernel counts them).
///
/// The walk lists (`R_OK`) and searches (`X_OK`) every folder from `start`
/// down to a path's folder, each permission checked on its own as the
/// walk's `opendir` and lookups check them; `start` itself the user reached
/// (it was opened as the user), so what is above it is not judged. With
/// `start` `/`, every folder of the path counts (plocate's rule).
package func pathsVisible(
    _ paths: [String], user: UInt32, groups: [UInt32], from start: String = "/"
) throws -> Set<String> {
    let script = """
        import os, sys
        start = sys.argv[1]
        for path in sys.stdin.read().split("\\n"):
            if not path or path == start: continue
            folders, folder = [], os.path.dirname(path)
            while True:
                folders.append(folder)
                if folder == start or folder == "/": break
                folder = os.path.dirname(folder)
            if folders[-1] != start: continue
            if all(os.access(f, os.R_OK) and os.access(f, os.X_OK) for f in folders):
                print(path)
        """
    let output = try asUser(user, groups: groups, script: script, arguments: [start], input: paths)
    return Set(output.split(separator: "\n").map(String.init))
}

/// Whether `user` reaches each of `folders` (opens it `O_PATH`, as `mdq`
/// does to name a scope to the system index): the kernel's answer, as
/// `errno` names (`""` when it opens).
package func foldersReached(_ folders: [String], user: UInt32, groups: [UInt32]) throws -> [String: String] {
    let script = """
        import errno, os, sys
        for path in sys.stdin.read().split("\\n"):
            if not path: continue
            try:
                os.close(os.open(path, os.O_PATH | os.O_DIRECTORY))
                print(path + "\\t")
            except OSError as e:
                print(path + "\\t" + errno.errorcode.get(e.errno, str(e.errno)))
        """
    let output = try asUser(user, groups: groups, script: script, arguments: [], input: folders)
    var result: [String: String] = [:]
    for line in output.split(separator: "\n") {
        let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
        if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
    }
    return result
}

/// Runs a Python script as `user` with `groups` (the first the primary),
/// the lines of `input` on its standard input; returns its output.
private func asUser(
    _ user: UInt32, groups: [UInt32], script: String, arguments: [String], input: [String]
) throws -> String {
    let primary = groups.first ?? user
    let all = groups.map(String.init).joined(separator: ",")
    let file = "/tmp/mdq-oracle-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try input.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
    defer { unlink(file) }
    _ = chmod(file, 0o644)
    let output = try Shell.run(
        "/bin/sh",
        [
            "-c",
            "exec /usr/bin/setpriv --reuid=\(user) --regid=\(primary) --groups=\(all.isEmpty ? String(primary) : all) "
                + "/usr/bin/python3 -c \"$0\" \"$@\" < \"$FILE\"",
            script,
        ] + arguments, environment: ["FILE": file, "PATH": "/usr/bin:/bin"])
    return output.stdoutText
}

/// Every path below `root` (not `root` itself), listed as root.
package func pathsBelow(_ root: String) throws -> [String] {
    try Shell.run("/usr/bin/find", [root, "-mindepth", "1"]).stdoutText.split(separator: "\n").map(String.init)
}
