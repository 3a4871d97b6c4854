extension SharedSchema {
    /// Version 10: the words of files, for hosts that import them
    /// (`CONTENT`): `mdq.content` rows (a `tsvector` of each file's folded
    /// words, no positions, never the text), searched by `["words", W]`
    /// and `["word-prefix", W]` conditions, each true for a file whose
    /// words hold W (or one starting with W) **and that the viewer may
    /// read** (read permission on the file itself, by its access class:
    /// `mdq.unreadable_classes`).
    ///
    /// - `mdq.condition_sql(c, unreadable)`: as `mdq.condition_sql(c)`,
    ///   with the word tests, which leave out the entries of the classes
    ///   named (NULL: none, for a caller that sees everything), the
    ///   numbers of an entry's access class (`owner`, `group`, `mode`
    ///   columns: `kMDItemFSOwnerUserID`, ... tested exactly, not checked
    ///   row by row), and
    ///   `["entries", [id…]]` (at most 10,000), with which a live search
    ///   asks which of a host's changed entries match.
    /// - `mdq.search` and `mdq.count` pass it the viewer's unreadable
    ///   classes when the condition tests words.
    /// - A reload sets `content` aside and swaps it in with the entries
    ///   (an identity another index gave may name another file), and
    ///   clears `publishes_content`: a publisher that publishes words sets
    ///   it again in the swap's transaction.
    static let version10 = #"""
        -- The access classes of the hosts whose files the viewer may not
        -- read. A class that gives its owner, its group and others read
        -- and has no ACL lets everyone read; the others are judged.
        CREATE FUNCTION mdq.unreadable_classes(viewer text, hosts smallint[]) RETURNS bigint[]
        LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
            WITH v AS (
                SELECT h.host_id, coalesce(i.uid, 4294967295) AS uid, coalesce(i.gids, '{}') AS gids
                FROM mdq.host h
                LEFT JOIN mdq.identity i ON i.domain = h.domain AND i.user_name = viewer AND i.uid <> 0
                WHERE h.host_id = ANY (hosts)
            )
            SELECT coalesce(array_agg((a.host_id::bigint << 32) | a.class_id), '{}')
            FROM mdq.access_class a JOIN v ON v.host_id = a.host_id
            WHERE (a.mode & 292 <> 292 OR a.acl IS NOT NULL)
              AND NOT mdq.may(4, a.mode, a.owner, a."group", a.acl, v.uid, v.gids)
        $$;
        REVOKE ALL ON FUNCTION mdq.unreadable_classes(text, smallint[]) FROM PUBLIC;

        CREATE FUNCTION mdq.condition_sql(c jsonb, unreadable bigint[]) RETURNS text
        LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            op text;
            parts text[];
            word text;
            col text;
            test text;
        BEGIN
            IF jsonb_typeof(c) = 'array' AND jsonb_typeof(c -> 0) = 'string' THEN
                op := c ->> 0;
                IF op IN ('and', 'or') THEN
                    SELECT array_agg(mdq.condition_sql(x, unreadable) ORDER BY k) INTO parts
                    FROM jsonb_array_elements(c) WITH ORDINALITY AS t(x, k) WHERE k > 1;
                    IF parts IS NULL THEN
                        RETURN CASE op WHEN 'and' THEN 'TRUE' ELSE 'FALSE' END;
                    END IF;
                    RETURN '(' || array_to_string(parts, CASE op WHEN 'and' THEN ' AND ' ELSE ' OR ' END) || ')';
                ELSIF op = 'not' THEN
                    RETURN 'NOT coalesce(' || mdq.condition_sql(c -> 1, unreadable) || ', false)';
                ELSIF op = 'entries' THEN
                    -- Entries by id (a live search's changed rows, asked
                    -- which match): at most 10,000, each a whole number.
                    IF jsonb_array_length(c) <> 2 OR jsonb_typeof(c -> 1) <> 'array'
                       OR jsonb_array_length(c -> 1) > 10000 THEN
                        RAISE EXCEPTION 'mdq: not a condition: %', left(c::text, 200) USING ERRCODE = '22023';
                    END IF;
                    RETURN format('(e.entry_id = ANY (%L::bigint[]))',
                                  ARRAY(SELECT jsonb_array_elements_text(c -> 1)::bigint)::text);
                ELSIF c ->> 1 IN ('owner', 'group', 'mode') THEN
                    -- A number of the entry's access class.
                    col := CASE c ->> 1 WHEN 'owner' THEN 'ac.owner' WHEN 'group' THEN 'ac."group"' ELSE 'ac.mode' END;
                    test := CASE op
                        WHEN 'number=' THEN format('%s = %L::float8', col, c ->> 2)
                        WHEN 'number<' THEN format('%s < %L::float8', col, c ->> 2)
                        WHEN 'number<=' THEN format('%s <= %L::float8', col, c ->> 2)
                        WHEN 'number>' THEN format('%s > %L::float8', col, c ->> 2)
                        WHEN 'number>=' THEN format('%s >= %L::float8', col, c ->> 2)
                        WHEN 'number-between' THEN format('%s BETWEEN %L::float8 AND %L::float8', col, c ->> 2, c ->> 3)
                        WHEN 'number-in' THEN format('%s = ANY (%L::float8[])', col,
                                                     ARRAY(SELECT jsonb_array_elements_text(c -> 2))::text)
                    END;
                    IF test IS NULL THEN
                        RAISE EXCEPTION 'mdq: not a condition: %', left(c::text, 200) USING ERRCODE = '22023';
                    END IF;
                    RETURN format('EXISTS (SELECT 1 FROM mdq.access_class ac WHERE ac.host_id = e.host_id '
                                  'AND ac.class_id = e.read_class AND %s)', test);
                ELSIF op IN ('words', 'word-prefix') THEN
                    word := c ->> 1;
                    IF jsonb_array_length(c) <> 2 OR jsonb_typeof(c -> 1) <> 'string' OR word = ''
                       OR octet_length(word) > 2046 THEN
                        RAISE EXCEPTION 'mdq: not a condition: %', left(c::text, 200) USING ERRCODE = '22023';
                    END IF;
                    -- The word quoted as a tsquery lexeme, taken as it is
                    -- (no dictionary: it is folded as the words are).
                    RETURN format(
                        '((e.host_id, e.entry_id) IN (SELECT w.host_id, w.entry_id FROM mdq.content w '
                        'WHERE w.words @@ %L::tsquery)%s)',
                        '''' || replace(replace(word, '\', '\\'), '''', '\''') || ''''
                            || CASE op WHEN 'word-prefix' THEN ':*' ELSE '' END,
                        CASE WHEN unreadable IS NULL THEN '' ELSE format(
                            ' AND e.read_class IS NOT NULL'
                            ' AND NOT ((e.host_id::bigint << 32) | e.read_class) = ANY (%L::bigint[])',
                            unreadable) END);
                END IF;
            END IF;
            RETURN mdq.condition_sql(c);
        END $$;

        -- What `unreadable` a search passes: NULL for a caller that sees
        -- everything, or a condition without words.
        CREATE FUNCTION mdq.condition_for(condition jsonb, who text, hosts smallint[]) RETURNS text
        LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
            SELECT mdq.condition_sql(condition,
                CASE WHEN who IS NOT NULL AND jsonb_path_exists(condition, 'strict $.** ? (@ == "words" || @ == "word-prefix")')
                     THEN mdq.unreadable_classes(who, hosts) END)
        $$;
        REVOKE ALL ON FUNCTION mdq.condition_for(jsonb, text, smallint[]) FROM PUBLIC;

        -- As version 9's, the condition's words judged for the viewer.
        CREATE OR REPLACE FUNCTION mdq.search(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                              viewer text DEFAULT NULL, row_limit bigint DEFAULT NULL,
                                              sort jsonb DEFAULT NULL)
        RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp SET enable_partitionwise_join = on AS $$
        DECLARE
            found refcursor := 'mdq_search';
            who text := mdq.viewer(viewer);
            filter text := mdq.search_filter(hosts, scopes, who);
            test text := mdq.condition_for(condition, who, hosts);
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

        -- As version 4's, the condition's words judged for the viewer.
        CREATE OR REPLACE FUNCTION mdq.count(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                             viewer text DEFAULT NULL)
        RETURNS bigint LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp SET enable_partitionwise_join = on AS $$
        DECLARE
            total bigint;
            who text := mdq.viewer(viewer);
            denied bigint[];
            test text := mdq.condition_for(condition, who, hosts);
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

        -- As versions 3 and 4's, with the host's content.
        CREATE OR REPLACE FUNCTION mdq.reload_begin(id smallint) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            t text;
            publisher name := (SELECT publisher_role FROM mdq.host WHERE host_id = id);
        BEGIN
            PERFORM mdq.check_publisher(id);
            FOREACH t IN ARRAY ARRAY['entry', 'folder', 'content'] LOOP
                EXECUTE format('DROP TABLE IF EXISTS mdq.%s_%s_reload', t, id);
                EXECUTE format(
                    'CREATE TABLE mdq.%1$s_%2$s_reload (LIKE mdq.%1$s INCLUDING DEFAULTS, '
                    'CONSTRAINT %1$s_%2$s_host CHECK (host_id = %2$s))', t, id);
                IF publisher IS NOT NULL THEN
                    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON mdq.%s_%s_reload TO %I', t, id, publisher);
                END IF;
            END LOOP;
            UPDATE mdq.host SET state = 'reloading' WHERE host_id = id;
        END $$;

        CREATE OR REPLACE FUNCTION mdq.reload_index(id smallint) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            t text;
            definition text;
            gin regclass;
        BEGIN
            PERFORM mdq.check_publisher(id);
            FOREACH t IN ARRAY ARRAY['entry', 'folder', 'content'] LOOP
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

        CREATE OR REPLACE FUNCTION mdq.reload_swap(id smallint, seq bigint, host_clock text, entry_count bigint,
                                                   folder_count bigint) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            t text;
        BEGIN
            PERFORM mdq.check_publisher(id);
            -- A publisher of an older mdq began its reload without a
            -- content table: the host's words go (they may name entries of
            -- another index).
            IF to_regclass(format('mdq.content_%s_reload', id)) IS NULL THEN
                EXECUTE format('CREATE TABLE mdq.content_%1$s_reload (LIKE mdq.content INCLUDING DEFAULTS, '
                               'CONSTRAINT content_%1$s_host CHECK (host_id = %1$s))', id);
            END IF;
            FOREACH t IN ARRAY ARRAY['entry', 'folder', 'content'] LOOP
                EXECUTE format('ALTER TABLE mdq.%1$s DETACH PARTITION mdq.%1$s_%2$s', t, id);
                EXECUTE format('DROP TABLE mdq.%s_%s', t, id);
                EXECUTE format('ALTER TABLE mdq.%1$s_%2$s_reload RENAME TO %1$s_%2$s', t, id);
                EXECUTE format('ALTER TABLE mdq.%1$s ATTACH PARTITION mdq.%1$s_%2$s FOR VALUES IN (%2$s)', t, id);
            END LOOP;
            UPDATE mdq.host SET generation = generation + 1, last_seq = seq, clock = host_clock, state = 'live',
                   entries = entry_count, folders = folder_count, last_contact = now(), last_error = NULL,
                   publishes_content = false
            WHERE host_id = id;
        END $$;

        -- Whether a host publishes its files' words: written by its
        -- publisher, read by every role that reads the hosts' state.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT DISTINCT grantee, privilege_type FROM information_schema.column_privileges
                WHERE table_schema = 'mdq' AND table_name = 'host' AND column_name = 'last_seq'
                  AND privilege_type IN ('SELECT', 'UPDATE') AND grantee NOT IN ('PUBLIC', current_user)
            LOOP
                EXECUTE format('GRANT %s (publishes_content) ON mdq.host TO %I', r.privilege_type, r.grantee);
            END LOOP;
        END $$;
        """#
}
