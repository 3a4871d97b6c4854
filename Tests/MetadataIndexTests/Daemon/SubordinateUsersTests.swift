import Testing

@testable import MDQCore
@testable import MDQEngine
@testable import MDQImport
@testable import MDQLive
@testable import MDQSystem
@testable import MetadataIndex

/// A user's subordinate ids (`/etc/subuid`) spend that user's share of a
/// service, not shares of their own.
struct SubordinateUsersTests {
    @Test func subordinateIDsCountAsTheirOwner() {
        let users = SubordinateUsers.parse(
            """
            alice:100000:65536
            1001:165536:65536
            # not a range
            mallory:x:10
            ghost:300000:10
            """, lookUp: { $0 == "alice" ? 1000 : nil })
        #expect(users.owner(of: 100_000) == 1000)
        #expect(users.owner(of: 165_535) == 1000)
        #expect(users.owner(of: 165_536) == 1001)
        #expect(users.owner(of: 231_071) == 1001)
        #expect(users.owner(of: 231_072) == 231_072)
        #expect(users.owner(of: 300_001) == 300_001, "a name nobody has owns nothing")
        #expect(users.owner(of: 1000) == 1000)
    }
}
