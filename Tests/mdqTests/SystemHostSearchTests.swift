import Foundation
import Glibc
import MDQShared
import MDQWire
import SystemPackage
import TestSupport
import Testing

@testable import MDQDaemon
@testable import MDQSystem

/// `mdq --host NAME` and `--all-hosts` answered by the system index
/// (`mdq system run --search URL`): over a connection it keeps, judged for
/// the user asking by name, with what the full command prints byte for
/// byte; users need no credential of their own. Anything it would not
/// answer whole goes to the full command, which says why.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: PostgresCluster.isInstalled && getuid() == 0
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
        "needs PostgreSQL 15 and root (a system index in a mount namespace, a search as nobody)"))
struct SystemHostSearchTests {
    /// Another host, published as `alpha`: reports anyone may list, and
    /// one in a folder only nobody may (root on one host is not root on
    /// another: it gets what others get). This host: a system index of its
    /// own over `local`, which searches the shared index for its users and
    /// publishes nothing.
    struct Hosts {
        let url: String
        let remote: String
        let alpha: PublishedFolder
        let local: String
        var system: PrivateSystemIndex

        init(_ temp: TemporaryDirectory) throws {
            let cluster = try #require(PostgresCluster.shared)
            url = cluster.url(try cluster.createDatabase())
            try SharedSchema.migrate(PostgresConnection(url: url))
            #expect(chmod(temp.path.string, 0o755) == 0)
            remote = try temp.folder("remote").string
            for name in ["report-a.txt", "report-b.txt", "photo.png"] {
                FileManager.default.createFile(atPath: remote + "/" + name, contents: Data())
            }
            mkdir(remote + "/private", 0o700)
            FileManager.default.createFile(atPath: remote + "/private/report-secret.txt", contents: Data())
            #expect(chown(remote + "/private", 65534, 65534) == 0)
            alpha = try PublishedFolder(remote, url: url)
            let reader = try SharedReader(connection: PostgresConnection(url: url))
            let url = url
            #expect(waitUntil(timeout: 20) { (try? reader.hosts().first?.entries) == 5 }, "\(url)")
            local = try temp.folder("local").string
            FileManager.default.createFile(atPath: local + "/report-here.txt", contents: Data())
            system = try PrivateSystemIndex(local, in: temp, arguments: ["--search", url])
            #expect(system.waitUntilLive(), "\(system.logText)")
        }

        func close() {
            system.close()
            alpha.close()
        }
    }

    @Test func theSystemIndexAnswersSearchesAcrossHostsForItsUsers() throws {
        let temp = try TemporaryDirectory()
        let fixture = try Hosts(temp)
        defer { fixture.close() }
        let (url, remote, alpha, local, system) = (
            fixture.url, fixture.remote, fixture.alpha, fixture.local, fixture.system
        )
        let (runtime, state, paths) = (system.runtime, system.state, system.paths)
        // The host name both the command and the system index call this
        // host (no HOST_NAME: the host name).
        let here = try #require(ProcessEnvironment.shortHostName)

        /// `mdq ARGUMENTS` as `user`: by the system index (no database URL
        /// given: only it can answer), and by the full command (the URL
        /// given, the fast path off).
        func both(_ arguments: [String], as user: String? = nil) throws -> (fast: Shell.Output, full: Shell.Output) {
            func run(_ environment: [String: String]) throws -> Shell.Output {
                var environment = environment
                environment["MDQ_SYSTEM_RUNTIME_DIR"] = runtime
                environment["MDQ_SYSTEM_STATE_DIR"] = state
                guard let user else {
                    return try Shell.run(MDQCommandTests.binary, arguments, environment: environment)
                }
                return try Shell.run(
                    "/usr/bin/setpriv",
                    ["--reuid=\(user)", "--regid=65534", "--clear-groups", MDQCommandTests.binary] + arguments,
                    environment: environment)
            }
            return (try run([:]), try run(["MDQ_SHARED": url, "MDQ_NO_FAST_PATH": "1"]))
        }
        func expectSame(_ arguments: [String], as user: String? = nil, _ expected: String) throws {
            let (fast, full) = try both(arguments, as: user)
            #expect(fast.status == 0, "\(arguments): \(fast.stderrText)")
            #expect(fast.stdoutText == expected, "\(arguments)")
            #expect(full.stdoutText == fast.stdoutText, "\(arguments)")
            #expect(full.stderrText == fast.stderrText, "\(arguments)")
        }
        let all = ["\(local)/report-here.txt", "alpha:\(remote)/report-a.txt", "alpha:\(remote)/report-b.txt"]
        try expectSame(["--all-hosts", "report"], all.map { $0 + "\n" }.joined())
        try expectSame(["--all-hosts", "--count", "report"], "3\n")
        try expectSame(["--host", "alpha", "-0", "report-a"], "alpha:\(remote)/report-a.txt\0")
        try expectSame(["--host", "alpha,\(here)", "--limit", "1", "report"], "\(local)/report-here.txt\n")
        try expectSame(["--host", "alpha", "--count", "--limit", "2", "report"], "2\n")
        try expectSame(["--all-hosts", "--name", "photo"], "alpha:\(remote)/photo.png\n")
        // A folder of this host, as its own index keeps it (on its own
        // filesystem), alone and with one of another host. (The full
        // command asks this index for its folder by a descriptor opened
        // here, which the index, in a mount namespace of its own, does not
        // take for its folder: the system index's answer alone.)
        for (arguments, expected) in [
            (["--onlyin", "\(here):\(local)", "report"], "\(local)/report-here.txt\n"),
            (["--onlyin", "\(here):\(local)", "--onlyin", "alpha:\(remote)", "--count", "report"], "4\n"),
        ] {
            let fast = try both(arguments, as: "nobody").fast
            #expect(fast.status == 0 && fast.stdoutText == expected, "\(arguments): \(fast.stderrText)")
        }
        // Every output option, for a user with no credential of their
        // own: the full command asks the system index for the results with
        // their attributes and prints them itself.
        for arguments in [
            ["--all-hosts", "--json", "report"], ["--all-hosts", "--attr", "kMDItemFSSize", "report"],
            ["--all-hosts", "--sort", "kMDItemFSName:desc", "--limit", "2", "report"],
            ["--host", "alpha", "--group", "kMDItemContentType", "report"],
            ["--onlyin", "alpha:\(remote)", "--attr", "kMDItemDisplayName", "report"],
        ] {
            let (fast, full) = try both(arguments, as: "nobody")
            #expect(fast.status == 0 && !fast.stdoutText.isEmpty, "\(arguments): \(fast.stderrText)")
            #expect(fast.stdoutText == full.stdoutText, "\(arguments)")
            #expect(fast.stderrText == full.stderrText, "\(arguments)")
        }
        // Sorted by a size or a date with a limit (each host gives its
        // first in that order): the first lines of the whole sorted answer.
        for sort in ["kMDItemFSSize:desc", "kMDItemFSContentChangeDate", "kMDItemFSCreationDate:desc"] {
            let (whole, _) = try both(["--all-hosts", "--sort", sort, "report"], as: "nobody")
            let lines = whole.stdoutText.split(separator: "\n").map { $0 + "\n" }
            #expect(lines.count >= 3, "\(sort): \(whole.stderrText)")
            for limit in [1, 2] {
                let (fast, full) = try both(
                    ["--all-hosts", "--sort", sort, "--limit", "\(limit)", "report"], as: "nobody")
                let expected = lines.prefix(limit).joined()
                #expect(
                    fast.stdoutText == expected && full.stdoutText == expected,
                    "\(sort) --limit \(limit): \(fast.stdoutText) \(full.stdoutText) of \(whole.stdoutText)")
            }
        }
        // Refused as the command refuses it, status and caret.
        let (refusedFast, refusedFull) = try both(["--all-hosts", "--json", "TRUEPREDICATE"], as: "nobody")
        #expect(refusedFast.status == refusedFull.status && refusedFast.status != 0, "\(refusedFast.stderrText)")
        #expect(refusedFast.stderrText == refusedFull.stderrText, "\(refusedFast.stderrText)")
        // A host the shared index does not know is the user's mistake on
        // either path: the same words, and the status of a wrong option.
        for arguments in [["--host", "nosuch", "report"], ["--host", "nosuch", "--json", "report"]] {
            let (fast, full) = try both(arguments, as: "nobody")
            #expect(fast.status == 2 && full.status == 2, "\(arguments): \(fast.stderrText) / \(full.stderrText)")
            #expect(fast.stderrText == full.stderrText, "\(arguments)")
            #expect(fast.stderrText.contains("no host nosuch in the shared index"), "\(fast.stderrText)")
        }
        // A database URL of the user's own whose credential does not let
        // them in: said, not passed over for the system index's answer.
        let badURL = url.replacingOccurrences(of: "&user=postgres", with: "&user=nosuchrole")
        let (withCredential, _) = try both(["--all-hosts", "--json", "report"], as: "nobody")
        let unusable = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--all-hosts", "--json",
                "report",
            ],
            environment: ["MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SYSTEM_STATE_DIR": state, "MDQ_SHARED": badURL])
        #expect(unusable.status == 1, "\(unusable.stderrText)")
        #expect(unusable.stdoutText.isEmpty, "\(unusable.stdoutText)")
        #expect(
            unusable.stderrText.contains("cannot connect to the shared index")
                && unusable.stderrText.contains("nosuchrole"), "\(unusable.stderrText)")
        #expect(withCredential.status == 0, "\(withCredential.stderrText)")
        // This host alone: its index answers, and no connection searches.
        try expectSame(["--host", here, "report"], "\(local)/report-here.txt\n")
        try expectSame(["--host", here, "--count", "report"], "1\n")
        // A folder of it (the full command's: the system index answers
        // whole hosts).
        let ownFolder = try Shell.run(
            MDQCommandTests.binary, ["--onlyin", "\(here):\(local)", "--count", "report"],
            environment: ["MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SYSTEM_STATE_DIR": state, "MDQ_SHARED": url])
        #expect(ownFolder.stdoutText == "1\n", "\(ownFolder.stderrText)")
        // A folder of one host, another whole: both searched, as live
        // (as nobody, whom alone the folder lets list).
        for arguments in [
            ["--host", here, "--onlyin", "alpha:\(remote)/private", "report"],
            ["--all-hosts", "--onlyin", "alpha:\(remote)/private", "report"],
        ] {
            let mixed = try Shell.run(
                "/usr/bin/setpriv",
                ["--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary] + arguments,
                environment: ["MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SYSTEM_STATE_DIR": state, "MDQ_SHARED": url])
            #expect(
                mixed.stdoutText == "\(local)/report-here.txt\nalpha:\(remote)/private/report-secret.txt\n",
                "\(arguments): \(mixed.stdoutText)\(mixed.stderrText)")
        }
        // Judged for the user asking: nobody may list its folder.
        let nobodys = [all[0], "alpha:\(remote)/private/report-secret.txt", all[1], all[2]]
        try expectSame(["--all-hosts", "report"], as: "nobody", nobodys.map { $0 + "\n" }.joined())
        try expectSame(["--all-hosts", "--count", "report"], as: "nobody", "4\n")

        // What the system index does not answer is the full command's, which
        // says why: a host the shared index does not know.
        let unknown = try Shell.run(
            MDQCommandTests.binary, ["--host", "nowhere", "report"],
            environment: ["MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SHARED": url])
        #expect(unknown.status != 0)
        #expect(unknown.stderrText.contains("no host nowhere in the shared index"), "\(unknown.stderrText)")
        // Asked straight, the system index refuses it with the reason.
        let client = try DaemonClient.connectSystem(paths)
        #expect {
            _ = try client.searchAcrossHosts(Array("report".utf8), hosts: ["nowhere"])
        } throws: { error in
            (error as? MetadataError)?.message.contains("no host nowhere") == true
        }
        // A search the shared index cannot narrow is refused unless the
        // user bounds it, whatever bounds the system index keeps itself.
        #expect {
            _ = try client.searchAcrossHosts(Array("TRUEPREDICATE".utf8), hosts: nil, counting: true)
        } throws: { error in
            (error as? MetadataError)?.message.contains("cannot narrow") == true
        }
        let unnarrowed = try Shell.run(
            MDQCommandTests.binary, ["--all-hosts", "--count", "TRUEPREDICATE"],
            environment: ["MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SHARED": url])
        #expect(unnarrowed.status != 0 && unnarrowed.stderrText.contains("cannot narrow"), "\(unnarrowed.stderrText)")
        #expect(try client.searchAcrossHosts(Array("TRUEPREDICATE".utf8), hosts: ["alpha"], limit: 2).count == 2)
        // A host named twice is searched once.
        #expect(
            try client.searchAcrossHosts(Array("report".utf8), hosts: ["alpha", "alpha"], counting: true).count == 2)
        let answer = try client.searchAcrossHosts(Array("report".utf8), hosts: ["alpha"], limit: 1)
        #expect(answer.count == 1 && answer.lines.count == 1)
        #expect(answer.lines.allSatisfy { String(decoding: $0, as: UTF8.self).hasPrefix("alpha:\(remote)/report-") })
        // `mdq hosts` with no credential of the user's: the system index
        // lists them, as the full command does with the database's URL.
        func listed(_ output: Shell.Output) -> [String] {
            output.stdoutText.split(separator: "\n").compactMap { line in
                guard let host = try? JSONValue.parse(Array(line.utf8)) else { return nil }
                return [host["name"]?.string, host["state"]?.string, host["entries"]?.integer.map { "\($0)" }]
                    .map { $0 ?? "?" }.joined(separator: " ")
            }
        }
        let (hosts, hostsFull) = try both(["hosts", "--json"], as: "nobody")
        #expect(hosts.status == 0, "\(hosts.stderrText)")
        #expect(listed(hosts) == ["alpha live 5"], "\(hosts.stdoutText)")
        #expect(listed(hostsFull) == listed(hosts), "\(hostsFull.stdoutText)\(hostsFull.stderrText)")
        let table = try both(["hosts"], as: "nobody").fast
        #expect(
            table.stdoutText.hasPrefix("HOST   STATE         ENTRIES     LAG       WORDS  LAST CONTACT\n"),
            "\(table.stdoutText)")
        #expect(table.stdoutText.contains("alpha  live          5           0 s       no     "), "\(table.stdoutText)")
        // Live, this host's results print as its paths, as above.
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--interval", "0.05", "--all-hosts", "report"],
            environment: ["MDQ_SYSTEM_RUNTIME_DIR": runtime, "MDQ_SYSTEM_STATE_DIR": state, "MDQ_SHARED": url])
        #expect(live.waitForLine { $0 == "\(local)/report-here.txt" }, "\(live.lines)\(live.errorText)")
        #expect(live.waitForLine { $0 == "alpha:\(remote)/report-a.txt" }, "\(live.lines)")
        _ = live.interrupt()
        // A host that stops publishing is said to be offline, on stderr,
        // by both.
        alpha.publisher.stop()
        _ = try PostgresConnection(url: url).execute(
            "UPDATE mdq.host SET state = 'offline', last_contact = now() - interval '2 minutes'")
        let (fast, full) = try both(["--host", "alpha", "report-a"])
        #expect(fast.stdoutText == "alpha:\(remote)/report-a.txt\n", "\(fast.stderrText)")
        #expect(fast.stderrText.contains("alpha is offline since"), "\(fast.stderrText)")
        #expect(full.stderrText == fast.stderrText)
    }

    /// The system index searches for its users only through a role that
    /// may search for others (`--trusted`): one that may search only as
    /// itself would show every user what that role may see (a user's
    /// private folder to all). It is refused, said at the start and to each
    /// user; a role with no grant at all is named with what grants it, not
    /// with the server's SQL.
    @Test func aSearchRoleThatMaySearchOnlyAsItselfIsNotUsedForEveryone() throws {
        let temp = try TemporaryDirectory()
        var hosts = try Hosts(temp)
        defer { hosts.close() }
        let cluster = try #require(PostgresCluster.shared)
        // Named as the user whose private folder it is: judged as itself,
        // it would show that folder to everyone.
        try cluster.createRole("nobody")
        try cluster.createRole("mdq_ungranted")
        try SharedSchema.grant(PostgresConnection(url: hosts.url), role: "nobody", access: .search)
        hosts.system.close()
        hosts.system = try PrivateSystemIndex(
            hosts.local, in: temp, arguments: ["--search", cluster.url(hosts.url, user: "nobody")])
        #expect(hosts.system.waitUntilLive(), "\(hosts.system.logText)")
        let system = hosts.system
        #expect(
            waitUntil(timeout: 20) { system.logText.contains("may search only as itself") }, "\(system.logText)")
        for arguments in [
            ["--host", "alpha", "report"], ["--all-hosts", "--json", "report"], ["--count", "--all-hosts", "report"],
        ] {
            let run = try system.mdq(arguments, as: "daemon")
            #expect(run.status == 1, "\(arguments): \(run.status) \(run.stdoutText) \(run.stderrText)")
            #expect(!run.stdoutText.contains("report-secret"), "\(arguments): \(run.stdoutText)")
            #expect(
                run.stderrText.contains("role nobody may search only as itself")
                    && run.stderrText.contains("mdq shared grant --trusted URL nobody"),
                "\(arguments): \(run.stderrText)")
        }
        // Live: the same said, and nothing of the private folder shown.
        let live = try LiveProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=daemon", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--live", "--host",
                "alpha",
                "report",
            ], environment: system.environment)
        defer { _ = live.interrupt() }
        #expect(live.waitUntil { live.errorText.contains("may search only as itself") }, "\(live.errorText)")
        #expect(!live.lines.contains { $0.contains("report-secret") }, "\(live.lines)")

        // Trusted, then taken back while the system index keeps its
        // connections: the next search is refused, not judged as the role.
        _ = live.interrupt()
        try SharedSchema.grant(PostgresConnection(url: hosts.url), role: "nobody", access: .trusted)
        func search() throws -> Shell.Output { try system.mdq(["--host", "alpha", "report"], as: "daemon") }
        let trusted = try search()
        #expect(trusted.status == 0, "\(trusted.stderrText)")
        #expect(trusted.stdoutText.contains("report-a.txt") && !trusted.stdoutText.contains("report-secret"))
        try SharedSchema.revoke(PostgresConnection(url: hosts.url), role: "nobody")
        try SharedSchema.grant(PostgresConnection(url: hosts.url), role: "nobody", access: .search)
        let downgraded = try search()
        #expect(downgraded.status == 1, "\(downgraded.stdoutText)")
        #expect(!downgraded.stdoutText.contains("report-secret"), "\(downgraded.stdoutText)")
        #expect(downgraded.stderrText.contains("role nobody may search only as itself"), "\(downgraded.stderrText)")
        // Trusted again (a connection kept), then taken back whole: said
        // what grants it, not the server's SQL.
        try SharedSchema.grant(PostgresConnection(url: hosts.url), role: "nobody", access: .trusted)
        #expect(try search().status == 0)
        try SharedSchema.revoke(PostgresConnection(url: hosts.url), role: "nobody")
        // Asked of the system index itself, over the connection it keeps
        // (the command asks again by its full path on a failure).
        let kept = #expect(throws: MetadataError.self) {
            try DaemonClient.connectSystem(system.paths).searchAcrossHosts(Array("report".utf8), hosts: ["alpha"])
        }
        #expect(
            kept?.message.contains("role nobody may not search the shared index") == true
                && kept?.message.contains("LINE") == false, "\(kept?.message ?? "")")
        let revoked = try search()
        #expect(revoked.status == 1, "\(revoked.stdoutText)")
        #expect(
            revoked.stderrText.contains(
                "role nobody may not search the shared index: its administrator grants it with "
                    + "'mdq shared grant --trusted URL nobody'") && !revoked.stderrText.contains("LINE"),
            "\(revoked.stderrText)")

        // A role the server turns away: users are told plainly (libpq's
        // words may name root's files and role), the log says why.
        hosts.system.close()
        hosts.system = try PrivateSystemIndex(
            hosts.local, in: temp, arguments: ["--search", cluster.url(hosts.url, user: "mdq_absent_role")])
        #expect(hosts.system.waitUntilLive(), "\(hosts.system.logText)")
        let turnedAway = try hosts.system.mdq(["--host", "alpha", "report"], as: "daemon")
        #expect(turnedAway.status == 1, "\(turnedAway.stdoutText)")
        #expect(
            turnedAway.stderrText.contains("the system index cannot connect to the shared index (its log says why)")
                && !turnedAway.stderrText.contains("mdq_absent_role"), "\(turnedAway.stderrText)")
        let log = hosts.system
        #expect(waitUntil(timeout: 10) { log.logText.contains("mdq_absent_role") }, "\(log.logText)")

        // A credential of a role granted nothing.
        let ungranted = try Shell.run(
            MDQCommandTests.binary + "-full", ["--host", "alpha", "report"],
            environment: ["MDQ_SHARED": cluster.url(hosts.url, user: "mdq_ungranted")])
        #expect(ungranted.status == 1, "\(ungranted.stderrText)")
        #expect(
            ungranted.stderrText.contains("role mdq_ungranted may not search the shared index")
                && ungranted.stderrText.contains("mdq shared grant URL mdq_ungranted")
                && !ungranted.stderrText.contains("LINE"),
            "\(ungranted.stderrText)")
    }

    /// A credential of the user's own (`$MDQ_SHARED`) is what every form
    /// of a search across hosts uses: one that does not let them in, or
    /// names another shared index, is said, never passed over for the
    /// system index's (the user would not learn it, and a listing and its
    /// `--json` could come from two databases); a blank one names none.
    @Test func aUsersOwnCredentialIsUsedOrSaidNeverPassedOver() throws {
        let temp = try TemporaryDirectory()
        let hosts = try Hosts(temp)
        defer { hosts.close() }
        let cluster = try #require(PostgresCluster.shared)
        let empty = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: empty))
        func run(_ arguments: [String], shared: String) throws -> Shell.Output {
            try hosts.system.mdq(arguments, environment: ["MDQ_SHARED": shared])
        }
        // A login the server turns away.
        let refused = cluster.url(hosts.url, user: "mdq_no_such_login")
        for arguments in [
            ["--host", "alpha", "report"], ["--host", "alpha", "--json", "report"],
            ["--count", "--all-hosts", "report"],
        ] {
            let turnedAway = try run(arguments, shared: refused)
            #expect(turnedAway.status == 1, "\(arguments): \(turnedAway.stdoutText)")
            #expect(turnedAway.stdoutText.isEmpty, "\(arguments): \(turnedAway.stdoutText)")
            #expect(
                turnedAway.stderrText.contains("cannot connect to the shared index")
                    && turnedAway.stderrText.contains("mdq_no_such_login"), "\(arguments): \(turnedAway.stderrText)")
            // The other shared index knows no host: alpha is unknown, and
            // every host is this one alone.
            let other = try run(arguments, shared: empty)
            if arguments.contains("alpha") {
                #expect(other.status != 0, "\(arguments): \(other.stdoutText)")
                #expect(other.stdoutText.isEmpty, "\(arguments): \(other.stdoutText)")
                #expect(
                    other.stderrText.contains("no host alpha in the shared index"), "\(arguments): \(other.stderrText)")
            } else {
                #expect(other.stdoutText == "1\n", "\(arguments): \(other.stdoutText) \(other.stderrText)")
            }
        }
        // A database that does not answer: of every host, this one's part,
        // said so; another host alone fails with why.
        let broken = "postgresql:///nowhere?host=/nonexistent-folder&user=nobody&connect_timeout=2"
        let here = try #require(ProcessEnvironment.shortHostName)
        let away = try run(["--count", "--all-hosts", "report"], shared: broken)
        #expect(away.status == 0 && away.stdoutText == "1\n", "\(away.stdoutText) \(away.stderrText)")
        // One line: what was searched, then why (libpq's hint on it).
        #expect(
            away.stderrText.hasPrefix("mdq: warning: only \(here) was searched: cannot connect to the shared index")
                && away.stderrText.split(separator: "\n").count == 1, "\(away.stderrText)")
        let awayAlpha = try run(["--host", "alpha", "report"], shared: broken)
        #expect(awayAlpha.status == 1 && awayAlpha.stdoutText.isEmpty, "\(awayAlpha.stdoutText)")
        #expect(awayAlpha.stderrText.contains("cannot connect to the shared index"), "\(awayAlpha.stderrText)")
        let blank = try run(["--host", "alpha", "report"], shared: "   ")
        #expect(blank.status == 0, "\(blank.stderrText)")
        #expect(blank.stdoutText.contains("alpha:\(hosts.remote)/report-a.txt"), "\(blank.stdoutText)")
    }

    /// The shared index away: a search of this host alone is its index's
    /// and is answered; a live search of every host shows this host's
    /// results and says the shared index is away, and goes on. Sessions
    /// the server ended (stopped, restarted) are not the next search's
    /// failure: the system index connects again.
    @Test func theSharedIndexAwayLeavesThisHostsAnswers() throws {
        let temp = try TemporaryDirectory()
        var hosts = try Hosts(temp)
        defer { hosts.close() }
        let here = try #require(ProcessEnvironment.shortHostName)
        func run(_ arguments: [String]) throws -> Shell.Output { try hosts.system.mdq(arguments) }
        let first = try run(["--host", "alpha", "report"])
        #expect(first.stdoutText.contains("alpha:\(hosts.remote)/report-a.txt"), "\(first.stderrText)")
        // Every other session of the database ended, as a restart ends them.
        let admin = try PostgresConnection(url: hosts.url)
        _ = try admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                + "AND pid <> pg_backend_pid()")
        // Asked of the system index itself (the command would ask again
        // by its full path on a failure): its kept connection is gone,
        // and it connects anew rather than fail the search.
        let again = try DaemonClient.connectSystem(hosts.system.paths).searchAcrossHosts(
            Array("report".utf8), hosts: ["alpha"])
        #expect(
            again.lines.contains(Array("alpha:\(hosts.remote)/report-a.txt".utf8)),
            "\(again.lines.map { String(decoding: $0, as: UTF8.self) })")

        // A shared index that cannot be reached.
        hosts.system.close()
        hosts.system = try PrivateSystemIndex(
            hosts.local, in: temp,
            arguments: ["--search", "postgresql:///nowhere?host=/nonexistent-folder&user=postgres&connect_timeout=2"])
        #expect(hosts.system.waitUntilLive(), "\(hosts.system.logText)")
        // With no credential, and with one of the user's own that cannot
        // reach the database either.
        let away = "postgresql:///nowhere?host=/nonexistent-folder&user=nobody&connect_timeout=2"
        for environment in [[:], ["MDQ_SHARED": away]] {
            for arguments in [["--host", here, "report"], ["--host", here, "--count", "report"]] {
                let own = try hosts.system.mdq(arguments, environment: environment)
                #expect(own.status == 0, "\(arguments) \(environment): \(own.stderrText)")
                #expect(
                    own.stdoutText == (arguments.contains("--count") ? "1\n" : "\(hosts.local)/report-here.txt\n"),
                    "\(arguments) \(environment): \(own.stdoutText)")
            }
            // Every host: this one's part, the others said not searched;
            // another host alone: the database's trouble.
            let every = try hosts.system.mdq(["--all-hosts", "report"], environment: environment)
            #expect(every.status == 0, "\(environment): \(every.stderrText)")
            #expect(every.stdoutText == "\(hosts.local)/report-here.txt\n", "\(environment): \(every.stdoutText)")
            #expect(
                every.stderrText.contains("cannot connect to the shared index")
                    && every.stderrText.contains("only \(here) was searched"), "\(environment): \(every.stderrText)")
            let other = try hosts.system.mdq(["--host", "alpha", "report"], environment: environment)
            #expect(other.status == 1, "\(environment): \(other.stdoutText)")
            #expect(
                other.stderrText.contains("cannot connect to the shared index"), "\(environment): \(other.stderrText)")
            // In the system index's mount namespace, where its folder is
            // the mount it indexes (as this host's users see it).
            let live = try hosts.system.live(["--live", "--all-hosts", "report"], environment: environment)
            #expect(
                live.waitForLine { $0 == "\(hosts.local)/report-here.txt" },
                "\(environment): \(live.lines)\(live.errorText)")
            #expect(
                live.waitForErrors { $0.contains("cannot connect to the shared index") },
                "\(environment): \(live.errorText)")
            #expect(live.interrupt() == 0, "\(environment): \(live.errorText)")
        }
    }

    /// Folders of hosts past the 16 a local search takes are searched,
    /// by the system index as with a credential, up to the 64 the shared
    /// index checks; past those the search is refused with the bound.
    @Test func manyFoldersOfHostsAreSearchedUpToTheBound() throws {
        let temp = try TemporaryDirectory()
        let hosts = try Hosts(temp)
        defer { hosts.close() }
        func run(_ arguments: [String], credential: Bool) throws -> Shell.Output {
            try hosts.system.mdq(arguments, environment: credential ? ["MDQ_SHARED": hosts.url] : [:])
        }
        func folders(_ count: Int) -> [String] {
            (0..<count).flatMap { i in ["--onlyin", "alpha:" + hosts.remote + (i % 2 == 0 ? "" : "/private")] }
        }
        for credential in [false, true] {
            let seventeen = try run(folders(17) + ["--count", "report"], credential: credential)
            #expect(seventeen.status == 0, "\(credential): \(seventeen.stderrText)")
            #expect(seventeen.stdoutText == "3\n", "\(credential): \(seventeen.stdoutText)")
            let tooMany = try run(folders(65) + ["report"], credential: credential)
            #expect(tooMany.status != 0, "\(credential): \(tooMany.stdoutText)")
            #expect(tooMany.stdoutText.isEmpty)
            #expect(
                tooMany.stderrText.contains("at most 64 folders of hosts (--onlyin NAME:/path")
                    && tooMany.stderrText.contains("this one names 65"),
                "\(credential): \(tooMany.stderrText)")
        }
    }

    /// A client that comes while the system index starts is answered as
    /// one that comes later: never told that it does not search across
    /// hosts, or that it does not publish (a live search told the first
    /// stops following the other hosts for good). Raced: the index is
    /// started again and again, and asked from its first moment.
    @Test func aClientThatComesWhileTheSystemIndexStartsIsAnsweredInFull() throws {
        let temp = try TemporaryDirectory()
        var hosts = try Hosts(temp)
        defer { hosts.close() }
        for run in 0..<8 {
            hosts.system.close()
            hosts.system = try PrivateSystemIndex(
                hosts.local, in: temp,
                arguments: ["--search", hosts.url, "--publish", hosts.url, "--host-name", "beta"])
            // The first connection it answers.
            var answered: (hosts: [String], publishing: String?)?
            var failure: MetadataError?
            #expect(
                waitUntil(timeout: 30, interval: 0) {
                    guard let client = try? DaemonClient.connectSystem(hosts.system.paths) else { return false }
                    do throws(MetadataError) {
                        let names = try client.sharedHosts().compactMap { $0["name"]?.string }
                        answered = (names, try client.status().publishing?.hostName)
                    } catch {
                        failure = error
                    }
                    return true
                }, "\(run): \(hosts.system.logText)")
            #expect(failure == nil, "\(run): \(failure?.description ?? "")")
            #expect(answered?.hosts.contains("alpha") == true, "\(run): \(String(describing: answered))")
            #expect(answered?.publishing == "beta", "\(run): \(String(describing: answered))")
        }
    }

    /// `mdq --live --host NAME` for a user with no credential of their own:
    /// the system index follows the other hosts for them in the shared
    /// index (`subscribe-hosts`), judged by their name, and this host comes
    /// from its index; what it would refuse is refused before going live.
    @Test func theSystemIndexFollowsLiveSearchesAcrossHostsForItsUsers() throws {
        let temp = try TemporaryDirectory()
        var hosts = try Hosts(temp)
        defer { hosts.close() }
        let (url, remote, local) = (hosts.url, hosts.remote, hosts.local)
        let environment = hosts.system.environment

        /// `mdq --live ARGUMENTS` as `user` (nil: root), with no database URL.
        func live(_ arguments: [String], as user: String? = nil) throws -> LiveProcess {
            let command = [MDQCommandTests.binary, "--live", "--interval", "0.05"] + arguments
            guard let user else {
                return try LiveProcess(command[0], Array(command.dropFirst()), environment: environment)
            }
            return try LiveProcess(
                "/usr/bin/setpriv", ["--reuid=\(user)", "--regid=65534", "--clear-groups"] + command,
                environment: environment)
        }
        // Gathered: this host's as its paths (from its index: this test's
        // system index is in a mount namespace of its own, whose folder
        // only root's searches reach), the other's as NAME:/path. Root on
        // one host is not root on another: it gets what others get there.
        let search = try live(["--all-hosts", "report"])
        defer { _ = search.interrupt() }
        for line in ["\(local)/report-here.txt", "alpha:\(remote)/report-a.txt", "alpha:\(remote)/report-b.txt"] {
            #expect(search.waitForLine { $0 == line }, "\(line): \(search.lines)\(search.errorText)")
        }
        // Each user is shown what that user may list: nobody the folder
        // only nobody may list, another user not.
        let nobodys = try live(["--host", "alpha", "report"], as: "nobody")
        defer { _ = nobodys.interrupt() }
        #expect(
            nobodys.waitForLine { $0 == "alpha:\(remote)/private/report-secret.txt" },
            "\(nobodys.lines)\(nobodys.errorText)")
        let other = try live(["--host", "alpha", "report"], as: "daemon")
        defer { _ = other.interrupt() }
        #expect(other.waitForLine { $0 == "alpha:\(remote)/report-b.txt" }, "\(other.lines)\(other.errorText)")
        // Then live, as alpha publishes: added, moved, removed; and as this
        // host's index changes.
        FileManager.default.createFile(atPath: remote + "/report-c.txt", contents: Data())
        for process in [search, nobodys, other] {
            #expect(process.waitForLine { $0 == "+ alpha:\(remote)/report-c.txt" }, "\(process.lines)")
        }
        #expect(rename(remote + "/report-b.txt", remote + "/report-d.txt") == 0)
        #expect(search.waitForLine { $0 == "> alpha:\(remote)/report-d.txt" }, "\(search.lines)")
        #expect(unlink(remote + "/report-a.txt") == 0)
        #expect(search.waitForLine { $0 == "- alpha:\(remote)/report-a.txt" }, "\(search.lines)")
        FileManager.default.createFile(atPath: local + "/report-here-2.txt", contents: Data())
        #expect(search.waitForLine { $0 == "+ \(local)/report-here-2.txt" }, "\(search.lines)")
        FileManager.default.createFile(atPath: remote + "/private/report-secret-2.txt", contents: Data())
        #expect(nobodys.waitForLine { $0 == "+ alpha:\(remote)/private/report-secret-2.txt" }, "\(nobodys.lines)")
        for process in [search, other] {
            #expect(!process.lines.contains { $0.contains("report-secret") }, "\(process.lines)")
        }

        // The system index restarted: the search catches up on a new
        // stream, and what did not change is neither removed nor added.
        hosts.system.close()
        let before = search.lines.count
        hosts.system = try PrivateSystemIndex(local, in: temp, arguments: ["--search", url])
        #expect(hosts.system.waitUntilLive(), "\(hosts.system.logText)")
        FileManager.default.createFile(atPath: remote + "/report-e.txt", contents: Data())
        #expect(
            search.waitForLine(timeout: 30) { $0 == "+ alpha:\(remote)/report-e.txt" },
            "\(search.lines)\(search.errorText)")
        let after = search.lines.dropFirst(before)
        #expect(!after.contains { $0.contains("report-c.txt") || $0.contains("report-d.txt") }, "\(after)")

        // At most four for one user at once: a fifth is told why (this
        // host's part would go on) and asks again; it gets its place once
        // one of the others ends.
        var more: [LiveProcess] = []
        defer { for process in more { _ = process.interrupt() } }
        for _ in 0..<3 {
            let process = try live(["--host", "alpha", "report"], as: "nobody")
            more.append(process)
            #expect(process.waitForLine { $0 == "alpha:\(remote)/report-c.txt" }, "\(process.errorText)")
        }
        let fifth = try live(["--host", "alpha", "report"], as: "nobody")
        more.append(fifth)
        #expect(
            fifth.waitUntil { fifth.errorText.contains("4 live searches across hosts for each user") },
            "\(fifth.lines)\(fifth.errorText)")
        #expect(fifth.lines.isEmpty, "\(fifth.lines)")
        _ = more[0].interrupt()
        #expect(
            fifth.waitForLine(timeout: 30) { $0 == "+ alpha:\(remote)/report-c.txt" },
            "\(fifth.lines)\(fifth.errorText)")

        // Refused before going live, as with a credential: a search the
        // shared index cannot narrow (its caret), a host it does not know.
        let unbounded = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--live", "--all-hosts",
                "kMDItemFSSize > 0 || kMDItemDisplayName == 'x'",
            ],
            environment: environment)
        #expect(unbounded.status == 2, "\(unbounded.stderrText)")
        #expect(unbounded.stderrText.contains("cannot narrow") && unbounded.stderrText.contains("--budget"))
        let unknown = try Shell.run(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--live", "--host",
                "nosuch", "report",
            ],
            environment: environment)
        #expect(unknown.status == 2, "\(unknown.stderrText)")
        #expect(unknown.stderrText.contains("no host nosuch in the shared index"), "\(unknown.stderrText)")
        // Asked straight, the system index refuses it too.
        let client = try DaemonClient.connectSystem(hosts.system.paths)
        #expect {
            try client.checkLiveSearchAcrossHosts(Array("TRUEPREDICATE".utf8), hosts: nil)
        } throws: { error in
            (error as? MetadataError)?.message.contains("cannot narrow") == true
        }
        try client.checkLiveSearchAcrossHosts(Array("report".utf8), hosts: ["alpha"])
        // Refusals give their connections back: more of them than the
        // system index keeps open, then a search still runs.
        for _ in 0..<12 {
            #expect(throws: MetadataError.self) {
                try client.checkLiveSearchAcrossHosts(Array("report".utf8), hosts: ["nowhere"])
            }
        }
        #expect(try client.searchAcrossHosts(Array("report".utf8), hosts: ["alpha"], counting: true).count >= 1)
    }

    /// A folder of another host that is not there, is not a folder, or
    /// that the user may not list is refused in a local search's words
    /// and with its status, the folder named `alpha:/path`: by the system
    /// index for a user with no credential, by the full command with one,
    /// live or not, each as the kernel answers the same user here (the
    /// published folder is this machine's). Nothing below a folder the user
    /// may not list is told, not even whether it is there.
    @Test func aFolderOfAnotherHostIsRefusedAsItsKernelWouldRefuseIt() throws {
        let temp = try TemporaryDirectory()
        let fixture = try Hosts(temp)
        defer { fixture.close() }
        let (url, remote, system) = (fixture.url, fixture.remote, fixture.system)
        mkdir(remote + "/private/inner", 0o755)
        mkdir(remote + "/open", 0o755)
        mkdir(remote + "/open/deeper", 0o755)
        FileManager.default.createFile(atPath: remote + "/open/deeper/report-deep.txt", contents: Data())
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        #expect(waitUntil(timeout: 20) { (try? reader.hosts().first?.entries) == 9 })

        // A live search that goes live instead of being refused is ended
        // (status 124) rather than waited for.
        func run(_ arguments: [String], as user: String, _ environment: [String: String] = [:]) throws -> Shell.Output {
            try system.mdq(arguments, as: user, environment: environment, timeout: 20)
        }
        let long = remote + "/open/" + String(repeating: "x/", count: 2100)
        // nobody owns the private folder; 41010 is a user of no name here,
        // a stranger on every host.
        for user in ["nobody", "41010"] {
            for folder in [
                remote, remote + "/open/", remote + "/missing", remote + "/report-a.txt",
                remote + "/report-a.txt/below", remote + "/private", remote + "/private/missing",
                remote + "/private/inner", remote + "/open/missing/deeper", long,
                // A name longer than the filesystem takes, there to look
                // for, or below a folder that is not there.
                remote + "/open/" + String(repeating: "y", count: 256),
                remote + "/open/missing/" + String(repeating: "y", count: 256),
            ] {
                let local = try run(["--no-daemon", "--onlyin", folder, "report"], as: user)
                func expected(_ text: String) -> String {
                    text.replacingOccurrences(of: ": " + remote, with: ": alpha:" + remote)
                }
                let context = "\(user) \(folder.prefix(200))"
                for (route, environment) in [
                    ("the system index", [:]), ("a credential", ["MDQ_SHARED": url, "MDQ_NO_FAST_PATH": "1"]),
                ] {
                    let across = try run(["--onlyin", "alpha:" + folder, "report"], as: user, environment)
                    #expect(across.status == local.status, "\(context), \(route): \(across.stderrText)")
                    // Found, in no order (a crawl's, or by path); what the
                    // user may not list below is left out without a word,
                    // as the host's system index leaves it out.
                    #expect(
                        across.stdoutText.split(separator: "\n").sorted()
                            == local.stdoutText.split(separator: "\n").map { "alpha:\($0)" }.sorted(),
                        "\(context), \(route)")
                    if local.status != 0 {
                        #expect(across.stderrText == expected(local.stderrText), "\(context), \(route)")
                    }
                }
                // A live search is refused before it starts, the same.
                for environment in [[:], ["MDQ_SHARED": url]] where local.status != 0 {
                    let live = try run(["--live", "--onlyin", "alpha:" + folder, "report"], as: user, environment)
                    #expect(live.status == local.status, "\(context), live \(environment): \(live.stderrText)")
                    #expect(live.stderrText == expected(local.stderrText), "\(context), live \(environment)")
                }
            }
        }
        // A folder the host does not index (alpha indexes its folder
        // alone): said as such, not as missing.
        let outside = try run(["--onlyin", "alpha:" + fixture.local, "report"], as: "nobody")
        #expect(outside.status == 1)
        #expect(
            outside.stderrText
                == "mdq: scope folder is not indexed by its host (it indexes none of what is in it): "
                + "alpha:\(fixture.local)\n", "\(outside.stderrText)")
        // A folder bounds a search the database cannot narrow (`*`), by
        // either route, as it bounds a local search.
        let everything = try run(["--no-daemon", "--onlyin", remote, "*"], as: "nobody")
        for (route, environment) in [
            ("the system index", [:]), ("a credential", ["MDQ_SHARED": url, "MDQ_NO_FAST_PATH": "1"]),
        ] {
            let bounded = try run(["--onlyin", "alpha:" + remote, "*"], as: "nobody", environment)
            #expect(bounded.status == 0, "\(route): \(bounded.stderrText)")
            #expect(
                bounded.stdoutText.split(separator: "\n").sorted()
                    == everything.stdoutText.split(separator: "\n").map { "alpha:\($0)" }.sorted(),
                "\(route): \(bounded.stdoutText)")
        }
        // A folder above the one it indexes: what it indexes below, as a
        // search of that folder finds it.
        let folder = try run(["--onlyin", "alpha:" + remote, "report"], as: "nobody")
        #expect(folder.status == 0 && !folder.stdoutText.isEmpty, "\(folder.stderrText)")
        for (route, environment) in [
            ("the system index", [:]), ("a credential", ["MDQ_SHARED": url, "MDQ_NO_FAST_PATH": "1"]),
        ] {
            let aboveIt = try run(["--onlyin", "alpha:" + temp.path.string, "report"], as: "nobody", environment)
            #expect(aboveIt.status == 0, "\(route): \(aboveIt.stderrText)")
            #expect(aboveIt.stdoutText == folder.stdoutText, "\(route): \(aboveIt.stdoutText)")
        }
    }

    /// A folder of this host (`--onlyin HERE:/path`) is searched as a local
    /// search of it is, for the user asking: the kernel here judges it (a
    /// folder they may not list is refused, not searched for nothing; one
    /// they reach through a folder they may not list is searched), by the
    /// system index and with a credential, and said in the same words.
    @Test func aFolderOfThisHostIsSearchedAsALocalSearchOfItIs() throws {
        let temp = try TemporaryDirectory()
        let fixture = try Hosts(temp)
        defer { fixture.close() }
        let (url, local, system) = (fixture.url, fixture.local, fixture.system)
        let here = try #require(ProcessEnvironment.shortHostName)
        mkdir(local + "/closed", 0o700)
        FileManager.default.createFile(atPath: local + "/closed/report-closed.txt", contents: Data())
        mkdir(local + "/gate", 0o711)
        mkdir(local + "/gate/inner", 0o755)
        FileManager.default.createFile(atPath: local + "/gate/inner/report-inner.txt", contents: Data())
        // Run in the system index's mount namespace, where its folder is
        // the mount it indexes (as this host's users see it).
        func run(_ arguments: [String], as user: String, _ environment: [String: String] = [:]) throws -> Shell.Output {
            try system.mdq(arguments, as: user, inside: true, environment: environment, timeout: 20)
        }
        // Indexed (root sees everything of this host).
        #expect(
            try waitUntil(timeout: 20, interval: 0.1) {
                try run(["--onlyin", "\(here):\(local)", "report"], as: "root").stdoutText.contains("report-inner")
            })
        for folder in [
            local, local + "/closed", local + "/gate", local + "/gate/inner", local + "/missing",
            local + "/report-here.txt", local + "/gate/missing",
        ] {
            let alone = try run(["--no-daemon", "--onlyin", folder, "report"], as: "nobody")
            for (route, environment) in [
                ("the system index", [:]), ("a credential", ["MDQ_SHARED": url, "MDQ_NO_FAST_PATH": "1"]),
            ] {
                let across = try run(["--onlyin", "\(here):\(folder)", "report"], as: "nobody", environment)
                let context = "\(folder), \(route)"
                #expect(across.status == alone.status, "\(context): \(across.stderrText)")
                // This host's results are its paths; what the user may not
                // list below is left out without a word, as the system
                // index leaves it out.
                #expect(
                    across.stdoutText.split(separator: "\n").sorted()
                        == alone.stdoutText.split(separator: "\n").sorted(),
                    "\(context): \(across.stdoutText) \(alone.stdoutText)")
                if alone.status != 0 {
                    #expect(
                        across.stderrText
                            == alone.stderrText.replacingOccurrences(of: ": " + local, with: ": \(here):" + local),
                        "\(context)")
                }
            }
        }
        // A symbolic link is said as another host's is, by every route
        // and live (the shared index searches no folder through one).
        #expect(symlink(local + "/gate/inner", local + "/link") == 0)
        #expect(symlink(fixture.remote, fixture.remote + "/link") == 0)
        #expect(
            waitUntil(timeout: 20, interval: 0.1) {
                (try? run(["--onlyin", "alpha:\(fixture.remote)/link", "report"], as: "nobody"))?.stderrText
                    .contains("symbolic link") == true
            })
        for (route, environment) in [
            ("the system index", [:]), ("a credential", ["MDQ_SHARED": url, "MDQ_NO_FAST_PATH": "1"]),
        ] {
            // The link itself, or a folder through it.
            for (live, below) in [([String](), ""), (["--live"], ""), ([], "/sub"), (["--live"], "/sub")] {
                let other = try run(
                    live + ["--onlyin", "alpha:\(fixture.remote)/link\(below)", "report"], as: "nobody", environment)
                let own = try run(
                    live + ["--onlyin", "\(here):\(local)/link\(below)", "report"], as: "nobody", environment)
                #expect(other.status == 1 && own.status == 1, "\(route) \(live): \(own.stderrText)")
                #expect(
                    own.stderrText
                        == other.stderrText.replacingOccurrences(
                            of: "alpha:\(fixture.remote)", with: "\(here):\(local)"),
                    "\(route) \(live): \(own.stderrText)")
            }
        }

        // Its `/` is all of it, as the host searched whole; a folder it
        // does not index is said as another host's is.
        let whole = try run(["--host", here, "report"], as: "nobody")
        let outside = fixture.remote
        for (route, environment) in [
            ("the system index", [:]), ("a credential", ["MDQ_SHARED": url, "MDQ_NO_FAST_PATH": "1"]),
        ] {
            // Its `/`, and a folder above the one it indexes from: all it
            // indexes below, as another host's folder above its roots.
            for top in ["/", temp.path.string] {
                let root = try run(["--onlyin", "\(here):\(top)", "report"], as: "nobody", environment)
                #expect(root.status == 0, "\(route) \(top): \(root.stderrText)")
                #expect(
                    root.stdoutText.split(separator: "\n").sorted()
                        == whole.stdoutText.split(separator: "\n").sorted(),
                    "\(route) \(top): \(root.stdoutText) \(whole.stdoutText)")
            }
            let unindexed = try run(["--onlyin", "\(here):\(outside)", "report"], as: "nobody", environment)
            #expect(unindexed.status == 1, "\(route): \(unindexed.stdoutText)")
            #expect(
                unindexed.stderrText
                    == "mdq: scope folder is not indexed by its host (it indexes none of what is in it): "
                    + "\(here):\(outside)\n", "\(route): \(unindexed.stderrText)")
        }
    }

    /// More results than the system index gives a user with no
    /// credential of their own (100,000): refused with the way out, by
    /// the front end's route and the full command's (`--json`), a limit
    /// above the cap too, without a crawl's worth of output. The full
    /// command takes the front's word that the system index found more
    /// (`MDQ_HOSTS_PAST_CAP`): a user who sets it only has their own
    /// search refused.
    @Test func moreResultsThanTheSystemIndexGivesAreRefusedWithTheWayOut() throws {
        let temp = try TemporaryDirectory()
        let hosts = try Hosts(temp)
        defer { hosts.close() }
        let many = hosts.remote + "/many"
        mkdir(many, 0o755)
        for i in 0...100_000 {
            close(open(many + "/cap-\(i).dat", O_WRONLY | O_CREAT, 0o644))
        }
        // All of them published.
        #expect(
            try waitUntil(timeout: 90, interval: 0.2) {
                try hosts.system.mdq(["--host", "alpha", "--count", "cap-*"], timeout: 60).stdoutText
                    == "\(100_000 + 1)\n"
            })
        let refusal =
            "mdq: query too expensive: more than 100000 results, the most the system index gives a user; narrow "
            + "the search or add --limit (with a database credential of your own, $MDQ_SHARED, mdq prints them all)\n"
        for arguments in [
            ["--host", "alpha", "cap-*"], ["--host", "alpha", "--json", "cap-*"],
            ["--host", "alpha", "--limit", "200000", "cap-*"],
        ] {
            let refused = try hosts.system.mdq(arguments, timeout: 120)
            #expect(refused.status == 1, "\(arguments): \(refused.stderrText)")
            #expect(refused.stdoutText.isEmpty, "\(arguments)")
            let expected =
                arguments.contains("--limit") ? refusal.replacingOccurrences(of: " or add --limit", with: "") : refusal
            #expect(refused.stderrText == expected, "\(arguments): \(refused.stderrText)")
        }
        // Bounded, it is answered.
        let limited = try hosts.system.mdq(["--host", "alpha", "--limit", "3", "cap-*"], timeout: 120)
        #expect(limited.status == 0 && limited.stdoutText.split(separator: "\n").count == 3, "\(limited.stderrText)")
        // Live, the system index follows at most as many for the user:
        // said once, with the way out, and not taken back.
        let live = try LiveProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=nobody", "--regid=65534", "--clear-groups", MDQCommandTests.binary, "--live", "--host",
                "alpha",
                "cap-*",
            ], environment: hosts.system.environment)
        #expect(
            live.waitForErrors(timeout: 120) { $0.contains("with a database credential of your own, $MDQ_SHARED") },
            "\(live.errorText)")
        #expect(
            live.errorText.components(separatedBy: "the most the system index keeps").count == 2
                && !live.errorText.contains("resolved"), "\(live.errorText)")
        #expect(live.lines.isEmpty, "\(live.lines.prefix(3))")
        #expect(live.interrupt() == 0, "\(live.errorText)")
        // The hand-over's variable: the full command takes the front's
        // word for it.
        let told = try hosts.system.mdq(
            ["--host", "alpha", "--json", "report"], environment: [SearchRouter.pastCapVariable: "1"])
        #expect(told.status == 1 && told.stderrText == refusal, "\(told.stderrText)")
    }

    /// A live search of a folder of this host (`--live --onlyin
    /// HERE:/path`) is its system index's, as the host searched whole is:
    /// checked by the kernel here as a local search's scope (a folder
    /// reached through one the user may not list is followed, one they
    /// may not list refused in the one-shot form's words), its changes
    /// seen, whatever the shared index knows of this host or whether the
    /// database answers.
    @Test func aFolderOfThisHostIsFollowedFromItsIndex() throws {
        let temp = try TemporaryDirectory()
        var hosts = try Hosts(temp)
        defer { hosts.close() }
        let (url, local) = (hosts.url, hosts.local)
        let here = try #require(ProcessEnvironment.shortHostName)
        mkdir(local + "/closed", 0o700)
        FileManager.default.createFile(atPath: local + "/closed/report-closed.txt", contents: Data())
        mkdir(local + "/gate", 0o711)
        mkdir(local + "/gate/inner", 0o777)
        FileManager.default.createFile(atPath: local + "/gate/inner/report-inner.txt", contents: Data())
        // In the system index's mount namespace, where its folder is the
        // mount it indexes (as this host's users see it), as `nobody`.
        func live(_ arguments: [String], _ environment: [String: String]) throws -> LiveProcess {
            try hosts.system.live(["--live", "--interval", "0"] + arguments, environment: environment)
        }
        #expect(
            try waitUntil(timeout: 20, interval: 0.1) {
                try hosts.system.mdq(["--onlyin", "\(here):\(local)", "report"], as: "root", inside: true)
                    .stdoutText.contains("report-inner")
            })
        let routes = [("the system index", [String: String]()), ("a credential", ["MDQ_SHARED": url])]
        for folder in [local + "/gate/inner", local, local + "/closed", local + "/missing", local + "/report-here.txt"]
        {
            for (r, (route, environment)) in routes.enumerated() {
                let alone = try hosts.system.mdq(
                    ["--no-daemon", "--onlyin", folder, "report"], as: "nobody", inside: true)
                let context = "\(folder), \(route)"
                let process = try live(["--onlyin", "\(here):\(folder)", "report"], environment)
                guard alone.status == 0 else {
                    // Refused before it starts, as the one-shot form is.
                    let status = process.waitForExit()
                    #expect(status == alone.status, "\(context): \(process.lines)")
                    #expect(
                        process.errorText
                            == alone.stderrText.replacingOccurrences(of: ": " + local, with: ": \(here):" + local),
                        "\(context): \(process.errorText)")
                    continue
                }
                let expected = alone.stdoutText.split(separator: "\n").map(String.init).sorted()
                #expect(!expected.isEmpty, "\(context)")
                #expect(process.waitUntil { process.lines.sorted() == expected }, "\(context): \(process.lines)")
                // A change below it is seen, from the index (fresh).
                let fresh = folder + "/report-new-\(r).txt"
                FileManager.default.createFile(atPath: fresh, contents: Data())
                #expect(
                    process.waitForLine { $0 == "+ " + fresh }, "\(context): \(process.lines) \(process.errorText)")
                #expect(process.interrupt() == 0, "\(context): \(process.errorText)")
                // Nothing said of this host as the shared index sees it.
                #expect(process.errorText.isEmpty, "\(context): \(process.errorText)")
            }
        }

        // A folder above the one it indexes from: what it indexes below.
        for (r, (route, environment)) in routes.enumerated() {
            let whole = try hosts.system.mdq(["--onlyin", "\(here):\(local)", "report"], inside: true)
            let expected = whole.stdoutText.split(separator: "\n").map(String.init).sorted()
            let process = try live(["--onlyin", "\(here):\(temp.path.string)", "report"], environment)
            #expect(process.waitUntil { process.lines.sorted() == expected }, "\(route): \(process.lines)")
            let fresh = local + "/report-above-\(r).txt"
            FileManager.default.createFile(atPath: fresh, contents: Data())
            #expect(process.waitForLine { $0 == "+ " + fresh }, "\(route): \(process.lines) \(process.errorText)")
            #expect(process.interrupt() == 0, "\(route): \(process.errorText)")
            #expect(process.errorText.isEmpty, "\(route): \(process.errorText)")
        }

        // The folder it indexes from closed to the user: a folder below is
        // refused as a local search refuses it, live as one-shot.
        #expect(chmod(local, 0o750) == 0)
        for (route, environment) in routes {
            let folder = local + "/gate/inner"
            let alone = try hosts.system.mdq(["--no-daemon", "--onlyin", folder, "report"], as: "nobody", inside: true)
            #expect(alone.status == 1, "\(alone.stderrText)")
            let oneShot = try hosts.system.mdq(
                ["--onlyin", "\(here):\(folder)", "report"], as: "nobody", inside: true, environment: environment)
            let process = try live(["--onlyin", "\(here):\(folder)", "report"], environment)
            let status = process.waitForExit()
            let said = alone.stderrText.replacingOccurrences(of: ": " + local, with: ": \(here):" + local)
            #expect(oneShot.status == 1 && oneShot.stderrText == said, "\(route): \(oneShot.stderrText)")
            #expect(
                status == 1 && process.errorText == said, "\(route): \(process.lines) \(process.errorText)")
        }
        #expect(chmod(local, 0o755) == 0)

        // The database away: this host's folder is still followed.
        hosts.system.close()
        hosts.system = try PrivateSystemIndex(
            hosts.local, in: temp,
            arguments: ["--search", "postgresql:///nowhere?host=/nonexistent-folder&user=postgres&connect_timeout=2"])
        #expect(hosts.system.waitUntilLive(), "\(hosts.system.logText)")
        let away = "postgresql:///nowhere?host=/nonexistent-folder&user=nobody&connect_timeout=2"
        for (r, environment) in [[:], ["MDQ_SHARED": away]].enumerated() {
            let folder = local + "/gate/inner"
            let process = try live(["--onlyin", "\(here):\(folder)", "report"], environment)
            #expect(
                process.waitForLine { $0 == folder + "/report-inner.txt" }, "\(environment): \(process.errorText)")
            let fresh = folder + "/report-away-\(r).txt"
            FileManager.default.createFile(atPath: fresh, contents: Data())
            #expect(
                process.waitForLine { $0 == "+ " + fresh }, "\(environment): \(process.lines) \(process.errorText)")
            #expect(process.interrupt() == 0, "\(environment): \(process.errorText)")
            #expect(process.errorText.isEmpty, "\(environment): \(process.errorText)")
        }
    }

    /// Hosts named whole beside folders of others (`--host b --onlyin
    /// a:/x`, `--all-hosts --onlyin a:/x`, this host's `/`): each host
    /// asked for is searched, whole unless folders of it are given, and a
    /// live search gathers what the one-shot form prints, by either route.
    @Test func hostsBesideFoldersOfOthersAreSearchedAliveAsOnce() throws {
        let temp = try TemporaryDirectory()
        let hosts = try Hosts(temp)
        defer { hosts.close() }
        let (url, remote, local) = (hosts.url, hosts.remote, hosts.local)
        let here = try #require(ProcessEnvironment.shortHostName)
        mkdir(remote + "/sub", 0o755)
        FileManager.default.createFile(atPath: remote + "/sub/report-sub.txt", contents: Data())
        mkdir(local + "/sub", 0o755)
        FileManager.default.createFile(atPath: local + "/sub/report-local-sub.txt", contents: Data())
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        #expect(waitUntil(timeout: 20) { (try? reader.hosts().first?.entries) == 7 })
        #expect(
            try waitUntil(timeout: 20, interval: 0.1) {
                try hosts.system.mdq(["--host", here, "report"], inside: true).stdoutText.contains("local-sub")
            })
        func live(_ arguments: [String], _ environment: [String: String]) throws -> LiveProcess {
            try hosts.system.live(["--live"] + arguments, environment: environment)
        }
        for arguments in [
            ["--all-hosts", "--onlyin", "alpha:\(remote)/sub"],
            ["--host", "alpha", "--onlyin", "\(here):\(local)/sub"],
            ["--host", here, "--onlyin", "alpha:\(remote)/sub"], ["--onlyin", "\(here):/", "--onlyin", "alpha:/"],
        ] {
            for (route, environment) in [("the system index", [:]), ("a credential", ["MDQ_SHARED": url])] {
                let context = "\(arguments), \(route)"
                let once = try hosts.system.mdq(arguments + ["report"], inside: true, environment: environment)
                #expect(once.status == 0, "\(context): \(once.stderrText)")
                let expected = once.stdoutText.split(separator: "\n").map(String.init).sorted()
                // Both hosts, each as asked.
                #expect(
                    expected.contains { $0.hasPrefix("alpha:") } && expected.contains { $0.hasPrefix(local) },
                    "\(context): \(expected)")
                let process = try live(arguments + ["report"], environment)
                #expect(
                    process.waitUntil { process.lines.sorted() == expected },
                    "\(context): \(process.lines.sorted()) \(expected) \(process.errorText)")
                #expect(process.interrupt() == 0, "\(context): \(process.errorText)")
                let counted = try hosts.system.mdq(
                    arguments + ["--count", "report"], inside: true, environment: environment)
                #expect(counted.stdoutText == "\(expected.count)\n", "\(context): \(counted.stderrText)")
            }
        }
    }

    /// A live search of a folder the system index answers, renamed away
    /// and made again at its path: its results go, it says the folder is
    /// gone, and once a folder is there again it follows that one (opened
    /// anew as the user), as a live search that crawls does; a local
    /// folder and a folder of this host alike.
    @Test func aFolderRenamedAwayAndMadeAgainIsFollowedAgain() throws {
        let temp = try TemporaryDirectory()
        let hosts = try Hosts(temp)
        defer { hosts.close() }
        let local = hosts.local
        let here = try #require(ProcessEnvironment.shortHostName)
        for (r, folder) in [local + "/rx", "\(here):\(local)/ry"].enumerated() {
            let path = r == 0 ? local + "/rx" : local + "/ry"
            mkdir(path, 0o777)
            FileManager.default.createFile(atPath: path + "/zzrx-1", contents: Data())
            #expect(
                try waitUntil(timeout: 20, interval: 0.1) {
                    try hosts.system.mdq(["--onlyin", path, "zzrx"], inside: true).stdoutText.contains("zzrx-1")
                })
            let live = try hosts.system.live(["--live", "--interval", "0", "--onlyin", folder, "zzrx"])
            #expect(live.waitForLine { $0 == path + "/zzrx-1" }, "\(folder): \(live.lines) \(live.errorText)")
            #expect(rename(path, path + "-old") == 0)
            #expect(live.waitForLine { $0 == "- " + path + "/zzrx-1" }, "\(folder): \(live.lines) \(live.errorText)")
            #expect(
                live.waitForErrors { $0.contains("scope folder is gone (its results return when it does)") },
                "\(folder): \(live.errorText)")
            mkdir(path, 0o777)
            FileManager.default.createFile(atPath: path + "/zzrx-2", contents: Data())
            #expect(live.waitForLine { $0 == "+ " + path + "/zzrx-2" }, "\(folder): \(live.lines) \(live.errorText)")
            #expect(live.waitForErrors { $0.contains("resolved") }, "\(folder): \(live.errorText)")
            #expect(!live.lines.contains { $0.hasSuffix("zzrx-1") && $0.hasPrefix("+") }, "\(live.lines)")
            #expect(!live.errorText.contains("not reachable"), "\(folder): \(live.errorText)")
            #expect(live.interrupt() == 0, "\(folder): \(live.errorText)")
        }
    }

    /// This host's system index stopped: a user with no credential of
    /// their own is told it is not running (a runtime failure, status 1),
    /// by every form, not that nothing is configured (status 2).
    @Test func aStoppedSystemIndexIsSaidToUsersWithoutACredential() throws {
        let temp = try TemporaryDirectory()
        let hosts = try Hosts(temp)
        defer { hosts.close() }
        hosts.system.close()
        for arguments in [
            ["--host", "alpha", "report"], ["--host", "alpha", "--json", "report"], ["hosts"],
            ["--live", "--host", "alpha", "report"],
        ] {
            let said = try hosts.system.mdq(arguments, timeout: 30)
            #expect(said.status == 1, "\(arguments): \(said.stderrText)")
            #expect(
                said.stderrText.hasPrefix("mdq: this host's system index is not running (mdq system start)"),
                "\(arguments): \(said.stderrText)")
        }
    }

    /// mdfind's `$time.today` is the user's day, not the system index's:
    /// the front end names its zone with the query, which the system index
    /// reads in it, for a local search and one across hosts alike, as a
    /// search without a daemon reads it.
    @Test func todayIsTheUsersDayNotTheSystemIndexs() throws {
        let temp = try TemporaryDirectory()
        let fixture = try Hosts(temp)
        defer { fixture.close() }
        let (local, system) = (fixture.local, fixture.system)
        let here = try #require(ProcessEnvironment.shortHostName)
        let zones = ["Pacific/Kiritimati", "Pacific/Pago_Pago", "America/Los_Angeles", "Asia/Tokyo"]
        let folder = local + "/tz"
        mkdir(folder, 0o755)
        // A minute either side of each zone's midnight.
        var names: [String] = []
        for (z, zone) in zones.enumerated() {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = try #require(TimeZone(identifier: zone))
            let midnight = calendar.startOfDay(for: Date()).timeIntervalSince1970
            for (side, offset) in [("before", -60.0), ("after", 60.0)] {
                let name = "tz-\(z)-\(side).txt"
                FileManager.default.createFile(atPath: folder + "/" + name, contents: Data())
                var times = [
                    timespec(tv_sec: Int(midnight + offset), tv_nsec: 0),
                    timespec(tv_sec: Int(midnight + offset), tv_nsec: 0),
                ]
                #expect(utimensat(AT_FDCWD, folder + "/" + name, &times, 0) == 0)
                names.append(name)
            }
        }
        func run(_ arguments: [String], zone: String) throws -> Shell.Output {
            try system.mdq(arguments, inside: true, environment: ["TZ": zone])
        }
        // Indexed with their dates.
        let all = "kMDItemFSName == \"tz-*\" && kMDItemFSContentChangeDate >= $time.iso(2000-01-01T00:00:00Z)"
        #expect(
            try waitUntil(timeout: 20, interval: 0.1) {
                try run(["--onlyin", folder, "--count", all], zone: "UTC").stdoutText == "\(names.count)\n"
            })
        let query = "kMDItemFSName == \"tz-*\" && kMDItemFSContentChangeDate >= $time.today"
        // Each zone as TZ may name it: by name, with the C library's `:`,
        // and by its file.
        for (z, name) in zones.enumerated() {
            for zone in [name, ":" + name, "/usr/share/zoneinfo/" + name] {
                let alone = try run(["--no-daemon", "--onlyin", folder, query], zone: zone)
                #expect(alone.status == 0, "\(alone.stderrText)")
                let expected = alone.stdoutText.split(separator: "\n").sorted()
                // Its own day: the minute after its midnight, not the one
                // before.
                #expect(expected.contains("\(folder)/tz-\(z)-after.txt"), "\(zone): \(expected)")
                #expect(!expected.contains("\(folder)/tz-\(z)-before.txt"), "\(zone): \(expected)")
                let indexed = try run(["--onlyin", folder, query], zone: zone)
                #expect(
                    indexed.stdoutText.split(separator: "\n").sorted() == expected, "\(zone): \(indexed.stderrText)")
                let across = try run(["--host", here, query], zone: zone)
                #expect(
                    across.stdoutText.split(separator: "\n").sorted() == expected, "\(zone): \(across.stderrText)")
            }
        }
    }

    /// A live search across hosts knows this host by the name its system
    /// index publishes under (`--host-name`), not by the machine's host
    /// name: its entries come once, from its index, as a one-shot search
    /// counts them.
    @Test func aLiveSearchKnowsThisHostByTheNameItsSystemIndexPublishes() throws {
        let temp = try TemporaryDirectory()
        let fixture = try Hosts(temp)
        defer { fixture.close() }
        let other = try TemporaryDirectory()
        #expect(chmod(other.path.string, 0o755) == 0)
        let mine = try other.folder("mine").string
        FileManager.default.createFile(atPath: mine + "/report-gamma.txt", contents: Data())
        let gamma = try PrivateSystemIndex(
            mine, in: other, arguments: ["--publish", fixture.url, "--search", fixture.url, "--host-name", "gamma"])
        defer { gamma.close() }
        #expect(gamma.waitUntilLive(), "\(gamma.logText)")
        let reader = try SharedReader(connection: PostgresConnection(url: fixture.url))
        #expect(
            waitUntil(timeout: 30) { (try? reader.hosts().first { $0.name == "gamma" }?.state) == "live" },
            "\(gamma.logText)")
        #expect(try #require(ProcessEnvironment.shortHostName) != "gamma")
        var environment = gamma.environment
        environment["MDQ_SHARED"] = fixture.url
        let once = try Shell.run(
            MDQCommandTests.binary, ["--all-hosts", "--count", "report"], environment: environment)
        #expect(once.stdoutText == "3\n", "\(once.stderrText)")
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--interval", "0.05", "--all-hosts", "report"], environment: environment)
        defer { _ = live.interrupt() }
        #expect(live.waitForLine { $0 == "\(mine)/report-gamma.txt" }, "\(live.lines)\(live.errorText)")
        #expect(waitUntil(timeout: 10) { live.lines.count >= 3 })
        #expect(!live.lines.contains("gamma:\(mine)/report-gamma.txt"), "\(live.lines)")
        #expect(live.lines.count == 3, "\(live.lines)")
    }

    /// A system index that stops answering (stopped, hung) is said so
    /// after a bounded silence (30 s for a status), not waited for ten
    /// minutes.
    @Test func aSystemIndexThatStopsAnsweringIsNotWaitedForEver() throws {
        let temp = try TemporaryDirectory()
        let system = try PrivateSystemIndex(try temp.folder("indexed").string, in: temp)
        defer { system.close() }
        #expect(system.waitUntilLive(), "\(system.logText)")
        system.send(SIGSTOP)
        defer { system.send(SIGCONT) }
        let status = try Shell.run(
            "/usr/bin/timeout", ["300", MDQCommandTests.binary, "system", "status"], environment: system.environment)
        #expect(status.status == 1, "\(status.status): \(status.stderrText)")
        #expect(status.stderrText.contains("did not answer within 30 s"), "\(status.stderrText)")
    }
}
