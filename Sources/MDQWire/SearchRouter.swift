/// Where a search goes: the one rule the front (`mdq`), the full command
/// (one-shot and `--live`) and `MetadataQuery(source:)` all follow.
///
/// 1. This user's index daemon, when it runs: its index is this user's own,
///    content included.
/// 2. The system index (`mdq system`), when it runs: names and stat data of
///    every local filesystem, answered as this user may see them.
/// 3. Here: a crawl for a one-shot search, watches in this process for a
///    live one. Not when a daemon's answer is required (`--daemon`).
///
/// Each daemon is asked at most once per search. One that is not running
/// (or not to be trusted) or that declines the search (`not-covered`: it
/// does not keep those folders) passes it to the next; what one declined
/// is remembered, so a search passed on to another process (the front
/// running the full command) is not asked again. A daemon that fails in any
/// other way ends the routing: its failure is the search's answer, unless
/// searching here is allowed, when the failure is said and the search is
/// answered here. The router only decides; connecting and asking are the
/// caller's (`ask`), so the front keeps its own small client.
package struct SearchRouter: Sendable {
    /// A daemon a search can be asked of (else it is answered here:
    /// `Outcome.here`).
    package enum Destination: String, Sendable, Equatable, CaseIterable {
        case ownDaemon = "your index daemon"
        case systemIndex = "the system index"
    }

    /// What asking one daemon gave.
    package enum Reply<Failure: Sendable>: Sendable {
        /// It answered (the caller has printed or taken its answer).
        case answered
        /// It is not running, or its socket is not to be trusted: the next
        /// is asked (`why` is said if every destination is out).
        case unavailable(Failure)
        /// It does not keep what the search covers (`why`, as it said it;
        /// `gap`: what it leaves out of a folder it does keep, worth a word
        /// to the user).
        case declined(Failure, gap: String?)
        /// Anything else (a refusal, a daemon that went away mid-answer).
        case failed(Failure)
    }

    /// What routing a search met on the way, when no daemon answered.
    package struct Trail<Failure: Sendable>: Sendable {
        /// The daemons that declined the search, and what they said.
        package var declined: [(Destination, Failure)] = []
        /// The daemons not running or not to be trusted, and why.
        package var unavailable: [(Destination, Failure)] = []
        /// The first gap a declining daemon said.
        package var gap: String?
        /// The daemon that failed, and how.
        package var failure: (Destination, Failure)?

        /// Every daemon reached declined the search (at least one was):
        /// the next process searching for it need not ask them again
        /// (`SearchRouter.declinedVariable`).
        package var everyDaemonDeclined: Bool { failure == nil && !declined.isEmpty }

        /// Why no daemon answered: the failure, else what the last daemon
        /// reached said, else why the last one was out.
        package var reason: (Destination, Failure)? { failure ?? declined.last ?? unavailable.last }
    }

    /// How a search was routed.
    package enum Outcome<Failure: Sendable>: Sendable {
        /// A daemon answered.
        case answered(by: Destination)
        /// To be answered here: every daemon was out or declined, or one
        /// failed and searching here is allowed.
        case here(Trail<Failure>)
        /// No daemon could answer and one must (`--daemon`), or one failed
        /// and searching here is not allowed.
        case refused(Trail<Failure>)
    }

    /// Daemons are asked (not `--no-daemon`).
    package var asksDaemons: Bool
    /// Only a daemon may answer (`--daemon`).
    package var requiresDaemon: Bool
    /// The daemons already declined this search (the front said so:
    /// `declinedVariable`): none is asked again.
    package var daemonsDeclined: Bool

    package init(asksDaemons: Bool = true, requiresDaemon: Bool = false, daemonsDeclined: Bool = false) {
        self.asksDaemons = asksDaemons
        self.requiresDaemon = requiresDaemon
        self.daemonsDeclined = daemonsDeclined && !requiresDaemon
    }

    /// Set by the front for the full command when every daemon declined
    /// the search: it searches here at once.
    package static let declinedVariable = "MDQ_DAEMONS_DECLINED"

    /// Set by the front for the full command when the system index found
    /// more results across hosts than it gives a user: asked again for
    /// them with their attributes, it would read as many to say so again.
    package static let pastCapVariable = "MDQ_HOSTS_PAST_CAP"

    /// How the system index's refusal past that cap ends (`too-expensive`).
    package static let pastCapReason = "left to the full command"

    /// The daemons to ask, in order.
    package var daemons: [Destination] {
        asksDaemons && !daemonsDeclined ? [.ownDaemon, .systemIndex] : []
    }

    /// Routes a search: asks the daemons in order with `ask`, each at most
    /// once, and says where it ends.
    package func route<Failure: Sendable>(_ ask: (Destination) -> Reply<Failure>) -> Outcome<Failure> {
        var trail = Trail<Failure>()
        for daemon in daemons {
            switch ask(daemon) {
            case .answered:
                return .answered(by: daemon)
            case .unavailable(let why):
                trail.unavailable.append((daemon, why))
            case .declined(let why, let gap):
                trail.declined.append((daemon, why))
                if trail.gap == nil { trail.gap = gap }
            case .failed(let why):
                trail.failure = (daemon, why)
                return requiresDaemon ? .refused(trail) : .here(trail)
            }
        }
        return requiresDaemon ? .refused(trail) : .here(trail)
    }
}
