extension SharedSchema {
    /// Version 9: every entry's owner, group and permission bits, as the
    /// access class its row names (`read_class`, a number of
    /// `mdq.access_class`, where folders' classes already were): four bytes
    /// a row, where the owner, group and mode columns would take 24. The
    /// search functions give them after their other columns
    /// (`mode`, `owner`, `group`), so readers of version 3 go on.
    ///
    /// A host's rows written before are filled by its publisher's next
    /// reload: `mdq.host.row_version` says which version's columns a host's
    /// rows hold, and a publisher that writes more reloads its host once
    /// (publishers must know version 9; one of an older mdq still running
    /// writes rows without an access class, shown without an owner).
    ///
    /// `mdq.denied_classes` judges only the classes list rules name:
    /// files' classes (one for each owner, group and mode among them) are
    /// never what listing a folder takes.
    static let version9 = #"""
        -- The schema version whose columns the host's rows all hold (its
        -- publisher's last reload), written by publishing roles.
        ALTER TABLE mdq.host ADD COLUMN row_version smallint NOT NULL DEFAULT 0;
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT DISTINCT grantee FROM information_schema.column_privileges
                WHERE table_schema = 'mdq' AND table_name = 'host' AND column_name = 'last_seq'
                  AND privilege_type = 'UPDATE' AND grantee NOT IN ('PUBLIC', current_user)
            LOOP
                EXECUTE format('GRANT UPDATE (row_version) ON mdq.host TO %I', r.grantee);
            END LOOP;
        END $$;

        -- As version 3's, judging only the classes a list rule names.
        CREATE OR REPLACE FUNCTION mdq.denied_classes(viewer text, hosts smallint[]) RETURNS bigint[]
        LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
            WITH v AS (
                SELECT h.host_id, coalesce(i.uid, 4294967295) AS uid, coalesce(i.gids, '{}') AS gids
                FROM mdq.host h
                LEFT JOIN mdq.identity i ON i.domain = h.domain AND i.user_name = viewer AND i.uid <> 0
                WHERE h.host_id = ANY (hosts)
            ), granted AS (
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
            WHERE r.need <> 5 OR g.walk IS NOT TRUE
        $$;

        ALTER TYPE mdq.search_row ADD ATTRIBUTE mode integer, ADD ATTRIBUTE owner bigint,
                                  ADD ATTRIBUTE "group" bigint;

        -- As version 6's, each row with its access class's mode, owner and
        -- group last (NULL for a row without one).
        CREATE OR REPLACE FUNCTION mdq.search(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                              viewer text DEFAULT NULL, row_limit bigint DEFAULT NULL,
                                              sort jsonb DEFAULT NULL)
        RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp SET enable_partitionwise_join = on AS $$
        DECLARE
            found refcursor := 'mdq_search';
            filter text := mdq.search_filter(hosts, scopes, mdq.viewer(viewer));
            test text := mdq.condition_sql(condition);
            ordering text;
            parts text[] := '{}';
            host smallint;
            rows mdq.search_row[] := '{}';
            part mdq.search_row[];
            query text := $q$SELECT e.host_id, f.path, f.raw_path, e.name, e.raw_name, e.kind, e.size,
                                    (extract(epoch FROM e.mtime) * 1000000)::bigint AS mtime,
                                    (extract(epoch FROM e.btime) * 1000000)::bigint AS btime, e.inode,
                                    ty.identifier AS content_type, e.entry_id, a.mode, a.owner, a."group"
                             FROM mdq.entry e JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                             LEFT JOIN mdq.content_type ty ON ty.type_id = e.type_id
                             LEFT JOIN mdq.access_class a ON a.host_id = e.host_id AND a.class_id = e.read_class
                             WHERE e.deleted_seq IS NULL AND f.deleted_seq IS NULL AND %s AND %s AND %s$q$;
        BEGIN
            IF sort IS NOT NULL THEN
                ordering := format('ORDER BY e.%s %s',
                    CASE sort ->> 0 WHEN 'size' THEN 'size' WHEN 'mtime' THEN 'mtime' WHEN 'btime' THEN 'btime' END,
                    CASE sort ->> 1 WHEN 'asc' THEN 'ASC NULLS FIRST' WHEN 'desc' THEN 'DESC NULLS LAST' END);
                IF ordering IS NULL OR jsonb_array_length(sort) <> 2 THEN
                    RAISE EXCEPTION 'mdq: not a sort: %', left(sort::text, 200) USING ERRCODE = '22023';
                END IF;
            END IF;
            IF row_limit IS NULL OR coalesce(cardinality(hosts), 0) = 0 THEN
                OPEN found NO SCROLL FOR EXECUTE format(
                    query, format('e.host_id = ANY (%L::smallint[])', hosts), filter, test)
                    || coalesce(' ' || ordering, '');
            ELSIF ordering IS NOT NULL THEN
                FOREACH host IN ARRAY hosts LOOP
                    parts := parts || format(query || ' %s FETCH FIRST %s ROWS WITH TIES',
                                             format('e.host_id = %s', host), filter, test, ordering, row_limit);
                END LOOP;
                OPEN found NO SCROLL FOR EXECUTE '(' || array_to_string(parts, ') UNION ALL (') || ')';
            ELSIF row_limit BETWEEN 0 AND 2000 THEN
                FOREACH host IN ARRAY hosts LOOP
                    EXIT WHEN cardinality(rows) >= row_limit;
                    EXECUTE format('SELECT array_agg(ROW(r.*)::mdq.search_row) FROM (' || query || ' LIMIT %s) r',
                                   format('e.host_id = %s', host), filter, test, row_limit - cardinality(rows))
                        INTO part;
                    rows := rows || coalesce(part, '{}');
                END LOOP;
                OPEN found NO SCROLL FOR SELECT * FROM unnest(rows);
            ELSE
                FOREACH host IN ARRAY hosts LOOP
                    parts := parts || format(query || ' LIMIT %s', format('e.host_id = %s', host), filter, test,
                                             row_limit);
                END LOOP;
                OPEN found NO SCROLL FOR EXECUTE
                    CASE WHEN cardinality(parts) = 1 THEN parts[1]
                         ELSE '(' || array_to_string(parts, ') UNION ALL (') || format(') LIMIT %s', row_limit) END;
            END IF;
            RETURN found;
        END $$;

        -- As version 6's, each row with its access class's mode, owner and
        -- group after `gone`.
        CREATE OR REPLACE FUNCTION mdq.changes(host smallint, since bigint, scopes jsonb DEFAULT '[]',
                                               viewer text DEFAULT NULL)
        RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            found refcursor := 'mdq_changes';
        BEGIN
            OPEN found NO SCROLL FOR EXECUTE format(
                $q$SELECT e.host_id, CASE WHEN gone THEN NULL ELSE f.path END, CASE WHEN gone THEN NULL ELSE f.raw_path END,
                          CASE WHEN gone THEN NULL ELSE e.name END, CASE WHEN gone THEN NULL ELSE e.raw_name END,
                          CASE WHEN gone THEN NULL ELSE e.kind END, CASE WHEN gone THEN NULL ELSE e.size END,
                          CASE WHEN gone THEN NULL ELSE (extract(epoch FROM e.mtime) * 1000000)::bigint END AS mtime,
                          CASE WHEN gone THEN NULL ELSE (extract(epoch FROM e.btime) * 1000000)::bigint END AS btime,
                          CASE WHEN gone THEN NULL ELSE e.inode END AS inode,
                          CASE WHEN gone THEN NULL ELSE ty.identifier END AS content_type, e.entry_id, gone,
                          CASE WHEN gone THEN NULL ELSE a.mode END AS mode,
                          CASE WHEN gone THEN NULL ELSE a.owner END AS owner,
                          CASE WHEN gone THEN NULL ELSE a."group" END AS "group"
                   FROM mdq.entry e LEFT JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                        LEFT JOIN mdq.content_type ty ON ty.type_id = e.type_id
                        LEFT JOIN mdq.access_class a ON a.host_id = e.host_id AND a.class_id = e.read_class,
                        LATERAL (SELECT e.deleted_seq IS NOT NULL OR f.folder_id IS NULL OR f.deleted_seq IS NOT NULL
                                        OR NOT coalesce(%s, false) AS gone) g
                   WHERE e.host_id = %2$s AND e.entry_id IN (
                       SELECT c.entry_id FROM mdq.entry c WHERE c.host_id = %2$s AND c.seq > %3$s
                       UNION
                       SELECT c.entry_id FROM mdq.entry c
                       JOIN mdq.folder d ON d.host_id = c.host_id AND d.folder_id = c.parent_id
                       WHERE d.host_id = %2$s AND d.seq > %3$s AND c.deleted_seq IS NULL)$q$,
                mdq.search_filter(ARRAY[host], scopes, mdq.viewer(viewer)), host, since);
            RETURN found;
        END $$;
        """#
}
