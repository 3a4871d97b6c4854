import Foundation
package import MDQCore
package import MDQEngine
package import MDQLive
package import MDQSystem
package import MDQWire
package import SystemPackage

/// A connection to the user's index daemon: one request after another.
///
/// Not thread-safe: one thread uses a client at a time.
package final class DaemonClient {
    let socket: UnixSocket
    private var reader: LineReader
    private var nextID = 1
    /// Connected to the system index, which takes scopes as folders this
    /// process opened (`OpenedFolders`), never as paths to resolve.
    let isSystem: Bool

    private init(socket: UnixSocket, isSystem: Bool = false) {
        self.socket = socket
        self.isSystem = isSystem
        reader = LineReader(socket: socket, maximum: 1 << 30, timeout: 120_000)
    }

    /// Connects to this user's daemon at `paths.socket`, sending nothing
    /// until it is sure the daemon is this user's (or root's): see
    /// `UnixSocket.connectToOwnDaemon`.
    ///
    /// - Throws: `MetadataError` `.daemon`: "no daemon is running" when
    ///   nothing listens there (`refusal` `.absent`); why, when the
    ///   socket, its folder or its process is not this user's (`refusal`
    ///   `.untrusted`: callers say so in one line and crawl); or the
    ///   connection's error.
    package static func connect(_ paths: DaemonPaths = .standard) throws(MetadataError) -> DaemonClient {
        if paths.isSystem { return try connectSystem(paths) }
        switch UnixSocket.connectToOwnDaemon(at: paths.socket) {
        case .success(let socket): return DaemonClient(socket: socket)
        case .failure(.absent(let error)):
            throw MetadataError.daemon(
                "no daemon is running (start one: mdq daemon start)", path: paths.socket, underlying: error,
                refusal: .absent)
        case .failure(.untrusted(let reason)):
            throw untrusted(reason)
        case .failure(.failed(let error)):
            throw MetadataError.daemon("cannot reach the daemon", path: paths.socket, underlying: error)
        }
    }

    /// Connects to the system index (`mdq system`), sending nothing until
    /// it is sure the socket's folder is root's alone and root answers
    /// (`UnixSocket.connectToSystemIndex`).
    ///
    /// - Throws: `MetadataError` `.daemon`: "no system index is running",
    ///   or why the socket is not trusted, or the connection's error.
    package static func connectSystem(_ paths: DaemonPaths = .system) throws(MetadataError) -> DaemonClient {
        switch UnixSocket.connectToSystemIndex(at: paths.socket) {
        case .success(let socket): return DaemonClient(socket: socket, isSystem: true)
        case .failure(.absent(let error)):
            throw MetadataError.daemon(
                "no system index is running (start one as root: mdq system start)", path: paths.socket,
                underlying: error, refusal: .absent)
        case .failure(.untrusted(let reason)):
            throw MetadataError.daemon("not using the system index socket: " + reason, refusal: .untrusted)
        case .failure(.failed(let error)):
            throw MetadataError.daemon("cannot reach the system index", path: paths.socket, underlying: error)
        }
    }

    /// The refusal to talk to a socket that is not this user's daemon.
    package static func untrusted(_ reason: String, path: FilePath? = nil) -> MetadataError {
        MetadataError.daemon("not using the index daemon socket: " + reason, path: path, refusal: .untrusted)
    }

    /// Sends a request: `fields` is the JSON text of its fields after
    /// `"command"` (without braces), or empty.
    private func send(
        _ command: DaemonCommand, _ fields: [UInt8] = [], passing folders: OpenedFolders? = nil
    ) throws(MetadataError) -> Int {
        let id = nextID
        nextID += 1
        var out = JSONWriter()
        out.raw("{\"id\":")
        out.integer(id)
        out.raw(",\"command\":")
        out.string(command.rawValue)
        if !fields.isEmpty {
            out.raw(",")
            out.bytes += fields
        }
        out.raw("}\n")
        let written = withBytes(of: out.bytes) { socket.write($0, passing: folders?.descriptors ?? []) }
        if case .failure(let error) = written {
            // It may have said why before closing (another user refused).
            if case .line(let line) = reader.next(idle: 1000), let value = try? JSONValue.parse(line),
                let refusal = value["error"]
            {
                throw DaemonClient.error(refusal)
            }
            throw MetadataError.daemon("the daemon went away", underlying: error)
        }
        return id
    }

    /// The next response line, parsed; an error response becomes a throw.
    ///
    /// - Parameter seconds: the longest silence taken before it: a daemon
    ///   answers `hello` and `status` at once and sends a progress line
    ///   each second while a query scans; a daemon stopped or hung is
    ///   then said, not waited for.
    private func response(within seconds: Double = 600) throws(MetadataError) -> JSONValue {
        let limit = min(max(seconds, 1), 86_400)
        let asked = ContinuousClock.now
        switch reader.next(idle: Int32(limit * 1000)) {
        case .end where ContinuousClock.now - asked >= .milliseconds(Int64(limit * 1000) - 50):
            throw MetadataError.daemon("the daemon did not answer within \(TextFormat.seconds(limit))")
        case .end: throw MetadataError.daemon("the daemon went away")
        case .failure(let error): throw MetadataError.daemon("unreadable answer from the daemon: \(error.message)")
        case .line(let line):
            let value: JSONValue
            do {
                value = try JSONValue.parse(line)
            } catch {
                throw MetadataError.daemon("unreadable answer from the daemon: \(error)")
            }
            if let error = value["error"] {
                throw DaemonClient.error(error)
            }
            return value
        }
    }

    package static func error(_ value: JSONValue) -> MetadataError {
        let message = value["message"]?.string ?? "the daemon refused the request"
        if DaemonErrorCode(of: value) == .querySyntax {
            return MetadataError.syntax(message, offset: value["offset"]?.integer.map { Int($0) })
        }
        if DaemonErrorCode(of: value) == .invalidArgument {
            return MetadataError.invalidArgument(message)
        }
        if DaemonErrorCode(of: value) == .folder, let path = value.bytesField("path") {
            return .hostScope(value["problem"]?.string ?? "", path: FilePath.fromBytes(path))
        }
        if DaemonErrorCode(of: value) == .tooExpensive {
            // The daemon's message already says what to do.
            return MetadataError(code: .tooExpensive, message: message)
        }
        guard DaemonErrorCode(of: value) == .notCovered else { return MetadataError.daemon(message) }
        // What the index leaves out of a scope it holds is worth a word to
        // the user; a scope it does not hold at all is simply crawled.
        let gap = value["gap"]?.bool == true ? message : nil
        return MetadataError.daemon("not indexed: " + message, refusal: .notCovered(gap: gap))
    }

    /// The daemon's protocol version, process id, and what it does beyond
    /// its protocol version (`features`; none from an older daemon).
    package func hello() throws(MetadataError) -> (protocolVersion: Int, pid: Int, features: Set<String>) {
        _ = try send(.hello)
        let value = try response(within: 30)
        return (
            Int(value["protocol"]?.integer ?? 0), Int(value["pid"]?.integer ?? 0),
            Set((value["features"]?.array ?? []).compactMap(\.string))
        )
    }

    /// What the system index answers a search across hosts: the count;
    /// for `paths`, each line as `mdq` prints it (`NAME:/path` for another
    /// host's); for `items`, each result with its attributes; and what the
    /// user is told first.
    package struct HostAnswer {
        package var count = 0
        package var lines: [[UInt8]] = []
        package var items: [HostSearchReply.Item] = []
        package var warnings: [String] = []
    }

    /// This host's folders (`--onlyin HERE:/path`) as its system index
    /// is asked for them: one above every folder it indexes from
    /// (`HERE:/srv`, the index keeping `/srv/data`) is those folders below
    /// it that this user can open, as another host's folder above the
    /// ones it indexes is searched (`mdq.scope_errors`); any other as it
    /// is (one the index does not hold is then said not indexed).
    package func ownFolders(_ folders: [[UInt8]]) -> [[UInt8]] {
        guard !folders.isEmpty, let roots = try? indexedScopes().map(\.scope.path.bytes) else { return folders }
        return Self.ownFolders(folders, roots: roots) { root in
            (try? DirectoryHandle.open(path: FilePath.fromBytes(root)).get()) != nil
        }
    }

    /// The folder among `scopes` (at least one) that a daemon's refusal
    /// of them (`not-covered`) names: the longest whose path the message
    /// holds as a whole (followed by a space or its end), else the first.
    package static func folder(refusedBy error: MetadataError, among scopes: [ScopeRequest]) -> [UInt8] {
        let message = Array(error.message.utf8)
        func names(_ path: [UInt8]) -> Bool {
            guard !path.isEmpty, path.count <= message.count else { return false }
            return (0...(message.count - path.count)).contains { start in
                message[start..<(start + path.count)].elementsEqual(path)
                    && (start + path.count == message.count || message[start + path.count] == UInt8(ascii: " "))
            }
        }
        let named = scopes.map(\.path.bytes).filter(names).max { $0.count < $1.count }
        return named ?? scopes[0].path.bytes
    }

    /// `folders`, each above every one of `roots` replaced by the roots
    /// below it that `opens` (none: kept as it is).
    package static func ownFolders(
        _ folders: [[UInt8]], roots: [[UInt8]], opens: ([UInt8]) -> Bool
    ) -> [[UInt8]] {
        /// Whether `path` is `top` or below it.
        func within(_ path: [UInt8], _ top: [UInt8]) -> Bool {
            path == top || top == [UInt8(ascii: "/")] || path.starts(with: top + [UInt8(ascii: "/")])
        }
        var result: [[UInt8]] = []
        for folder in folders {
            // Its `/` is all of it, which the index gives whole.
            let below =
                folder == [UInt8(ascii: "/")] || roots.contains { within(folder, $0) }
                ? [] : roots.filter { within($0, folder) }.filter(opens)
            for path in below.isEmpty ? [folder] : below where !result.contains(path) { result.append(path) }
        }
        return result
    }

    /// `search-hosts`: a search across hosts answered by the system index
    /// (`SEARCH`): `count` alone when counting, else its lines, or its
    /// items (`items`, which a daemon naming the feature
    /// `search-hosts-items` gives, with `folders`).
    ///
    /// - Parameter ownHost: this host's name: its folders among `folders`
    ///   are opened here, as this user reaches them, and passed with the
    ///   request (the system index searches them as a local search does:
    ///   one the user reaches through a folder they may not list is
    ///   searched); one that cannot be opened is said as a local search
    ///   says its scope, named `NAME:/path`.
    package func searchAcrossHosts(
        _ query: [UInt8], isName: Bool = false, hosts: [String]?, folders: [(host: String, path: [UInt8])] = [],
        ownHost: String? = nil, counting: Bool = false, items: Bool = false, limit: Int? = nil,
        budget: Double? = nil, order: MetadataSortDescriptor? = nil, attributes: Set<MetadataAttribute> = []
    ) throws(MetadataError) -> HostAnswer {
        // This host's folders first, each with its descriptor.
        let own =
            ownHost.map { host in
                ownFolders(folders.filter { $0.host == host }.map(\.path)).map { (host: host, path: $0) }
            } ?? []
        guard own.count <= DaemonProtocol.maximumDescriptors else {
            throw MetadataError.invalidArgument(
                "the system index takes at most \(DaemonProtocol.maximumDescriptors) folders of this host in one "
                    + "search (--onlyin \(ownHost ?? ""):/path)")
        }
        var opened: OpenedFolders?
        if !own.isEmpty {
            switch OpenedFolders.open(own.map { FilePath.fromBytes($0.path) }) {
            case .success(let folders): opened = folders
            case .failure(let failure):
                throw MetadataError.scope(
                    failure.error, path: FilePath.onHost(ownHost ?? "", failure.path.bytes))
            }
        }
        var fields = JSONWriter()
        DaemonCommand.searchHostsFields(
            query, isName: isName, counting: counting, items: items, hosts: hosts,
            folders: own + folders.filter { $0.host != ownHost }, opened: own.count, limit: limit, budget: budget,
            order: order.map { ($0.key, $0.ascending) }, attributes: attributes.map(\.rawValue), into: &fields)
        _ = try send(.searchHosts, fields.bytes, passing: opened)
        var answer = HostAnswer()
        while true {
            let value = try response(within: DaemonCommand.searchHostsSilence(budget: budget))
            if let warning = value["warning"]?.string {
                answer.warnings.append(warning)
            } else if let length = value["bytes"]?.integer {
                guard length >= 0, let paths = reader.read(exactly: Int(length)) else {
                    throw MetadataError.daemon("the daemon went away mid-answer")
                }
                answer.lines += paths.split(separator: 0, omittingEmptySubsequences: false).dropLast().map(Array.init)
            } else if let item = value["item"] {
                let entry: EntrySnapshot
                do {
                    entry = try DaemonProtocol.item(item)
                } catch {
                    throw MetadataError.daemon("the daemon sent an item mdq cannot read: \(error.message)")
                }
                answer.items.append(
                    HostSearchReply.Item(
                        host: value["host"]?.string, path: entry.pathBytes, kind: entry.kind, metadata: entry.metadata,
                        stale: value["stale"]?.bool ?? false, imported: entry.imported))
            } else if value["done"]?.bool == true {
                answer.count = Int(value["count"]?.integer ?? 0)
                return answer
            }
        }
    }

    /// Whether the system index would follow this search across hosts for
    /// this user (`subscribe-hosts` with `check`): refused as it would
    /// refuse it (a host unknown, a search the shared index cannot narrow;
    /// `refusal` when it does not search across hosts), without a
    /// subscription.
    package func checkLiveSearchAcrossHosts(
        _ query: [UInt8], hosts: [String]?, folders: [(host: String, path: [UInt8])] = [], excluded: [String] = [],
        budget: Double? = nil
    ) throws(MetadataError) {
        var fields = JSONWriter()
        DaemonCommand.subscribeHostsFields(
            query, hosts: hosts, folders: folders, excluded: excluded, budget: budget, check: true,
            protocol: DaemonProtocol.version, into: &fields)
        _ = try send(.subscribeHosts, fields.bytes)
        while try response(within: DaemonCommand.searchHostsSilence(budget: budget))["done"]?.bool != true {}
    }

    /// The hosts of the shared index, each as its JSON object
    /// (`SharedHost.json`), from the system index when it searches the
    /// shared index for its users.
    package func sharedHosts() throws(MetadataError) -> [JSONValue] {
        _ = try send(.hosts)
        var hosts: [JSONValue] = []
        while true {
            let value = try response(within: 60)
            if let host = value["host"] {
                hosts.append(host)
            } else if value["done"]?.bool == true {
                return hosts
            }
        }
    }

    /// `status`, as the daemon reports it (see `IndexDaemon`).
    package func status() throws(MetadataError) -> DaemonStatus {
        _ = try send(.status)
        return DaemonStatus(try response(within: 30)["status"] ?? .null)
    }

    /// The indexed scopes and whether each is live.
    package func indexedScopes() throws(MetadataError) -> [(scope: ScopeRequest, live: Bool)] {
        try indexedScopeList().map { ($0.scope, $0.live) }
    }

    /// The indexed scopes, whether each is live, and whether it is indexed
    /// by name and stat data only.
    package func indexedScopeList() throws(MetadataError) -> [(scope: ScopeRequest, live: Bool, namesOnly: Bool)] {
        _ = try send(.indexList)
        var result: [(ScopeRequest, Bool, Bool)] = []
        for item in try response(within: 30)["scopes"]?.array ?? [] {
            if let scope = try? DaemonProtocol.scope(item) {
                result.append((scope, item["live"]?.bool ?? false, item["content"]?.bool == false))
            }
        }
        return result
    }

    /// Indexes a scope (the daemon crawls it before answering).
    ///
    /// - Parameter content: false to index names and stat data only
    ///   (nothing inside the files is imported).
    package func addScope(_ scope: ScopeRequest, content: Bool = true) throws(MetadataError) -> Int {
        try addScope(scope, content: content, namesFirst: false).entries
    }

    /// Indexes a scope; with `namesFirst`, returns once its names answer
    /// (`filling`: its files' sizes and dates are still being read).
    package func addScope(
        _ scope: ScopeRequest, content: Bool = true, namesFirst: Bool
    ) throws(MetadataError) -> (entries: Int, filling: Bool) {
        var fields = JSONWriter()
        fields.key("scope")
        DaemonProtocol.write(scope, namesOnly: !content, to: &fields)
        if namesFirst { fields.raw(",\"wait\":\"names\"") }
        _ = try send(.indexAdd, fields.bytes)
        let answer = try response()
        return (Int(answer["entries"]?.integer ?? 0), answer["filling"]?.bool ?? false)
    }

    /// Stops indexing the scopes at `path`; returns how many there were.
    package func removeScopes(at path: FilePath) throws(MetadataError) -> Int {
        var fields = JSONWriter()
        fields.bytesField("path", path.bytes)
        _ = try send(.indexRemove, fields.bytes)
        return Int(try response()["removed"]?.integer ?? 0)
    }

    /// Asks the daemon to save its snapshot and exit.
    package func stop() throws(MetadataError) {
        _ = try send(.stop)
        _ = try response()
    }

    /// A one-shot answer.
    package struct Answer {
        package var count: Int
        /// For `.paths`: NUL-terminated paths.
        package var paths: [UInt8] = []
        package var entries: [EntrySnapshot] = []
        package var stale: Bool
        /// Files the daemon had still to import (a predicate on imported
        /// attributes): the answer may miss some of them.
        package var importing = 0
        /// For free text that matched nothing: how its other reading does
        /// (`CommandLineQuery.otherReading`).
        package var note: String?
    }

    /// A one-shot query answered from the daemon's live index.
    ///
    /// - Parameters:
    ///   - scopes: nil for everything the daemon indexes.
    ///   - rules: with `scopes` nil, the query's own rules (hidden items,
    ///     excluded names) applied to what the daemon indexes; nil to take
    ///     the indexed scopes as they are.
    ///   - syntax: `predicate` (NSPredicate format) or `spotlight`.
    ///   - attributes: imported attributes whose stored values the items
    ///     carry (`MetadataItem.importedValues`) when the daemon has them.
    /// - Throws: `MetadataError`: `.querySyntax` for a malformed query;
    ///   `.daemon` when the daemon does not cover a scope (`refusal`
    ///   `.notCovered`) or cannot answer.
    package func query(
        _ text: [UInt8], syntax: String = "predicate", scopes: [ScopeRequest]?, rules: ScopeRules? = nil,
        output: OneShotOutput, limit: Int? = nil, budget: Double? = nil, attributes: Set<MetadataAttribute> = [],
        order: MetadataSortDescriptor? = nil, thenByPath: Bool = false,
        onProgress: ((_ fraction: Double) -> Void)? = nil
    ) throws(MetadataError) -> Answer {
        var fields = JSONWriter(capacity: 512)
        fields.key("predicate")
        fields.string(text)
        fields.raw(",\"syntax\":")
        fields.string(syntax)
        // The query as typed is read by the daemon, in this user's zone.
        fields.raw(",\"timeZone\":")
        fields.string(Array(ClientTimeZone.current.identifier.utf8))
        fields.raw(",\"output\":")
        switch output {
        case .count: fields.string("count")
        case .paths: fields.string("paths")
        case .entries: fields.string("items")
        }
        if let limit {
            fields.raw(",\"limit\":")
            fields.integer(limit)
        }
        if let budget {
            fields.raw(",\"budget\":")
            fields.double(budget)
        }
        if let order { DaemonCommand.orderField((order.key, order.ascending), thenByPath: thenByPath, into: &fields) }
        if !attributes.isEmpty {
            fields.raw(",")
            DaemonProtocol.writeAttributes(attributes, to: &fields)
        }
        var folders: OpenedFolders?
        if let scopes {
            if isSystem {
                // Named by folders this user opened: one this user cannot
                // reach is searched here, and fails as the search would.
                switch OpenedFolders.open(scopes.map(\.path)) {
                case .success(let opened): folders = opened
                case .failure(let failure):
                    throw MetadataError.daemon(
                        "not indexed: \(failure.path.string) cannot be opened", path: failure.path,
                        underlying: failure.error, refusal: .notCovered(gap: nil))
                }
            }
            fields.raw(",")
            DaemonProtocol.writeScopes(scopes, passing: folders != nil, to: &fields)
        } else if let rules {
            fields.raw(",\"rules\":{")
            DaemonProtocol.writeRules(rules, to: &fields)
            fields.raw("}")
        }
        _ = try send(.query, fields.bytes, passing: folders)
        var answer = Answer(count: 0, stale: false)
        while true {
            let value = try response(within: 60)
            if let length = value["bytes"]?.integer {
                guard let payload = reader.read(exactly: Int(length)) else {
                    throw MetadataError.daemon("the daemon went away mid-answer")
                }
                answer.paths += payload  // one part per slice the daemon scanned
            } else if let item = value["item"] {
                do {
                    answer.entries.append(try DaemonProtocol.item(item))
                } catch {
                    throw MetadataError.daemon("unreadable answer from the daemon: \(error.message)")
                }
            } else if let progress = value["progress"] {
                let total = progress["of"]?.integer ?? 0
                if total > 0 { onProgress?(Double(progress["scanned"]?.integer ?? 0) / Double(total)) }
            } else if value["done"]?.bool == true {
                answer.count = Int(value["count"]?.integer ?? 0)
                answer.stale = value["stale"]?.bool ?? false
                answer.importing = Int(value["importing"]?.integer ?? 0)
                answer.note = value["note"]?.string
                return answer
            }
        }
    }
}

/// What `mdq daemon status` prints.
package struct DaemonStatus {
    package var pid: Int
    package var uptime: Double
    package var entries: Int
    package var watches: Int
    package var residentBytes: Int
    package var verifying: Bool
    /// One-shot queries the daemon is answering now.
    package var queries: Int
    /// Queries the daemon stopped because their client went away.
    package var cancelledQueries: Int
    /// Connections served since the daemon started, this one included.
    package var connectionsServed: Int
    package var snapshotAge: Double?
    /// Content indexing, when on: files waiting to be imported, imports
    /// since the daemon started, files in the store.
    package var content: (pending: Int, imported: Int, stored: Int)?
    /// How the latest import worker said it is sandboxed ("confined
    /// (Landlock ABI 7, seccomp)", or what is missing and why); nil before
    /// one has started.
    package var importWorker: String?
    /// The trigram lists of names, once the daemon keeps them: postings,
    /// bytes, and whether they cover every entry yet.
    /// Some scope's names are in but its files' sizes and dates are still
    /// being read: queries on those wait for them (the front crawls).
    package var filling = false
    package var nameGrams: (postings: Int, bytes: Int, complete: Bool)?
    package var scopes: [(scope: ScopeRequest, live: Bool)]
    /// Scope folders indexed by name and stat data only.
    package var namesOnlyScopes: Set<FilePath>
    package var problems: [String]
    /// The system index: how each filesystem is watched (`mark`, or
    /// `inotify` and why the mark was refused).
    package var filesystems: [(fsid: String, watch: String, reason: String?)] = []
    package var isSystem = false
    /// A user daemon's scopes followed through the system index, and the
    /// folders in them (watched with no inotify watch).
    package var followed: [FilePath] = []
    package var followedFolders = 0
    /// Mount points the system index was told to index that have nothing
    /// mounted on them now.
    package var waitingMounts: [FilePath] = []
    /// The system index's kernel limits and rescans (root's status only).
    package var maxUserMarks: Int?
    package var maxQueuedEvents: Int?
    package var rescans = 0
    package var foldedRescans = 0
    /// The system index's publisher into the shared index, when it has one
    /// (its last error for root alone).
    package var publishing: PublicationStatus?

    init(_ value: JSONValue) {
        publishing = value["publishing"].map {
            PublicationStatus(
                hostName: $0["host"]?.string ?? "?", state: $0["state"]?.string ?? "?",
                sequence: $0["sequence"]?.integer ?? 0, rowsSent: Int($0["rowsSent"]?.integer ?? 0),
                reloads: Int($0["reloads"]?.integer ?? 0), lastError: $0["error"]?.string)
        }
        maxUserMarks = value["maxUserMarks"]?.integer.map { Int($0) }
        maxQueuedEvents = value["maxQueuedEvents"]?.integer.map { Int($0) }
        rescans = Int(value["rescans"]?.integer ?? 0)
        foldedRescans = Int(value["foldedRescans"]?.integer ?? 0)
        isSystem = value["system"]?.bool ?? false
        waitingMounts = (value["waiting"]?.array ?? []).compactMap { $0.bytes.map(FilePath.fromBytes) }
        followed = (value["followed"]?.array ?? []).compactMap { $0.bytes.map(FilePath.fromBytes) }
        followedFolders = Int(value["followedFolders"]?.integer ?? 0)
        filesystems = (value["filesystems"]?.array ?? []).map {
            ($0["fsid"]?.string ?? "?", $0["watch"]?.string ?? "?", $0["reason"]?.string)
        }
        pid = Int(value["pid"]?.integer ?? 0)
        uptime = value["uptime"]?.double ?? 0
        entries = Int(value["entries"]?.integer ?? 0)
        watches = Int(value["watches"]?.integer ?? 0)
        residentBytes = Int(value["residentBytes"]?.integer ?? 0)
        verifying = value["verifying"]?.bool ?? false
        filling = value["filling"]?.bool ?? false
        queries = Int(value["queries"]?.integer ?? 0)
        cancelledQueries = Int(value["cancelledQueries"]?.integer ?? 0)
        connectionsServed = Int(value["connectionsServed"]?.integer ?? 0)
        snapshotAge = value["snapshotAge"]?.double
        content = value["content"].map {
            (Int($0["pending"]?.integer ?? 0), Int($0["imported"]?.integer ?? 0), Int($0["stored"]?.integer ?? 0))
        }
        importWorker = value["content"]?["worker"]?.string
        nameGrams = value["nameGrams"].map {
            (Int($0["postings"]?.integer ?? 0), Int($0["bytes"]?.integer ?? 0), $0["complete"]?.bool ?? false)
        }
        scopes = (value["scopes"]?.array ?? []).compactMap { item in
            (try? DaemonProtocol.scope(item)).map { ($0, item["live"]?.bool ?? false) }
        }
        namesOnlyScopes = Set(
            (value["scopes"]?.array ?? []).filter { $0["content"]?.bool == false }.compactMap {
                try? DaemonProtocol.scope($0).path
            })
        problems = (value["problems"]?.array ?? []).compactMap { $0["message"]?.string }
    }
}
