import Foundation
import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQDaemon
@testable import MDQSystem

/// The system index with `CONTENT` (`mdq system run --content`) imports
/// what is inside every file it indexes, in workers run as nobody, for
/// root's searches and for publishing. Another user is answered as by a
/// system index without content: the client reads inside the files
/// itself, with that user's own rights, so no file's words reach a user
/// who may not read the file.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
        "needs root (a system index in a mount namespace)"))
struct SystemContentTests {
    @Test func rootSearchesWhatIsInsideFilesOtherUsersOnlyWhatTheyMayRead() throws {
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let disk = try temp.folder("disk")
        #expect(chmod(disk.string, 0o755) == 0)
        let files: [(String, String, mode_t)] = [
            ("open.txt", "the lighthouse keeper", 0o644),
            ("secret.txt", "lighthouse code 4711", 0o600),
            ("closed/inside.txt", "a lighthouse inside", 0o644),
            ("other.txt", "nothing to see", 0o644),
        ]
        for (name, text, mode) in files {
            let path = try temp.file("disk/" + name, contents: text)
            #expect(chmod(path.string, mode) == 0)
        }
        #expect(chmod(disk.appending("closed").string, 0o700) == 0)
        let system = try PrivateSystemIndex(disk.string, in: temp, arguments: ["--content"])
        defer { system.close() }
        #expect(system.waitUntilLive(), "\(system.logText)")
        let query = ["--onlyin", disk.string, "kMDItemTextContent == 'lighthouse'cdw"]
        // Root's searches require the index (`--daemon`): they are not
        // answered by reading the files.
        func answer(_ user: String?, _ arguments: [String] = query) throws -> [String] {
            try system.mdq((user == nil ? ["--daemon"] : []) + arguments, as: user).stdoutText.split(separator: "\n")
                .map {
                    String($0.dropFirst(disk.string.count + 1))
                }.sorted()
        }
        // Root: every file that holds the word, from the system index's
        // own imports.
        let everything = ["closed/inside.txt", "open.txt", "secret.txt"]
        #expect(waitUntil(timeout: 30) { (try? answer(nil)) == everything }, "\(system.logText)")
        #expect(system.logText.contains("content indexing on"), "\(system.logText)")
        // The file is imported once its text changes.
        try "a lighthouse again".write(toFile: disk.appending("other.txt").string, atomically: false, encoding: .utf8)
        #expect(
            waitUntil(timeout: 30) { (try? answer(nil)) == (everything + ["other.txt"]).sorted() },
            "\((try? answer(nil)) ?? []) \(system.logText)")
        // Another user: what a search as that user finds reading the
        // files, not the secret's words, nothing inside the closed folder.
        #expect(try answer("nobody") == ["open.txt", "other.txt"])
        let values = try system.mdq(
            ["--onlyin", disk.string, "--attr", "kMDItemTextContent", "kMDItemFSName == 'secret.txt'"], as: "nobody")
        #expect(!values.stdoutText.contains("4711"), "\(values.stdoutText)")
        let free = try system.mdq(["--onlyin", disk.string, "4711"], as: "nobody")
        #expect(free.stdoutText.isEmpty, "\(free.stdoutText) \(free.stderrText)")
        #expect(try answer(nil, ["--onlyin", disk.string, "4711"]) == ["secret.txt"])
        let required = try system.mdq(["--daemon"] + query, as: "nobody")
        #expect(
            required.status != 0
                && required.stderrText.contains("the system index answers only root what is inside files"),
            "\(required.stderrText)")
        // The daemon itself refuses another user what is inside files,
        // whatever a client asks: a request of the protocol's own, as
        // nobody, for the whole index and the text's values.
        let script = """
            import json, socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            for n, (predicate, syntax) in enumerate([(sys.argv[2], "spotlight"), ("4711", "words")]):
                request = {"id": n + 1, "command": "query", "predicate": predicate, "syntax": syntax,
                           "output": "items", "attributes": ["kMDItemTextContent"]}
                s.sendall(json.dumps(request).encode() + b"\\n")
            s.settimeout(10)
            data = b""
            while data.count(b"\\n") < 2:
                chunk = s.recv(1 << 16)
                if not chunk: break
                data += chunk
            sys.stdout.write(data.decode("utf-8", "replace"))
            """
        let raw = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script,
                system.runtime + "/daemon.sock", "kMDItemTextContent == 'lighthouse'cdw",
            ])
        #expect(
            raw.stdoutText.components(separatedBy: "content indexing is off").count == 3
                && !raw.stdoutText.contains("secret") && !raw.stdoutText.contains("4711"),
            "\(raw.stdoutText) \(raw.stderrText)")
        // It keeps CAP_SETUID and CAP_SETGID beside its two, for its
        // workers to give root up.
        let capabilities = try String(contentsOfFile: "/proc/\(system.processIdentifier)/status", encoding: .utf8)
        #expect(capabilities.contains("CapBnd:\t00000000002000c4"), "\(capabilities)")
        // What the daemon says of its imports.
        let status = try system.mdq(["system", "status"], as: nil)
        #expect(status.stdoutText.contains("content"), "\(status.stdoutText)")
    }
}
