package import MDQLive
package import MDQSystem
import SystemPackage

extension EngineProblem {
    /// The problem for people, as the query's `errors` list it.
    package func error(watching: Int) -> MetadataError {
        switch self {
        case .watchLimit(let unwatched, let example, let limit):
            let needed = watching + unwatched
            return .watcherUnavailable(
                "results are incomplete: \(unwatched) folders are not watched "
                    + "(inotify watch limit \(limit) in /proc/sys/fs/inotify/max_user_watches; "
                    + "these scopes need about \(needed)); raise it, e.g. "
                    + "sudo sysctl fs.inotify.max_user_watches=\(max(needed * 2, 524_288)), and restart the query",
                path: example, underlying: .noSpace)
        case .unreadableFolder(let path, let error):
            return MetadataError(
                code: .scopeUnreadable,
                message: "cannot read folder (what is inside it is missing from the results until it can be read)",
                path: path, underlying: error)
        case .unwatchableFolder(let path, let error):
            return .watcherUnavailable(
                "cannot watch folder (changes inside it are not seen)", path: path, underlying: error)
        case .missingScope(let path):
            return MetadataError(
                code: .scopeNotFound, message: "scope folder is gone (its results return when it does)", path: path)
        case .daemonUnreachable(let path):
            return .daemon(
                "the index daemon is not reachable; results are not live until it is (reconnecting)", path: path)
        case .daemonRefused(let path, let reason):
            return DaemonClient.untrusted(reason, path: path)
        case .tooExpensive(let message):
            return MetadataError(code: .tooExpensive, message: message)
        case .sharedIndex(let message):
            return .daemon(message)
        case .hostOffline(let host, let message):
            var error = MetadataError(code: .hostOffline, message: message)
            error.host = host
            return error
        case .hostFolder(let path, let problem):
            return .hostScope(problem, path: path)
        }
    }

    /// What makes two problems the same report: the watch limit is one
    /// problem however many folders it keeps unwatched.
    package var reportKey: EngineProblem {
        switch self {
        case .watchLimit(_, _, let limit): .watchLimit(unwatched: 0, example: FilePath(), limit: limit)
        default: self
        }
    }
}
