import Testing

/// The suites of this target, one after another: they set the containers
/// root and the default container for the whole process (which
/// `FileManager`'s ubiquity methods and queries without a container read)
/// and run live queries, whose inotify watcher is process-global. Suites of
/// the other test targets may run alongside; these tests assert only what
/// holds whatever else the process is doing.
@Suite(.serialized) struct CompatSuites {}
