extension SharedSchema {
    /// Version 8: a search's folder above the folders a host indexes from
    /// (`--onlyin nas:/srv`, where nas indexes `/srv/data`) is searched,
    /// as the host's folders below it that the user may list, rather than
    /// said not indexed: `mdq.search` already took it (its folders are
    /// matched by their paths), and `mdq.scope_errors` now does.
    ///
    /// `mdq.scope_errors` keeps its walk up from the folder (renamed
    /// `mdq.scope_errors_by_walk`, which only the schema's owner may call)
    /// and judges again what that says is not indexed: readers and
    /// publishers of version 6 go on.
    static let version8 = #"""
        -- The folders a host indexes from (no parent), by path: the few a
        -- folder above them is checked against.
        CREATE INDEX folder_root_path ON mdq.folder (host_id, path text_pattern_ops)
            WHERE parent_id IS NULL AND deleted_seq IS NULL;

        ALTER FUNCTION mdq.scope_errors(jsonb, text) RENAME TO scope_errors_by_walk;
        -- Called by mdq.scope_errors alone (as the owner): no searcher
        -- keeps the grant version 7 gave them.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT DISTINCT a.grantee FROM pg_proc p, aclexplode(p.proacl) a
                WHERE p.oid = 'mdq.scope_errors_by_walk(jsonb, text)'::regprocedure
                  AND a.privilege_type = 'EXECUTE' AND a.grantee NOT IN (0, p.proowner)
            LOOP
                EXECUTE format('REVOKE EXECUTE ON FUNCTION mdq.scope_errors_by_walk(jsonb, text) FROM %I',
                               pg_get_userbyid(r.grantee));
            END LOOP;
        END $$;

        -- As version 7's, but a folder the walk up says is not indexed (no
        -- folder at or above it in the index, or one whose contents the
        -- host does not index) is searched when the host indexes from
        -- folders below it (roots: folders with no parent, such as a
        -- filesystem mounted there) and the viewer may list one of them;
        -- else it stays not indexed (that a root the viewer may not list
        -- is there is not told). A root's listing rule holds every folder
        -- above it, so a viewer who may list a root may list the folders
        -- between.
        CREATE FUNCTION mdq.scope_errors(scopes jsonb, viewer text DEFAULT NULL) RETURNS text[]
        LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            answers text[] := mdq.scope_errors_by_walk(scopes, viewer);
            me text := mdq.viewer(viewer);
            scope jsonb;
            host smallint;
            path text;
            prefix text;
            denied bigint[];
        BEGIN
            FOR i IN 1 .. coalesce(cardinality(answers), 0) LOOP
                CONTINUE WHEN answers[i] IS DISTINCT FROM 'unindexed';
                scope := scopes -> (i - 1);
                -- A path of bytes that are not UTF-8: by its walk alone.
                CONTINUE WHEN jsonb_typeof(scope -> 1) IS DISTINCT FROM 'string';
                host := (scope ->> 0)::smallint;
                path := scope ->> 1;
                -- Below it: paths from "path/" up to "path0" ("0" follows
                -- "/"), compared byte by byte as the folders' path index
                -- orders them.
                prefix := CASE WHEN path = '/' THEN '/' WHEN right(path, 1) = '/' THEN path ELSE path || '/' END;
                denied := CASE WHEN me IS NULL THEN '{}' ELSE mdq.denied_classes(me, ARRAY[host]) END;
                IF EXISTS (
                    SELECT 1 FROM mdq.folder f
                    WHERE f.host_id = host AND f.deleted_seq IS NULL
                      AND f.path ~>=~ prefix AND f.path ~<~ (left(prefix, -1) || '0')
                      AND f.parent_id IS NULL
                      AND NOT (((host::bigint << 32) | f.list_class) = ANY (denied)))
                THEN
                    answers[i] := NULL;
                END IF;
            END LOOP;
            RETURN answers;
        END $$;
        REVOKE ALL ON FUNCTION mdq.scope_errors(jsonb, text) FROM PUBLIC;
        -- Whoever may search may ask.
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN
                SELECT DISTINCT a.grantee FROM pg_proc p, aclexplode(p.proacl) a
                WHERE p.oid = 'mdq.search(smallint[], jsonb, jsonb, text, bigint, jsonb)'::regprocedure
                  AND a.privilege_type = 'EXECUTE' AND a.grantee NOT IN (0, p.proowner)
            LOOP
                EXECUTE format('GRANT EXECUTE ON FUNCTION mdq.scope_errors(jsonb, text) TO %I',
                               pg_get_userbyid(r.grantee));
            END LOOP;
        END $$;
        """#
}
