public import SystemPackage

/// The one error type mdq's library throws.
///
/// Every error carries a `code` to switch on, a one-line `message` for people,
/// and where it applies the `path` involved, the underlying `Errno`, and for
/// query syntax errors the byte `offset` of the offending text in `source`.
public struct MetadataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this is. A struct over a private enum, so codes can
    /// be added without breaking `switch`es in client code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: Hashable, Sendable {
            case querySyntax
            case scopeNotFound
            case scopeUnreadable
            case scopeNotFolder
            case itemNotFound
            case itemUnreadable
            case containerNotFound
            case notWritable
            case watcherUnavailable
            case invalidArgument
            case persistence
            case daemon
            case importUnavailable
            case tooExpensive
            case hostOffline
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The query text cannot be used: malformed, or a construct metadata
        /// queries do not support (`SUBQUERY`, `$variables`, functions, key
        /// paths). `offset` points at the mistake in `source`. Made by
        /// `MetadataError.syntax(_:at:in:)`.
        public static let querySyntax = Code(.querySyntax)
        /// A scope root does not exist; `path` names it. Made by `scope(_:path:)`.
        public static let scopeNotFound = Code(.scopeNotFound)
        /// A scope root exists but cannot be read; `path` and `underlying` say
        /// why. Made by `scope(_:path:)`.
        public static let scopeUnreadable = Code(.scopeUnreadable)
        /// A scope root is not a folder. Made by `scope(_:path:)`.
        public static let scopeNotFolder = Code(.scopeNotFolder)
        /// A single file or folder asked for by path (`mdq ls`,
        /// `MetadataItem(path:)`) does not exist. Made by `item(_:path:)`.
        public static let itemNotFound = Code(.itemNotFound)
        /// A single file or folder asked for by path cannot be read. Made by
        /// `item(_:path:)`.
        public static let itemUnreadable = Code(.itemUnreadable)
        /// A ubiquity container could not be found; `path` is the one tried.
        /// Made by `containerNotFound(_:path:)`.
        public static let containerNotFound = Code(.containerNotFound)
        /// A file mdq keeps (such as a container's external documents
        /// registry) could not be written. Made by `notWritable(_:path:underlying:)`.
        public static let notWritable = Code(.notWritable)
        /// inotify could not be started. Made by `watcherUnavailable(_:path:underlying:)`.
        public static let watcherUnavailable = Code(.watcherUnavailable)
        /// An API argument is out of range or inconsistent. Made by
        /// `invalidArgument(_:path:)`.
        public static let invalidArgument = Code(.invalidArgument)
        /// A snapshot or state file of the daemon could not be written, or
        /// was refused when read (`message` says why); `path` names it.
        public static let persistence = Code(.persistence)
        /// The index daemon could not be reached, refused a request, or
        /// went away; `message` says which.
        public static let daemon = Code(.daemon)
        /// The importers cannot run (their worker executable is missing).
        public static let importUnavailable = Code(.importUnavailable)
        /// A query ran past its budget (time, or backtracking steps of a
        /// `MATCHES` pattern on one name); `message` says what to do.
        public static let tooExpensive = Code(.tooExpensive)
        /// A host of a search across hosts is offline: its results are
        /// kept as they were at its last contact (stale) and catch up when
        /// it is back; `host` names it, `message` says since when.
        public static let hostOffline = Code(.hostOffline)

        public var description: String {
            switch value {
            case .querySyntax: "query syntax"
            case .scopeNotFound: "scope not found"
            case .scopeUnreadable: "scope unreadable"
            case .scopeNotFolder: "scope not a folder"
            case .itemNotFound: "item not found"
            case .itemUnreadable: "item unreadable"
            case .containerNotFound: "container not found"
            case .notWritable: "not writable"
            case .watcherUnavailable: "watcher unavailable"
            case .invalidArgument: "invalid argument"
            case .persistence: "persistence"
            case .daemon: "daemon"
            case .importUnavailable: "importers unavailable"
            case .tooExpensive: "too expensive"
            case .hostOffline: "host offline"
            }
        }
    }

    public var code: Code
    /// One line, for people.
    public var message: String
    /// The file or folder involved, if any.
    public var path: FilePath?
    /// The system error behind this one, if any.
    public var underlying: Errno?
    /// For `.querySyntax`: the byte offset of the offending text in `source`.
    public var offset: Int?
    /// For `.querySyntax`: the query text as given.
    public var source: [UInt8]?
    /// For `.hostOffline`: the host, by its name in the shared index.
    public var host: String?
    /// For an error of `hostScope(_:path:)`: what the shared index said
    /// of the folder, as the protocol passes it on.
    package var hostScope: String?
    /// For `.daemon`: why the daemon did not answer, as a value its
    /// callers decide on (the message is for people).
    package var refusal: DaemonRefusal?

    public init(
        code: Code,
        message: String,
        path: FilePath? = nil,
        underlying: Errno? = nil,
        offset: Int? = nil,
        source: [UInt8]? = nil
    ) {
        self.code = code
        self.message = message
        self.path = path
        self.underlying = underlying
        self.offset = offset
        self.source = source
    }

    /// One line: the message, the path and the system error. Syntax errors add
    /// two more lines: the query and a caret under the offending character.
    public var description: String {
        var text = message
        if let path { text += ": \(path.string)" }
        if let underlying { text += " (\(underlying.description))" }
        if let offset, let source {
            text += "\n  " + String(decoding: source, as: UTF8.self).replacingControlCharacters()
            text += "\n  " + String(repeating: " ", count: Self.column(of: offset, in: source)) + "^"
        }
        return text
    }

    /// The terminal column of a byte offset: the display width of the text
    /// before it, counted per character (grapheme cluster): two columns for
    /// East Asian wide and fullwidth characters and emoji shown as emoji,
    /// one for the rest (each byte that is not UTF-8 shows as one U+FFFD).
    static func column(of offset: Int, in source: [UInt8]) -> Int {
        let prefix = source.prefix(max(0, min(offset, source.count)))
        return String(decoding: prefix, as: UTF8.self).reduce(0) { $0 + DisplayWidth.columns(of: $1) }
    }
}

extension String {
    /// Tabs, newlines and other control characters (an escape sequence
    /// would drive the terminal) shown as spaces, so a caret under a query
    /// lines up.
    package func replacingControlCharacters() -> String {
        String(unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
    }
}

extension MetadataError {
    /// A query the parsers reject: `message` says what was expected,
    /// `offset` is the byte offset of the offending text in `source` (the
    /// caret goes under it).
    package static func syntax(_ message: String, at offset: Int, in source: [UInt8]) -> MetadataError {
        MetadataError(code: .querySyntax, message: message, offset: offset, source: source)
    }

    /// A query rejected where there is no query text to point into (a
    /// predicate built in Swift), or a pattern error whose `offset` is
    /// relative to the pattern and is moved into the query by the parser.
    package static func syntax(_ message: String, offset: Int? = nil) -> MetadataError {
        MetadataError(code: .querySyntax, message: message, offset: offset)
    }

    /// The error for a scope folder that cannot be opened: not found, not a
    /// folder, or unreadable, naming the path.
    package static func scope(_ error: Errno, path: FilePath) -> MetadataError {
        switch error {
        case .noSuchFileOrDirectory:
            MetadataError(code: .scopeNotFound, message: "scope folder does not exist", path: path, underlying: error)
        case .notDirectory:
            MetadataError(code: .scopeNotFolder, message: "scope is not a folder", path: path, underlying: error)
        default:
            MetadataError(code: .scopeUnreadable, message: "cannot read scope folder", path: path, underlying: error)
        }
    }

    /// The error for a folder of another host (`path` is `NAME:/path`) that
    /// its host would not let the user search, by what the shared index
    /// says of it (`problem`: `ENOENT`, `ENOTDIR`, `EACCES`,
    /// `ENAMETOOLONG` as `scope(_:path:)` says them; `symlink`; anything
    /// else, that the host does not index what is in it).
    package static func hostScope(_ problem: String, path: FilePath) -> MetadataError {
        var error = hostScopeError(problem, path: path)
        error.hostScope = problem
        return error
    }

    private static func hostScopeError(_ problem: String, path: FilePath) -> MetadataError {
        switch problem {
        case "ENOENT": return scope(.noSuchFileOrDirectory, path: path)
        case "ENOTDIR": return scope(.notDirectory, path: path)
        case "EACCES": return scope(.permissionDenied, path: path)
        case "ENAMETOOLONG": return scope(.fileNameTooLong, path: path)
        case "symlink":
            return MetadataError(
                code: .scopeNotFolder, message: "scope is a symbolic link on its host (search the folder it points to)",
                path: path)
        default:
            return MetadataError(
                code: .scopeNotFound,
                message: "scope folder is not indexed by its host (it indexes none of what is in it)",
                path: path)
        }
    }

    /// The error for one file or folder asked for by path that cannot be
    /// read: not found (a missing component or one that is not a folder),
    /// or unreadable, naming the path.
    package static func item(_ error: Errno, path: FilePath) -> MetadataError {
        switch error {
        case .noSuchFileOrDirectory, .notDirectory:
            MetadataError(code: .itemNotFound, message: "no such file or folder", path: path)
        default:
            MetadataError(code: .itemUnreadable, message: "cannot read", path: path, underlying: error)
        }
    }

    /// A container that does not exist where `path` says.
    package static func containerNotFound(_ message: String, path: FilePath) -> MetadataError {
        MetadataError(code: .containerNotFound, message: message, path: path)
    }

    /// A file mdq keeps that could not be written.
    package static func notWritable(_ message: String, path: FilePath, underlying: Errno? = nil) -> MetadataError {
        MetadataError(code: .notWritable, message: message, path: path, underlying: underlying)
    }

    /// inotify or the watcher's own files could not be set up.
    package static func watcherUnavailable(_ message: String, path: FilePath? = nil, underlying: Errno? = nil)
        -> MetadataError
    {
        MetadataError(code: .watcherUnavailable, message: message, path: path, underlying: underlying)
    }

    /// An API argument that is out of range or inconsistent.
    package static func invalidArgument(_ message: String, path: FilePath? = nil) -> MetadataError {
        MetadataError(code: .invalidArgument, message: message, path: path)
    }
}

extension MetadataError {
    /// A snapshot or state file that could not be written or was refused.
    /// The import worker is not where it should be.
    package static func importUnavailable(_ executable: FilePath) -> MetadataError {
        MetadataError(
            code: .importUnavailable,
            message: "the importers cannot run: no import worker (install mdq-import-worker beside mdq, or set "
                + "MDQ_IMPORT_WORKER)", path: executable)
    }

    package static func persistence(_ message: String, path: FilePath, underlying: Errno? = nil) -> MetadataError {
        MetadataError(code: .persistence, message: message, path: path, underlying: underlying)
    }

    /// A configuration file that cannot be read or says something wrong
    /// (`line` then counts from 1, and the message leads with file:line).
    package static func configuration(
        _ message: String, path: FilePath, line: Int? = nil, underlying: Errno? = nil
    ) -> MetadataError {
        guard let line else {
            return MetadataError(code: .invalidArgument, message: message, path: path, underlying: underlying)
        }
        return MetadataError(code: .invalidArgument, message: "\(path.string):\(line): \(message)")
    }

    /// The daemon could not be reached or refused a request; `refusal`
    /// says why when a caller acts on it.
    package static func daemon(
        _ message: String, path: FilePath? = nil, underlying: Errno? = nil, refusal: DaemonRefusal? = nil
    ) -> MetadataError {
        var error = MetadataError(code: .daemon, message: message, path: path, underlying: underlying)
        error.refusal = refusal
        return error
    }
}

/// Why an index daemon did not answer, for the callers that search some
/// other way instead (the system index, or a crawl).
package enum DaemonRefusal: Sendable, Hashable {
    /// Nothing listens at its socket.
    case absent
    /// The socket, its folder or the process behind it is not this user's
    /// (or root's): nothing was sent to it.
    case untrusted
    /// It does not index the search's scopes. `gap` is what it leaves out
    /// of a scope it does hold (hidden items, excluded folders, a root still
    /// being indexed), worth a word to the user; nil when it does not hold
    /// the scope at all.
    case notCovered(gap: String?)
}

extension MetadataError {
    /// A query stopped at its budget (`QueryLimit`), with what to do about it.
    package static func tooExpensive(_ reason: String) -> MetadataError {
        MetadataError(
            code: .tooExpensive,
            message: "query too expensive: \(reason); narrow the query or its scope, or raise --budget"
        )
    }
}
