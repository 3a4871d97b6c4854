extension SharedSchema {
    /// Version 2: what publishers need. Each host's row keeps the clock of
    /// the index state its rows stand for (the publisher resumes from it),
    /// and its entry and folder counts; user and group ids take all 32
    /// bits; a host's partitions are reloaded aside and swapped in.
    ///
    /// It changes column types, which is not additive: publishers and
    /// readers must know version 2 (no version 1 program ever published).
    static let version2 = #"""
        ALTER TABLE mdq.host ADD COLUMN clock text;
        ALTER TABLE mdq.host ADD COLUMN entries bigint NOT NULL DEFAULT 0;
        ALTER TABLE mdq.host ADD COLUMN folders bigint NOT NULL DEFAULT 0;
        ALTER TABLE mdq.host ADD COLUMN last_error text;

        ALTER TABLE mdq.entry ALTER COLUMN uid TYPE bigint, ALTER COLUMN gid TYPE bigint;
        ALTER TABLE mdq.access_class ALTER COLUMN owner TYPE bigint, ALTER COLUMN "group" TYPE bigint;
        ALTER TABLE mdq.identity ALTER COLUMN uid TYPE bigint, ALTER COLUMN gids TYPE bigint[];

        -- A type's conformance is mdq's own table, the same on every host:
        -- a search asks for the types conforming to what it names, and
        -- rows keep their type alone (the tree cost 80 bytes a row).
        ALTER TABLE mdq.entry DROP COLUMN type_tree;
        CREATE INDEX entry_content_type ON mdq.entry (content_type) WHERE deleted_seq IS NULL;

        -- The folders of a list class: what a user may not list is found
        -- by its classes.
        CREATE INDEX folder_list_class ON mdq.folder (host_id, list_class) WHERE deleted_seq IS NULL;

        -- The tables a reload fills aside: the partitions' columns and a
        -- constraint that proves the partition bound (so attaching them
        -- scans nothing), no index yet (building them after the rows are
        -- in is several times faster).
        CREATE FUNCTION mdq.reload_begin(id smallint) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            t text;
        BEGIN
            FOREACH t IN ARRAY ARRAY['entry', 'folder'] LOOP
                EXECUTE format('DROP TABLE IF EXISTS mdq.%s_%s_reload', t, id);
                EXECUTE format(
                    'CREATE TABLE mdq.%1$s_%2$s_reload (LIKE mdq.%1$s INCLUDING DEFAULTS, '
                    'CONSTRAINT %1$s_%2$s_host CHECK (host_id = %2$s))', t, id);
            END LOOP;
            UPDATE mdq.host SET state = 'reloading' WHERE host_id = id;
        END $$;

        -- The partitioned indexes of the parent, built on the tables aside,
        -- so that attaching them takes these instead of building anew.
        CREATE FUNCTION mdq.reload_index(id smallint) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            t text;
            definition text;
        BEGIN
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

        -- The swap, in the caller's transaction: readers see the old rows
        -- until it commits, then the new ones, and a new generation.
        CREATE FUNCTION mdq.reload_swap(id smallint, seq bigint, host_clock text, entry_count bigint,
                                        folder_count bigint) RETURNS void LANGUAGE plpgsql AS $$
        DECLARE
            t text;
        BEGIN
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
        """#
}
