extension SharedSchema {
    /// Version 6: entry rows and their indexes made smaller, which also
    /// makes a full publish faster (most of it is the database building
    /// indexes).
    ///
    /// - Each row is laid out with its eight-byte columns first, then the
    ///   four- and two-byte ones, then the texts: in the order of version
    ///   1, padding cost 16 bytes a row.
    /// - Content types are numbers (`type_id`) into `mdq.content_type`,
    ///   one row per identifier: the identifier cost 18 bytes a row, its
    ///   index more.
    /// - `fold` is NULL when the name is its own folding (most names of
    ///   lowercase ASCII); a name test reads `coalesce(fold, name)`, which
    ///   is what the trigram index holds.
    /// - Indexes of one host's partition no longer lead with the host's
    ///   number (each partition has its own); the extension's and the
    ///   type's keep it after the value (a count's test of the host is
    ///   then answered by the index alone, and costs nothing: equal keys
    ///   are stored once), and the extension's no longer carries the
    ///   folder, which made it three times larger (a search reads the
    ///   folder from the row); the folder paths' trigram index is gone (no
    ///   search asks it: words of paths are refused).
    /// - A search for its first rows asks host after host until it has
    ///   them (`mdq.search`).
    ///
    /// The entries are copied into the new table in the migration's
    /// transaction (searches keep every result). The search functions keep
    /// their arguments and rows, so readers of version 3 go on; publishers
    /// must know version 6, which writes the new columns.
    static let version6 = #"""
        -- It locks the entries while it copies them: it waits for running
        -- searches at most this long, rather than queue every new one
        -- behind it for as long as one runs.
        SET LOCAL lock_timeout = '60s';

        CREATE TABLE mdq.content_type (
            type_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            identifier text NOT NULL UNIQUE CHECK (octet_length(identifier) BETWEEN 1 AND 255)
        );
        INSERT INTO mdq.content_type (identifier)
        SELECT DISTINCT content_type FROM mdq.entry WHERE octet_length(content_type) BETWEEN 1 AND 255
        ORDER BY 1;

        -- The types a publisher gives, registered (those not yet there:
        -- each row inserted draws a number) and returned with their
        -- numbers. Publishers reach the table only through it: at most
        -- 1,000 identifiers a call, each a type identifier's characters,
        -- and 10,000 types in all, so that no host can spend the numbers
        -- or fill the table others read.
        CREATE FUNCTION mdq.register_types(identifiers text[]) RETURNS SETOF mdq.content_type
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            fresh text[];
        BEGIN
            IF cardinality(identifiers) > 1000 THEN
                RAISE EXCEPTION 'mdq: at most 1000 types at once' USING ERRCODE = '22023';
            END IF;
            IF EXISTS (SELECT 1 FROM unnest(identifiers) AS i
                       WHERE i IS NULL OR octet_length(i) > 255 OR i !~ '^[A-Za-z0-9][A-Za-z0-9._+-]*$') THEN
                RAISE EXCEPTION 'mdq: not a type identifier among %', left(identifiers::text, 200)
                    USING ERRCODE = '22023';
            END IF;
            fresh := ARRAY(SELECT DISTINCT i FROM unnest(identifiers) AS i
                           WHERE NOT EXISTS (SELECT 1 FROM mdq.content_type t WHERE t.identifier = i));
            IF cardinality(fresh) > 0 THEN
                IF (SELECT count(*) FROM mdq.content_type) + cardinality(fresh) > 10000 THEN
                    RAISE EXCEPTION 'mdq: the shared index holds % content types; it takes at most 10000',
                        (SELECT count(*) FROM mdq.content_type) USING ERRCODE = '54000';
                END IF;
                INSERT INTO mdq.content_type (identifier) SELECT unnest(fresh) ON CONFLICT (identifier) DO NOTHING;
            END IF;
            RETURN QUERY SELECT t.* FROM mdq.content_type t WHERE t.identifier = ANY (identifiers);
        END $$;
        REVOKE ALL ON FUNCTION mdq.register_types(text[]) FROM PUBLIC;

        -- The rows of version 5 aside, their indexes gone (their names are
        -- the new ones'), and tables a reload left behind.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'mdq' AND c.relkind = 'r' AND c.relname ~ '^(entry|folder)_[0-9]+_reload$'
            LOOP
                EXECUTE format('DROP TABLE mdq.%I', r.relname);
            END LOOP;
            FOR r IN
                SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
                WHERE x.indrelid = 'mdq.entry'::regclass AND NOT x.indisprimary
            LOOP
                EXECUTE format('DROP INDEX mdq.%I', r.relname);
            END LOOP;
            ALTER TABLE mdq.entry DROP CONSTRAINT entry_pkey;
            FOR r IN
                SELECT c.relname FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
                WHERE h.inhparent = 'mdq.entry'::regclass
            LOOP
                EXECUTE format('ALTER TABLE mdq.%I RENAME TO %I', r.relname, r.relname || '_v5');
            END LOOP;
        END $$;
        ALTER TABLE mdq.entry RENAME TO entry_v5;

        -- Eight-byte columns, then four-, then two-, then texts: no byte of
        -- padding between them. Columns no publisher writes yet (owners,
        -- modes, attributes) cost a bit of the row's null map while NULL.
        CREATE TABLE mdq.entry (
            entry_id bigint NOT NULL,
            parent_id bigint NOT NULL,
            size bigint,
            mtime timestamptz,
            btime timestamptz,
            inode bigint,
            seq bigint NOT NULL,
            deleted_seq bigint,
            device bigint,
            uid bigint,
            gid bigint,
            type_id integer,
            mode integer,
            read_class integer,
            host_id smallint NOT NULL,
            kind smallint NOT NULL,
            name text NOT NULL,
            fold text,
            ext text,
            raw_name bytea,
            attrs jsonb
        ) PARTITION BY LIST (host_id);

        -- Each host's partition anew, its rows copied, its grants kept;
        -- then the old tables go.
        DO $$
        DECLARE
            r record;
            g record;
            id text;
        BEGIN
            FOR r IN
                SELECT c.relname FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
                WHERE h.inhparent = 'mdq.entry_v5'::regclass
            LOOP
                id := substring(r.relname FROM '^entry_([0-9]+)_v5$');
                EXECUTE format('CREATE TABLE mdq.entry_%1$s PARTITION OF mdq.entry FOR VALUES IN (%1$s)', id);
                EXECUTE format(
                    $q$INSERT INTO mdq.entry_%1$s (entry_id, parent_id, size, mtime, btime, inode, seq, deleted_seq,
                                                   device, uid, gid, type_id, mode, read_class, host_id, kind, name,
                                                   fold, ext, raw_name, attrs)
                       SELECT e.entry_id, e.parent_id, e.size, e.mtime, e.btime, e.inode, e.seq, e.deleted_seq,
                              e.device, e.uid, e.gid, t.type_id, e.mode, e.read_class, e.host_id, e.kind, e.name,
                              nullif(e.fold, e.name), e.ext, e.raw_name, e.attrs
                       FROM mdq.entry_%1$s_v5 e LEFT JOIN mdq.content_type t ON t.identifier = e.content_type$q$,
                    id);
            END LOOP;
            FOR r IN
                SELECT c.oid AS old, CASE WHEN c.relname = 'entry_v5' THEN 'entry'
                                          ELSE left(c.relname, -3) END AS new
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'mdq' AND c.relname ~ '^entry_([0-9]+_)?v5$'
            LOOP
                FOR g IN
                    SELECT a.privilege_type AS what,
                           CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END AS who
                    FROM pg_class c, aclexplode(c.relacl) a
                    WHERE c.oid = r.old AND a.grantee <> c.relowner
                LOOP
                    EXECUTE format('GRANT %s ON mdq.%I TO %s', g.what, r.new, g.who);
                END LOOP;
            END LOOP;
            -- Whoever read the entries reads their types; whoever publishes
            -- (writes classes) registers the types it gives.
            FOR g IN
                SELECT DISTINCT 'SELECT ON mdq.content_type' AS what, quote_ident(pg_get_userbyid(a.grantee)) AS who
                FROM pg_class c, aclexplode(c.relacl) a
                WHERE c.oid = 'mdq.entry'::regclass AND a.grantee NOT IN (0, c.relowner) AND a.privilege_type = 'SELECT'
                UNION
                SELECT DISTINCT 'EXECUTE ON FUNCTION mdq.register_types(text[])', quote_ident(pg_get_userbyid(a.grantee))
                FROM pg_class c, aclexplode(c.relacl) a
                WHERE c.oid = 'mdq.access_class'::regclass AND a.grantee NOT IN (0, c.relowner)
                  AND a.privilege_type = 'INSERT'
            LOOP
                EXECUTE format('GRANT %s TO %s', g.what, g.who);
            END LOOP;
        END $$;
        DROP TABLE mdq.entry_v5;
        -- A live query whose snapshot was taken before this commit reads
        -- none of the new rows: each host's next generation makes every
        -- live query search its hosts again.
        UPDATE mdq.host SET generation = generation + 1 WHERE generation > 0;

        ALTER TABLE mdq.entry ADD PRIMARY KEY (host_id, entry_id);
        CREATE INDEX entry_fold_trigrams ON mdq.entry USING gin ((coalesce(fold, name)) gin_trgm_ops)
            WHERE deleted_seq IS NULL;
        CREATE INDEX entry_extension ON mdq.entry (ext, host_id) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_parent ON mdq.entry (parent_id) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_size ON mdq.entry (size NULLS FIRST) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_mtime ON mdq.entry (mtime NULLS FIRST) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_type ON mdq.entry (type_id, host_id) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_seq ON mdq.entry (seq);
        DROP INDEX mdq.folder_path_trigrams;
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
        ANALYZE mdq.entry;

        -- A test of a column as SQL: names by their folding (the name
        -- itself when NULL), types by their numbers.
        CREATE OR REPLACE FUNCTION mdq.column_condition_sql(c jsonb) RETURNS text
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
                WHEN 'fold' THEN 'coalesce(e.fold, e.name)' WHEN 'ext' THEN 'e.ext' WHEN 'size' THEN 'e.size'
                WHEN 'mtime' THEN 'e.mtime' WHEN 'btime' THEN 'e.btime' WHEN 'content_type' THEN 't.identifier'
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
            -- A type test is asked of the types' table once, and the
            -- entries by the numbers it finds (their index).
            IF c ->> 1 = 'content_type' THEN
                RETURN format('(e.type_id = ANY (ARRAY(SELECT t.type_id FROM mdq.content_type t WHERE %s)))',
                              parts[1]);
            END IF;
            RETURN parts[1];
        END $$;

        CREATE OR REPLACE FUNCTION mdq.condition_sql(c jsonb) RETURNS text
        LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            relaxed text;
        BEGIN
            IF jsonb_typeof(c) = 'array' AND c ->> 0 = 'like' AND c ->> 1 = 'fold'
               AND jsonb_typeof(c -> 2) = 'string' AND jsonb_array_length(c) = 3 THEN
                relaxed := mdq.trigram_pattern(c ->> 2);
                IF relaxed IS NOT NULL THEN
                    RETURN format('(coalesce(e.fold, e.name) LIKE %L AND (coalesce(e.fold, e.name) LIKE %L) IS TRUE)',
                                  relaxed, c ->> 2);
                END IF;
            END IF;
            RETURN mdq.column_condition_sql(c);
        END $$;

        -- A row of mdq.search.
        CREATE TYPE mdq.search_row AS (
            host_id smallint, path text, raw_path bytea, name text, raw_name bytea, kind smallint, size bigint,
            mtime bigint, btime bigint, inode bigint, content_type text, entry_id bigint
        );

        -- As version 4's, with each row's type by its identifier; a search
        -- for its first rows (at most 2,000) asks host after host until it
        -- has them, each planned alone, and its cursor reads them: planned
        -- together, every host's query cost its planning (0.2 ms a host)
        -- though the first host gave every row. With `sort` (["size",
        -- "desc"]: a column, "asc" or "desc") and a limit, each host's
        -- first rows in that order, ties with the last included, for the
        -- caller to sort and cut: a missing value first in ascending order
        -- and last in descending, as mdq sorts.
        -- Its new argument replaces the function: the roles that could call
        -- it may call the new one.
        CREATE TEMP TABLE mdq_search_grantees ON COMMIT DROP AS
            SELECT a.grantee FROM pg_proc p, aclexplode(p.proacl) a
            WHERE p.oid = 'mdq.search(smallint[], jsonb, jsonb, text, bigint)'::regprocedure
              AND a.privilege_type = 'EXECUTE' AND a.grantee NOT IN (0, p.proowner);
        DROP FUNCTION mdq.search(smallint[], jsonb, jsonb, text, bigint);
        CREATE FUNCTION mdq.search(hosts smallint[], condition jsonb, scopes jsonb DEFAULT '[]',
                                   viewer text DEFAULT NULL, row_limit bigint DEFAULT NULL, sort jsonb DEFAULT NULL)
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
                                    ty.identifier AS content_type, e.entry_id
                             FROM mdq.entry e JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                             LEFT JOIN mdq.content_type ty ON ty.type_id = e.type_id
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
        REVOKE ALL ON FUNCTION mdq.search(smallint[], jsonb, jsonb, text, bigint, jsonb) FROM PUBLIC;
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN SELECT grantee FROM mdq_search_grantees LOOP
                EXECUTE format('GRANT EXECUTE ON FUNCTION mdq.search(smallint[], jsonb, jsonb, text, bigint, jsonb) TO %I',
                               pg_get_userbyid(r.grantee));
            END LOOP;
        END $$;

        -- As version 3's, with each row's type by its identifier.
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
                          CASE WHEN gone THEN NULL ELSE ty.identifier END AS content_type, e.entry_id, gone
                   FROM mdq.entry e LEFT JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                        LEFT JOIN mdq.content_type ty ON ty.type_id = e.type_id,
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
