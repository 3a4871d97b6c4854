import Testing

@testable import MDQWire

/// Where a search goes, decided once (`SearchRouter`): each destination,
/// each fallback, and how many daemons each route asks.
@Suite struct SearchRouterTests {
    typealias Reply = SearchRouter.Reply<String>

    /// Routes with scripted replies, counting the daemons asked.
    func route(
        _ router: SearchRouter = SearchRouter(), own: Reply, system: Reply
    ) -> (SearchRouter.Outcome<String>, asked: [SearchRouter.Destination]) {
        var asked: [SearchRouter.Destination] = []
        let outcome = router.route { destination -> Reply in
            asked.append(destination)
            switch destination {
            case .ownDaemon: return own
            case .systemIndex: return system
            }
        }
        return (outcome, asked)
    }

    @Test func theUsersDaemonAnswersAndNothingElseIsAsked() {
        let (outcome, asked) = route(own: .answered, system: .answered)
        guard case .answered(by: .ownDaemon) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(asked == [.ownDaemon])
    }

    @Test func theSystemIndexAnswersWhenTheUsersDaemonIsOutOrDeclines() {
        for own in [Reply.unavailable("not running"), .declined("not-covered", gap: nil)] {
            let (outcome, asked) = route(own: own, system: .answered)
            guard case .answered(by: .systemIndex) = outcome else {
                Issue.record("\(outcome)")
                continue
            }
            #expect(asked == [.ownDaemon, .systemIndex])
        }
    }

    @Test func hereWhenEveryDaemonIsOutOrDeclines() {
        let (outcome, asked) = route(own: .declined("not-covered", gap: "hidden files"), system: .unavailable("none"))
        guard case .here(let trail) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(asked == [.ownDaemon, .systemIndex])
        #expect(trail.everyDaemonDeclined, "every daemon reached declined: the next process need not ask")
        #expect(trail.gap == "hidden files")

        let (none, noneAsked) = route(own: .unavailable("none"), system: .unavailable("none"))
        guard case .here(let empty) = none else {
            Issue.record("\(none)")
            return
        }
        #expect(noneAsked.count == 2)
        #expect(!empty.everyDaemonDeclined, "no daemon runs: nothing declined")
    }

    /// A daemon that fails otherwise ends the routing: the search is
    /// answered here, with the failure said, and no other daemon is asked.
    @Test func aFailureStopsAtThatDaemon() {
        let (outcome, asked) = route(own: .failed("went away"), system: .answered)
        guard case .here(let trail) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(asked == [.ownDaemon])
        #expect(trail.failure?.1 == "went away")
        #expect(!trail.everyDaemonDeclined)
    }

    /// `--daemon`: never here; the reason is the failure, else what the
    /// last daemon reached said.
    @Test func aRequiredDaemonIsNeverAnsweredHere() {
        let required = SearchRouter(requiresDaemon: true)
        let (outcome, asked) = route(
            required, own: .declined("own: not-covered", gap: nil), system: .unavailable("none"))
        guard case .refused(let trail) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(asked == [.ownDaemon, .systemIndex])
        #expect(trail.reason?.1 == "own: not-covered")
        let (answered, _) = route(required, own: .unavailable("none"), system: .answered)
        guard case .answered(by: .systemIndex) = answered else {
            Issue.record("\(answered)")
            return
        }
    }

    /// `--no-daemon`, or a search every daemon already declined (the front
    /// said so): no daemon is asked, unless one is required.
    @Test func noDaemonIsAskedWhenNoneMayBeOrAllDeclined() {
        for router in [SearchRouter(asksDaemons: false), SearchRouter(daemonsDeclined: true)] {
            let (outcome, asked) = route(router, own: .answered, system: .answered)
            #expect(asked.isEmpty)
            guard case .here = outcome else {
                Issue.record("\(outcome)")
                continue
            }
        }
        let (_, asked) = route(
            SearchRouter(requiresDaemon: true, daemonsDeclined: true), own: .answered, system: .answered)
        #expect(asked == [.ownDaemon], "--daemon asks again")
    }
}
