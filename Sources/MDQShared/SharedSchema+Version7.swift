extension SharedSchema {
    /// Version 7: a search's folders are checked as the host would check
    /// them for the user (`mdq.scope_errors`), so that a folder that is
    /// not there, is not a folder, or may not be listed is named with the
    /// host's reason, as a local search names its scopes, instead of
    /// answering nothing.
    ///
    /// It adds a function, granted to every role that may search, and an
    /// index of the folders whose path is not UTF-8 (a folder of such a
    /// path is found by its bytes, which no index held: every lookup read
    /// all the host's folders): readers and publishers of version 6 go on.
    static let version7 = #"""
        -- Folders by their bytes when their path is not UTF-8 (a hash: such
        -- a path may be longer than a B-tree entry holds).
        CREATE INDEX folder_raw_path ON mdq.folder USING hash (raw_path)
            WHERE raw_path IS NOT NULL AND deleted_seq IS NULL;

        -- The text of bytes that are UTF-8; NULL for others.
        CREATE FUNCTION mdq.utf8_or_null(bytes bytea) RETURNS text
        LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
        BEGIN
            RETURN convert_from(bytes, 'UTF8');
        EXCEPTION WHEN character_not_in_repertoire OR untranslatable_character THEN
            RETURN NULL;
        END $$;

        -- For each folder of a search ([[host, path], [host, null, hex],
        -- ...], as mdq.search takes them), in order, what the host would
        -- say of it to the viewer (as mdq.search judges the viewer): NULL
        -- when the viewer may list it; 'EACCES' when it, or the folder
        -- above it the index holds, may not be listed (nothing below a
        -- folder the viewer may not list is told, not even whether it is
        -- there); 'ENOENT' when the nearest folder above it the index
        -- holds may be listed and has no entry of the next name;
        -- 'ENOTDIR' when that entry is not a folder (nor a symbolic link:
        -- 'symlink', whose target the index does not know); 'unindexed'
        -- when it is a folder whose contents the host does not index, or
        -- no folder above it is in the index, or it is below a folder the
        -- host indexes from (a root) that the viewer may not list (what is
        -- above a root is not in the index: that a root, or anything below
        -- it, is there would tell a name in a folder the viewer may not
        -- list). A folder is as
        -- of its host's last batch. At most 64 scopes, as mdq.search
        -- takes them.
        CREATE FUNCTION mdq.scope_errors(scopes jsonb, viewer text DEFAULT NULL) RETURNS text[]
        LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
            me text := mdq.viewer(viewer);
            scope jsonb;
            host smallint;
            target bytea;
            probe bytea;
            below bytea;
            slashes integer[];
            slash integer;
            step integer := 0;
            text_of text;
            denied bigint[];
            folder record;
            child record;
            answer text;
            answers text[] := '{}';
        BEGIN
            IF jsonb_typeof(coalesce(scopes, '[]')) <> 'array' OR jsonb_array_length(coalesce(scopes, '[]')) > 64 THEN
                RAISE EXCEPTION 'mdq: not a list of at most 64 scopes' USING ERRCODE = '22023';
            END IF;
            FOR scope IN SELECT * FROM jsonb_array_elements(coalesce(scopes, '[]')) LOOP
                IF jsonb_typeof(scope -> 0) <> 'number' THEN
                    RAISE EXCEPTION 'mdq: not a scope: %', left(scope::text, 200) USING ERRCODE = '22023';
                END IF;
                host := (scope ->> 0)::smallint;
                target := CASE WHEN jsonb_typeof(scope -> 2) = 'string' THEN decode(scope ->> 2, 'hex')
                               ELSE convert_to(scope ->> 1, 'UTF8') END;
                IF target IS NULL OR length(target) = 0 OR get_byte(target, 0) <> 47 THEN
                    RAISE EXCEPTION 'mdq: not an absolute path: %', left(scope::text, 200) USING ERRCODE = '22023';
                END IF;
                -- As the kernel says of a path longer than PATH_MAX.
                IF length(target) >= 4096 THEN
                    answers := answers || 'ENAMETOOLONG'::text;
                    CONTINUE;
                END IF;
                -- One trailing slash, as mdq.search_filter takes it.
                IF length(target) > 1 AND get_byte(target, length(target) - 1) = 47 THEN
                    target := substring(target FROM 1 FOR length(target) - 1);
                END IF;
                -- Where its slashes are (from 0), the last first.
                slashes := ARRAY(SELECT i FROM generate_series(length(target) - 1, 0, -1) AS i
                                 WHERE get_byte(target, i) = 47);
                step := 0;
                denied := CASE WHEN me IS NULL THEN '{}' ELSE mdq.denied_classes(me, ARRAY[host]) END;
                -- Up from the folder itself to the nearest the index holds;
                -- `below` is the name under it on the way down.
                probe := target;
                below := NULL;
                answer := 'unindexed';
                LOOP
                    text_of := mdq.utf8_or_null(probe);
                    -- A filesystem's top folder before the folder it is
                    -- mounted on, which has the same path in its parent's
                    -- filesystem.
                    IF text_of IS NOT NULL THEN
                        SELECT f.folder_id, f.list_class, f.parent_id IS NULL AS top INTO folder FROM mdq.folder f
                        WHERE f.host_id = host AND f.path = text_of AND f.raw_path IS NULL AND f.deleted_seq IS NULL
                        ORDER BY f.parent_id IS NULL DESC LIMIT 1;
                    ELSE
                        SELECT f.folder_id, f.list_class, f.parent_id IS NULL AS top INTO folder FROM mdq.folder f
                        WHERE f.host_id = host AND f.raw_path = probe AND f.deleted_seq IS NULL
                        ORDER BY f.parent_id IS NULL DESC LIMIT 1;
                    END IF;
                    IF FOUND THEN
                        IF ((host::bigint << 32) | folder.list_class) = ANY (denied) THEN
                            -- Below a top folder the viewer may not list,
                            -- all is as if not indexed: what is there is
                            -- not told.
                            answer := CASE WHEN folder.top OR EXISTS (
                                               WITH RECURSIVE up AS (
                                                   SELECT f.parent_id, f.list_class FROM mdq.folder f
                                                   WHERE f.host_id = host AND f.folder_id = folder.folder_id
                                                   UNION ALL
                                                   SELECT f.parent_id, f.list_class FROM mdq.folder f
                                                   JOIN up ON f.host_id = host AND f.folder_id = up.parent_id)
                                               SELECT 1 FROM up
                                               WHERE up.parent_id IS NULL
                                                 AND ((host::bigint << 32) | up.list_class) = ANY (denied))
                                           THEN 'unindexed' ELSE 'EACCES' END;
                        ELSIF below IS NULL THEN
                            answer := NULL;
                        ELSE
                            text_of := mdq.utf8_or_null(below);
                            SELECT e.kind INTO child FROM mdq.entry e
                            WHERE e.host_id = host AND e.parent_id = folder.folder_id AND e.deleted_seq IS NULL
                              AND CASE WHEN text_of IS NOT NULL THEN e.name = text_of AND e.raw_name IS NULL
                                       ELSE e.raw_name = below END
                            LIMIT 1;
                            answer := CASE WHEN NOT FOUND THEN 'ENOENT' WHEN child.kind = 2 THEN 'unindexed'
                                           WHEN child.kind = 3 THEN 'symlink' ELSE 'ENOTDIR' END;
                        END IF;
                        EXIT;
                    END IF;
                    EXIT WHEN probe = '\x2f'::bytea;
                    -- The folder above, and the name below it.
                    step := step + 1;
                    slash := slashes[step];
                    below := substring(target FROM slash + 2 FOR length(probe) - slash - 1);
                    probe := CASE WHEN slash = 0 THEN '\x2f'::bytea ELSE substring(target FROM 1 FOR slash) END;
                END LOOP;
                answers := answers || answer;
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
