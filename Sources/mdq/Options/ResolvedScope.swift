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

    /// The scopes searched when the command names none: the current
    /// folder, as fd does.
    ///
    /// Nothing here depends on where mdq was built or installed. This is
    /// the one place that decides: once the index daemon exists (SPEC §7),
    /// it will answer with the scopes the daemon keeps, when one runs.
    static func defaultScopes(currentDirectory: FilePath) -> [SearchScope] {
        [.directory(currentDirectory)]
    }

    /// Whether every `--exclude` value is an exact name (what a live
    /// query's `excludedFolderNames` takes).
    var excludesOnlyExactNames: Bool {
        !excludedFolders.contains(where: FolderExclusion.isGlob)
    }
}
