package import MDQSystem
package import SystemPackage

/// Where a crawl's results go: the index builder, a one-shot matcher, and
/// (next) the watcher.
///
/// The crawler calls a sink from several threads at once; `Worker` is the
/// per-thread state it creates once per thread and passes back `inout`, so a
/// sink needs no lock for scratch buffers.
package protocol CrawlSink: Sendable {
    /// The sink's handle for a folder (an index entry id, a path).
    associatedtype Folder: Sendable
    /// Per-thread scratch state.
    associatedtype Worker

    func makeWorker() -> Worker

    /// A root was opened; returns its folder handle.
    func beginRoot(_ root: CrawlRoot, status: FileStatus) -> Folder

    /// The watch seam: called once a folder is open and *before* it is
    /// listed, so a watcher that adds its inotify watch here sees every entry
    /// created from now on; what already exists the listing then reports.
    /// Entries may thus arrive twice (event and listing): applying is idempotent.
    ///
    /// Returns false to leave the folder unlisted: a subfolder is opened by
    /// name after its parent's listing, and the name may lead to another
    /// folder by then (a rename); a sink that keeps folders by identity
    /// (the live engine) does not list that other folder as this one, and
    /// deals with the folder itself.
    func willList(_ folder: Folder, directory: FileDescriptor, worker: inout Worker) -> Bool

    /// The folder's entries. For each entry with `descend` set, in order,
    /// append the child folder's handle to `subfolders`, or nil to leave it
    /// uncrawled (exactly one element per such entry).
    func didList(
        _ folder: Folder, batch: borrowing CrawlBatch, directory: FileDescriptor,
        worker: inout Worker, subfolders: inout [Folder?]
    )

    /// The full path of a folder's child (or of the folder, `name` nil), for warnings.
    func path(of folder: Folder, child name: UnsafeRawBufferPointer?) -> FilePath

    /// A folder or entry was skipped.
    func warn(_ warning: CrawlWarning, worker: inout Worker)

    /// The thread has no more work; flush anything buffered in `worker`.
    func finish(worker: inout Worker)

    /// A folder could not be opened or fully listed (besides the warning):
    /// what the sink knew of its contents is not confirmed by this crawl.
    func didFail(_ folder: Folder, error: Errno, worker: inout Worker)

    /// Some of a folder's entries were listed without their attributes
    /// (besides the warning): a folder readable but not searchable.
    func didMissAttributes(in folder: Folder, error: Errno, worker: inout Worker)

    /// Whether the sink wants nothing more (a one-shot search's `limit` is
    /// reached): the crawler then opens no further folder and returns soon.
    var isFinished: Bool { get }
}

extension CrawlSink {
    package func finish(worker: inout Worker) {}
    package func didFail(_ folder: Folder, error: Errno, worker: inout Worker) {}
    package func didMissAttributes(in folder: Folder, error: Errno, worker: inout Worker) {}
    package var isFinished: Bool { false }
}
