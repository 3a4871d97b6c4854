import Testing

/// The suites that use inotify in this process. libinotifytools is
/// process-global (one watcher thread serves every engine), so these suites
/// run one after another rather than alongside each other.
@Suite(.serialized) struct LiveSuites {}
