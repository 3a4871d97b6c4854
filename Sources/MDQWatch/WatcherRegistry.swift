package import MDQSystem

/// The watcher backends mdq has, by name.
package enum WatcherBackend: String, CaseIterable, Sendable {
    /// A watch per folder, through libinotifytools (`InotifyWatcher`): any
    /// user, any filesystem, one kernel watch per folder.
    case inotify
    /// One fanotify mark per filesystem (`FanotifyWatcher`), folders by
    /// file handle: the system index's, which needs `CAP_SYS_ADMIN`.
    case fanotify
    /// The system index's `follow` stream for the folders it keeps live,
    /// inotify for the rest (`SystemIndexFeed`, in the daemon module): a
    /// user's daemon when a system index runs, so its folders cost no
    /// watch.
    case systemIndex = "system-index"
}

/// Which watcher an engine watches with, decided in one place (as
/// watchman's and LocalSearch's monitors choose theirs): by the engine's
/// role, with `MDQ_WATCHER` naming another backend the role allows.
package enum WatcherRegistry {
    /// What an engine is for.
    package enum Role: Sendable, Equatable {
        /// Live queries in a process of their own (`MetadataQuery`).
        case inProcess
        /// A user's index daemon; `systemIndex`: a system index is
        /// configured, which it may follow.
        case userDaemon(systemIndex: Bool)
        /// The system index (`mdq system`).
        case systemIndex
    }

    /// The backends a role may use, the preferred first.
    package static func candidates(for role: Role) -> [WatcherBackend] {
        switch role {
        case .inProcess: [.inotify]
        case .userDaemon(let systemIndex): systemIndex ? [.systemIndex, .inotify] : [.inotify]
        case .systemIndex: [.fanotify]
        }
    }

    /// The backend for `role`: the one `override` (by default
    /// `MDQ_WATCHER`) names, or the role's preferred one.
    ///
    /// - Throws: `MetadataError` `.invalidArgument` when `override` names
    ///   no backend, or one the role may not use.
    package static func backend(
        for role: Role, override: String? = ProcessEnvironment.variable("MDQ_WATCHER")
    ) throws(MetadataError) -> WatcherBackend {
        let allowed = candidates(for: role)
        guard let override, !override.isEmpty else { return allowed[0] }
        guard let named = WatcherBackend(rawValue: override) else {
            throw .invalidArgument(
                "MDQ_WATCHER=\(override) names no watcher; there are "
                    + WatcherBackend.allCases.map(\.rawValue).joined(separator: ", "))
        }
        guard allowed.contains(named) else {
            throw .invalidArgument(
                "MDQ_WATCHER=\(override) cannot watch for \(role.summary); it may use "
                    + allowed.map(\.rawValue).joined(separator: " or "))
        }
        return named
    }

    /// A watcher this module can make for `backend` (the system index's
    /// feed is made by the daemon module); nil for that one.
    package static func make(_ backend: WatcherBackend) throws(MetadataError) -> (any FolderWatcher)? {
        switch backend {
        case .inotify: try InotifyWatcher.shared()
        case .fanotify: try FanotifyWatcher()
        case .systemIndex: nil
        }
    }
}

extension WatcherRegistry.Role {
    var summary: String {
        switch self {
        case .inProcess: "queries in this process"
        case .userDaemon: "a user's index daemon"
        case .systemIndex: "the system index"
        }
    }
}
