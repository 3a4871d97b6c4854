import Foundation
import Glibc
import MDQShared
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

    /// A host that imports what is inside its files publishes each file's
    /// words; a search across hosts tests a word or a word's start as the
    /// host's own search does, for a user who may read the file (its
    /// folders listed, the file read, as the host's kernel judges by its
    /// modes, owners and groups), and follows changes of text, of
    /// permissions and of the files themselves.
    @Test(.enabled(if: PostgresCluster.isInstalled, "needs PostgreSQL 15"))
    func wordsAreSearchedAcrossHostsAsEachUserMayReadTheFiles() throws {
        let cluster = try #require(PostgresCluster.shared)
        let url = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: url))
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let disk = try temp.folder("disk")
        #expect(chmod(disk.string, 0o755) == 0)
        let files: [(String, String, mode_t, uid_t)] = [
            ("open.txt", "The Lighthouse keeper", 0o644, 0),
            ("secret.txt", "lighthouse code 4711", 0o600, 0),
            ("closed/inside.txt", "a lighthouse inside", 0o644, 0),
            ("nobodys.txt", "the lighthouses of nobody", 0o600, 65534),
            ("menu.txt", "Café crème, lighthouse-keeper's brunch", 0o644, 0),
            ("other.txt", "nothing to see", 0o644, 0),
            ("granted.txt", "a lighthouse for nobody", 0o600, 0),
            ("denied.txt", "a lighthouse for all but nobody", 0o644, 0),
        ]
        for (name, text, mode, owner) in files {
            let path = try temp.file("disk/" + name, contents: text)
            #expect(chmod(path.string, mode) == 0 && chown(path.string, owner, 65534) == 0)
        }
        #expect(chmod(disk.appending("closed").string, 0o700) == 0)
        // ACLs on files: one lets nobody read, one keeps nobody out.
        for (name, entry) in [("granted.txt", "u:nobody:r"), ("denied.txt", "u:nobody:-")] {
            let set = try Shell.run("/usr/bin/setfacl", ["-m", entry, disk.appending(name).string])
            #expect(set.status == 0, "\(set.stderrText)")
        }
        let alpha = try PrivateSystemIndex(
            disk.string, in: temp, arguments: ["--content", "--publish", url, "--host-name", "alpha"])
        defer { alpha.close() }
        #expect(alpha.waitUntilLive(), "\(alpha.logText)")

        /// `mdq --host alpha ARGUMENTS` as `user`, with a database URL (the
        /// user judged by name on alpha), each path without its host.
        func remote(_ arguments: [String], as user: String = "nobody") throws -> Shell.Output {
            try Shell.run(
                "/usr/bin/setpriv",
                ["--reuid=\(user)", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--host", "alpha"]
                    + arguments, environment: ["MDQ_SHARED": url])
        }
        func names(_ output: Shell.Output, host: String = "alpha:") -> [String] {
            output.stdoutText.split(separator: "\n").map { String($0.dropFirst(host.count + disk.string.count + 1)) }
                .sorted()
        }
        /// The same search on alpha itself, as `user`, reading the files.
        func local(_ query: String, as user: String = "nobody") throws -> [String] {
            names(try alpha.mdq(["--onlyin", disk.string, query], as: user, inside: true), host: "")
        }
        let query = "kMDItemTextContent == 'lighthouse'cdw"
        // Published once imported: the files nobody may read that hold the
        // word (an ACL lets it read one), not root's secret, nor one an ACL
        // closes to nobody, nor what lies in a folder closed to it.
        #expect(
            waitUntil(timeout: 30) { (try? names(remote([query]))) == ["granted.txt", "menu.txt", "open.txt"] },
            "\((try? remote([query]))?.stderrText ?? "") \(alpha.logText)")
        // The queries of a host's own search, with the same answers.
        for (query, user) in [
            ("kMDItemTextContent == 'lighthouse'cdw", "nobody"),
            ("kMDItemTextContent == 'LIGHT*'cdw", "nobody"),
            ("kMDItemTextContent LIKE[cdw] 'lighthouses'", "nobody"),
            ("kMDItemTextContent == 'lighthouse*'cdw", "nobody"),
            ("kMDItemTextContent == 'nobody'cdw", "nobody"),
            ("kMDItemTextContent == 'CAFE'cdw", "nobody"),
            ("kMDItemTextContent == 'crème'cdw", "nobody"),
            ("kMDItemTextContent == 'cafe'cdw && kMDItemFSName == '*.txt'", "nobody"),
            ("kMDItemTextContent == '4711'cdw || kMDItemFSName == 'secret*'cd", "nobody"),
            ("kMDItemTextContent == 'nothing'cdw || kMDItemTextContent == 'code'cdw", "nobody"),
        ] {
            let across = try remote([query], as: user)
            #expect(across.status == 0, "\(query): \(across.stderrText)")
            let here = try local(query, as: user)
            #expect(names(across) == here, "\(query) as \(user): \(names(across)) \(here)")
            let counted = try remote(["--count", query], as: user)
            #expect(counted.stdoutText == "\(names(across).count)\n", "\(query) as \(user): \(counted.stderrText)")
        }
        // root on another host is not root on alpha.
        #expect(try names(remote([query], as: "root")) == ["denied.txt", "menu.txt", "open.txt"])
        // What the words cannot answer is refused with the reason.
        for (refused, reason) in [
            ("kMDItemTextContent CONTAINS[cd] 'house'", "tested only for a word or a word's start"),
            ("kMDItemTextContent == 'lighthouse'", "tested only for a word or a word's start"),
            ("kMDItemTextContent == 'lighthouse keeper'cdw", "tested only for a word or a word's start"),
            ("kMDItemTextContent != 'lighthouse'cdw", "not tested under NOT"),
            ("kMDItemTextContent == 'code'cdw || kMDItemFSName == 'secret*'", "ORed only with tests"),
        ] {
            let output = try remote([refused])
            #expect(output.status != 0 && output.stderrText.contains(reason), "\(refused): \(output.stderrText)")
        }
        let live = try remote(["--live", query])
        #expect(live.status != 0 && live.stderrText.contains("does not test kMDItemTextContent"), "\(live.stderrText)")

        // Permissions (a mode, an ACL), text and files change: the answers
        // follow.
        #expect(chmod(disk.appending("secret.txt").string, 0o644) == 0)
        try "no more beacons".write(toFile: disk.appending("open.txt").string, atomically: false, encoding: .utf8)
        #expect(unlink(disk.appending("nobodys.txt").string) == 0)
        let closing = try Shell.run("/usr/bin/setfacl", ["-m", "u:nobody:-", disk.appending("menu.txt").string])
        #expect(closing.status == 0, "\(closing.stderrText)")
        #expect(
            waitUntil(timeout: 30) { (try? names(remote([query]))) == ["granted.txt", "secret.txt"] },
            "\((try? remote([query]))?.stdoutText ?? "")")
        #expect(try names(remote(["kMDItemTextContent == 'beacon*'cdw"])) == ["open.txt"])
        #expect(try names(remote([query])) == (try local(query)))
    }
}
