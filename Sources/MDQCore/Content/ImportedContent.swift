/// Where a scan reads what importers found inside files: the seam between
/// the per-entry scans here and the content index above (the daemon's
/// `ContentIndexer` over its SQLite store).
package protocol ImportedContent: Sendable {
    /// The stored values of a file, with its text when `text` is asked for;
    /// nil when it was never imported (or its import is being removed).
    func values(for key: FileKey, text: Bool) -> ImportedValues?
}
