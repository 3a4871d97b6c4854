extension SharedSchema {
    /// Version 5: a name test reads the trigrams of its words alone, and a
    /// host's lag is kept.
    ///
    /// pg_trgm pads a word that meets a literal character that is no
    /// letter or digit (`chapter_7777`, `annual report`): `  7`, ` 77`,
    /// `er `. Those trigrams are in most names of a tree (every name with
    /// a number after a separator), so each search read their long
    /// posting lists: 2.8 ms a host for `chapter_7777`, against 1.2 ms
    /// for the same words without the pads. A name test now asks the
    /// index with each such character as a one-character wildcard (a
    /// pattern that matches a superset), and tests the pattern as given
    /// on the rows the index returns (`(… LIKE …) IS TRUE` is no index
    /// condition, so it adds no trigram). A pattern whose words would keep
    /// no three characters in a row is left whole: an index asked for no
    /// trigram reads every row.
    ///
    /// Each host's row says how far its rows are behind its index
    /// (`behind_since`), which `mdq hosts` shows as its lag.
    ///
    /// It replaces one function with one that calls it, and adds a
    /// column: readers and publishers of version 4 go on (a host whose
    /// publisher does not write the column shows no lag).
    static let version5 = #"""
        -- When the oldest change of the host's index not yet in its rows
        -- was made (at the latest); NULL when its rows were its index as
        -- of its publisher's last write.
        ALTER TABLE mdq.host ADD COLUMN behind_since timestamptz;
        -- Publishers before version 5 left `folders` at their host's last
        -- full publish: counted once here, then kept by each batch.
        UPDATE mdq.host h SET folders = (SELECT count(*) FROM mdq.folder f
                                         WHERE f.host_id = h.host_id AND f.deleted_seq IS NULL);
        -- Roles granted the hosts' state column by column read it too (and
        -- which publisher writes it: one of version 4 does not), and
        -- publishing roles write it.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT DISTINCT grantee, privilege_type FROM information_schema.column_privileges
                WHERE table_schema = 'mdq' AND table_name = 'host' AND column_name = 'last_contact'
                  AND privilege_type IN ('SELECT', 'UPDATE') AND grantee NOT IN ('PUBLIC', current_user)
            LOOP
                EXECUTE format('GRANT %s (behind_since) ON mdq.host TO %I', r.privilege_type, r.grantee);
                IF r.privilege_type = 'SELECT' THEN
                    EXECUTE format('GRANT SELECT (publisher_version) ON mdq.host TO %I', r.grantee);
                END IF;
            END LOOP;
        END $$;

        ALTER FUNCTION mdq.condition_sql(jsonb) RENAME TO column_condition_sql;

        -- The pattern the trigram index is asked for: each escaped or
        -- plain ASCII character that is no letter or digit (pg_trgm's word
        -- separators) as `_`; NULL when nothing changed, or when no three
        -- word characters would be left in a row.
        CREATE FUNCTION mdq.trigram_pattern(pattern text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            relaxed text := '';
            ch text;
            escaped boolean;
            i integer := 1;
            run integer := 0;
            longest integer := 0;
            changed boolean := false;
        BEGIN
            WHILE i <= length(pattern) LOOP
                ch := substr(pattern, i, 1);
                escaped := ch = E'\\' AND i < length(pattern);
                IF escaped THEN
                    i := i + 1;
                    ch := substr(pattern, i, 1);
                END IF;
                IF NOT escaped AND ch IN ('%', '_') THEN
                    relaxed := relaxed || ch;
                    run := 0;
                ELSIF ascii(ch) < 128 AND ch !~ '^[A-Za-z0-9]$' THEN
                    relaxed := relaxed || '_';
                    run := 0;
                    changed := true;
                ELSE
                    relaxed := relaxed || CASE WHEN escaped THEN E'\\' ELSE '' END || ch;
                    run := run + 1;
                    longest := greatest(longest, run);
                END IF;
                i := i + 1;
            END LOOP;
            RETURN CASE WHEN changed AND longest >= 3 THEN relaxed END;
        END $$;

        -- The scopes of a search, matched by the folders' bytes as well as
        -- their text: a folder whose path is not UTF-8 has a U+FFFD in its
        -- text where a byte is not, which a folder of that very text
        -- (the character itself) shares; a scope given as bytes
        -- ([host, null, "hex"]) finds the folder of those bytes.
        CREATE OR REPLACE FUNCTION mdq.search_filter(hosts smallint[], scopes jsonb, viewer text) RETURNS text
        LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            denied bigint[] := CASE WHEN viewer IS NULL THEN '{}' ELSE mdq.denied_classes(viewer, hosts) END;
            filter text := 'TRUE';
            scope jsonb;
            host smallint;
            path text;
            bytes bytea;
            tests text[] := '{}';
        BEGIN
            IF cardinality(denied) > 0 THEN
                -- The classes alone first (an index of them), then the pairs.
                filter := format(
                    'NOT (f.list_class = ANY (%L::int[]) AND ((f.host_id::bigint << 32) | f.list_class) = ANY (%L::bigint[]))',
                    ARRAY(SELECT DISTINCT d & 4294967295 FROM unnest(denied) AS d)::text, denied::text);
            END IF;
            FOR scope IN SELECT * FROM jsonb_array_elements(coalesce(scopes, '[]')) LOOP
                IF jsonb_typeof(scope -> 0) <> 'number' THEN
                    RAISE EXCEPTION 'mdq: not a scope: %', left(scope::text, 200) USING ERRCODE = '22023';
                END IF;
                host := (scope ->> 0)::smallint;
                path := scope ->> 1;
                bytes := CASE WHEN jsonb_typeof(scope -> 2) = 'string' THEN decode(scope ->> 2, 'hex') END;
                IF path IS NULL AND bytes IS NULL THEN
                    tests := tests || 'FALSE'::text;
                    CONTINUE;
                END IF;
                IF path IS NULL THEN
                    -- Not UTF-8: the folders of those bytes, and below.
                    IF length(bytes) > 1 AND get_byte(bytes, length(bytes) - 1) = 47 THEN
                        bytes := substring(bytes FROM 1 FOR length(bytes) - 1);
                    END IF;
                    tests := tests || format(
                        '(e.host_id = %s AND (f.raw_path = %L::bytea OR substring(f.raw_path FROM 1 FOR %s) = %L::bytea))',
                        host, bytes, length(bytes) + 1, bytes || '/'::bytea);
                    CONTINUE;
                END IF;
                IF length(path) > 1 AND right(path, 1) = '/' THEN
                    path := left(path, -1);
                END IF;
                tests := tests || format(
                    '(e.host_id = %s AND (f.path = %L OR f.path LIKE %L) '
                    'AND (f.raw_path IS NULL OR substring(f.raw_path FROM 1 FOR %s) = %L::bytea))',
                    host, path,
                    CASE WHEN path = '/' THEN '/%'
                         ELSE replace(replace(replace(path, '\', '\\'), '%', '\%'), '_', '\_') || '/%' END,
                    octet_length(path), convert_to(path, 'UTF8'));
            END LOOP;
            RETURN format('%s AND %s', filter,
                          CASE WHEN cardinality(tests) = 0 THEN 'TRUE' ELSE '(' || array_to_string(tests, ' OR ') || ')' END);
        END $$;

        -- A condition as SQL: a name test by the trigrams of its words,
        -- then as given; everything else as version 3 wrote it (which
        -- calls this function again for the parts of `and`, `or`, `not`).
        CREATE FUNCTION mdq.condition_sql(c jsonb) RETURNS text
        LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            relaxed text;
        BEGIN
            IF jsonb_typeof(c) = 'array' AND c ->> 0 = 'like' AND c ->> 1 = 'fold'
               AND jsonb_typeof(c -> 2) = 'string' AND jsonb_array_length(c) = 3 THEN
                relaxed := mdq.trigram_pattern(c ->> 2);
                IF relaxed IS NOT NULL THEN
                    RETURN format('(e.fold LIKE %L AND (e.fold LIKE %L) IS TRUE)', relaxed, c ->> 2);
                END IF;
            END IF;
            RETURN mdq.column_condition_sql(c);
        END $$;
        """#
}
