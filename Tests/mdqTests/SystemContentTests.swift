import Foundation
import Glibc
import MDQShared
import SystemPackage
import TestSupport
import Testing

@testable import MDQDaemon
@testable import MDQSystem

/// The system index with `CONTENT` (`mdq system run --content`) imports
/// what is inside every file it indexes, in workers run as nobody, and
/// answers each user from the imports only for the files that user may
/// read (the file's mode, owner, group and ACL, as the kernel judges
/// them), as a search reading the files as that user would.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare"),
        "needs root (a system index in a mount namespace)"))
struct SystemContentTests {
    /// `mdq --host alpha ARGUMENTS` as `user`, with the database URL `url`
    /// (the user judged by name on alpha).
    static func searchAlpha(_ arguments: [String], as user: String = "nobody", url: String) throws -> Shell.Output {
        try Shell.run(
            "/usr/bin/setpriv",
            ["--reuid=\(user)", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--host", "alpha"]
                + arguments, environment: ["MDQ_SHARED": url])
    }

    /// A shared index of its own, and a folder `disk` that every user may
    /// list, in a temporary folder every user may search.
    static func sharedIndexAndDisk(_ cluster: PostgresCluster) throws -> (String, TemporaryDirectory, FilePath) {
        let url = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: url))
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let disk = try temp.folder("disk")
        #expect(chmod(disk.string, 0o755) == 0)
        return (url, temp, disk)
    }

    /// Each line of `output` without its host's name (`host`) and the
    /// folder `disk`, sorted.
    static func names(_ output: Shell.Output, in disk: FilePath, host: String = "alpha:") -> [String] {
        output.stdoutText.split(separator: "\n").map { String($0.dropFirst(host.count + disk.string.count + 1)) }
            .sorted()
    }

    @Test func eachUserIsAnsweredWhatIsInsideTheFilesTheyMayRead() throws {
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let disk = try temp.folder("disk")
        #expect(chmod(disk.string, 0o755) == 0)
        let files: [(String, String, mode_t)] = [
            ("open.txt", "the lighthouse keeper", 0o644),
            ("secret.txt", "lighthouse code 4711", 0o600),
            ("closed/inside.txt", "a lighthouse inside", 0o644),
            ("other.txt", "nothing to see", 0o644),
            ("shared.txt", "lighthouse code 4712", 0o600),
        ]
        for (name, text, mode) in files {
            let path = try temp.file("disk/" + name, contents: text)
            #expect(chmod(path.string, mode) == 0)
        }
        #expect(chmod(disk.appending("closed").string, 0o700) == 0)
        // An ACL lets nobody read one root's file.
        let granted = try Shell.run("/usr/bin/setfacl", ["-m", "u:nobody:r", disk.appending("shared.txt").string])
        #expect(granted.status == 0, "\(granted.stderrText)")
        let system = try PrivateSystemIndex(disk.string, in: temp, arguments: ["--content"])
        defer { system.close() }
        #expect(system.waitUntilLive(), "\(system.logText)")
        let query = ["--onlyin", disk.string, "kMDItemTextContent == 'lighthouse'cdw"]
        // Answered by the index (`--daemon`), never by reading the files.
        func answer(_ user: String?, _ arguments: [String] = query) throws -> [String] {
            try system.mdq(["--daemon"] + arguments, as: user, inside: true).stdoutText.split(separator: "\n")
                .map { String($0.dropFirst(disk.string.count + 1)) }.sorted()
        }
        /// The same search as `user`, reading the files (no index).
        func reading(_ user: String, _ arguments: [String] = query) throws -> [String] {
            try system.mdq(["--no-daemon"] + arguments, as: user, inside: true).stdoutText.split(separator: "\n")
                .map { String($0.dropFirst(disk.string.count + 1)) }.sorted()
        }
        // Root: every file that holds the word.
        let everything = ["closed/inside.txt", "open.txt", "secret.txt", "shared.txt"]
        #expect(waitUntil(timeout: 30) { (try? answer(nil)) == everything }, "\(system.logText)")
        #expect(system.logText.contains("content indexing on"), "\(system.logText)")
        // The file is imported again once its text changes.
        try "a lighthouse again".write(toFile: disk.appending("other.txt").string, atomically: false, encoding: .utf8)
        #expect(
            waitUntil(timeout: 30) { (try? answer(nil)) == (everything + ["other.txt"]).sorted() },
            "\((try? answer(nil)) ?? []) \(system.logText)")
        // Another user: what a search reading the files as that user finds;
        // not the secret's words, nothing inside the closed folder.
        #expect(try answer("nobody") == ["open.txt", "other.txt", "shared.txt"])
        for test in ["kMDItemTextContent == 'lighthouse'cdw", "kMDItemTextContent == 'code'cdw"] {
            let arguments = ["--onlyin", disk.string, test]
            #expect(try answer("nobody", arguments) == (try reading("nobody", arguments)), "\(arguments)")
        }
        // Free text (names and text): the secret's words are not there.
        #expect(try answer("nobody", ["--onlyin", disk.string, "4711"]).isEmpty)
        #expect(try answer("nobody", ["--onlyin", disk.string, "4712"]) == ["shared.txt"])
        #expect(try answer(nil, ["--onlyin", disk.string, "4711"]) == ["secret.txt"])
        // The full command asks the system index the same (not a search of
        // names), and counts to a limit.
        for user in ["nobody", nil] as [String?] {
            for words in ["4711", "4712", "lighthouse"] {
                let full = try system.mdq(
                    ["--daemon", "--onlyin", disk.string, words], as: user, inside: true,
                    environment: ["MDQ_NO_FAST_PATH": "1"])
                let paths = full.stdoutText.split(separator: "\n").map { String($0.dropFirst(disk.string.count + 1)) }
                #expect(
                    paths.sorted() == (try answer(user, ["--onlyin", disk.string, words])),
                    "\(user ?? "root"), \(words): \(full.stderrText)")
            }
        }
        let counted = try system.mdq(
            ["--daemon", "--onlyin", disk.string, "--count", "--limit", "1", "lighthouse"], inside: true,
            environment: ["MDQ_NO_FAST_PATH": "1"])
        #expect(counted.stdoutText == "1\n", "\(counted.stdoutText) \(counted.stderrText)")
        let values = try system.mdq(
            ["--daemon", "--onlyin", disk.string, "--attr", "kMDItemTextContent", "kMDItemFSName == '*.txt'"],
            as: "nobody", inside: true)
        #expect(values.stdoutText.contains("4712") && !values.stdoutText.contains("4711"), "\(values.stdoutText)")
        // A chmod or an ACL taken away: the file's insides go with it.
        #expect(chmod(disk.appending("secret.txt").string, 0o644) == 0)
        let revoked = try Shell.run("/usr/bin/setfacl", ["-x", "u:nobody", disk.appending("shared.txt").string])
        #expect(revoked.status == 0, "\(revoked.stderrText)")
        #expect(
            waitUntil(timeout: 30) { (try? answer("nobody")) == ["open.txt", "other.txt", "secret.txt"] },
            "\((try? answer("nobody")) ?? [])")
        // A live query as nobody follows the same rule.
        let live = try system.live(["--live", "--onlyin", disk.string, "kMDItemTextContent == 'lighthouse'cdw"])
        defer { _ = live.interrupt() }
        #expect(live.waitForLine { $0.hasSuffix("/secret.txt") }, "\(live.lines) \(live.errorText)")
        #expect(!live.lines.contains { $0.hasSuffix("/shared.txt") || $0.hasSuffix("inside.txt") }, "\(live.lines)")
        try "lighthouse for everyone".write(
            toFile: disk.appending("closed/new.txt").string, atomically: false, encoding: .utf8)
        #expect(chmod(disk.appending("secret.txt").string, 0o600) == 0)
        #expect(live.waitForLine { $0.hasPrefix("- ") && $0.hasSuffix("/secret.txt") }, "\(live.lines)")
        #expect(!live.lines.contains { $0.hasSuffix("/new.txt") }, "\(live.lines)")

        // Values a live query asks for come only for files the user may
        // read, as files change too.
        let watching = try system.live([
            "--live", "--onlyin", disk.string, "--attr", "kMDItemTextContent", "kMDItemFSName == '*.txt'",
        ])
        defer { _ = watching.interrupt() }
        #expect(watching.waitForLine { $0.contains("/open.txt") }, "\(watching.lines) \(watching.errorText)")
        try "lighthouse code 4713".write(
            toFile: disk.appending("secret.txt").string, atomically: false, encoding: .utf8)
        try "open again 4714".write(toFile: disk.appending("open.txt").string, atomically: false, encoding: .utf8)
        #expect(watching.waitForLine { $0.contains("4714") }, "\(watching.lines) \(watching.errorText)")
        #expect(waitUntil(timeout: 30) { (try? answer(nil, ["--onlyin", disk.string, "4713"])) == ["secret.txt"] })
        #expect(
            !watching.waitForLine(timeout: 2) { $0.contains("4713") || $0.contains("4711") }, "\(watching.lines)")
        #expect(watching.lines.contains { $0.contains("/secret.txt") }, "\(watching.lines)")

        // The daemon itself answers another user only what that user may
        // read, whatever a client asks: a request of the protocol's own,
        // as nobody, for the whole index and the text's values.
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
            while data.count(b'"done"') < 2:
                chunk = s.recv(1 << 16)
                if not chunk: break
                data += chunk
            sys.stdout.write(data.decode("utf-8", "replace"))
            """
        let raw = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script,
                system.runtime + "/daemon.sock", "kMDItemTextContent == 'code'cdw",
            ])
        #expect(
            raw.stdoutText.components(separatedBy: "\"done\"").count == 3 && !raw.stdoutText.contains("secret")
                && !raw.stdoutText.contains("4711") && !raw.stdoutText.contains("shared"),
            "\(raw.stdoutText) \(raw.stderrText)")
        // It keeps CAP_SETUID and CAP_SETGID beside its two, for its
        // workers to give root up.
        let capabilities = try String(contentsOfFile: "/proc/\(system.processIdentifier)/status", encoding: .utf8)
        #expect(capabilities.contains("CapBnd:\t00000000002000c4"), "\(capabilities)")
        // What the daemon says of its imports.
        let status = try system.mdq(["system", "status"], as: nil)
        #expect(status.stdoutText.contains("content"), "\(status.stdoutText)")
    }

    /// A system index that ran without `CONTENT` saved its files without
    /// their ACLs: started with it, it crawls anew rather than judge those
    /// files by their modes alone.
    @Test func aSnapshotWithoutFilesACLsIsNotRestoredWithContent() throws {
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let disk = try temp.folder("disk")
        #expect(chmod(disk.string, 0o755) == 0)
        let denied = try temp.file("disk/denied.txt", contents: "a lighthouse for all but nobody")
        #expect(chmod(denied.string, 0o644) == 0)
        let set = try Shell.run("/usr/bin/setfacl", ["-m", "u:nobody:-", denied.string])
        #expect(set.status == 0, "\(set.stderrText)")
        let plain = try PrivateSystemIndex(disk.string, in: temp)
        #expect(plain.waitUntilLive(), "\(plain.logText)")
        plain.close()
        let snapshot = temp.path.appending("state/index.snapshot").string
        #expect(FileManager.default.fileExists(atPath: snapshot))
        let importing = try PrivateSystemIndex(disk.string, in: temp, arguments: ["--content"])
        defer { importing.close() }
        #expect(importing.waitUntilLive(), "\(importing.logText)")
        #expect(importing.logText.contains("holds no file's ACL"), "\(importing.logText)")
        let query = ["--daemon", "--onlyin", disk.string, "kMDItemTextContent == 'lighthouse'cdw"]
        #expect(
            waitUntil(timeout: 30) {
                (try? importing.mdq(query, as: nil, inside: true).stdoutText) == denied.string + "\n"
            })
        #expect(try importing.mdq(query, as: "nobody", inside: true).stdoutText == "")
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
        let (url, temp, disk) = try Self.sharedIndexAndDisk(cluster)
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

        func remote(_ arguments: [String], as user: String = "nobody") throws -> Shell.Output {
            try Self.searchAlpha(arguments, as: user, url: url)
        }
        func names(_ output: Shell.Output, host: String = "alpha:") -> [String] {
            Self.names(output, in: disk, host: host)
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
        // `mdq hosts` says alpha publishes its files' words.
        let hosts = try Shell.run(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "hosts", "--json"],
            environment: ["MDQ_SHARED": url])
        #expect(
            hosts.stdoutText.contains("\"name\":\"alpha\"") && hosts.stdoutText.contains("\"words\":true"),
            "\(hosts.stdoutText) \(hosts.stderrText)")
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
        // A live search of the words, as nobody, follows the changes below.
        let live = try LiveProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--live", "--host",
                "alpha", query,
            ],
            environment: ["MDQ_SHARED": url])
        defer { _ = live.interrupt() }
        let alphaPath = { (name: String) in "alpha:" + disk.string + "/" + name }
        #expect(live.waitForLine { $0 == alphaPath("open.txt") }, "\(live.lines) \(live.errorText)")

        // This host's part comes from this host, as the user may read it.
        let here = try temp.folder("here")
        #expect(chmod(here.string, 0o755) == 0)
        for (name, text, mode) in [("here.txt", "lighthouse here", 0o644), ("private.txt", "lighthouse", 0o600)] {
            let path = try temp.file("here/" + name, contents: text)
            #expect(chmod(path.string, mode_t(mode)) == 0)
        }
        // This host's system index without CONTENT: the others answered,
        // and the user told this host was not searched; with it, its
        // files the user may read.
        let remoteFiles: [String] = ["granted.txt", "menu.txt", "open.txt"].map { "alpha:" + disk.string + "/" + $0 }
        let environments: [[String: String]] = [[:], ["MDQ_SHARED": url]]
        for content in [false, true] {
            let ownTemp = try TemporaryDirectory()
            #expect(chmod(ownTemp.path.string, 0o755) == 0)
            let ownIndex = try PrivateSystemIndex(
                here.string, in: ownTemp, arguments: ["--search", url] + (content ? ["--content"] : []))
            defer { ownIndex.close() }
            #expect(ownIndex.waitUntilLive(), "\(ownIndex.logText)")
            let expected: [String] = ((content ? [here.string + "/here.txt"] : []) + remoteFiles).sorted()
            for environment in environments {
                var found: [String] = []
                var said = ""
                _ = waitUntil(timeout: 30) {
                    guard let both = try? ownIndex.mdq(["--all-hosts", query], as: "nobody", environment: environment)
                    else { return false }
                    found = both.stdoutText.split(separator: "\n").map(String.init).sorted()
                    said = both.stderrText
                    return found == expected
                }
                #expect(found == expected, "\(content) \(environment): \(found) \(said)")
                #expect(
                    said.contains("(this host) was not searched: its system index does not import") == !content,
                    "\(content) \(environment): \(said)")
            }
        }
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
        for line in ["- " + alphaPath("open.txt"), "+ " + alphaPath("secret.txt"), "- " + alphaPath("menu.txt")] {
            #expect(live.waitForLine { $0 == line }, "\(line): \(live.lines) \(live.errorText)")
        }
        #expect(!live.lines.contains { $0.contains("nobodys.txt") || $0.contains("denied.txt") }, "\(live.lines)")
        #expect(try names(remote([query])) == (try local(query)))
    }

    /// A host that imports what is inside its files publishes the other
    /// attributes its importers read (an HTML page's title; a file's tags
    /// and comment, from its extended attributes): a search across hosts
    /// tests them as the host's own search does, for a user who may read
    /// the file, shows their values as the host shows them (`--attr`,
    /// from the shared index directly or through this host's system
    /// index), and follows their changes live.
    @Test(.enabled(if: PostgresCluster.isInstalled, "needs PostgreSQL 15"))
    func importedAttributesAreSearchedAndShownAcrossHostsAsEachUserMayReadTheFiles() throws {
        let cluster = try #require(PostgresCluster.shared)
        let (url, temp, disk) = try Self.sharedIndexAndDisk(cluster)
        func page(_ title: String) -> String { "<html><head><title>\(title)</title></head><body>text</body></html>" }
        /// Sets an extended attribute (as a file manager sets tags).
        func tag(_ name: String, _ attribute: String, _ value: String) throws {
            let set = try Shell.run(
                "/usr/bin/python3",
                [
                    "-c", "import os, sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode())",
                    disk.appending(name).string, attribute, value,
                ])
            #expect(set.status == 0, "\(name): \(set.stderrText)")
        }
        let files: [(String, String, mode_t)] = [
            ("report.html", page("Quarterly Report"), 0o644),
            ("secret.html", page("Quarterly Secrets"), 0o600),
            ("closed/inside.html", page("Quarterly Inside"), 0o644),
            ("granted.html", page("Quarterly Granted"), 0o600),
            ("notes.txt", "plain words", 0o644),
            ("plain.txt", "nothing", 0o644),
        ]
        for (name, text, mode) in files {
            let path = try temp.file("disk/" + name, contents: text)
            #expect(chmod(path.string, mode) == 0)
        }
        #expect(chmod(disk.appending("closed").string, 0o700) == 0)
        try tag("report.html", "user.xdg.tags", "work, urgent")
        try tag("report.html", "user.xdg.comment", "budget draft")
        try tag("secret.html", "user.xdg.tags", "work")
        try tag("closed/inside.html", "user.xdg.tags", "work")
        try tag("granted.html", "user.xdg.comment", "a budget for nobody")
        try tag("notes.txt", "user.xdg.tags", "home")
        let set = try Shell.run("/usr/bin/setfacl", ["-m", "u:nobody:r", disk.appending("granted.html").string])
        #expect(set.status == 0, "\(set.stderrText)")
        let publishing = ["--content", "--publish", url, "--host-name", "alpha"]
        var alpha = try PrivateSystemIndex(disk.string, in: temp, arguments: publishing)
        defer { alpha.close() }
        #expect(alpha.waitUntilLive(), "\(alpha.logText)")

        func remote(_ arguments: [String], as user: String = "nobody") throws -> Shell.Output {
            try Self.searchAlpha(arguments, as: user, url: url)
        }
        func lines(_ output: Shell.Output, host: String = "alpha:") -> [String] {
            Self.names(output, in: disk, host: host)
        }
        /// The same search on alpha itself, as `user`, reading the files.
        func local(_ arguments: [String], as user: String = "nobody") throws -> [String] {
            lines(try alpha.mdq(["--onlyin", disk.string] + arguments, as: user, inside: true), host: "")
        }
        let title = "kMDItemTitle == '*quarterly*'cd"
        #expect(
            waitUntil(timeout: 30) { (try? lines(remote([title]))) == ["granted.html", "report.html"] },
            "\((try? remote([title]))?.stderrText ?? "") \(alpha.logText)")
        for query in [
            title,
            "kMDItemTitle BEGINSWITH 'Quarterly R'",
            "kMDItemUserTags == 'work'",
            "kMDItemUserTags == 'work' || kMDItemUserTags == 'home'",
            "kMDItemComment == '*budget*'cd && kMDItemFSName == '*.html'",
            "kMDItemTitle == '*quarterly*'cd || kMDItemFSName == 'plain*'",
            "kMDItemUserTags == 'urgent' && kMDItemComment == 'budget draft'",
            // A file without the attribute passes these: not narrowed by it.
            "kMDItemUserTags == nil && kMDItemFSName LIKE '*.txt'",
            "kMDItemUserTags != 'work' && kMDItemFSName LIKE '*.html'",
        ] {
            let across = try remote([query])
            #expect(across.status == 0, "\(query): \(across.stderrText)")
            let here = try local([query])
            #expect(lines(across) == here, "\(query): \(lines(across)) \(here)")
            #expect(!here.isEmpty, "\(query)")
            let counted = try remote(["--count", query])
            #expect(counted.stdoutText == "\(here.count)\n", "\(query): \(counted.stderrText)")
        }
        // root on another host is not root on alpha.
        #expect(try lines(remote([title], as: "root")) == ["report.html"])
        // The values, as alpha shows them, to whoever may read the file.
        let shown = ["--attr", "kMDItemTitle", "--attr", "kMDItemUserTags", "--attr", "kMDItemComment"]
        let query = "kMDItemFSName == '*.html'"
        let values = try remote(shown + [query])
        #expect(values.status == 0, "\(values.stderrText)")
        #expect(lines(values) == (try local(shown + [query])), "\(values.stdoutText)")
        #expect(values.stdoutText.contains("Quarterly Report") && !values.stdoutText.contains("Secrets"))
        // A role of the user's own, which may call the search functions
        // only, asking for every file's attributes by id: those of the
        // files it may list and read, none of a folder closed to it or of
        // a file it may not read.
        try cluster.createRole("nobody")
        try SharedSchema.grant(PostgresConnection(url: url), role: "nobody", access: .search)
        let everything = try PostgresConnection(url: url).execute(
            "SELECT array_agg(entry_id)::text AS ids, min(host_id)::text AS host FROM mdq.content")
        let asNobody = try PostgresConnection(url: cluster.url(url, user: "nobody"))
        let told = try asNobody.execute(
            """
            SELECT string_agg(a.attrs ->> 'kMDItemTitle', ',' ORDER BY a.attrs ->> 'kMDItemTitle') AS titles,
                   count(*) AS n
            FROM mdq.attributes($1::smallint, $2::bigint[], 'root') a
            """, [everything.first("host"), everything.first("ids")])
        #expect(told.first("titles") == "Quarterly Granted,Quarterly Report", "\(told.rows)")
        #expect(told.first("n") == "3", "\(told.rows)")
        // A test that a file without the attribute passes narrows nothing.
        let negated = try remote(["kMDItemTitle != 'x'"])
        #expect(negated.status != 0 && negated.stderrText.contains("cannot narrow"), "\(negated.stderrText)")
        #expect(try remote(["--limit", "100", "kMDItemTitle != 'Quarterly Report'"]).status == 0)
        // A host whose rows do not hold its attributes yet (an older
        // publisher, or its first publish of them): said.
        let owner = try PostgresConnection(url: url)
        _ = try owner.execute("UPDATE mdq.host SET row_version = 11 WHERE name = 'alpha'")
        let unready = try remote([title])
        #expect(
            unready.stderrText.contains("alpha has not published what its importers read yet"), "\(unready.stderrText)")
        #expect(!(try remote([query])).stderrText.contains("has not published"))
        _ = try owner.execute("UPDATE mdq.host SET row_version = 12 WHERE name = 'alpha'")

        // Through this host's system index (no credential of the user's),
        // and with one: the same lines.
        let ownTemp = try TemporaryDirectory()
        #expect(chmod(ownTemp.path.string, 0o755) == 0)
        let here = try temp.folder("here")
        #expect(chmod(here.string, 0o755) == 0)
        let mine = try temp.file("here/mine.txt", contents: "mine")
        #expect(chmod(mine.string, 0o644) == 0)
        let tagged = try Shell.run(
            "/usr/bin/python3",
            ["-c", "import os, sys; os.setxattr(sys.argv[1], 'user.xdg.tags', b'work')", mine.string])
        #expect(tagged.status == 0, "\(tagged.stderrText)")
        let ownIndex = try PrivateSystemIndex(here.string, in: ownTemp, arguments: ["--search", url, "--content"])
        defer { ownIndex.close() }
        #expect(ownIndex.waitUntilLive(), "\(ownIndex.logText)")
        // This host's part, from its system index, with its values too.
        for environment in [[:], ["MDQ_SHARED": url]] {
            var said = ""
            #expect(
                waitUntil(timeout: 30) {
                    guard
                        let output = try? ownIndex.mdq(
                            ["--all-hosts", "--attr", "kMDItemUserTags", "kMDItemUserTags == 'work'"],
                            environment: environment)
                    else { return false }
                    said = output.stdoutText + output.stderrText
                    return output.stdoutText.split(separator: "\n").contains {
                        $0.hasPrefix(mine.string) && $0.contains("work")
                    }
                }, "\(environment): \(said)")
        }
        for environment in [[:], ["MDQ_SHARED": url]] {
            var found: [String] = []
            _ = waitUntil(timeout: 30) {
                guard let output = try? ownIndex.mdq(["--host", "alpha"] + shown + [query], environment: environment)
                else { return false }
                found = lines(output)
                return found == (try? lines(values))
            }
            #expect(found == (try lines(values)), "\(environment): \(found)")
        }

        // A live search follows the attributes as they change.
        let live = try LiveProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--live", "--host",
                "alpha", "kMDItemUserTags == 'work'",
            ],
            environment: ["MDQ_SHARED": url])
        defer { _ = live.interrupt() }
        // And one that shows the tags with each line.
        let showing = try LiveProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--live", "--host",
                "alpha", "--attr", "kMDItemUserTags", "kMDItemUserTags == 'work'",
            ],
            environment: ["MDQ_SHARED": url])
        defer { _ = showing.interrupt() }
        // The same, followed by this host's system index for the user.
        let followed = try ownIndex.live([
            "--live", "--host", "alpha", "--attr", "kMDItemUserTags", "kMDItemUserTags == 'work'",
        ])
        defer { _ = followed.interrupt() }
        let alphaPath = { (name: String) in "alpha:" + disk.string + "/" + name }
        // Every host, each with the values shown, a column the predicate
        // does not test too.
        let everywhere = try ownIndex.live([
            "--live", "--all-hosts", "--attr", "kMDItemUserTags", "--attr", "kMDItemComment",
            "kMDItemUserTags == 'work'",
        ])
        defer { _ = everywhere.interrupt() }
        #expect(
            everywhere.waitForLine { $0.hasPrefix(mine.string) }, "\(everywhere.lines) \(everywhere.errorText)")
        #expect(
            everywhere.waitForLine { $0.hasPrefix(alphaPath("report.html")) && $0.contains("budget draft") },
            "\(everywhere.lines) \(everywhere.errorText)")
        #expect(live.waitForLine { $0 == alphaPath("report.html") }, "\(live.lines) \(live.errorText)")
        for process in [showing, followed] {
            #expect(
                process.waitForLine { $0.hasPrefix(alphaPath("report.html")) && $0.contains("urgent") },
                "\(process.lines) \(process.errorText)")
        }
        try tag("notes.txt", "user.xdg.tags", "home,work")
        try tag("report.html", "user.xdg.tags", "done")
        for line in ["+ " + alphaPath("notes.txt"), "- " + alphaPath("report.html")] {
            #expect(live.waitForLine { $0 == line }, "\(line): \(live.lines) \(live.errorText)")
        }
        for process in [showing, followed] {
            #expect(
                process.waitForLine { $0.hasPrefix("+ " + alphaPath("notes.txt")) && $0.contains("home") },
                "\(process.lines) \(process.errorText)")
        }
        #expect(try lines(remote(["kMDItemUserTags == 'work'"])) == (try local(["kMDItemUserTags == 'work'"])))

        // Restarted, its publisher goes on from its clock; after an older
        // publisher published it (an mdq downgraded, then upgraded), which
        // left its files' attributes stale, it publishes it whole, once.
        func generation() throws -> String? {
            try owner.execute("SELECT generation FROM mdq.host WHERE name = 'alpha'").first("generation")
        }
        let before = try generation()
        alpha.close()
        alpha = try PrivateSystemIndex(disk.string, in: temp, arguments: publishing)
        #expect(alpha.waitUntilLive(), "\(alpha.logText)")
        try tag("plain.txt", "user.xdg.tags", "work")
        #expect(
            waitUntil(timeout: 30) {
                (try? lines(remote(["kMDItemUserTags == 'work'"])))?.contains("plain.txt") == true
            })
        #expect(try generation() == before)
        alpha.close()
        _ = try owner.execute("UPDATE mdq.host SET publisher_version = 'mdq schema 11' WHERE name = 'alpha'")
        alpha = try PrivateSystemIndex(disk.string, in: temp, arguments: publishing)
        #expect(alpha.waitUntilLive(), "\(alpha.logText)")
        #expect(
            waitUntil(timeout: 60) {
                (try? generation()).flatMap { $0 }.flatMap(Int.init) == before.flatMap(Int.init).map { $0 + 1 }
            },
            "\(String(describing: try? generation())) \(String(describing: before))")
        #expect(try lines(remote(["kMDItemUserTags == 'work'"])) == (try local(["kMDItemUserTags == 'work'"])))
    }
}
