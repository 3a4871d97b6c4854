extension SharedSchema {
    /// Version 4: searches planned host by host, counts that read no
    /// folder of what the viewer may see, and trigram indexes whose
    /// pending lists stay short.
    ///
    /// It replaces functions' bodies and settings and adds an index:
    /// readers of version 3 go on. Publishers must know version 4: its
    /// counts rely on every entry row having its folder's row, which only
    /// they keep (a batch read whole, or carrying the folders above its
    /// entries); an older publisher stops with the reason until upgraded.
    ///
    /// - `mdq.search` and `mdq.count` join each host's entries with its
    ///   own folders (`enable_partitionwise_join`): joined whole, the
    ///   planner hashed every folder of every host for a rare word's
    ///   fourteen matches (170 ms instead of 25). A search with a limit
    ///   asks each host for its first rows apart, each planned for the
    ///   limit: planned together, the first row waited for a bitmap of
    ///   every match of the first host (the first 100 `*.txt` of four
    ///   hosts: 26 ms, now 1).
    /// - `mdq.count` without scopes counts the matching entries alone
    ///   (an index-only scan for `ext`), less those in folders the viewer
    ///   may not list and in folders removed: a million `*.png` no longer
    ///   look up their folder each (260 ms → 75). Every entry row has its
    ///   folder's row: each batch is the index at one moment, or carries
    ///   the folders above its entries.
    /// - `folder_removed`: the removed folders (tombstones), which a count
    ///   leaves out.
    /// - Each trigram index's pending list (entries inserted but not yet
    ///   sorted into the index, which every search reads whole) is held
    ///   to 256 kB instead of 4 MB: a host that changes all the time made
    ///   a rare word read 500 pages of it (12 ms a host instead of 3).
    static let version4 = #"""
        CREATE INDEX folder_removed ON mdq.folder (host_id) WHERE deleted_seq IS NOT NULL;

        CREATE OR REPLACE FUNCTION mdq.search(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                              viewer text DEFAULT NULL, row_limit bigint DEFAULT NULL)
        RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp SET enable_partitionwise_join = on AS $$
        DECLARE
            found refcursor := 'mdq_search';
            filter text := mdq.search_filter(hosts, scopes, mdq.viewer(viewer));
            test text := mdq.condition_sql(condition);
            parts text[] := '{}';
            host smallint;
            query text := $q$SELECT e.host_id, f.path, f.raw_path, e.name, e.raw_name, e.kind, e.size,
                                    (extract(epoch FROM e.mtime) * 1000000)::bigint,
                                    (extract(epoch FROM e.btime) * 1000000)::bigint, e.inode, e.content_type, e.entry_id
                             FROM mdq.entry e JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                             WHERE e.deleted_seq IS NULL AND f.deleted_seq IS NULL AND %s AND %s AND %s$q$;
        BEGIN
            IF row_limit IS NULL OR coalesce(cardinality(hosts), 0) = 0 THEN
                OPEN found NO SCROLL FOR EXECUTE format(
                    query, format('e.host_id = ANY (%L::smallint[])', hosts), filter, test);
            ELSE
                -- The first rows of each host, each planned for its limit:
                -- planned for all the hosts at once, the first row waited
                -- for every match of the first host (a bitmap built whole).
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
        REVOKE ALL ON FUNCTION mdq.search(smallint[], jsonb, jsonb, text, bigint) FROM PUBLIC;

        CREATE OR REPLACE FUNCTION mdq.count(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                             viewer text DEFAULT NULL)
        RETURNS bigint LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp SET enable_partitionwise_join = on AS $$
        DECLARE
            total bigint;
            who text := mdq.viewer(viewer);
            denied bigint[];
            test text := mdq.condition_sql(condition);
        BEGIN
            IF jsonb_array_length(coalesce(scopes, '[]')) > 0 THEN
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
            -- One statement: the matching live entries, less those in
            -- removed folders (tombstones kept a while) and, for a viewer,
            -- in folders the viewer may not list (the classes alone first,
            -- their index, then the pairs).
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

        CREATE OR REPLACE FUNCTION mdq.reload_index(id smallint) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            t text;
            definition text;
            gin regclass;
        BEGIN
            PERFORM mdq.check_publisher(id);
            FOREACH t IN ARRAY ARRAY['entry', 'folder'] LOOP
                -- The primary key as a constraint (a plain unique index
                -- would not stand for it: attaching would build another).
                FOR definition IN
                    SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
                    WHERE c.conrelid = format('mdq.%s', t)::regclass AND c.contype = 'p'
                LOOP
                    EXECUTE format('ALTER TABLE mdq.%s_%s_reload ADD %s', t, id, definition);
                END LOOP;
                FOR definition IN
                    SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
                    WHERE i.indrelid = format('mdq.%s', t)::regclass AND NOT i.indisprimary
                LOOP
                    EXECUTE regexp_replace(
                        definition, '^CREATE (UNIQUE )?INDEX \S+ ON ONLY mdq\.' || t || ' ',
                        format('CREATE \1INDEX ON mdq.%s_%s_reload ', t, id));
                END LOOP;
                FOR gin IN
                    SELECT i.indexrelid::regclass FROM pg_index i
                    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
                    WHERE i.indrelid = format('mdq.%s_%s_reload', t, id)::regclass AND a.amname = 'gin'
                LOOP
                    EXECUTE format('ALTER INDEX %s SET (gin_pending_list_limit = 256)', gin);
                END LOOP;
                EXECUTE format('ANALYZE mdq.%s_%s_reload', t, id);
            END LOOP;
        END $$;
        REVOKE ALL ON FUNCTION mdq.reload_index(smallint) FROM PUBLIC;

        DO $$
        DECLARE
            gin regclass;
        BEGIN
            FOR gin IN
                SELECT c.oid::regclass FROM pg_class c
                JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam
                WHERE n.nspname = 'mdq' AND c.relkind = 'i' AND a.amname = 'gin'
            LOOP
                EXECUTE format('ALTER INDEX %s SET (gin_pending_list_limit = 256)', gin);
            END LOOP;
        END $$;
        """#
}
