extension SharedSchema {
    /// Version 3: searches run by the schema's own functions, for readers
    /// that may read the tables (trusted hosts) and for readers that may
    /// only call them (a user's own credential, judged as that user); a
    /// live query's changes since its cursor; tombstones purged.
    ///
    /// It only adds (functions, a column with a default): publishers of
    /// version 2 go on publishing while it runs and after; readers must
    /// know version 3, as they search through its functions.
    ///
    /// - `mdq.may`: the kernel's permission check of a folder's access
    ///   class for a user, the same as `Viewer.may` (its test compares
    ///   them).
    /// - `mdq.denied_classes`: the (host, list class) pairs a user may not
    ///   list, as `host << 32 | class`: the user of the same name in each
    ///   host's identity domain, else (and for a user whose number there
    ///   is 0) a stranger, who gets what "other" gets.
    /// - `mdq.condition_sql`: a condition (`SQLCondition`'s JSON) as SQL,
    ///   of the columns and tests it knows, every value quoted.
    /// - `mdq.search`, `mdq.count`, `mdq.changes`: the searches, `SECURITY
    ///   DEFINER`. A caller that may read `mdq.entry` names the user to
    ///   judge as (NULL: everything); any other caller is judged as its
    ///   own role name, whatever it names.
    /// - `host.purged_seq`: tombstones at or below it are gone; a reader
    ///   whose cursor is below it searches that host again.
    /// - Publishing roles (`mdq shared grant --publish`): a host registered
    ///   by such a role (`host.publisher_role`) is written by it alone, and
    ///   it writes nothing else: its own partitions, its own row's state
    ///   columns, its own classes and users (row-level security on those
    ///   small tables), and reloads of its own partitions (the reload
    ///   functions check the caller).
    static let version3 = #"""
        ALTER TABLE mdq.host ADD COLUMN purged_seq bigint NOT NULL DEFAULT 0;
        ALTER TABLE mdq.host ADD COLUMN publisher_role name;
        -- Moved when the users of the host's identity domain change: a live
        -- query judges its results again.
        ALTER TABLE mdq.host ADD COLUMN identity_seq bigint NOT NULL DEFAULT 0;

        -- Whether the session may publish host `id`: the role that
        -- registered it, or one with the schema owner's rights.
        CREATE FUNCTION mdq.publishes(id smallint) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
            SELECT pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'mdq'), 'USAGE')
                   OR EXISTS (SELECT 1 FROM mdq.host WHERE host_id = id AND publisher_role = session_user)
        $$;

        CREATE FUNCTION mdq.check_publisher(id smallint) RETURNS void
        LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
        BEGIN
            IF NOT mdq.publishes(id) THEN
                RAISE EXCEPTION 'mdq: % does not publish host %', session_user, id USING ERRCODE = '42501';
            END IF;
        END $$;

        -- A host, its partitions, and who publishes it: a publishing role
        -- registers its host as its own, in an identity domain of its name
        -- (so no host can change how another judges a user).
        CREATE OR REPLACE FUNCTION mdq.add_host(host_name text, machine text, identity_domain text DEFAULT 'default')
        RETURNS smallint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            id smallint;
            owner boolean := pg_has_role(session_user, (SELECT nspowner FROM pg_namespace WHERE nspname = 'mdq'),
                                         'USAGE');
            t text;
        BEGIN
            -- A publishing role's host has a domain of its own: no other host
            -- joins it, whoever adds that host.
            IF EXISTS (SELECT 1 FROM mdq.host WHERE domain = identity_domain AND publisher_role IS NOT NULL) THEN
                RAISE EXCEPTION 'mdq: the identity domain % is a publishing role''s host''s', identity_domain
                    USING ERRCODE = '23505';
            END IF;
            IF NOT owner THEN
                IF EXISTS (SELECT 1 FROM mdq.host WHERE publisher_role = session_user) THEN
                    RAISE EXCEPTION 'mdq: % publishes a host already (%)', session_user,
                        (SELECT name FROM mdq.host WHERE publisher_role = session_user LIMIT 1)
                        USING ERRCODE = '42501';
                END IF;
                identity_domain := host_name;
                IF EXISTS (SELECT 1 FROM mdq.host WHERE domain = identity_domain) THEN
                    RAISE EXCEPTION 'mdq: the identity domain % is another host''s', identity_domain
                        USING ERRCODE = '23505';
                END IF;
            END IF;
            INSERT INTO mdq.host (name, machine_id, domain, publisher_role)
            VALUES (host_name, machine, identity_domain, CASE WHEN owner THEN NULL ELSE session_user END)
            RETURNING host_id INTO id;
            FOREACH t IN ARRAY ARRAY['entry', 'folder', 'content'] LOOP
                EXECUTE format('CREATE TABLE mdq.%1$s_%2$s PARTITION OF mdq.%1$s FOR VALUES IN (%2$s)', t, id);
                IF NOT owner THEN
                    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON mdq.%s_%s TO %I', t, id, session_user);
                END IF;
            END LOOP;
            RETURN id;
        END $$;

        CREATE OR REPLACE FUNCTION mdq.reload_begin(id smallint) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            t text;
            publisher name := (SELECT publisher_role FROM mdq.host WHERE host_id = id);
        BEGIN
            PERFORM mdq.check_publisher(id);
            FOREACH t IN ARRAY ARRAY['entry', 'folder'] LOOP
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
            FOREACH t IN ARRAY ARRAY['entry', 'folder'] LOOP
                EXECUTE format('ALTER TABLE mdq.%1$s DETACH PARTITION mdq.%1$s_%2$s', t, id);
                EXECUTE format('DROP TABLE mdq.%s_%s', t, id);
                EXECUTE format('ALTER TABLE mdq.%1$s_%2$s_reload RENAME TO %1$s_%2$s', t, id);
                EXECUTE format('ALTER TABLE mdq.%1$s ATTACH PARTITION mdq.%1$s_%2$s FOR VALUES IN (%2$s)', t, id);
            END LOOP;
            UPDATE mdq.host SET generation = generation + 1, last_seq = seq, clock = host_clock, state = 'live',
                   entries = entry_count, folders = folder_count, last_contact = now(), last_error = NULL
            WHERE host_id = id;
        END $$;

        -- Only publishers register hosts and reload them; only the owner
        -- removes one.
        REVOKE ALL ON FUNCTION mdq.add_host(text, text, text) FROM PUBLIC;
        REVOKE ALL ON FUNCTION mdq.reload_begin(smallint) FROM PUBLIC;
        REVOKE ALL ON FUNCTION mdq.reload_index(smallint) FROM PUBLIC;
        REVOKE ALL ON FUNCTION mdq.reload_swap(smallint, bigint, text, bigint, bigint) FROM PUBLIC;
        REVOKE ALL ON FUNCTION mdq.remove_host(text) FROM PUBLIC;

        -- The small tables a publisher writes rows of: its own only; and
        -- of those a publisher reads, its own only (a trusted reader, who
        -- may read the entries, reads all).
        ALTER TABLE mdq.host ENABLE ROW LEVEL SECURITY;
        CREATE POLICY readers ON mdq.host FOR SELECT USING (true);
        CREATE POLICY publisher ON mdq.host FOR UPDATE USING (publisher_role = session_user);
        ALTER TABLE mdq.access_class ENABLE ROW LEVEL SECURITY;
        CREATE POLICY readers ON mdq.access_class FOR SELECT
            USING (has_table_privilege(session_user, 'mdq.entry', 'SELECT') OR host_id IN (SELECT h.host_id FROM mdq.host h WHERE h.publisher_role = session_user));
        CREATE POLICY publisher ON mdq.access_class FOR INSERT
            WITH CHECK (host_id IN (SELECT h.host_id FROM mdq.host h WHERE h.publisher_role = session_user));
        ALTER TABLE mdq.list_rule ENABLE ROW LEVEL SECURITY;
        CREATE POLICY readers ON mdq.list_rule FOR SELECT
            USING (has_table_privilege(session_user, 'mdq.entry', 'SELECT') OR host_id IN (SELECT h.host_id FROM mdq.host h WHERE h.publisher_role = session_user));
        CREATE POLICY publisher ON mdq.list_rule FOR INSERT
            WITH CHECK (host_id IN (SELECT h.host_id FROM mdq.host h WHERE h.publisher_role = session_user));
        ALTER TABLE mdq.identity ENABLE ROW LEVEL SECURITY;
        CREATE POLICY readers ON mdq.identity FOR SELECT
            USING (has_table_privilege(session_user, 'mdq.entry', 'SELECT') OR domain IN (SELECT h.domain FROM mdq.host h WHERE h.publisher_role = session_user));
        CREATE POLICY publisher ON mdq.identity FOR ALL
            USING (domain IN (SELECT h.domain FROM mdq.host h WHERE h.publisher_role = session_user))
            WITH CHECK (domain IN (SELECT h.domain FROM mdq.host h WHERE h.publisher_role = session_user));

        CREATE FUNCTION mdq.may(want integer, mode integer, owner bigint, owner_group bigint, acl jsonb,
                                uid bigint, gids bigint[])
        RETURNS boolean LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            m integer := mode & 511;
            n integer;
            i integer;
            j integer;
            tag integer;
            perms integer;
            id bigint;
            found boolean := false;
            mask integer;
        BEGIN
            IF uid = 0 THEN
                RETURN true;
            END IF;
            IF owner = uid THEN
                RETURN (m >> 6) & want = want;
            END IF;
            IF acl IS NOT NULL AND jsonb_typeof(acl) = 'array' THEN
                -- An ACL that could not be read grants nobody else anything.
                IF (acl -> 0 ->> 0)::integer = 32768 THEN
                    RETURN false;
                END IF;
                IF m & 56 <> 0 THEN
                    -- The kernel's posix_acl_permission, entry by entry.
                    n := jsonb_array_length(acl);
                    FOR i IN 0 .. n - 1 LOOP
                        tag := (acl -> i ->> 0)::integer;
                        perms := (acl -> i ->> 1)::integer;
                        id := (acl -> i ->> 2)::bigint;
                        IF tag = 1 THEN
                            IF owner = uid THEN
                                RETURN perms & want = want;
                            END IF;
                            CONTINUE;
                        ELSIF tag = 16 THEN
                            CONTINUE;
                        ELSIF tag = 32 THEN
                            RETURN NOT found AND perms & want = want;
                        ELSIF tag = 2 THEN
                            IF id <> uid THEN
                                CONTINUE;
                            END IF;
                        ELSIF tag = 4 OR tag = 8 THEN
                            IF NOT (CASE WHEN tag = 4 THEN owner_group ELSE id END) = ANY (gids) THEN
                                CONTINUE;
                            END IF;
                            found := true;
                            IF perms & want <> want THEN
                                CONTINUE;
                            END IF;
                        ELSE
                            RETURN false;
                        END IF;
                        -- A named user's entry, or a group's that grants it:
                        -- under the first mask after it.
                        mask := NULL;
                        FOR j IN i + 1 .. n - 1 LOOP
                            IF (acl -> j ->> 0)::integer = 16 THEN
                                mask := (acl -> j ->> 1)::integer;
                                EXIT;
                            END IF;
                        END LOOP;
                        RETURN perms & coalesce(mask, 7) & want = want;
                    END LOOP;
                    RETURN false;
                END IF;
            END IF;
            IF want & ((m # (m >> 3)) & 7) <> 0 AND owner_group = ANY (gids) THEN
                m := m >> 3;
            END IF;
            RETURN want & ~m & 7 = 0;
        END $$;

        CREATE FUNCTION mdq.denied_classes(viewer text, hosts smallint[]) RETURNS bigint[]
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
            )
            SELECT coalesce(array_agg(DISTINCT (r.host_id::bigint << 32) | r.list_class), '{}')
            FROM mdq.list_rule r
            JOIN v ON v.host_id = r.host_id
            LEFT JOIN granted g ON g.host_id = r.host_id AND g.class_id = r.access_class
            WHERE r.need <> 5 OR g.walk IS NOT TRUE
        $$;

        CREATE FUNCTION mdq.condition_sql(c jsonb) RETURNS text
        LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            op text;
            col text;
            parts text[];
        BEGIN
            IF jsonb_typeof(c) = 'boolean' THEN
                RETURN CASE WHEN c = 'true'::jsonb THEN 'TRUE' ELSE 'FALSE' END;
            END IF;
            IF jsonb_typeof(c) <> 'array' OR jsonb_typeof(c -> 0) <> 'string' THEN
                RAISE EXCEPTION 'mdq: not a condition: %', left(c::text, 200) USING ERRCODE = '22023';
            END IF;
            op := c ->> 0;
            IF op IN ('and', 'or') THEN
                SELECT array_agg(mdq.condition_sql(x) ORDER BY k) INTO parts
                FROM jsonb_array_elements(c) WITH ORDINALITY AS t(x, k) WHERE k > 1;
                IF parts IS NULL THEN
                    RETURN CASE op WHEN 'and' THEN 'TRUE' ELSE 'FALSE' END;
                END IF;
                RETURN '(' || array_to_string(parts, CASE op WHEN 'and' THEN ' AND ' ELSE ' OR ' END) || ')';
            ELSIF op = 'not' THEN
                RETURN 'NOT coalesce(' || mdq.condition_sql(c -> 1) || ', false)';
            END IF;
            col := CASE c ->> 1
                WHEN 'fold' THEN 'e.fold' WHEN 'ext' THEN 'e.ext' WHEN 'size' THEN 'e.size'
                WHEN 'mtime' THEN 'e.mtime' WHEN 'btime' THEN 'e.btime' WHEN 'content_type' THEN 'e.content_type'
            END;
            IF col IS NULL THEN
                RAISE EXCEPTION 'mdq: no column %', left(c ->> 1, 100) USING ERRCODE = '22023';
            END IF;
            parts := ARRAY[CASE op
                WHEN 'like' THEN format('(%s LIKE %L)', col, c ->> 2)
                WHEN '=' THEN format('(%s = %L)', col, c ->> 2)
                WHEN 'in' THEN format('(%s = ANY (%L::text[]))', col,
                                      ARRAY(SELECT jsonb_array_elements_text(c -> 2))::text)
                WHEN 'number=' THEN format('(%s = %L::float8)', col, c ->> 2)
                WHEN 'number<' THEN format('(%s < %L::float8)', col, c ->> 2)
                WHEN 'number<=' THEN format('(%s <= %L::float8)', col, c ->> 2)
                WHEN 'number>' THEN format('(%s > %L::float8)', col, c ->> 2)
                WHEN 'number>=' THEN format('(%s >= %L::float8)', col, c ->> 2)
                WHEN 'number-between' THEN format('(%s BETWEEN %L::float8 AND %L::float8)', col, c ->> 2, c ->> 3)
                WHEN 'number-in' THEN format('(%s = ANY (%L::float8[]))', col,
                                             ARRAY(SELECT jsonb_array_elements_text(c -> 2))::text)
                WHEN 'time<=' THEN format('(%s <= to_timestamp(%L::float8 / 1e6))', col, c ->> 2)
                WHEN 'time>=' THEN format('(%s >= to_timestamp(%L::float8 / 1e6))', col, c ->> 2)
                WHEN 'time-between' THEN format(
                    '(%s BETWEEN to_timestamp(%L::float8 / 1e6) AND to_timestamp(%L::float8 / 1e6))',
                    col, c ->> 2, c ->> 3)
            END];
            -- An unknown test, or a value missing: nothing to run.
            IF parts[1] IS NULL THEN
                RAISE EXCEPTION 'mdq: not a condition: %', left(c::text, 200) USING ERRCODE = '22023';
            END IF;
            RETURN parts[1];
        END $$;

        -- The user a search is judged as: a caller that may read the
        -- entries names it (NULL: no one, everything shown); any other is
        -- its own role.
        CREATE FUNCTION mdq.viewer(named text) RETURNS text
        LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
            SELECT CASE WHEN has_table_privilege(session_user, 'mdq.entry', 'SELECT') THEN named
                        ELSE session_user::text END
        $$;

        -- The rows a search reads, and the test of what the viewer may list
        -- and of the scopes ([[host, path], ...], a path NULL finding
        -- nothing), as SQL.
        CREATE FUNCTION mdq.search_filter(hosts smallint[], scopes jsonb, viewer text) RETURNS text
        LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            denied bigint[] := CASE WHEN viewer IS NULL THEN '{}' ELSE mdq.denied_classes(viewer, hosts) END;
            filter text := 'TRUE';
            scope jsonb;
            path text;
            tests text[] := '{}';
        BEGIN
            IF cardinality(denied) > 0 THEN
                -- The classes alone first (an index of them), then the pairs.
                filter := format(
                    'NOT (f.list_class = ANY (%L::int[]) AND ((f.host_id::bigint << 32) | f.list_class) = ANY (%L::bigint[]))',
                    ARRAY(SELECT DISTINCT d & 4294967295 FROM unnest(denied) AS d)::text, denied::text);
            END IF;
            FOR scope IN SELECT * FROM jsonb_array_elements(coalesce(scopes, '[]')) LOOP
                path := scope ->> 1;
                IF jsonb_typeof(scope -> 0) <> 'number' THEN
                    RAISE EXCEPTION 'mdq: not a scope: %', left(scope::text, 200) USING ERRCODE = '22023';
                END IF;
                IF path IS NULL THEN
                    tests := tests || 'FALSE'::text;
                    CONTINUE;
                END IF;
                IF length(path) > 1 AND right(path, 1) = '/' THEN
                    path := left(path, -1);
                END IF;
                tests := tests || format(
                    '(e.host_id = %s AND (f.path = %L OR f.path LIKE %L))', (scope ->> 0)::smallint, path,
                    CASE WHEN path = '/' THEN '/%'
                         ELSE replace(replace(replace(path, '\', '\\'), '%', '\%'), '_', '\_') || '/%' END);
            END LOOP;
            RETURN format('%s AND %s', filter,
                          CASE WHEN cardinality(tests) = 0 THEN 'TRUE' ELSE '(' || array_to_string(tests, ' OR ') || ')' END);
        END $$;

        -- The matches of a condition on the hosts, in no order, as a cursor
        -- named mdq_search (FETCH from it); at most row_limit when given.
        CREATE FUNCTION mdq.search(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                   viewer text DEFAULT NULL, row_limit bigint DEFAULT NULL)
        RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            found refcursor := 'mdq_search';
        BEGIN
            OPEN found NO SCROLL FOR EXECUTE format(
                $q$SELECT e.host_id, f.path, f.raw_path, e.name, e.raw_name, e.kind, e.size,
                          (extract(epoch FROM e.mtime) * 1000000)::bigint,
                          (extract(epoch FROM e.btime) * 1000000)::bigint, e.inode, e.content_type, e.entry_id
                   FROM mdq.entry e JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                   WHERE e.deleted_seq IS NULL AND f.deleted_seq IS NULL AND e.host_id = ANY (%L::smallint[])
                     AND %s AND %s %s$q$,
                hosts, mdq.search_filter(hosts, scopes, mdq.viewer(viewer)), mdq.condition_sql(condition),
                CASE WHEN row_limit IS NULL THEN '' ELSE format('LIMIT %s', row_limit) END);
            RETURN found;
        END $$;

        -- How many entries match. Without a scope, each entry's folder is
        -- only asked whether it is there and may be listed (a semi-join).
        CREATE FUNCTION mdq.count(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                  viewer text DEFAULT NULL)
        RETURNS bigint LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            total bigint;
            filter text := mdq.search_filter(hosts, scopes, mdq.viewer(viewer));
        BEGIN
            IF jsonb_array_length(coalesce(scopes, '[]')) = 0 THEN
                EXECUTE format(
                    $q$SELECT count(*) FROM mdq.entry e
                       WHERE e.deleted_seq IS NULL AND e.host_id = ANY (%L::smallint[]) AND %s
                         AND EXISTS (SELECT 1 FROM mdq.folder f WHERE f.host_id = e.host_id
                                     AND f.folder_id = e.parent_id AND f.deleted_seq IS NULL AND %s)$q$,
                    hosts, mdq.condition_sql(condition), filter) INTO total;
            ELSE
                EXECUTE format(
                    $q$SELECT count(*) FROM mdq.entry e
                       JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                       WHERE e.deleted_seq IS NULL AND f.deleted_seq IS NULL AND e.host_id = ANY (%L::smallint[])
                         AND %s AND %s$q$,
                    hosts, filter, mdq.condition_sql(condition)) INTO total;
            END IF;
            RETURN total;
        END $$;

        -- The entries of one host that changed after its sequence `since`,
        -- or whose folder did (a rename or a chmod changes every entry
        -- below), as a cursor named mdq_changes: each row as mdq.search
        -- gives it, and `gone` when it is removed, its folder is, or the
        -- viewer may not list it or it left the scopes (then only its id:
        -- nothing of an entry the viewer may not see).
        CREATE FUNCTION mdq.changes(host smallint, since bigint, scopes jsonb DEFAULT '[]', viewer text DEFAULT NULL)
        RETURNS refcursor LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            found refcursor := 'mdq_changes';
        BEGIN
            OPEN found NO SCROLL FOR EXECUTE format(
                $q$SELECT e.host_id, CASE WHEN gone THEN NULL ELSE f.path END, CASE WHEN gone THEN NULL ELSE f.raw_path END,
                          CASE WHEN gone THEN NULL ELSE e.name END, CASE WHEN gone THEN NULL ELSE e.raw_name END,
                          CASE WHEN gone THEN NULL ELSE e.kind END, CASE WHEN gone THEN NULL ELSE e.size END,
                          CASE WHEN gone THEN NULL ELSE (extract(epoch FROM e.mtime) * 1000000)::bigint END,
                          CASE WHEN gone THEN NULL ELSE (extract(epoch FROM e.btime) * 1000000)::bigint END,
                          CASE WHEN gone THEN NULL ELSE e.inode END, CASE WHEN gone THEN NULL ELSE e.content_type END,
                          e.entry_id, gone
                   FROM mdq.entry e LEFT JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id,
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

        -- Only those granted it (mdq shared grant) may search; the helpers
        -- run as the caller, who reaches the tables only through these.
        REVOKE ALL ON FUNCTION mdq.search(smallint[], jsonb, jsonb, text, bigint) FROM PUBLIC;
        REVOKE ALL ON FUNCTION mdq.count(smallint[], jsonb, jsonb, text) FROM PUBLIC;
        REVOKE ALL ON FUNCTION mdq.changes(smallint, bigint, jsonb, text) FROM PUBLIC;
        """#
}
