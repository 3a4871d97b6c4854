extension SharedSchema {
    /// Version 11: the same answers, for less of the database's time on
    /// each search (measured on 10 hosts of a million entries each, in
    /// `Benchmarks/results/multihost.md`). Functions only: nothing a
    /// publisher writes or a reader reads changes.
    ///
    /// - `mdq.denied_classes` judges each class a list rule names once
    ///   (its `granted` step materialized), not once per rule with a hash
    ///   table built each time: 2.0 ms a call on 10 hosts, now 0.3; and,
    ///   as `mdq.unreadable_classes`, it is PL/pgSQL, whose plan a session
    ///   keeps (a SQL function with a `SET` is planned at every call).
    /// - `mdq.count` plans the entries of removed folders and of folders
    ///   the viewer may not list without partitionwise joins: each is
    ///   driven by a few folders, and planning a join per partition cost
    ///   more than the join (5 ms of a count on 9 hosts). A count within
    ///   folders keeps them.
    static let version11 = #"""
        CREATE OR REPLACE FUNCTION mdq.denied_classes(viewer text, hosts smallint[]) RETURNS bigint[]
        LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
        BEGIN
            RETURN (
                WITH v AS (
                    SELECT h.host_id, coalesce(i.uid, 4294967295) AS uid, coalesce(i.gids, '{}') AS gids
                    FROM mdq.host h
                    LEFT JOIN mdq.identity i ON i.domain = h.domain AND i.user_name = viewer AND i.uid <> 0
                    WHERE h.host_id = ANY (hosts)
                ), granted AS MATERIALIZED (
                    SELECT a.host_id, a.class_id,
                           mdq.may(4, a.mode, a.owner, a."group", a.acl, v.uid, v.gids)
                           AND mdq.may(1, a.mode, a.owner, a."group", a.acl, v.uid, v.gids) AS walk
                    FROM mdq.access_class a JOIN v ON v.host_id = a.host_id
                    WHERE EXISTS (SELECT 1 FROM mdq.list_rule l
                                  WHERE l.host_id = a.host_id AND l.access_class = a.class_id)
                )
                SELECT coalesce(array_agg(DISTINCT (r.host_id::bigint << 32) | r.list_class), '{}')
                FROM mdq.list_rule r
                JOIN v ON v.host_id = r.host_id
                LEFT JOIN granted g ON g.host_id = r.host_id AND g.class_id = r.access_class
                WHERE r.need <> 5 OR g.walk IS NOT TRUE);
        END $$;

        CREATE OR REPLACE FUNCTION mdq.unreadable_classes(viewer text, hosts smallint[]) RETURNS bigint[]
        LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
        BEGIN
            RETURN (
                WITH v AS (
                    SELECT h.host_id, coalesce(i.uid, 4294967295) AS uid, coalesce(i.gids, '{}') AS gids
                    FROM mdq.host h
                    LEFT JOIN mdq.identity i ON i.domain = h.domain AND i.user_name = viewer AND i.uid <> 0
                    WHERE h.host_id = ANY (hosts)
                )
                SELECT coalesce(array_agg((a.host_id::bigint << 32) | a.class_id), '{}')
                FROM mdq.access_class a JOIN v ON v.host_id = a.host_id
                WHERE (a.mode & 292 <> 292 OR a.acl IS NOT NULL)
                  AND NOT mdq.may(4, a.mode, a.owner, a."group", a.acl, v.uid, v.gids));
        END $$;

        -- As version 10's; partitionwise joins only within folders.
        CREATE OR REPLACE FUNCTION mdq.count(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                             viewer text DEFAULT NULL)
        RETURNS bigint LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp SET enable_partitionwise_join = off AS $$
        DECLARE
            total bigint;
            who text := mdq.viewer(viewer);
            denied bigint[];
            test text := mdq.condition_for(condition, who, hosts);
        BEGIN
            IF jsonb_array_length(coalesce(scopes, '[]')) > 0 THEN
                -- Undone when the function returns (its SET clause).
                PERFORM set_config('enable_partitionwise_join', 'on', true);
                EXECUTE format(
                    $q$SELECT count(*) FROM mdq.entry e
                       JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                       WHERE e.deleted_seq IS NULL AND f.deleted_seq IS NULL AND e.host_id = ANY (%L::smallint[])
                         AND %s AND %s$q$,
                    hosts, mdq.search_filter(hosts, scopes, who), test) INTO total;
                RETURN total;
            END IF;
            IF who IS NOT NULL THEN
                denied := mdq.denied_classes(who, hosts);
            END IF;
            EXECUTE format(
                $q$SELECT (SELECT count(*) FROM mdq.entry e
                           WHERE e.deleted_seq IS NULL AND e.host_id = ANY (%1$L::smallint[]) AND %2$s)
                        - (SELECT count(*) FROM mdq.folder f
                           JOIN mdq.entry e ON e.host_id = f.host_id AND e.parent_id = f.folder_id
                                           AND e.deleted_seq IS NULL
                           WHERE f.deleted_seq IS NOT NULL AND f.host_id = ANY (%1$L::smallint[]) AND %2$s)
                        - %3$s$q$,
                hosts, test,
                CASE WHEN coalesce(cardinality(denied), 0) = 0 THEN '0' ELSE format(
                    $d$(SELECT count(*) FROM mdq.folder f
                        JOIN mdq.entry e ON e.host_id = f.host_id AND e.parent_id = f.folder_id AND e.deleted_seq IS NULL
                        WHERE f.deleted_seq IS NULL AND f.host_id = ANY (%L::smallint[])
                          AND f.list_class = ANY (%L::int[])
                          AND ((f.host_id::bigint << 32) | f.list_class) = ANY (%L::bigint[]) AND %s)$d$,
                    hosts, ARRAY(SELECT DISTINCT d & 4294967295 FROM unnest(denied) AS d)::text, denied::text, test)
                END) INTO total;
            RETURN total;
        END $$;
        """#
}
