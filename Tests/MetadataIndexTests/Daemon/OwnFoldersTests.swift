import SystemPackage
import Testing

@testable import MDQCore
@testable import MDQDaemon
@testable import MDQLive
@testable import MDQSystem

/// This host's folders of a search across hosts as its system index is
/// asked for them (`DaemonClient.ownFolders`): a folder above every one
/// it indexes from stands for those below it that the user can open; one
/// within them, or beside them, is asked as it is.
@Suite struct OwnFoldersTests {
    func expand(_ folders: [String], roots: [String], closed: Set<String> = []) -> [String] {
        DaemonClient.ownFolders(folders.map { Array($0.utf8) }, roots: roots.map { Array($0.utf8) }) {
            !closed.contains(String(decoding: $0, as: UTF8.self))
        }.map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func aFolderAboveTheRootsIsTheRootsBelowIt() {
        let roots = ["/srv/data", "/srv/media", "/home"]
        #expect(expand(["/srv"], roots: roots) == ["/srv/data", "/srv/media"])
        #expect(expand(["/srv", "/srv/data"], roots: roots) == ["/srv/data", "/srv/media"], "each once")
        // Within a root, beside them, or a name that only begins the same.
        #expect(expand(["/srv/data/x"], roots: roots) == ["/srv/data/x"])
        #expect(expand(["/var"], roots: roots) == ["/var"])
        #expect(expand(["/sr"], roots: roots) == ["/sr"])
        #expect(expand(["/srv/dat"], roots: roots) == ["/srv/dat"])
        // Those the user cannot open are left out; none left, as it is.
        #expect(expand(["/srv"], roots: roots, closed: ["/srv/data"]) == ["/srv/media"])
        #expect(expand(["/srv"], roots: roots, closed: ["/srv/data", "/srv/media"]) == ["/srv"])
        // Its `/` is all of it, given whole (not as the roots one can open).
        #expect(expand(["/"], roots: roots, closed: ["/home"]) == ["/"])
        // A system index of the whole machine holds every folder.
        #expect(expand(["/srv"], roots: ["/", "/srv/data"]) == ["/srv"])
    }

    /// The folder a daemon's refusal names, among several whose paths
    /// begin the same: the one it names whole.
    @Test func aRefusalNamesItsFolderWhole() {
        let scopes = ["/srv/data", "/srv/data2", "/srv/dat"].map {
            ScopeRequest(path: FilePath($0), rules: ScopeRules(includeHidden: true))
        }
        func refused(_ message: String) -> String {
            String(decoding: DaemonClient.folder(refusedBy: .daemon(message), among: scopes), as: UTF8.self)
        }
        #expect(refused("the system index does not index /srv/data2") == "/srv/data2")
        #expect(refused("the system index does not index /srv/data") == "/srv/data")
        #expect(refused("/srv/dat is on a filesystem the system index does not index") == "/srv/dat")
        #expect(refused("not indexed") == "/srv/data")
    }
}
