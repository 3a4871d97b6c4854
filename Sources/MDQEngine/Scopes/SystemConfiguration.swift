import Glibc
package import MDQCore
package import MDQLive
package import MDQSystem
package import SystemPackage

/// What the system index covers: its configuration file
/// (`/etc/mdq/system.conf`), in `updatedb.conf(5)`'s syntax so that
/// prunes can be copied from there.
///
/// Each line is blank, a comment (`#` first), or `NAME = "VALUE"`, the
/// value a list separated by spaces:
///
/// - `PRUNEFS`: filesystem types never indexed, on top of every type
///   that is not kept on a disk (network, memory and pseudo filesystems
///   are never indexed).
/// - `PRUNEPATHS`: absolute paths of folders whose contents are not
///   indexed (the folders themselves are); no filesystem mounted at or
///   under one is discovered. A path named as a mount is still indexed.
/// - `PRUNENAMES`: folder names whose contents are not indexed, at any
///   depth (`.snapshot`).
/// - `PRUNE_BIND_MOUNTS`: `yes` (the only setting mdq has: each
///   filesystem is indexed once, from its own root).
/// - `MOUNTS`: mdq's own; when set, exactly these mount points are
///   indexed (as `--mount`), and the mount table is not searched for
///   more.
/// - What one user may spend of it (`ServiceLimits`), mdq's own:
///   `MAX_QUERY_SECONDS` (the ceiling on any query's budget),
///   `MAX_QUERIES_PER_USER`, `MAX_SUBSCRIPTIONS_PER_USER`,
///   `MAX_CONNECTIONS_PER_USER`, each a whole number.
/// - `PUBLISH`: the shared index across hosts to publish this host's
///   entries into (a `postgresql://USER@HOST:PORT/DATABASE` URL, or
///   libpq's `key=value` words), and `HOST_NAME`, this host's name there
///   (default: its host name). `SHARED`: the shared index users of this
///   host search (`mdq --host`, `mdq hosts`), a URL each user's own
///   credentials complete (`~/.pgpass`): never one with a password, as
///   every user reads this file. `SEARCH`: the shared index the system
///   index searches for its users itself (`mdq --host`, `--all-hosts`),
///   as a trusted role whose credential root alone holds, over
///   connections it keeps open.
/// - `CONTENT`: `yes` to import what is inside files (text and the
///   attributes importers read), in confined workers run as `nobody`:
///   each user is answered it for the files that user may read, and a
///   publisher (`PUBLISH`) sends each file's words. Default `no`.
package struct SystemConfiguration: Sendable, Equatable {
    package var prunedTypes: Set<String>
    package var prunedPaths: [String]
    package var prunedNames: Set<[UInt8]>
    package var mounts: [FilePath]?
    package var limits = ServiceLimits.system
    /// The shared index to publish into (`PUBLISH`), and this host's name
    /// there (`HOST_NAME`).
    package var publish: String?
    package var hostName: String?
    /// The shared index this host's users search (`SHARED`).
    package var shared: String?
    /// The shared index the system index searches for its users (`SEARCH`).
    package var search: String?
    /// Whether what is inside files is imported (`CONTENT`).
    package var content = false

    /// Where the file is looked for when none is named.
    static let defaultPath = FilePath("/etc/mdq/system.conf")

    /// This host's name in the shared index: `HOST_NAME` in the system
    /// index's configuration, else its host name.
    package static var sharedHostName: String? {
        (try? read(from: nil).hostName) ?? ProcessEnvironment.shortHostName
    }

    /// The settings without a file: updatedb's default prunes, where
    /// removable and runtime filesystems are mounted, and snapshot folders.
    package static let standard = SystemConfiguration(
        prunedTypes: [],
        prunedPaths: ["/tmp", "/var/tmp", "/var/spool", "/media", "/mnt", "/run", "/proc", "/sys", "/dev"],
        prunedNames: [Array(".snapshot".utf8)], mounts: nil)

    /// The longest file read (a configuration is a few lines).
    static let sizeLimit = 1 << 20

    /// Reads the file at `path`; the standard settings when `path` is the
    /// default one and does not exist.
    ///
    /// - Throws: `MetadataError.configuration` naming the file, and the
    ///   line and what is wrong with it.
    package static func read(from path: FilePath?) throws(MetadataError) -> SystemConfiguration {
        let file = path ?? defaultPath
        // A FIFO or a device would block the read or never end.
        var info = stat()
        if syscallResult({ lstat(file.string, &info) }).isSuccess, info.st_mode & S_IFMT != S_IFREG,
            !syscallResult({ stat(file.string, &info) }).isSuccess || info.st_mode & S_IFMT != S_IFREG
        {
            throw MetadataError.configuration("the system index configuration is not a regular file", path: file)
        }
        let bytes: [UInt8]
        do {
            bytes = try readWholeFile(file, limit: sizeLimit)
        } catch .noSuchFileOrDirectory where path == nil {
            return .standard
        } catch .fileTooLarge {
            throw MetadataError.configuration(
                "the system index configuration is larger than \(sizeLimit / 1024) KiB", path: file)
        } catch {
            throw MetadataError.configuration(
                "cannot read the system index configuration", path: file, underlying: error)
        }
        return try parse(String(decoding: bytes, as: UTF8.self), path: file)
    }

    /// Parses a configuration's text; what it does not set keeps its
    /// standard value.
    package static func parse(_ text: String, path: FilePath) throws(MetadataError) -> SystemConfiguration {
        var configuration = standard
        var seen: Set<String> = []
        // A byte order mark, and Windows line ends, are not the file's text.
        let body = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        let lines = body.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        for (number, rawLine) in lines.enumerated() {
            func fail(_ message: String) -> MetadataError {
                MetadataError.configuration(message.replacingControlCharacters(), path: path, line: number + 1)
            }
            let line = rawLine.trimmingSpaces
            guard !line.isEmpty, !line.hasPrefix("#") else { continue }
            guard let equals = line.firstIndex(of: "=") else {
                throw fail("expected NAME = \"VALUE\", found \"\(line)\"")
            }
            let name = String(line[..<equals].trimmingSpaces)
            let quoted = line[line.index(after: equals)...].trimmingSpaces
            guard quoted.count >= 2, quoted.hasPrefix("\"") else {
                throw fail("the value of \(name) must be in double quotes, as in \(name) = \"...\"")
            }
            guard let closing = quoted.dropFirst().firstIndex(of: "\"") else {
                throw fail("the value of \(name) has no closing double quote")
            }
            guard quoted.index(after: closing) == quoted.endIndex else {
                throw fail(
                    "the value of \(name) is followed by \"\(quoted[quoted.index(after: closing)...].trimmingSpaces)\" "
                        + "(one quoted value per line, and comments on lines of their own)")
            }
            guard seen.insert(name).inserted else { throw fail("\(name) is set twice") }
            let words = quoted.dropFirst().dropLast().split(whereSeparator: { $0 == " " || $0 == "\t" }).map(
                String.init)
            switch name {
            case "PRUNEFS":
                configuration.prunedTypes = Set(words.map { $0.lowercased() })
            case "PRUNEPATHS":
                for word in words where !word.hasPrefix("/") {
                    throw fail("PRUNEPATHS holds \"\(word)\", which is not an absolute path")
                }
                configuration.prunedPaths = words.map { FilePath($0).lexicallyNormalized().string }
            case "PRUNENAMES":
                for word in words where word.contains("/") {
                    throw fail("PRUNENAMES holds \"\(word)\", which is a path, not a folder name")
                }
                for word in words where word.contains(where: { "*?[".contains($0) }) {
                    throw fail("PRUNENAMES holds \"\(word)\": names are matched whole, not as patterns")
                }
                configuration.prunedNames = Set(words.map { Array($0.utf8) })
            case "PRUNE_BIND_MOUNTS":
                guard words.count == 1, ["yes", "1", "true"].contains(words[0].lowercased()) else {
                    throw fail(
                        "PRUNE_BIND_MOUNTS can only be \"yes\": mdq indexes each filesystem once, from its own root")
                }
            case "MOUNTS":
                for word in words where !word.hasPrefix("/") {
                    throw fail("MOUNTS holds \"\(word)\", which is not an absolute path")
                }
                configuration.mounts = words.isEmpty ? nil : words.map { FilePath($0).lexicallyNormalized() }
            case "PUBLISH":
                guard !words.isEmpty else { throw fail("PUBLISH needs the shared index's URL") }
                configuration.publish = words.joined(separator: " ")
            case "SHARED":
                guard words.count == 1 else { throw fail("SHARED takes one URL") }
                configuration.shared = words[0]
            case "SEARCH":
                guard !words.isEmpty else { throw fail("SEARCH needs the shared index's URL") }
                configuration.search = words.joined(separator: " ")
            case "HOST_NAME":
                guard words.count == 1, words[0].utf8.count <= 63,
                    words[0].first.map({ $0.isASCII && ($0.isLetter || $0.isNumber) }) == true,
                    words[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
                else {
                    throw fail(
                        "HOST_NAME must be one name of letters, digits, '.', '_' and '-' (at most 63, starting "
                            + "with a letter or digit)")
                }
                configuration.hostName = words[0]
            case "CONTENT":
                switch words.count == 1 ? words[0].lowercased() : "" {
                case "yes", "true", "1": configuration.content = true
                case "no", "false", "0": configuration.content = false
                default: throw fail("CONTENT must be \"yes\" or \"no\"")
                }
            case "MAX_QUERY_SECONDS", "MAX_QUERIES_PER_USER", "MAX_SUBSCRIPTIONS_PER_USER",
                "MAX_CONNECTIONS_PER_USER":
                guard words.count == 1, let number = Int(words[0]), number >= 1, number <= 1_000_000 else {
                    throw fail("\(name) must be one whole number from 1 to 1000000")
                }
                switch name {
                case "MAX_QUERY_SECONDS": configuration.limits.maxBudget = Double(number)
                case "MAX_QUERIES_PER_USER": configuration.limits.queriesPerUser = number
                case "MAX_SUBSCRIPTIONS_PER_USER": configuration.limits.subscriptionsPerUser = number
                default: configuration.limits.connectionsPerUser = number
                }
            default:
                throw fail(
                    "unknown setting \(name) (known: PRUNEFS, PRUNEPATHS, PRUNENAMES, PRUNE_BIND_MOUNTS, MOUNTS, "
                        + "MAX_QUERY_SECONDS, MAX_QUERIES_PER_USER, MAX_SUBSCRIPTIONS_PER_USER, "
                        + "MAX_CONNECTIONS_PER_USER, PUBLISH, HOST_NAME, SHARED, SEARCH, CONTENT)")
            }
        }
        return configuration
    }

    /// Whether the path lies at or under a pruned path.
    package func prunes(_ path: String) -> Bool {
        prunedPaths.contains { path == $0 || $0 == "/" || path.hasPrefix($0 + "/") }
    }

    /// The scope rules of the filesystem mounted at `mount`: hidden entries
    /// included, other filesystems left to their own scopes, the pruned
    /// names, and the pruned paths that lie strictly inside it.
    package func rules(for mount: FilePath) -> ScopeRules {
        let root = mount.lexicallyNormalized().string
        let prefix = root == "/" ? "/" : root + "/"
        let inside = prunedPaths.filter { $0.hasPrefix(prefix) && $0 != root }
        return ScopeRules(
            includeHidden: true, stayOnFileSystem: true, prunedFolderPaths: Set(inside.map { Array($0.utf8) }),
            prunedFolderNames: prunedNames)
    }

    /// The system index's scope of the filesystem mounted at `mount`.
    package func scope(_ mount: FilePath) -> ScopeRequest {
        ScopeRequest(path: mount.lexicallyNormalized(), rules: rules(for: mount))
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" || first == "\r" { result.removeFirst() }
        while let last = result.last, last == " " || last == "\t" || last == "\r" { result.removeLast() }
        return result
    }
}
