import Glibc

/// The full command line, `mdq-full`: beside this program (a build folder,
/// or an install's `libexec/mdq` when this is `bin/mdq`).
enum FullCommand {
    static let name = "mdq-full"

    /// Replaces this process with `mdq-full`, given the same arguments
    /// (`argv[0]` too: `mdfind` and `mdls` are read from it).
    static func run() -> Never {
        let own = executablePath()
        let folder = own.lastIndex(of: "/").map { String(own[..<$0]) } ?? "."
        let parent = folder.lastIndex(of: "/").map { String(folder[..<$0]) } ?? ".."
        let candidates = [folder + "/" + name, parent + "/libexec/mdq/" + name]
        for path in candidates where access(path, X_OK) == 0 {
            execv(path, CommandLine.unsafeArgv)
            // Exists but cannot be run: try the next, then say so.
        }
        let message = "mdq: cannot run \(name): looked for \(candidates.joined(separator: " and ")) (reinstall mdq)\n"
        _ = message.withCString { write(2, $0, strlen($0)) }
        exit(2)
    }

    /// This program's path, from `/proc/self/exe` (the symlink resolved:
    /// `mdfind` is a link to `mdq`).
    private static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return CommandLine.arguments.first ?? "mdq" }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
