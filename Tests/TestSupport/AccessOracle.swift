import Foundation
import Glibc

/// What a user may see, asked of the kernel: the paths among `paths` whose
/// parent folder the user may read and whose every folder from `/` down the
/// user may search, by `access(2)` run as that user (under `setpriv`, so
/// modes, groups and ACLs count exactly as the kernel counts them).
package func pathsVisible(_ paths: [String], user: UInt32, groups: [UInt32]) throws -> Set<String> {
    let primary = groups.first ?? user
    let all = groups.map(String.init).joined(separator: ",")
    let script = """
        import os, sys
        for path in sys.stdin.read().split("\\n"):
            if not path: continue
            parent = os.path.dirname(path)
            folders, folder = [], parent
            while True:
                folders.append(folder)
                if folder == "/": break
                folder = os.path.dirname(folder)
            if os.access(parent, os.R_OK) and all(os.access(f, os.X_OK) for f in folders):
                print(path)
        """
    let input = "/tmp/mdq-oracle-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try paths.joined(separator: "\n").write(toFile: input, atomically: true, encoding: .utf8)
    defer { unlink(input) }
    _ = chmod(input, 0o644)
    let output = try Shell.run(
        "/bin/sh",
        [
            "-c",
            "exec /usr/bin/setpriv --reuid=\(user) --regid=\(primary) --groups=\(all.isEmpty ? String(primary) : all) "
                + "/usr/bin/python3 -c \"$0\" < \"$1\"",
            script, input,
        ])
    return Set(output.stdoutText.split(separator: "\n").map(String.init))
}

/// Every path below `root` (not `root` itself), listed as root.
package func pathsBelow(_ root: String) throws -> [String] {
    try Shell.run("/usr/bin/find", [root, "-mindepth", "1"]).stdoutText.split(separator: "\n").map(String.init)
}
