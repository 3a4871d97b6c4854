import Foundation
package import MDQCore
package import MDQLive
package import MDQSystem
package import MDQWire
import SystemPackage

/// The daemon's wire protocol, version 2: newline-delimited JSON over the
/// Unix socket, documented for other languages in
/// `Documentation/protocol.md`. Requests are one object per line (at most 1 MiB) with an
/// `id` (echoed in every line of the response) and a `command`; every
/// response line carries the `id`, and a failed request answers
/// `{"id":…,"error":{"code":…,"message":…}}`.
///
/// Paths and names are strings; bytes that are not UTF-8 come as U+FFFD in
/// the string and exactly in a `…Base64` twin. Times are integers:
/// nanoseconds since 1970-01-01 UTC.
package enum DaemonProtocol {
    package static let version = 2
    /// A daemon's refusal (`not-covered`) of what is inside files when it
    /// imports nothing.
    package static let noContent = "the daemon does not index what is inside files (content indexing is off)"
    /// What a daemon does that older daemons of the same version do not,
    /// in `hello`: a client asks for these only of a daemon that names
    /// them (an older one would ignore a field it does not know, and
    /// answer another question). `search-hosts-items`: `search-hosts` takes
    /// `folders` and answers `items`; `hosts`: the command;
    /// `search-hosts-order`: `search-hosts` takes `order`; `query-order`:
    /// `query` takes `order`; `subscribe-hosts`: the command;
    /// `search-hosts-attributes`: `search-hosts` with `items`, and
    /// `subscribe-hosts`, take `attributes` (imported ones, whose values
    /// each item brings).
    package static let features = [
        "search-hosts-items", "hosts", "search-hosts-order", "query-order", "subscribe-hosts",
        "search-hosts-attributes",
    ]

    /// Why a search across hosts by what importers read (`imported`),
    /// or showing it, is not asked of a system index without
    /// `search-hosts-attributes`.
    package static func olderAcrossHosts(_ imported: Set<MetadataAttribute>) -> MetadataError {
        MetadataError.invalidArgument(
            "this host's system index is older than this mdq: it does not search across hosts by what importers "
                + "read (\(imported.map(\.rawValue).sorted().joined(separator: ", "))); restart it (mdq system stop, "
                + "then mdq system start), or search with a database credential of your own ($MDQ_SHARED)")
    }

    /// A request's `order` (`{"key":ATTRIBUTE,"ascending":BOOL}`), if it
    /// has one.
    static func order(_ request: JSONValue) throws(ProtocolError) -> MetadataSortDescriptor? {
        guard let value = request["order"] else { return nil }
        guard let key = value["key"]?.string, MetadataAttribute(key: key) != nil,
            let ascending = value["ascending"]?.bool
        else {
            throw ProtocolError(code: .badRequest, message: "an order is {\"key\":ATTRIBUTE,\"ascending\":true|false}")
        }
        return MetadataSortDescriptor(key: key, ascending: ascending)
    }

    /// The zone a request's query reads `$time.today` and its kin in: the
    /// client's (`"timeZone"`, an IANA name this machine's tz database
    /// knows; anything else is not looked up, so a name cannot make the
    /// daemon open a file of its choosing), else the daemon's own.
    static func timeZone(_ request: JSONValue) -> TimeZone {
        guard let name = request["timeZone"]?.string, name.utf8.count <= 64, knownZones.contains(name),
            let zone = TimeZone(identifier: name)
        else { return .current }
        return zone
    }

    /// The tz database's names, read once.
    private static let knownZones = Set(TimeZone.knownTimeZoneIdentifiers + ["UTC"])

    /// Whether a request's `order` says the client orders ties by path
    /// (`"thenByPath":true`): the first `limit` alone answer it.
    static func ordersTiesByPath(_ request: JSONValue) -> Bool {
        request["order"]?["thenByPath"]?.bool == true
    }
    /// The longest request line accepted.
    static let maximumRequest = 1 << 20

    // MARK: Scopes

    /// `{"path":…,"hidden":…,"exclude":[…],"excludeChildren":[…]}`, with
    /// `"live":…` when `live` is given, and the number of its folder among
    /// the request's descriptors (`"descriptor":…`) when `descriptor` is.
    static func write(
        _ scope: ScopeRequest, live: Bool? = nil, namesOnly: Bool = false, descriptor: Int? = nil,
        to out: inout JSONWriter
    ) {
        out.raw("{")
        out.bytesField("path", scope.path.bytes)
        out.raw(",")
        writeRules(scope.rules, to: &out)
        if namesOnly {
            // Indexed by name and stat data only: nothing inside is imported.
            out.field("content")
            out.bool(false)
        }
        if let live {
            out.field("live")
            out.bool(live)
        }
        if let descriptor {
            out.field("descriptor")
            out.integer(descriptor)
        }
        out.raw("}")
    }

    /// The daemon's indexed scopes, each with whether it is live, as a
    /// JSON array (`index.list` and `status`).
    static func write(
        _ list: [(scope: ScopeRequest, live: Bool)], namesOnly: Set<FilePath> = [], to out: inout JSONWriter
    ) {
        out.raw("[")
        for (i, (scope, live)) in list.enumerated() {
            if i > 0 { out.raw(",") }
            write(scope, live: live, namesOnly: namesOnly.contains(scope.path), to: &out)
        }
        out.raw("]")
    }

    private static func writeNames(_ names: Set<[UInt8]>, to out: inout JSONWriter) {
        out.raw("[")
        for (i, name) in names.sorted(by: { $0.lexicographicallyPrecedes($1) }).enumerated() {
            if i > 0 { out.raw(",") }
            out.string(name)
        }
        out.raw("]")
    }

    /// A scope from a request.
    ///
    /// - Throws: a protocol error naming what is missing or wrong.
    /// A request's `scopes` field, and (`passing`) for each scope the
    /// number of its folder among the descriptors the request passes (in
    /// the order of `scopes`) and their count: how a client names its
    /// scopes to the system index (`DaemonSession.reachedScope`).
    package static func writeScopes(_ scopes: [ScopeRequest], passing: Bool, to out: inout JSONWriter) {
        out.raw("\"scopes\":[")
        for (i, scope) in scopes.enumerated() {
            if i > 0 { out.raw(",") }
            write(scope, descriptor: passing ? i : nil, to: &out)
        }
        out.raw("]")
        if passing {
            out.raw(",\"descriptors\":")
            out.integer(scopes.count)
        }
    }

    /// Descriptors one request may pass (`SCM_RIGHTS`): a client passes
    /// one per scope, and more are closed unread.
    static let maximumDescriptors = 16

    /// Scopes one query may name (each costs a walk per match).
    static let maximumScopes = 16

    static func scope(_ value: JSONValue) throws(ProtocolError) -> ScopeRequest {
        guard let path = value.bytesField("path"), path.first == 0x2F, !path.contains(0) else {
            throw ProtocolError(code: .badRequest, message: "a scope needs an absolute \"path\"")
        }
        return ScopeRequest(path: FilePath.fromBytes(path).lexicallyNormalized(), rules: try rules(value))
    }

    /// The rules of a scope object (`hidden`, `exclude`, `excludeChildren`,
    /// `xdev`, `prunePaths`, `pruneNames`), or of a request's `rules` object.
    static func rules(_ value: JSONValue) throws(ProtocolError) -> ScopeRules {
        func names(_ key: String) throws(ProtocolError) -> Set<[UInt8]> {
            guard let list = value[key] else { return [] }
            guard let items = list.array else {
                throw ProtocolError(code: .badRequest, message: "\"\(key)\" must be a list of names")
            }
            var result: Set<[UInt8]> = []
            for item in items {
                guard let name = item.bytes, !name.isEmpty, name.count <= 255, !name.contains(0x2F) else {
                    throw ProtocolError(code: .badRequest, message: "\"\(key)\" holds something that is not a name")
                }
                result.insert(name)
            }
            return result
        }
        var prunePaths: Set<[UInt8]> = []
        if let list = value["prunePaths"] {
            for item in list.array ?? [.null] {
                guard let path = item.bytes, path.first == 0x2F, path.count <= 4096, !path.contains(0) else {
                    throw ProtocolError(code: .badRequest, message: "\"prunePaths\" must be a list of absolute paths")
                }
                prunePaths.insert(FilePath.fromBytes(path).lexicallyNormalized().bytes)
            }
        }
        return ScopeRules(
            includeHidden: value["hidden"]?.bool ?? false, excludedFolderNames: try names("exclude"),
            excludedRootChildNames: try names("excludeChildren"), stayOnFileSystem: value["xdev"]?.bool ?? false,
            prunedFolderPaths: prunePaths, prunedFolderNames: try names("pruneNames"))
    }

    /// Writes `rules` as the fields of a scope object (without its path).
    static func writeRules(_ rules: ScopeRules, to out: inout JSONWriter) {
        out.key("hidden")
        out.bool(rules.includeHidden)
        out.field("exclude")
        writeNames(rules.excludedFolderNames, to: &out)
        out.field("excludeChildren")
        writeNames(rules.excludedRootChildNames, to: &out)
        if rules.stayOnFileSystem {
            out.field("xdev")
            out.bool(true)
        }
        if !rules.prunedFolderPaths.isEmpty {
            out.field("prunePaths")
            writeNames(rules.prunedFolderPaths, to: &out)
        }
        if !rules.prunedFolderNames.isEmpty {
            out.field("pruneNames")
            writeNames(rules.prunedFolderNames, to: &out)
        }
    }

    // MARK: Items

    /// An item object: `id` (when not 0), `path`, `kind`, `size`, `modified`
    /// and `created` (as every item's dates are written: `ItemDates`),
    /// `inode`, for a folder `mode`, `owner` and `group`,
    /// `conflicts`, `conflictOriginal`, `previousPath`
    /// for a changed item that moved, and `imported` (the values of the
    /// imported attributes the request named, when the file was imported).
    static func writeItem(
        id: UInt64, path: [UInt8], kind: EntryKind, metadata: EntryMetadata, conflicts: Bool,
        conflictOriginal: [UInt8]?, previousPath: [UInt8]? = nil, imported: ImportedValues? = nil,
        to out: inout JSONWriter
    ) {
        out.raw("{")
        if id != 0 {
            out.key("id")
            out.integer(id)
            out.raw(",")
        }
        out.bytesField("path", path)
        out.field("kind")
        out.string(kind.description)
        if let size = metadata.size {
            out.field("size")
            out.integer(size)
        }
        if let modified = metadata.modificationTime {
            out.raw(",")
            ItemDates.append(.modified, modified, to: &out.bytes)
        }
        if let created = metadata.birthTime {
            out.raw(",")
            ItemDates.append(.created, created, to: &out.bytes)
        }
        out.field("inode")
        out.integer(metadata.inode)
        if let access = metadata.access {
            out.field("mode")
            out.integer(Int(access.mode))
            out.field("owner")
            out.integer(Int(access.owner))
            out.field("group")
            out.integer(Int(access.group))
        }
        if conflicts {
            out.field("conflicts")
            out.bool(true)
        }
        if let conflictOriginal {
            out.raw(",")
            out.bytesField("conflictOriginal", conflictOriginal)
        }
        if let previousPath {
            out.raw(",")
            out.bytesField("previousPath", previousPath)
        }
        if let imported {
            out.field("imported")
            imported.writeJSON(to: &out)
        }
        out.raw("}")
    }

    /// An entry as the engine reported it, with its identity as `id`
    /// (stable across subscriptions and restarts, never another entry's).
    static func writeItem(_ snapshot: EntrySnapshot, to out: inout JSONWriter) {
        writeItem(
            id: snapshot.entry, path: snapshot.pathBytes, kind: snapshot.kind, metadata: snapshot.metadata,
            conflicts: snapshot.hasUnresolvedConflicts, conflictOriginal: snapshot.conflictOriginalPathBytes,
            imported: snapshot.imported, to: &out)
    }

    static func writeItem(_ item: MetadataItem, previousPath: [UInt8]? = nil, to out: inout JSONWriter) {
        writeItem(
            id: item.id, path: item.pathBytes, kind: item.kind, metadata: item.metadata,
            conflicts: item.hasUnresolvedConflicts, conflictOriginal: item.conflictOriginalPathBytes,
            previousPath: previousPath, imported: item.importedValues, to: &out)
    }

    /// `"attributes":["kMDItemTitle",…]`: the imported attributes whose
    /// values a request wants with its items.
    package static func writeAttributes(_ attributes: Set<MetadataAttribute>, to out: inout JSONWriter) {
        DaemonCommand.writeAttributes(attributes.map(\.rawValue), to: &out)
    }

    /// A request's `attributes`: the imported ones it names.
    ///
    /// - Throws: `bad-request` for a name that is not an attribute.
    static func attributes(_ request: JSONValue) throws(ProtocolError) -> Set<MetadataAttribute> {
        guard let names = request["attributes"] else { return [] }
        guard let list = names.array else {
            throw ProtocolError(code: .badRequest, message: "\"attributes\" must be a list of attribute names")
        }
        var attributes: Set<MetadataAttribute> = []
        for name in list {
            guard let key = name.string, let attribute = MetadataAttribute(key: key) else {
                throw ProtocolError(code: .badRequest, message: "\"attributes\" names an unknown attribute")
            }
            if attribute.isImported { attributes.insert(attribute) }
        }
        return attributes
    }

    /// An item as the daemon described it (its `id` as the entry).
    package static func item(_ value: JSONValue) throws(ProtocolError) -> EntrySnapshot {
        guard let path = value.bytesField("path"), let kindName = value["kind"]?.string,
            let kind = EntryKind.allCases.first(where: { $0.description == kindName })
        else { throw ProtocolError(code: .badResponse, message: "an item without path or kind") }
        var metadata = EntryMetadata(kind: kind, inode: UInt64(bitPattern: value["inode"]?.integer ?? 0))
        metadata.size = value["size"]?.integer.map { UInt64(bitPattern: $0) }
        metadata.modificationTime = ItemDates.read(.modified, from: value)
        metadata.birthTime = ItemDates.read(.created, from: value)
        if let mode = value["mode"]?.integer, let owner = value["owner"]?.integer, let group = value["group"]?.integer {
            metadata.access = EntryAccess(
                mode: UInt16(truncatingIfNeeded: mode), owner: UInt32(truncatingIfNeeded: owner),
                group: UInt32(truncatingIfNeeded: group))
        }
        return EntrySnapshot(
            entry: UInt64(bitPattern: value["id"]?.integer ?? 0), pathBytes: path, kind: kind, metadata: metadata,
            hasUnresolvedConflicts: value["conflicts"]?.bool ?? false,
            conflictOriginalPathBytes: value.bytesField("conflictOriginal"),
            imported: value["imported"].flatMap(ImportedValues.init(json:)))
    }

    // MARK: Problems

    static func write(_ problem: EngineProblem, to out: inout JSONWriter) {
        out.raw("{")
        out.key("kind")
        switch problem {
        case .watchLimit(let unwatched, _, let limit):
            out.string("watchLimit")
            out.field("unwatched")
            out.integer(unwatched)
            out.field("limit")
            out.integer(limit)
        case .unreadableFolder(_, let error), .unwatchableFolder(_, let error):
            if case .unreadableFolder = problem {
                out.string("unreadableFolder")
            } else {
                out.string("unwatchableFolder")
            }
            out.field("errno")
            out.integer(error.rawValue)
        case .missingScope:
            out.string("missingScope")
        case .daemonUnreachable:
            out.string("daemonUnreachable")
        case .daemonRefused:
            out.string("daemonRefused")
        case .tooExpensive(let message):
            out.string("tooExpensive")
            out.field("reason")
            out.string(message)
        case .sharedIndex(let message):
            out.string("sharedIndex")
            out.field("reason")
            out.string(message)
        case .hostOffline(let host, let message):
            // A shared index problem to a client that knows no more.
            out.string("sharedIndex")
            out.field("reason")
            out.string(message)
            out.field("host")
            out.string(host)
        case .hostFolder(_, let code):
            // A shared index problem to a client that knows no more.
            out.string("sharedIndex")
            out.field("reason")
            out.string(problem.error(watching: 0).message)
            out.field("problem")
            out.string(code)
        }
        out.raw(",")
        out.bytesField("path", problem.path.bytes)
        out.field("message")
        out.string(problem.error(watching: 0).description)
        out.raw("}")
    }

    package static func problem(_ value: JSONValue) -> EngineProblem? {
        guard let path = value.bytesField("path").map(FilePath.fromBytes) else { return nil }
        let error = Errno(rawValue: Int32(truncatingIfNeeded: value["errno"]?.integer ?? 0))
        switch value["kind"]?.string {
        case "watchLimit":
            return .watchLimit(
                unwatched: Int(value["unwatched"]?.integer ?? 0), example: path,
                limit: Int(value["limit"]?.integer ?? 0))
        case "unreadableFolder": return .unreadableFolder(path, error)
        case "unwatchableFolder": return .unwatchableFolder(path, error)
        case "missingScope": return .missingScope(path)
        case "tooExpensive": return .tooExpensive(value["reason"]?.string ?? "query too expensive")
        case "sharedIndex":
            let reason = value["reason"]?.string ?? "the shared index"
            if let host = value["host"]?.string { return .hostOffline(host: host, message: reason) }
            if let problem = value["problem"]?.string { return .hostFolder(path, problem: problem) }
            return .sharedIndex(reason)
        default: return nil
        }
    }

    // MARK: Responses

    /// The start of a response line: `{"id":…,` (the id as the request gave it).
    static func begin(_ id: [UInt8], _ out: inout JSONWriter) {
        out.raw("{\"id\":")
        out.bytes.append(contentsOf: id)
        out.raw(",")
    }

    /// The line before a part of paths: `{"id":…,"paths":N,"bytes":M}`,
    /// the M bytes of N NUL-terminated paths following it.
    static func pathsHeader(_ id: [UInt8], paths count: Int, bytes: Int, _ out: inout JSONWriter) {
        begin(id, &out)
        out.raw("\"paths\":")
        out.integer(count)
        out.raw(",\"bytes\":")
        out.integer(bytes)
        out.raw("}\n")
    }
}

/// A request the daemon refuses, or a response a client cannot read.
package struct ProtocolError: Error, CustomStringConvertible {
    var code: DaemonErrorCode
    var message: String
    /// For `query-syntax`: the byte offset of the mistake.
    var offset: Int?
    /// For `not-covered`: the daemon holds the scope but leaves out what
    /// the message names (hidden items, excluded folders, a root still
    /// being indexed), which a client tells its user (`"gap":true`).
    var gap = false
    /// For `folder`: the folder (`NAME:/path`) and what the shared index
    /// says of it (`MetadataError.hostScope`).
    var folder: (path: [UInt8], problem: String)?

    package var description: String { message }

    /// The response line for this error.
    func line(id: [UInt8]) -> [UInt8] {
        var out = JSONWriter()
        DaemonProtocol.begin(id, &out)
        out.key("error")
        out.raw("{")
        out.key("code")
        out.string(code.rawValue)
        out.field("message")
        out.string(message)
        if let offset {
            out.field("offset")
            out.integer(offset)
        }
        if gap {
            out.field("gap")
            out.bool(true)
        }
        if let folder {
            out.raw(",")
            out.bytesField("path", folder.path)
            out.field("problem")
            out.string(folder.problem)
        }
        out.raw("}}\n")
        return out.bytes
    }
}
