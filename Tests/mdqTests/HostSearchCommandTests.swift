import Foundation
import Glibc
import MDQShared
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQLive

/// `mdq --host NAME`, `--all-hosts`, `--onlyin NAME:/path` and `mdq hosts`
/// against a host published into a private PostgreSQL cluster: what each
/// prints, what each refuses with its reason, and a host gone offline.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(if: PostgresCluster.isInstalled, "PostgreSQL 15 is not installed (Scripts/bootstrap installs it)"))
struct HostSearchCommandTests {
    @Test func searchesAcrossHostsPrintAndRefuseAsLocalSearchesDo() throws {
        let cluster = try #require(PostgresCluster.shared)
        let url = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: url))
        let temp = try TemporaryDirectory()
        // Others may pass through it: the search is made as this user, who
        // on another host is judged by name.
        #expect(chmod(temp.path.string, 0o755) == 0)
        let root = try temp.folder("srv").string
        for i in 0..<12 { FileManager.default.createFile(atPath: root + "/photo\(i).png", contents: Data("x".utf8)) }
        FileManager.default.createFile(atPath: root + "/notes.txt", contents: Data())
        mkdir(root + "/sub", 0o755)
        FileManager.default.createFile(atPath: root + "/sub/photo-deep.png", contents: Data())
        let alpha = try PublishedFolder(root, url: url)
        defer { alpha.close() }
        let (engine, configuration, publisher) = (alpha.engine, alpha.configuration, alpha.publisher)
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        #expect(waitUntil(timeout: 20) { (try? reader.hosts().first?.entries) == 15 })

        func mdq(_ arguments: [String]) throws -> Shell.Output {
            try Shell.run(MDQCommandTests.binary, arguments, environment: ["MDQ_SHARED": url])
        }
        let count = try mdq(["--host", "alpha", "--count", "*.png"])
        #expect(count.status == 0, "\(count.stderrText)")
        #expect(count.stdoutText == "13\n")
        let lines = try mdq(["--host", "alpha", "photo1"])
        #expect(
            lines.stdoutText
                == [root + "/photo1.png", root + "/photo10.png", root + "/photo11.png"].map { "alpha:\($0)\n" }
                .joined())
        let nul = try mdq(["--host", "alpha", "-0", "notes"])
        #expect(nul.stdoutText == "alpha:\(root)/notes.txt\0")
        let json = try mdq(["--host", "alpha", "--json", "notes"])
        #expect(json.stdoutText.contains("\"path\":\"\(root)/notes.txt\""), "\(json.stdoutText)")
        #expect(json.stdoutText.contains("\"host\":\"alpha\",\"stale\":false"), "\(json.stdoutText)")
        let scoped = try mdq(["--onlyin", "alpha:\(root)/sub", "photo"])
        #expect(scoped.stdoutText == "alpha:\(root)/sub/photo-deep.png\n", "\(scoped.stderrText)")
        let sorted = try mdq(
            ["--host", "alpha", "--sort", "kMDItemFSName:desc", "--limit", "2", "--attr", "kMDItemFSSize", "*.png"])
        // Names sort as mdq sorts them locally: numbers by value.
        #expect(sorted.stdoutText == "alpha:\(root)/photo11.png\t1\nalpha:\(root)/photo10.png\t1\n")
        // Another host's file's URL names that host (RFC 8089), never a
        // file of this machine at the same path.
        let fileURL = "file://alpha\(root)/notes.txt"
        let urlLine = try mdq(["--host", "alpha", "--attr", "kMDItemURL", "notes"])
        #expect(urlLine.stdoutText == "alpha:\(root)/notes.txt\t\(fileURL)\n", "\(urlLine.stderrText)")
        let urlJSON = try mdq(["--host", "alpha", "--json", "--attr", "kMDItemURL", "notes"])
        #expect(urlJSON.stdoutText.contains("\"kMDItemURL\":\"\(fileURL)\""), "\(urlJSON.stdoutText)")
        // Tested as it is shown: with its host.
        let byURL = try mdq(["--host", "alpha", "--budget", "10", "kMDItemURL BEGINSWITH 'file://alpha\(root)/notes'"])
        #expect(byURL.stdoutText == "alpha:\(root)/notes.txt\n", "\(byURL.stderrText)")
        let local = try mdq(["--host", "alpha", "--budget", "10", "kMDItemURL == 'file://\(root)/notes.txt'"])
        #expect(local.status == 0 && local.stdoutText.isEmpty, "\(local.stdoutText)")
        for format in [["--json"], []] {
            let live = try LiveProcess(
                MDQCommandTests.binary, ["--host", "alpha", "--live", "--attr", "kMDItemURL"] + format + ["notes"],
                environment: ["MDQ_SHARED": url])
            #expect(live.waitForLine { $0.contains(fileURL) }, "\(format): \(live.lines) \(live.errorText)")
            #expect(live.interrupt() == 0)
        }
        let limited = try mdq(["--host", "alpha", "--limit", "3", "*"])
        #expect(limited.status == 0)
        #expect(limited.stdoutText.split(separator: "\n").count == 3)

        // Refusals, each with its reason and the usage status.
        let unbounded = try mdq(["--host", "alpha", "*"])
        #expect(unbounded.status == 2)
        #expect(unbounded.stderrText.contains("the shared index cannot narrow"), "\(unbounded.stderrText)")
        #expect(unbounded.stderrText.hasSuffix("\n  *\n  ^\n"), "a caret under the test: \(unbounded.stderrText)")
        let composite = try mdq(["--host", "alpha", "kMDItemKind == 'PDF' || kMDItemFSName == 'ab*'"])
        #expect(composite.status == 2)
        #expect(
            composite.stderrText.hasSuffix(
                "\n  kMDItemKind == 'PDF' || kMDItemFSName == 'ab*'\n                  ^\n"), "\(composite.stderrText)")
        // The test to blame, not the same text in another.
        let second = try mdq(["--host", "alpha", "kMDItemFSName == 'PDF*' || kMDItemKind == 'PDF'"])
        #expect(
            second.stderrText.hasSuffix(
                "\n  kMDItemFSName == 'PDF*' || kMDItemKind == 'PDF'\n                                             ^\n"),
            "\(second.stderrText)")
        let unpublished = try mdq(["--host", "alpha", "kMDItemFSSize > 1 && kMDItemLastUsedDate > $time.today(-1)"])
        #expect(unpublished.status == 2)
        #expect(unpublished.stderrText.contains("kMDItemLastUsedDate is not published"), "\(unpublished.stderrText)")
        #expect(
            unpublished.stderrText.hasSuffix(
                "\n  kMDItemFSSize > 1 && kMDItemLastUsedDate > $time.today(-1)\n                       ^\n"),
            "\(unpublished.stderrText)")
        // What a search across hosts would not do as a local search does
        // it is refused, not done otherwise.
        for (arguments, reason) in [
            (["--host", "alpha", "--type", "f", "photo"], "--type is not taken by a search across hosts"),
            (["--host", "alpha", "--exclude", "sub", "photo"], "--exclude is not taken by a search across hosts"),
            (["--onlyin", "/usr", "--host", "alpha", "photo"], "not DIR, --onlyin DIR"),
            (["--all-hosts", "--onlyin", root, "photo"], "not DIR, --onlyin DIR"),
            (["--host", "alpha", "--attr", "kMDItemLastUsedDate", "photo"], "kMDItemLastUsedDate is not published"),
            (["--host", "alpha", "--sort", "kMDItemLastUsedDate", "photo"], "kMDItemLastUsedDate is not published"),
            (["--host", "alpha", "--group", "kMDItemTextContent", "photo"], "kMDItemTextContent is not published"),
            (["--host", "", "photo"], "--host takes a host name"),
            (["--host", ",", "photo"], "--host takes a host name"),
            (["--host", "alpha", "--live", "--attr", "kMDItemLastUsedDate", "photo"], "is not published"),
        ] {
            let refused = try mdq(arguments)
            #expect(refused.status != 0 && refused.stderrText.contains(reason), "\(arguments): \(refused.stderrText)")
            #expect(refused.stdoutText.isEmpty, "\(arguments)")
        }
        // A live search is bounded by a budget alone: its refusal says so.
        let liveAdvice = try mdq(["--host", "alpha", "--live", "TRUEPREDICATE"])
        #expect(liveAdvice.stderrText.contains("add --budget SECONDS"), "\(liveAdvice.stderrText)")
        #expect(!liveAdvice.stderrText.contains("--limit"), "\(liveAdvice.stderrText)")
        // A folder of another host is its path normalized, as a local one.
        for folder in ["\(root)//sub", "\(root)/./sub/", "\(root)/sub/../sub"] {
            let normalized = try mdq(["--onlyin", "alpha:\(folder)", "photo"])
            #expect(
                normalized.stdoutText == "alpha:\(root)/sub/photo-deep.png\n", "\(folder): \(normalized.stderrText)")
        }
        // A folder whose path is not UTF-8 is its bytes: not the folder
        // of the same text with U+FFFD (what its text shows), nor the other
        // way round.
        let bad = Array((root + "/dir").utf8) + [0xFF] + Array("bad".utf8)
        let fffd = root + "/dir\u{FFFD}bad"
        #expect(
            (bad + [0]).withUnsafeBufferPointer {
                mkdir(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), 0o755)
            } == 0)
        #expect(mkdir(fffd, 0o755) == 0)
        let inBad = bad + Array("/inbad-qfile.txt".utf8)
        #expect(
            (inBad + [0]).withUnsafeBufferPointer {
                open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_WRONLY | O_CREAT, 0o644)
            } >= 0)
        FileManager.default.createFile(atPath: fffd + "/fffd-qfile.txt", contents: Data())
        #expect(waitUntil(timeout: 20) { (try? mdq(["--host", "alpha", "--count", "qfile"]).stdoutText) == "2\n" })
        let byBytes = try Shell.run(
            "/bin/sh",
            [
                "-c", #"exec "$0" --onlyin "alpha:$1/dir$(printf '\377')bad" qfile"#, MDQCommandTests.binary,
                root,
            ],
            environment: ["MDQ_SHARED": url])
        #expect(Array(byBytes.stdout) == Array("alpha:".utf8) + inBad + [0x0A], "\(byBytes.stderrText)")
        let byText = try mdq(["--onlyin", "alpha:\(fffd)", "qfile"])
        #expect(byText.stdoutText == "alpha:\(fffd)/fffd-qfile.txt\n", "\(byText.stderrText)")
        let above = try mdq(["--onlyin", "alpha:\(root)", "--count", "qfile"])
        #expect(above.stdoutText == "2\n")
        let unknown = try mdq(["--host", "nope", "photo"])
        #expect(unknown.status == 2)
        #expect(unknown.stderrText.contains("no host nope in the shared index"), "\(unknown.stderrText)")
        let liveRefused = try mdq(["--host", "alpha", "--live", "*"])
        #expect(liveRefused.status == 2, "a live search the shared index refuses ends at once")
        #expect(liveRefused.stderrText.hasSuffix("\n  *\n  ^\n"), "\(liveRefused.stderrText)")
        // The search the live query makes: `alpha://` is the folder `/`.
        let liveWhole = try mdq(["--onlyin", "alpha://", "--live", "*"])
        #expect(liveWhole.status == 2, "\(liveWhole.stderrText)")
        let liveUnknown = try mdq(["--host", "nope", "--live", "photo"])
        #expect(liveUnknown.status == 2)
        #expect(liveUnknown.stderrText.contains("no host nope in the shared index"), "\(liveUnknown.stderrText)")
        // Said as the one-shot search says it, with the hosts there are.
        #expect(liveUnknown.stderrText == unknown.stderrText)
        #expect(unknown.stderrText.contains("(hosts: alpha; mdq hosts lists them)"), "\(unknown.stderrText)")
        // A file's text is published as its words, not as text to show.
        let liveText = try mdq(["--host", "alpha", "--live", "--attr", "kMDItemTextContent", "photo"])
        #expect(liveText.status == 2)
        #expect(liveText.stderrText.contains("kMDItemTextContent is not published"), "\(liveText.stderrText)")
        // (With no system index that ran here.)
        let noIndex = try Shell.run(
            MDQCommandTests.binary, ["--host", "alpha", "photo"],
            environment: ["MDQ_SHARED": "", "MDQ_SYSTEM_RUNTIME_DIR": try temp.folder("none").string])
        #expect(noIndex.status == 2)
        #expect(noIndex.stderrText.contains("no shared index is configured"), "\(noIndex.stderrText)")
        // Live, with no credential and no system index that follows hosts
        // for the user: where none was found, and what would do.
        let noneLive = try Shell.run(
            MDQCommandTests.binary, ["--host", "alpha", "--live", "photo"],
            environment: [
                "MDQ_SHARED": "", "MDQ_SYSTEM_RUNTIME_DIR": try temp.folder("no-system").string,
            ])
        #expect(noneLive.status == 2)
        #expect(
            noneLive.stderrText.contains("no shared index is configured")
                && noneLive.stderrText.contains("through the system index when it searches the shared index"),
            "\(noneLive.stderrText)")

        let hosts = try mdq(["hosts"])
        #expect(hosts.status == 0)
        #expect(hosts.stdoutText.contains("alpha  live"), "\(hosts.stdoutText)")
        // Dates in JSON as mdq's other JSON writes them.
        let hostsJSON = try mdq(["hosts", "--json"]).stdoutText
        #expect(
            hostsJSON.range(of: #""lastContact":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ""#, options: .regularExpression)
                != nil, "\(hostsJSON)")

        // Live: the results, then what the host publishes.
        let live = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--interval", "0.05", "--host", "alpha", "photo1"],
            environment: ["MDQ_SHARED": url])
        defer { _ = live.interrupt() }
        #expect(live.waitForLine { $0 == "alpha:\(root)/photo11.png" }, "\(live.errorText)")
        // The first results by host, then path, as a one-shot search prints them.
        let first = try mdq(["--host", "alpha", "photo1"]).stdoutText.split(separator: "\n").map(String.init)
        #expect(waitUntil(timeout: 10) { live.lines.count >= first.count })
        #expect(Array(live.lines.prefix(first.count)) == first, "\(live.lines.prefix(first.count))")
        FileManager.default.createFile(atPath: root + "/photo1-new.png", contents: Data())
        #expect(live.waitForLine { $0 == "+ alpha:\(root)/photo1-new.png" }, "\(live.lines)")
        #expect(rename(root + "/photo1-new.png", root + "/sub/photo1-moved.png") == 0)
        #expect(live.waitForLine { $0 == "< alpha:\(root)/photo1-new.png" }, "\(live.lines)")
        #expect(live.waitForLine { $0 == "> alpha:\(root)/sub/photo1-moved.png" }, "\(live.lines)")
        #expect(unlink(root + "/photo10.png") == 0)
        #expect(live.waitForLine { $0 == "- alpha:\(root)/photo10.png" }, "\(live.lines)")
        // A host away keeps its results, with a problem; back, it catches up.
        publisher.stop()
        #expect(live.waitForErrors(timeout: 90) { $0.contains("alpha is offline since") }, "\(live.errorText)")
        FileManager.default.createFile(atPath: root + "/photo1-while-away.png", contents: Data())
        let again = SharedPublisher(configuration: configuration, engine: engine)
        again.start()
        defer { again.stop() }
        #expect(live.waitForLine { $0 == "+ alpha:\(root)/photo1-while-away.png" }, "\(live.lines)")
        #expect(
            live.waitForErrors { $0.contains("alpha is no longer offline: its results follow the shared index again") },
            "\(live.errorText)")

        // The same in JSON, sorted and with columns: each item's host a
        // field of its own, its path the host's.
        let liveJSON = try LiveProcess(
            MDQCommandTests.binary,
            [
                "--live", "--json", "--interval", "0.05", "--sort", "kMDItemFSName", "--attr", "kMDItemFSSize",
                "--host", "alpha", "photo1",
            ],
            environment: ["MDQ_SHARED": url])
        defer { _ = liveJSON.interrupt() }
        #expect(
            liveJSON.waitForLine {
                $0.hasPrefix("{\"event\":\"result\",") && $0.contains("\"host\":\"alpha\",\"stale\":false,")
                    && $0.contains("\"path\":\"\(root)/photo11.png\"") && $0.contains("\"kMDItemFSSize\":")
            }, "\(liveJSON.lines)\(liveJSON.errorText)")
        #expect(liveJSON.waitForLine { $0.hasPrefix("{\"event\":\"didFinishGathering\"") }, "\(liveJSON.lines)")
        #expect(rename(root + "/photo1-while-away.png", root + "/photo1-back.png") == 0)
        #expect(
            liveJSON.waitForLine {
                $0.hasPrefix("{\"event\":\"didUpdate\"") && $0.contains("\"host\":\"alpha\",")
                    && $0.contains("\"previousPath\":\"\(root)/photo1-while-away.png\"")
                    && $0.contains("\"path\":\"\(root)/photo1-back.png\"")
            }, "\(liveJSON.lines)\(liveJSON.errorText)")
        again.stop()

        // A host gone: its entries stay, marked stale, with a warning.
        publisher.stop()
        let offline = try mdq(["hosts"])
        #expect(offline.stdoutText.contains("alpha  offline"), "\(offline.stdoutText)")
        let stale = try mdq(["--host", "alpha", "--json", "notes"])
        #expect(stale.stdoutText.contains("\"stale\":true"), "\(stale.stdoutText)")
        #expect(stale.stderrText.contains("alpha is offline since"), "\(stale.stderrText)")
        // Live, from the start: the host said offline before its results,
        // which are stale until it is back.
        let liveStale = try LiveProcess(
            MDQCommandTests.binary, ["--live", "--json", "--interval", "0.05", "--host", "alpha", "notes"],
            environment: ["MDQ_SHARED": url])
        defer { _ = liveStale.interrupt() }
        #expect(liveStale.waitForLine { $0.hasPrefix("{\"event\":\"didFinishGathering\"") }, "\(liveStale.lines)")
        let warning = liveStale.lines.firstIndex {
            $0.hasPrefix("{\"event\":\"warning\",\"code\":\"host offline\"") && $0.contains("\"host\":\"alpha\"")
                && $0.contains("alpha is offline since")
        }
        let result = liveStale.lines.firstIndex {
            $0.hasPrefix("{\"event\":\"result\",") && $0.contains("\"host\":\"alpha\",\"stale\":true,")
                && $0.contains("\"path\":\"\(root)/notes.txt\"")
        }
        #expect(warning != nil && result != nil && warning! < result!, "\(liveStale.lines)")
        let back = SharedPublisher(configuration: configuration, engine: engine)
        back.start()
        defer { back.stop() }
        #expect(
            liveStale.waitForLine {
                $0.hasPrefix("{\"event\":\"resolved\",\"code\":\"host offline\"") && $0.contains("\"host\":\"alpha\"")
            }, "\(liveStale.lines)")
        FileManager.default.createFile(atPath: root + "/notes-2.txt", contents: Data())
        #expect(
            liveStale.waitForLine {
                $0.hasPrefix("{\"event\":\"didUpdate\"") && $0.contains("\"host\":\"alpha\",\"stale\":false,")
                    && $0.contains("\"path\":\"\(root)/notes-2.txt\"")
            }, "\(liveStale.lines)")
    }

    /// A user given a role of their own name (`mdq shared grant`), on a
    /// machine where someone else is root: whoever runs `mdq` and whatever
    /// user it says it searches for, the database judges the role, so a
    /// folder closed to that user stays hidden; `mdq shared revoke` takes
    /// the search away.
    @Test func aUsersOwnRoleSeesOnlyWhatThatUserMay() throws {
        let cluster = try #require(PostgresCluster.shared)
        let url = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: url))
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let root = try temp.folder("srv").string
        mkdir(root + "/open", 0o755)
        mkdir(root + "/closed", 0o700)
        for folder in ["open", "closed"] {
            FileManager.default.createFile(atPath: "\(root)/\(folder)/ledger-\(folder).txt", contents: Data())
        }
        // The closed folder is ledgerkeeper's, a user of the host.
        #expect(chown(root + "/closed", 41010, 41010) == 0)
        let alpha = try PublishedFolder(root, url: url)
        defer { alpha.close() }
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        let ledgers = SharedReader.Search(predicate: try MetadataPredicate("kMDItemFSName LIKE 'ledger*'"))
        #expect(waitUntil(timeout: 20) { (try? reader.count(ledgers)) == 2 })
        // Written once the publisher wrote the host's own users.
        _ = try reader.connection.execute(
            "INSERT INTO mdq.identity (domain, user_name, uid, gids) VALUES ('alpha', 'ledgerkeeper', 41010, '{41010}')"
        )
        for role in ["ledgerkeeper", "intruder"] {
            try cluster.createRole(role)
            let granted = try Shell.run(MDQCommandTests.binary, ["shared", "grant", url, role])
            #expect(granted.status == 0, "\(granted.stderrText)")
            #expect(granted.stdoutText == "\(role) may search the shared index as the user \(role)\n")
        }
        // Run by root, on a machine whose root may say it is anyone: each
        // role is judged as itself.
        let own = cluster.url(url, user: "ledgerkeeper")
        let found = try Shell.run(
            MDQCommandTests.binary, ["--host", "alpha", "ledger"], environment: ["MDQ_SHARED": own])
        #expect(found.status == 0, "\(found.stderrText)")
        #expect(
            found.stdoutText == "alpha:\(root)/closed/ledger-closed.txt\nalpha:\(root)/open/ledger-open.txt\n",
            "\(found.stdoutText)")
        let intruder = try Shell.run(
            MDQCommandTests.binary, ["--host", "alpha", "ledger"],
            environment: ["MDQ_SHARED": cluster.url(url, user: "intruder"), "USER": "ledgerkeeper"])
        #expect(intruder.stdoutText == "alpha:\(root)/open/ledger-open.txt\n", "\(intruder.stdoutText)")
        let counted = try Shell.run(
            MDQCommandTests.binary, ["--host", "alpha", "--count", "ledger"],
            environment: ["MDQ_SHARED": cluster.url(url, user: "intruder")])
        #expect(counted.stdoutText == "1\n")
        let revoked = try Shell.run(MDQCommandTests.binary, ["shared", "revoke", url, "ledgerkeeper"])
        #expect(revoked.status == 0, "\(revoked.stderrText)")
        let refused = try Shell.run(
            MDQCommandTests.binary, ["--host", "alpha", "ledger"], environment: ["MDQ_SHARED": own])
        #expect(refused.status != 0)
        // Told what grants it, not the server's SQL.
        #expect(
            refused.stderrText.contains("role ledgerkeeper may not search the shared index")
                && refused.stderrText.contains("mdq shared grant URL ledgerkeeper")
                && !refused.stderrText.contains("LINE"), "\(refused.stderrText)")
        let unknown = try Shell.run(MDQCommandTests.binary, ["shared", "grant", url, "no-such-role"])
        #expect(unknown.status == 1)
        #expect(unknown.stderrText.contains("no role no-such-role"), "\(unknown.stderrText)")
    }
}

/// A folder kept by a live engine (hidden entries included) and published
/// into the shared index as host alpha.
final class PublishedFolder {
    let engine: LiveEngine
    let configuration: SharedPublisher.Configuration
    let publisher: SharedPublisher
    private let retained: RetainedScope

    init(_ root: String, url: String) throws {
        engine = try LiveEngine(crawlThreads: 2)
        retained = try engine.retain(ScopeRequest(path: FilePath(root), rules: ScopeRules(includeHidden: true)))
        var configuration = SharedPublisher.Configuration(url: url, hostName: "alpha", machineID: "machine-alpha")
        configuration.interval = 0.01
        self.configuration = configuration
        publisher = SharedPublisher(configuration: configuration, engine: engine)
        publisher.start()
    }

    func close() {
        publisher.stop()
        engine.release(retained)
        engine.shutdown()
    }
}
