import Foundation
import Glibc
import MDQShared
import TestSupport
import Testing

/// Hosts simulated on this machine as the users run them: each a
/// mount and UTS namespace with its own host name, its own loop-mounted
/// filesystem, its own `/etc/machine-id`, `/run/mdq` and `/var/lib/mdq`,
/// and a real `mdq system run --publish` in it; a user on one host runs
/// `mdq` inside that host's namespaces (`nsenter`).
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(
        if: PostgresCluster.isInstalled && getuid() == 0
            && ["/usr/bin/unshare", "/usr/bin/nsenter", "/sbin/mkfs.ext4", "/usr/bin/setpriv"].allSatisfy {
                FileManager.default.isExecutableFile(atPath: $0)
            }))
struct SimulatedHostsTests {
    /// One simulated host: a namespace held by a sleeping process.
    final class Host {
        let name: String
        let folder: String
        let mount: String
        let holder: Process
        var daemon: Process?

        /// - Parameter files: paths (inside its filesystem) made with it.
        init(_ name: String, in temp: TemporaryDirectory, files: [String], machineID: String? = nil) throws {
            self.name = name
            folder = try temp.folder(name).string
            mount = folder + "/mnt"
            for sub in ["mnt", "run", "state", "content"] { mkdir(folder + "/" + sub, 0o755) }
            for file in files {
                let path = folder + "/content/" + file
                try FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                FileManager.default.createFile(atPath: path, contents: Data(file.utf8))
            }
            try (machineID ?? UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())
                .write(toFile: folder + "/machine-id", atomically: true, encoding: .utf8)
            let made = try Shell.run(
                "/sbin/mkfs.ext4", ["-q", "-F", "-d", folder + "/content", folder + "/disk.img", "32M"])
            guard made.status == 0 else { throw POSIXError(.EIO) }
            for folder in ["/run/mdq", "/var/lib/mdq"] { mkdir(folder, 0o755) }
            holder = Process()
            holder.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
            holder.arguments = [
                "--mount", "--uts", "--propagation", "private", "sh", "-c",
                "hostname \(name) && mount -o loop \(folder)/disk.img \(mount) && "
                    + "mount --bind \(folder)/machine-id /etc/machine-id && mount --bind \(folder)/run /run/mdq && "
                    + "mount --bind \(folder)/state /var/lib/mdq && exec sleep infinity",
            ]
            holder.standardInput = FileHandle.nullDevice
            try holder.run()
            let mounted = waitUntil(timeout: 20) { (try? self.run(["mountpoint", "-q", self.mount]).status) == 0 }
            guard mounted else { throw POSIXError(.EIO) }
        }

        /// `command` run inside this host's namespaces (as `nobody` with
        /// `asUser`).
        func command(_ command: [String], asUser: Bool = false) -> [String] {
            ["-t", String(holder.processIdentifier), "-m", "-u", "--"]
                + (asUser ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []) + command
        }

        func run(_ command: [String], asUser: Bool = false, environment: [String: String]? = nil) throws
            -> Shell.Output
        {
            try Shell.run("/usr/bin/nsenter", self.command(command, asUser: asUser), environment: environment)
        }

        /// Starts its system index, publishing into `url` (as `hostName`,
        /// else its own name).
        func start(publishing url: String, as hostName: String? = nil, arguments: [String] = []) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/nsenter")
            process.arguments = command(
                [SimulatedHostsTests.full, "system", "run", "--mount", mount, "--publish", url]
                    + (hostName.map { ["--host-name", $0] } ?? []) + arguments)
            let log =
                FileHandle(forWritingAtPath: folder + "/log")
                ?? {
                    FileManager.default.createFile(atPath: folder + "/log", contents: nil)
                    return FileHandle(forWritingAtPath: folder + "/log")!
                }()
            process.standardOutput = log
            process.standardError = log
            process.standardInput = FileHandle.nullDevice
            try process.run()
            daemon = process
        }

        var log: String { (try? String(contentsOfFile: folder + "/log", encoding: .utf8)) ?? "" }

        func close() {
            if let daemon, daemon.isRunning {
                daemon.terminate()
                daemon.waitUntilExit()
            }
            holder.terminate()
            holder.waitUntilExit()
        }
    }

    static let full = URL(fileURLWithPath: MDQCommandTests.binary).deletingLastPathComponent()
        .appendingPathComponent("mdq-full").path

    @Test func usersOnOneHostSearchAnotherHostsSystemIndex() throws {
        let cluster = try #require(PostgresCluster.shared)
        let url = cluster.url(try cluster.createDatabase())
        try SharedSchema.migrate(PostgresConnection(url: url))
        let temp = try TemporaryDirectory()
        #expect(chmod(temp.path.string, 0o755) == 0)
        let alpha = try Host(
            "alpha", in: temp, files: ["docs/report-alpha.txt", "docs/photo-1.png", "private/secret-alpha.txt"])
        defer { alpha.close() }
        let beta = try Host("beta", in: temp, files: ["home/report-beta.txt", "home/photo-2.png"])
        defer { beta.close() }
        // What "other" may not see on alpha.
        #expect(try alpha.run(["chmod", "700", alpha.mount + "/private"]).status == 0)
        try alpha.start(publishing: url)
        // Beta's system index also searches the shared index for its users.
        try beta.start(publishing: url, arguments: ["--search", url])
        let reader = try SharedReader(connection: PostgresConnection(url: url))
        #expect(
            waitUntil(timeout: 60) { (try? reader.hosts().filter { $0.state == "live" }.count) == 2 },
            "alpha: \(alpha.log)\nbeta: \(beta.log)")

        // Its status says what it publishes, and how far it got.
        let status = try alpha.run([Self.full, "system", "status"])
        #expect(
            status.stdoutText.contains("publishing to the shared index as alpha: live (batch "),
            "\(status.stdoutText)\(status.stderrText)")
        let asUser = try alpha.run([Self.full, "system", "status"], asUser: true)
        #expect(asUser.stdoutText.contains("publishing to the shared index as alpha: live"), "\(asUser.stdoutText)")

        // A user on beta: alpha's entries from the shared index (as
        // alpha:/path, without what alpha's kernel would hide from them),
        // beta's own from beta's system index.
        let environment = ["MDQ_SHARED": url]
        let across = try beta.run(
            [Self.full, "--all-hosts", "report"], asUser: true, environment: environment)
        #expect(across.status == 0, "\(across.stderrText)")
        #expect(
            across.stdoutText
                == "\(beta.mount)/home/report-beta.txt\nalpha:\(alpha.mount)/docs/report-alpha.txt\n",
            "\(across.stdoutText)\(across.stderrText)")
        let hidden = try beta.run(
            [Self.full, "--host", "alpha", "--count", "secret"], asUser: true, environment: environment)
        #expect(hidden.stdoutText == "0\n", "\(hidden.stderrText)")
        let asRoot = try beta.run([Self.full, "--host", "alpha", "--count", "secret"], environment: environment)
        #expect(asRoot.stdoutText == "0\n", "root on beta is not root on alpha")

        // A file made on alpha is soon found from beta.
        #expect(try alpha.run(["touch", alpha.mount + "/docs/new-on-alpha.txt"]).status == 0)
        #expect(
            waitUntil(timeout: 20) {
                (try? beta.run(
                    [Self.full, "--host", "alpha", "--count", "new-on-alpha"], asUser: true,
                    environment: environment
                ).stdoutText) == "1\n"
            })

        // A file's owner, group and mode, from beta, are what alpha's own
        // index says.
        #expect(try alpha.run(["chown", "65534:100", alpha.mount + "/docs/report-alpha.txt"]).status == 0)
        #expect(try alpha.run(["chmod", "640", alpha.mount + "/docs/report-alpha.txt"]).status == 0)
        let owners = [
            "--attr", "kMDItemFSOwnerUserID", "--attr", "kMDItemFSOwnerGroupID", "--attr", "kMDQItemFSPOSIXPermissions",
        ]
        let local = "\(alpha.mount)/docs/report-alpha.txt\t65534\t100\t416\n"
        #expect(
            waitUntil(timeout: 20) {
                (try? alpha.run([Self.full] + owners + ["--onlyin", alpha.mount, "report-alpha"]).stdoutText) == local
            })
        var remote = ""
        #expect(
            waitUntil(timeout: 20) {
                remote =
                    (try? beta.run(
                        [Self.full, "--host", "alpha"] + owners + [
                            "kMDItemFSName == 'report-alpha*' && kMDItemFSOwnerUserID == 65534"
                        ], asUser: true,
                        environment: environment
                    ).stdoutText) ?? ""
                return remote == "alpha:" + local
            }, "\(remote)")

        // A live search on beta: beta from its own system index (printed
        // as its paths, as a one-shot search prints them), alpha from the
        // shared index. Beta's rows there are removed first (as the
        // database's owner): beta's results still come.
        _ = try reader.connection.execute(
            "DELETE FROM mdq.entry WHERE host_id = (SELECT host_id FROM mdq.host WHERE name = 'beta')")
        let live = try LiveProcess(
            "/usr/bin/nsenter",
            beta.command(
                [Self.full, "--live", "--interval", "0.05", "--all-hosts", "report"], asUser: true),
            environment: environment)
        defer { _ = live.interrupt() }
        #expect(live.waitForLine { $0 == "\(beta.mount)/home/report-beta.txt" }, "\(live.lines)\(live.errorText)")
        #expect(live.waitForLine { $0 == "alpha:\(alpha.mount)/docs/report-alpha.txt" }, "\(live.lines)")
        #expect(try beta.run(["touch", beta.mount + "/home/report-beta-2.txt"]).status == 0)
        #expect(live.waitForLine { $0 == "+ \(beta.mount)/home/report-beta-2.txt" }, "\(live.lines)")
        #expect(try alpha.run(["touch", alpha.mount + "/docs/report-alpha-2.txt"]).status == 0)
        #expect(live.waitForLine { $0 == "+ alpha:\(alpha.mount)/docs/report-alpha-2.txt" }, "\(live.lines)")
        #expect(try beta.run(["rm", beta.mount + "/home/report-beta-2.txt"]).status == 0)
        #expect(live.waitForLine { $0 == "- \(beta.mount)/home/report-beta-2.txt" }, "\(live.lines)")
        // The same for a user with no credential of their own: beta's
        // system index follows alpha for them.
        let followed = try LiveProcess(
            "/usr/bin/nsenter",
            beta.command([Self.full, "--live", "--interval", "0.05", "--all-hosts", "report"], asUser: true))
        defer { _ = followed.interrupt() }
        for line in ["\(beta.mount)/home/report-beta.txt", "alpha:\(alpha.mount)/docs/report-alpha-2.txt"] {
            #expect(followed.waitForLine { $0 == line }, "\(line): \(followed.lines)\(followed.errorText)")
        }
        #expect(try alpha.run(["touch", alpha.mount + "/docs/report-alpha-3.txt"]).status == 0)
        #expect(followed.waitForLine { $0 == "+ alpha:\(alpha.mount)/docs/report-alpha-3.txt" }, "\(followed.lines)")
        #expect(try beta.run(["touch", beta.mount + "/home/report-beta-3.txt"]).status == 0)
        #expect(followed.waitForLine { $0 == "+ \(beta.mount)/home/report-beta-3.txt" }, "\(followed.lines)")
        #expect(!followed.errorText.contains("warning"), "\(followed.errorText)")

        // A third machine that claims alpha's name is refused and says why.
        let clone = try Host("gamma", in: temp, files: ["x.txt"])
        defer { clone.close() }
        try clone.start(publishing: url, as: "alpha")
        #expect(
            waitUntil(timeout: 20) { clone.log.contains("is published by another machine") }, "\(clone.log)")
        #expect(try reader.hosts().map(\.name) == ["alpha", "beta"])
    }
}
