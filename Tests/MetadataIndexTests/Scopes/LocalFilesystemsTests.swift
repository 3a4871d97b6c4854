import Glibc
import SystemPackage
import TestSupport
import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// Which filesystems the system index covers when none are named: the disk
/// filesystems of the mount table, each device once, none where updatedb
/// prunes, none of the memory, network or pseudo kinds.
@Suite struct LocalFilesystemsTests {
    @Test func diskFilesystemsOnceEachOutsidePrunedPaths() {
        let mountinfo = """
            22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
            23 22 0:21 / /proc rw,nosuid - proc proc rw
            24 22 0:22 / /sys rw - sysfs sysfs rw
            25 22 0:5 / /dev rw - devtmpfs udev rw
            26 22 253:2 / /home rw,relatime - xfs /dev/vda2 rw
            27 22 0:30 / /tmp rw - tmpfs tmpfs rw
            28 22 253:3 / /media/usb rw - ext4 /dev/sdb1 rw
            29 26 253:2 /alice /srv/alice rw - xfs /dev/vda2 rw
            30 22 253:4 / /var/lib/data\\040store rw shared:5 master:2 - btrfs /dev/vda4 rw
            31 22 0:40 / /mnt/nfs rw - nfs4 server:/export rw
            32 22 253:5 / /data rw - fuseblk /dev/sdc1 rw
            33 22 253:1 / /var/lib/docker/overlay rw - ext4 /dev/vda1 rw
            """
        #expect(
            LocalFilesystems.parse(mountinfo).map(\.string) == ["/", "/home", "/var/lib/data store"])
    }
}

/// The system index's configuration file: updatedb.conf's syntax, each
/// mistake named with its line, prunes applied to discovery and to the
/// scopes' rules.
@Suite struct SystemConfigurationTests {
    let file = FilePath("/etc/mdq/system.conf")

    @Test func settingsAreRead() throws {
        let configuration = try SystemConfiguration.parse(
            """
            # mdq's system index
              PRUNE_BIND_MOUNTS = "yes"
            PRUNEFS="btrfs  XFS"
            PRUNEPATHS = "/var/cache /srv/scratch/ /home/.ecryptfs"
            PRUNENAMES = ".git .snapshot"

            MOUNTS = "/ /home"
            MAX_QUERY_SECONDS = "5"
            MAX_QUERIES_PER_USER = "2"
            MAX_SUBSCRIPTIONS_PER_USER = "3"
            MAX_CONNECTIONS_PER_USER = "9"
            CONTENT = "Yes"
            """, path: file)
        #expect(configuration.content)
        let limits = configuration.limits
        #expect(limits.maxBudget == 5 && limits.queriesPerUser == 2, "\(limits)")
        #expect(limits.subscriptionsPerUser == 3 && limits.connectionsPerUser == 9, "\(limits)")
        #expect(configuration.prunedTypes == ["btrfs", "xfs"])
        #expect(configuration.prunedPaths == ["/var/cache", "/srv/scratch", "/home/.ecryptfs"])
        #expect(configuration.prunedNames == [Array(".git".utf8), Array(".snapshot".utf8)])
        #expect(configuration.mounts == [FilePath("/"), FilePath("/home")])
        // A filesystem's rules hold the pruned paths strictly inside it.
        let root = configuration.rules(for: "/")
        #expect(
            root.prunedFolderPaths
                == Set(["/var/cache", "/srv/scratch", "/home/.ecryptfs"].map { Array($0.utf8) }))
        #expect(root.includeHidden && root.stayOnFileSystem)
        #expect(root.prunedFolderNames == configuration.prunedNames && root.excludedFolderNames.isEmpty)
        #expect(configuration.rules(for: "/home").prunedFolderPaths == [Array("/home/.ecryptfs".utf8)])
        #expect(configuration.rules(for: "/var/cache").prunedFolderPaths.isEmpty, "a mount named is indexed")
        // What is not set keeps its standard value.
        let empty = try SystemConfiguration.parse("# nothing\n", path: file)
        #expect(empty == .standard && !empty.content)
        #expect(try !SystemConfiguration.parse("CONTENT = \"no\"", path: file).content)
    }

    @Test(arguments: [
        ("PRUNEPATHS = /tmp", "1: the value of PRUNEPATHS must be in double quotes"),
        ("\n\nPRUNEPATHS = \"tmp\"", "3: PRUNEPATHS holds \"tmp\", which is not an absolute path"),
        ("PRUNENAMES = \"a/b\"", "1: PRUNENAMES holds \"a/b\""),
        ("PRUNE_BIND_MOUNTS = \"no\"", "1: PRUNE_BIND_MOUNTS can only be \"yes\""),
        ("PRUNEFS = \"nfs\"\nPRUNEFS = \"ext4\"", "2: PRUNEFS is set twice"),
        ("UPDATEDB = \"x\"", "1: unknown setting UPDATEDB"),
        ("just words", "1: expected NAME = \"VALUE\""),
        ("MOUNTS = \"home\"", "1: MOUNTS holds \"home\""),
        ("PRUNEPATHS = \"/a\" # scratch", "1: the value of PRUNEPATHS is followed by \"# scratch\""),
        ("PRUNEPATHS = \"/a\" \"/b\"", "1: the value of PRUNEPATHS is followed by"),
        ("PRUNEPATHS = \"/a", "1: the value of PRUNEPATHS has no closing double quote"),
        ("PRUNENAMES = \"*.tmp\"", "1: PRUNENAMES holds \"*.tmp\": names are matched whole"),
        ("CONTENT = \"sometimes\"", "1: CONTENT must be \"yes\" or \"no\""),
        ("CONTENT = \"\"", "1: CONTENT must be \"yes\" or \"no\""),
        ("MAX_QUERY_SECONDS = \"0\"", "1: MAX_QUERY_SECONDS must be one whole number from 1 to 1000000"),
        ("MAX_QUERIES_PER_USER = \"2 3\"", "1: MAX_QUERIES_PER_USER must be one whole number"),
        ("MAX_CONNECTIONS_PER_USER = \"1e9\"", "1: MAX_CONNECTIONS_PER_USER must be one whole number"),
        ("\u{1B}]0;title\u{07}", "1: expected NAME = \"VALUE\", found \" ]0;title \""),
    ])
    func mistakesAreNamedWithTheirLine(text: String, message: String) {
        #expect {
            _ = try SystemConfiguration.parse(text, path: file)
        } throws: { error in
            "\(error)".hasPrefix("/etc/mdq/system.conf:" + message)
        }
    }

    /// Windows line ends and a byte order mark are read as plain lines.
    @Test func windowsLineEndsAndAByteOrderMark() throws {
        let configuration = try SystemConfiguration.parse(
            "\u{FEFF}# comment\r\nPRUNEPATHS = \"/a /b\"\r\nPRUNENAMES = \".git\"\r\n", path: file)
        #expect(configuration.prunedPaths == ["/a", "/b"] && configuration.prunedNames == [Array(".git".utf8)])
    }

    /// A FIFO (or a device) named as the file is refused at once, not read.
    @Test func aFileThatIsNotRegularIsRefused() throws {
        let temp = try TemporaryDirectory()
        let fifo = temp.path.appending("fifo.conf")
        #expect(mkfifo(fifo.string, 0o600) == 0)
        #expect {
            _ = try SystemConfiguration.read(from: fifo)
        } throws: { error in
            "\(error)".contains("is not a regular file")
        }
    }

    /// The file the package installs says what mdq does without one.
    @Test func theShippedFileIsTheStandardSettings() throws {
        let repository = FilePath(#filePath).removingLastComponent().removingLastComponent().removingLastComponent()
            .removingLastComponent()
        let shipped = repository.appending("Packaging/system.conf")
        #expect(try SystemConfiguration.read(from: shipped) == .standard)
    }

    /// No file at the default place: the standard settings. A file named
    /// that is missing is an error naming it.
    @Test func aMissingFileNamedIsAnError() throws {
        let temp = try TemporaryDirectory()
        let missing = temp.path.appending("none.conf")
        #expect {
            _ = try SystemConfiguration.read(from: missing)
        } throws: { error in
            "\(error)".contains("cannot read the system index configuration") && "\(error)".contains(missing.string)
        }
        _ = try temp.file("big.conf", contents: String(repeating: "# padding\n", count: 200_000))
        #expect(throws: MetadataError.self) { try SystemConfiguration.read(from: temp.path.appending("big.conf")) }
    }

    /// Discovery applies PRUNEFS and PRUNEPATHS.
    @Test func discoveryAppliesThePrunes() throws {
        let mountinfo = """
            22 1 253:1 / / rw - ext4 /dev/vda1 rw
            26 22 253:2 / /home rw - xfs /dev/vda2 rw
            27 22 253:3 / /srv/data rw - ext4 /dev/vdb1 rw
            28 22 253:4 / /srv/scratch/a rw - btrfs /dev/vdc1 rw
            """
        let configuration = try SystemConfiguration.parse(
            "PRUNEFS = \"xfs\"\nPRUNEPATHS = \"/srv/scratch\"", path: file)
        #expect(LocalFilesystems.parse(mountinfo, configuration: configuration).map(\.string) == ["/", "/srv/data"])
        // Named mounts: a pruned type is never indexed; nothing mounted waits.
        var named = configuration
        named.mounts = ["/home", "/srv/data", "/srv/empty"]
        let (scopes, waiting) = IndexDaemon.systemScopes(named, mountTable: mountinfo)
        #expect(scopes.map(\.path.string) == ["/srv/data"] && waiting == ["/srv/empty"])
        // Each filesystem once: named twice, or again through a bind mount.
        named.mounts = ["/srv/data", "/srv/data/", "/srv/bound"]
        let bound = mountinfo + "\n29 22 253:3 / /srv/bound rw - ext4 /dev/vdb1 rw"
        #expect(IndexDaemon.systemScopes(named, mountTable: bound).scopes.map(\.path.string) == ["/srv/data"])
    }
}
