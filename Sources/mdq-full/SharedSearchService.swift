import MDQCore
import MDQDaemon
import MDQShared
import MDQSystem

/// The system index's searches across hosts for its users (`SEARCH`): the
/// search `mdq --host` makes itself (`HostSearch`), over connections to the
/// shared index kept open between searches, judged for the user asking.
final class SharedSearchService: HostSearching {
    let url: String
    let ownName: String?
    /// Connections not in use; one is made when none is free.
    private let idle = Locked<[SharedReader]>([])
    /// At most this many kept between searches.
    static let keptConnections = 4
    /// Connections one search shares the other hosts among: each searches
    /// its hosts at once with the others (a rare word over nine hosts of a
    /// million entries: 24 ms in the database on one, see
    /// Documentation/measurements.md for two).
    static let connectionsPerSearch = 2
    /// The most lines one answer gives: a search that finds more is left
    /// to the full command (which prints as it reads), so a user cannot
    /// make the system index hold their millions of paths.
    static let mostLines = 100_000

    init(url: String, ownName: String?) {
        self.url = url
        self.ownName = ownName
    }

    func answer(_ request: HostSearchRequest, own: @escaping HostSearchRequest.Own) throws -> HostSearchReply {
        let wanted = max(1, min(request.hosts?.count ?? Self.connectionsPerSearch, Self.connectionsPerSearch))
        var readers = idle.withLock { idle in (0..<min(wanted, idle.count)).map { _ in idle.removeLast() } }
        do {
            while readers.count < wanted { readers.append(try SharedReader(connection: PostgresConnection(url: url))) }
        } catch {
            readers.forEach(keep)
            throw MetadataError.daemon("the shared index: \((error as? SharedIndexError)?.message ?? "\(error)")")
        }
        var search = HostSearch(predicate: request.predicate, user: request.user)
        search.hostNames = request.hosts
        search.ownName = ownName
        search.budget = request.budget
        // Without a limit (or a larger one), one more than an answer may
        // hold: a search that reaches it is the full command's.
        search.limit = request.counting ? request.limit : min(request.limit ?? Int.max, Self.mostLines + 1)
        let answer: HostSearch.Answer
        do {
            answer = try search.run(readers: readers, counting: request.counting) { _, counting, limit in
                let (count, items) = try own(counting, limit)
                return (count, items.map { HostSearch.Result(host: nil, item: $0, stale: false) })
            }
        } catch let error as SharedIndexError {
            // The connection may be what failed: not kept.
            throw MetadataError.daemon("the shared index: \(error.message)")
        } catch let refusal as SharedReader.Refusal {
            readers.forEach(keep)
            throw MetadataError.invalidArgument(refusal.description)
        } catch {
            readers.forEach(keep)
            throw error
        }
        readers.forEach(keep)
        var reply = HostSearchReply()
        reply.warnings = answer.warnings
        if request.counting {
            reply.count = answer.count
            return reply
        }
        guard answer.results.count <= Self.mostLines || (request.limit ?? Int.max) <= Self.mostLines else {
            throw MetadataError.tooExpensive("more than \(Self.mostLines) results: left to the full command")
        }
        for result in answer.results.prefix(request.limit ?? Int.max) {
            var line: [UInt8] = []
            if let host = result.host { line = Array(host.utf8) + [UInt8(ascii: ":")] }
            line += result.item.pathBytes
            reply.lines.append(line)
        }
        reply.count = reply.lines.count
        return reply
    }

    private func keep(_ reader: SharedReader) {
        idle.withLock { if $0.count < Self.keptConnections { $0.append(reader) } }
    }
}
