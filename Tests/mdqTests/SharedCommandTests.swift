import Foundation
import MDQShared
import TestSupport
import Testing

/// `mdq shared init|migrate|status URL` against a private PostgreSQL
/// cluster: what each says, and its exit status.
@Suite(.enabled(if: PostgresCluster.isInstalled, "PostgreSQL 15 is not installed (Scripts/bootstrap installs it)"))
struct SharedCommandTests {
    let cluster: PostgresCluster

    init() throws {
        cluster = try #require(PostgresCluster.shared, "the private PostgreSQL cluster did not start")
    }

    func mdq(_ arguments: [String]) throws -> Shell.Output {
        try Shell.run(MDQCommandTests.binary, arguments)
    }

    func database(_ options: String = "ENCODING 'UTF8' LOCALE 'C.UTF-8' TEMPLATE template0") throws -> String {
        cluster.url(try cluster.createDatabase(options: options))
    }

    @Test func initThenMigrateThenStatus() throws {
        let url = try database()
        let notYet = try mdq(["shared", "migrate", url])
        #expect(notYet.status == 1)
        #expect(
            notYet.stderrText.contains("holds no shared index: 'mdq shared init' creates it"), "\(notYet.stderrText)")
        let created = try mdq(["shared", "init", url])
        #expect(created.status == 0, "\(created.stderrText)")
        #expect(created.stdoutText == "created the shared index (schema version \(SharedSchema.current))\n")
        let again = try mdq(["shared", "init", url])
        #expect(again.status == 0)
        #expect(again.stdoutText.contains("already there"))
        let migrated = try mdq(["shared", "migrate", url])
        #expect(migrated.status == 0)
        #expect(migrated.stdoutText.contains("up to date"))
        let status = try mdq(["shared", "status", url])
        #expect(status.status == 0)
        #expect(
            status.stdoutText.contains("schema version: \(SharedSchema.current) (this mdq: \(SharedSchema.current))"))
        #expect(status.stdoutText.contains("hosts: 0"))
    }

    @Test func aDatabaseThatWouldLoseNamesIsRefusedWithWhatToDo() throws {
        let url = try database("ENCODING 'UTF8' LOCALE 'C' TEMPLATE template0")
        let refused = try mdq(["shared", "init", url])
        #expect(refused.status == 1)
        #expect(refused.stderrText.contains("sees no letter outside ASCII"), "\(refused.stderrText)")
        #expect(refused.stderrText.contains("LOCALE 'C.UTF-8'"))
    }

    @Test func anUnreachableDatabaseOrNoURLSaysSo() throws {
        let unreachable = try mdq(["shared", "status", "postgresql:///x?host=/nonexistent-folder&connect_timeout=2"])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderrText.contains("cannot connect to the shared index"), "\(unreachable.stderrText)")
        // A search and the hosts say it once, not "the shared index: cannot
        // connect to the shared index".
        for arguments in [["--host", "alpha", "report"], ["hosts"]] {
            let search = try Shell.run(
                MDQCommandTests.binary, arguments,
                environment: ["MDQ_SHARED": "postgresql:///x?host=/nonexistent-folder&connect_timeout=2"])
            #expect(search.status == 1, "\(arguments): \(search.stderrText)")
            #expect(search.stderrText.hasPrefix("mdq: cannot connect to the shared index: "), "\(search.stderrText)")
        }
        let noURL = try mdq(["shared", "init"])
        #expect(noURL.status == 2)
    }
}
