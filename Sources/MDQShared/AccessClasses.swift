package import MDQSystem

/// How an entry's access is kept in `mdq.access_class`: its mode, owner,
/// group and a folder's POSIX ACL (a JSON array of `[tag, permissions, id]`, the
/// kernel's tags). A folder whose access the host has not read yet is
/// kept as `unknown`: mode 0 and owner and group 4294967295 (no user's
/// number), which nobody may list but root.
package enum AccessRow {
    package static let unknown = EntryAccess(mode: 0, owner: UInt32.max, group: UInt32.max)

    /// `mode`, `owner`, `group` and `acl` as SQL text (nil: NULL).
    package static func columns(_ access: EntryAccess?) -> [String?] {
        let access = access ?? unknown
        let acl = access.acl.map { entries in
            "[" + entries.map { "[\($0.tag),\($0.permissions),\($0.id)]" }.joined(separator: ",") + "]"
        }
        return [String(access.mode), String(access.owner), String(access.group), acl]
    }

    /// The access these columns hold; nil when they are not what mdq wrote.
    package static func access(mode: String?, owner: String?, group: String?, acl: String?) -> EntryAccess? {
        guard let mode = mode.flatMap(UInt16.init), let owner = owner.flatMap(UInt32.init),
            let group = group.flatMap(UInt32.init)
        else { return nil }
        var entries: [EntryAccess.ACLEntry]?
        if let acl {
            // [[1,7,0],[2,5,1000],…]: numbers only.
            let numbers = acl.split(whereSeparator: { !$0.isNumber }).compactMap { UInt32($0) }
            guard numbers.count % 3 == 0 else { return nil }
            entries = stride(from: 0, to: numbers.count, by: 3).map {
                EntryAccess.ACLEntry(
                    tag: UInt16(truncatingIfNeeded: numbers[$0]),
                    permissions: UInt16(truncatingIfNeeded: numbers[$0 + 1]),
                    id: numbers[$0 + 2])
            }
        }
        return EntryAccess(mode: mode, owner: owner, group: group, acl: entries)
    }
}

/// A publisher's numbering of its host's access classes and list classes,
/// as the database holds them: each distinct entry access (owner, group,
/// mode, and a folder's ACL) is an access class, and each distinct list of
/// folders' ones (what a folder's contents need:
/// `PublishedEntry.listRestrictions`) a list class, whose rules
/// (`mdq.list_rule`) are one row per access class, each needing read and
/// search. List class 0 has no rule: everyone may list.
///
/// New classes are numbered at once, after the highest number the
/// database holds (a row this mdq cannot read keeps its number), and
/// written by `flush`, in the transaction of the rows that use them.
struct ClassBook {
    let hostID: Int
    private var accessIDs: [EntryAccess?: Int32] = [:]
    private var listIDs: [[Int32]: Int32] = [[]: 0]
    private var newAccess: [(EntryAccess?, Int32)] = []
    private var newLists: [([Int32], Int32)] = []
    private var nextAccessID: Int32 = 1
    private var nextListID: Int32 = 1
    /// The class `entryClass` gave last: a folder's files mostly share one.
    private var lastEntryClass: (access: EntryAccess, id: Int32)?

    /// Read and search, as a walk needs on every folder down to a name.
    static let walk = 5

    init(hostID: Int, connection: PostgresConnection) throws(SharedIndexError) {
        self.hostID = hostID
        let access = try connection.execute(
            "SELECT class_id, mode, owner, \"group\", acl FROM mdq.access_class WHERE host_id = $1", [String(hostID)])
        for row in access.rows {
            guard let id = row[0].flatMap(Int32.init) else { continue }
            nextAccessID = max(nextAccessID, id + 1)
            guard let stored = AccessRow.access(mode: row[1], owner: row[2], group: row[3], acl: row[4]) else {
                continue
            }
            accessIDs[stored == AccessRow.unknown ? nil : stored] = id
        }
        let lists = try connection.execute(
            """
            SELECT list_class, array_agg(access_class ORDER BY access_class)::text
            FROM mdq.list_rule WHERE host_id = $1 GROUP BY list_class
            """, [String(hostID)])
        for row in lists.rows {
            guard let id = row[0].flatMap(Int32.init), let members = row[1] else { continue }
            nextListID = max(nextListID, id + 1)
            let ids: [Int32] = PostgresArray.integers(members)
            listIDs[ids] = id
        }
    }

    /// The number of `access`'s class (nil: a folder whose access was not
    /// read, which nobody but root may list), numbering it when new.
    private mutating func accessClass(_ access: EntryAccess?) -> Int32 {
        if let known = accessIDs[access] { return known }
        let id = nextAccessID
        nextAccessID += 1
        accessIDs[access] = id
        newAccess.append((access, id))
        return id
    }

    /// The access class an entry's row names (its owner, group and mode),
    /// nil for one not read (its row says nothing of them).
    mutating func entryClass(_ access: EntryAccess?) -> Int32? {
        guard let access else { return nil }
        if let last = lastEntryClass, last.access == access { return last.id }
        let id = accessClass(access)
        lastEntryClass = (access, id)
        return id
    }

    /// The list class of a folder whose contents need `restrictions`.
    mutating func listClass(_ restrictions: [EntryAccess?]) -> Int32 {
        var members: [Int32] = []
        for access in restrictions { members.append(accessClass(access)) }
        members.sort()
        if let known = listIDs[members] { return known }
        let id = nextListID
        nextListID += 1
        listIDs[members] = id
        newLists.append((members, id))
        return id
    }

    /// Writes the classes numbered since the last flush.
    mutating func flush(_ connection: PostgresConnection) throws(SharedIndexError) {
        let host = String(hostID)
        for (access, id) in newAccess {
            _ = try connection.execute(
                """
                INSERT INTO mdq.access_class (host_id, class_id, mode, owner, "group", acl)
                VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT DO NOTHING
                """, [host, String(id)] + AccessRow.columns(access))
        }
        for (members, id) in newLists {
            _ = try connection.execute(
                """
                INSERT INTO mdq.list_rule (host_id, list_class, access_class, need)
                SELECT $1, $2, unnest($3::integer[]), $4 ON CONFLICT DO NOTHING
                """,
                [host, String(id), PostgresArray.numbers(members), String(Self.walk)])
        }
        newAccess.removeAll()
        newLists.removeAll()
    }
}
