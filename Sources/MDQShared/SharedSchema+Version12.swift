extension SharedSchema {
    /// Version 12: the attributes importers read from inside files (a
    /// document's title and authors, a photo's camera, a song's artist),
    /// for hosts that import them (`CONTENT`), beside the files' words.
    ///
    /// - `mdq.content.attrs`: a JSON object, each imported attribute by
    ///   its name (`Documentation/shared-index.md` says how each kind of
    ///   value is written); a file with attributes and no words has a row
    ///   whose `words` is NULL.
    /// - `["attribute", NAME]` conditions (`mdq.condition_sql`): a file
    ///   the viewer may read whose attributes hold NAME. Like words,
    ///   attributes come from reading the file: a viewer who may not read
    ///   it learns none of them.
    /// - `mdq.attributes(host, ids, viewer)`: the attributes of those of
    ///   the host's entries the viewer may both list and read.
    ///
    /// Additive: publishers of versions 9 to 11 go on, without attributes
    /// (`mdq.host.row_version` below 12 says so, which readers may now
    /// read).
    static let version12 = #"""
        ALTER TABLE mdq.content ALTER COLUMN words DROP NOT NULL;
        ALTER TABLE mdq.content ADD COLUMN attrs jsonb;
        -- A reload an older publisher is making: its content table too.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'mdq' AND c.relkind = 'r' AND c.relname ~ '^content_[0-9]+_reload$'
            LOOP
                EXECUTE format('ALTER TABLE mdq.%I ALTER COLUMN words DROP NOT NULL, ADD COLUMN IF NOT EXISTS attrs jsonb',
                               r.relname);
            END LOOP;
        END $$;
        -- The names of a file's attributes, which is what searches ask of
        -- the index (not their values: a GIN of the whole object would
        -- index every title and comment too).
        CREATE FUNCTION mdq.attribute_names(attrs jsonb) RETURNS text[]
        LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
            SELECT ARRAY(SELECT jsonb_object_keys(attrs))
        $$;
        CREATE INDEX content_attributes ON mdq.content USING gin (mdq.attribute_names(attrs)) WHERE attrs IS NOT NULL;

        -- Version 10's conditions, and the one on attributes.
        ALTER FUNCTION mdq.condition_sql(jsonb, bigint[]) RENAME TO words_condition_sql;
        CREATE FUNCTION mdq.condition_sql(c jsonb, unreadable bigint[]) RETURNS text
        LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            name text;
        BEGIN
            IF jsonb_typeof(c) = 'array' AND c ->> 0 = 'attribute' THEN
                name := c ->> 1;
                IF jsonb_array_length(c) <> 2 OR jsonb_typeof(c -> 1) <> 'string' OR name = ''
                   OR octet_length(name) > 200 THEN
                    RAISE EXCEPTION 'mdq: not a condition: %', left(c::text, 200) USING ERRCODE = '22023';
                END IF;
                RETURN format(
                    '((e.host_id, e.entry_id) IN (SELECT w.host_id, w.entry_id FROM mdq.content w '
                    'WHERE w.attrs IS NOT NULL AND mdq.attribute_names(w.attrs) @> ARRAY[%L]::text[])%s)',
                    name,
                    CASE WHEN unreadable IS NULL THEN '' ELSE format(
                        ' AND e.read_class IS NOT NULL'
                        ' AND NOT ((e.host_id::bigint << 32) | e.read_class) = ANY (%L::bigint[])',
                        unreadable) END);
            END IF;
            RETURN mdq.words_condition_sql(c, unreadable);
        END $$;

        -- As version 10's, the viewer's unreadable classes for attributes too.
        CREATE OR REPLACE FUNCTION mdq.condition_for(condition jsonb, who text, hosts smallint[]) RETURNS text
        LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
            SELECT mdq.condition_sql(condition,
                CASE WHEN who IS NOT NULL AND jsonb_path_exists(
                              condition, 'strict $.** ? (@ == "words" || @ == "word-prefix" || @ == "attribute")')
                     THEN mdq.unreadable_classes(who, hosts) END)
        $$;

        -- The attributes of entries of one host (at most 10,000 ids), for
        -- those the viewer may list (as a search finds them) and read.
        CREATE FUNCTION mdq.attributes(host smallint, ids bigint[], viewer text DEFAULT NULL)
        RETURNS TABLE (entry_id bigint, attrs jsonb) LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            who text := mdq.viewer(viewer);
            unreadable bigint[];
        BEGIN
            IF coalesce(cardinality(ids), 0) > 10000 THEN
                RAISE EXCEPTION 'mdq: more than 10000 entries asked at once' USING ERRCODE = '22023';
            END IF;
            IF who IS NOT NULL THEN
                unreadable := mdq.unreadable_classes(who, ARRAY[host]);
            END IF;
            RETURN QUERY EXECUTE format(
                $q$SELECT c.entry_id, c.attrs FROM mdq.content c
                   JOIN mdq.entry e ON e.host_id = c.host_id AND e.entry_id = c.entry_id
                   JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id
                   WHERE c.host_id = %s AND c.entry_id = ANY (%L::bigint[]) AND c.attrs IS NOT NULL
                     AND e.deleted_seq IS NULL AND f.deleted_seq IS NULL AND %s AND %s$q$,
                host, coalesce(ids, '{}'), mdq.search_filter(ARRAY[host], '[]', who),
                CASE WHEN unreadable IS NULL THEN 'TRUE' ELSE format(
                    'e.read_class IS NOT NULL AND NOT ((e.host_id::bigint << 32) | e.read_class) = ANY (%L::bigint[])',
                    unreadable) END);
        END $$;
        REVOKE ALL ON FUNCTION mdq.attributes(smallint, bigint[], text) FROM PUBLIC;
        -- Whether a host's rows hold attributes yet: read by every role
        -- that reads the hosts' state.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT DISTINCT grantee FROM information_schema.column_privileges
                WHERE table_schema = 'mdq' AND table_name = 'host' AND column_name = 'last_seq'
                  AND privilege_type = 'SELECT' AND grantee NOT IN ('PUBLIC', current_user)
            LOOP
                EXECUTE format('GRANT SELECT (row_version) ON mdq.host TO %I', r.grantee);
            END LOOP;
        END $$;
        -- The roles that may search may ask for attributes.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT a.grantee FROM pg_proc p, aclexplode(p.proacl) a
                WHERE p.oid = 'mdq.search(smallint[], jsonb, jsonb, text, bigint, jsonb)'::regprocedure
                  AND a.privilege_type = 'EXECUTE' AND a.grantee NOT IN (0, p.proowner)
            LOOP
                EXECUTE format('GRANT EXECUTE ON FUNCTION mdq.attributes(smallint, bigint[], text) TO %I',
                               pg_get_userbyid(r.grantee));
            END LOOP;
        END $$;
        """#
}
