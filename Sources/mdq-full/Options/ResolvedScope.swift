import MDQLive
import MetadataIndex
import SystemPackage

/// The scope options, read once: what a one-shot search crawls and what a
/// live query watches.
struct ResolvedScope {
    /// The scopes as a live query takes them.
    var scopes: [SearchScope]
    /// The container named by `--container`, if any.
    var container: UbiquityContainer?
    /// The folders a one-shot search crawls, without overlaps.
    var roots: [CrawlRoot]
    /// Hidden entries and the filesystem boundary.
    var crawlOptions: CrawlOptions
    /// `--exclude` names and globs, as raw bytes.
    var excludedFolders: [[UInt8]]
    /// Whether `/proc` and `/sys` are skipped when a scope contains them.
    var skipsPseudoFileSystems: Bool
    /// No scope was named: the current folder (answered by the index
    /// daemon when it indexes that folder, crawled otherwise: the same
    /// results either way).
    var isDefault: Bool
    /// `--everywhere`: everything the index daemon indexes (the daemon is
    /// then required).
    var everywhere: Bool
    /// Whether to ask the index daemon.
    var daemon: ScopeOptions.DaemonUse

    /// The scopes as the index daemon takes them (folder and rules); nil
    /// when a rule cannot be said to it (an `--exclude` glob).
    var daemonRequests: [ScopeRequest]? {
        guard let rules = daemonRules else { return nil }
        return roots.map { root in
            var rules = rules
            rules.excludedRootChildNames = root.excludedChildNames
            return ScopeRequest(path: root.path, rules: rules)
        }
    }

    /// The rules the options give (hidden items, excluded names, the
    /// filesystem boundary), as the index daemon takes them: applied to
    /// everything it indexes when no scope is named. Nil when a rule
    /// cannot be said to it (an `--exclude` glob).
    var daemonRules: ScopeRules? {
        guard excludesOnlyExactNames else { return nil }
        return ScopeRules(
            includeHidden: crawlOptions.includeHidden, excludedFolderNames: Set(excludedFolders),
            stayOnFileSystem: crawlOptions.stayOnFileSystem)
    }

    /// The scopes searched when the command names none: the current
    /// folder, as fd does, whether or not an index daemon runs (it only
    /// answers faster); `--everywhere` asks the daemon for all it indexes.
    ///
    /// Nothing here depends on where mdq was built or installed.
    static func defaultScopes(currentDirectory: FilePath) -> [SearchScope] {
        [.directory(currentDirectory)]
    }

    /// Whether every `--exclude` value is an exact name (what a live
    /// query's `excludedFolderNames` takes).
    var excludesOnlyExactNames: Bool {
        !excludedFolders.contains(where: FolderExclusion.isGlob)
    }
}
