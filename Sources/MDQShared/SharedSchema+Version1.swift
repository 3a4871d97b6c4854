extension SharedSchema {
    /// Version 1: documented table by table in `Documentation/shared-index.md`.
    static let version1 = #"""
        CREATE SCHEMA mdq;

        CREATE TABLE mdq.meta (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            schema_version integer NOT NULL,
            fold_version integer NOT NULL,
            min_publisher integer NOT NULL,
            min_reader integer NOT NULL,
            created timestamptz NOT NULL DEFAULT now(),
            migrated timestamptz NOT NULL DEFAULT now()
        );

        CREATE TABLE mdq.host (
            host_id smallint PRIMARY KEY GENERATED ALWAYS AS IDENTITY CHECK (host_id > 0),
            name text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
            machine_id text NOT NULL UNIQUE,
            domain text NOT NULL DEFAULT 'default',
            generation bigint NOT NULL DEFAULT 0,
            last_seq bigint NOT NULL DEFAULT 0,
            state text NOT NULL DEFAULT 'new'
                CHECK (state IN ('new', 'live', 'catching-up', 'reloading', 'offline')),
            publishes_content boolean NOT NULL DEFAULT false,
            publisher_version text,
            registered timestamptz NOT NULL DEFAULT now(),
            last_contact timestamptz
        );

        CREATE TABLE mdq.volume (
            host_id smallint NOT NULL REFERENCES mdq.host ON DELETE CASCADE,
            device bigint NOT NULL,
            mount_point text NOT NULL,
            fs_type text,
            fs_uuid text,
            PRIMARY KEY (host_id, device)
        );

        CREATE TABLE mdq.access_class (
            host_id smallint NOT NULL REFERENCES mdq.host ON DELETE CASCADE,
            class_id integer NOT NULL,
            mode integer NOT NULL,
            owner integer NOT NULL,
            "group" integer NOT NULL,
            acl jsonb,
            PRIMARY KEY (host_id, class_id)
        );

        CREATE TABLE mdq.list_rule (
            host_id smallint NOT NULL REFERENCES mdq.host ON DELETE CASCADE,
            list_class integer NOT NULL,
            access_class integer NOT NULL,
            need smallint NOT NULL CHECK (need IN (1, 4, 5)),
            PRIMARY KEY (host_id, list_class, access_class, need)
        );

        CREATE TABLE mdq.identity (
            domain text NOT NULL,
            user_name text NOT NULL,
            uid integer NOT NULL,
            gids integer[] NOT NULL,
            PRIMARY KEY (domain, user_name)
        );

        CREATE TABLE mdq.reader (
            reader text NOT NULL,
            host_id smallint NOT NULL REFERENCES mdq.host ON DELETE CASCADE,
            seq bigint NOT NULL,
            seen timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (reader, host_id)
        );

        CREATE TABLE mdq.folder (
            host_id smallint NOT NULL,
            folder_id bigint NOT NULL,
            parent_id bigint,
            path text NOT NULL,
            raw_path bytea,
            list_class integer NOT NULL,
            seq bigint NOT NULL,
            deleted_seq bigint,
            PRIMARY KEY (host_id, folder_id)
        ) PARTITION BY LIST (host_id);

        CREATE TABLE mdq.entry (
            host_id smallint NOT NULL,
            entry_id bigint NOT NULL,
            parent_id bigint NOT NULL,
            kind smallint NOT NULL,
            name text NOT NULL,
            raw_name bytea,
            fold text NOT NULL,
            ext text,
            size bigint,
            mtime timestamptz,
            btime timestamptz,
            uid integer,
            gid integer,
            mode integer,
            read_class integer,
            content_type text,
            type_tree text[],
            attrs jsonb,
            device bigint,
            inode bigint,
            seq bigint NOT NULL,
            deleted_seq bigint,
            PRIMARY KEY (host_id, entry_id)
        ) PARTITION BY LIST (host_id);

        CREATE TABLE mdq.content (
            host_id smallint NOT NULL,
            entry_id bigint NOT NULL,
            words tsvector NOT NULL,
            seq bigint NOT NULL,
            PRIMARY KEY (host_id, entry_id)
        ) PARTITION BY LIST (host_id);

        CREATE INDEX entry_fold_trigrams ON mdq.entry USING gin (fold gin_trgm_ops) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_extension ON mdq.entry (ext, host_id, parent_id) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_parent ON mdq.entry (host_id, parent_id) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_size ON mdq.entry (size) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_mtime ON mdq.entry (mtime) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_type_tree ON mdq.entry USING gin (type_tree) WHERE deleted_seq IS NULL;
        CREATE INDEX entry_seq ON mdq.entry (host_id, seq);
        CREATE INDEX folder_path_trigrams ON mdq.folder USING gin (path gin_trgm_ops) WHERE deleted_seq IS NULL;
        CREATE INDEX folder_path ON mdq.folder (host_id, path text_pattern_ops) WHERE deleted_seq IS NULL;
        CREATE INDEX folder_seq ON mdq.folder (host_id, seq);
        CREATE INDEX content_words ON mdq.content USING gin (words);

        -- A host and its partitions (named by its number: a host's name is
        -- what users type, and may change).
        CREATE FUNCTION mdq.add_host(host_name text, machine text, identity_domain text DEFAULT 'default')
        RETURNS smallint LANGUAGE plpgsql AS $$
        DECLARE
            id smallint;
        BEGIN
            INSERT INTO mdq.host (name, machine_id, domain) VALUES (host_name, machine, identity_domain)
            RETURNING host_id INTO id;
            EXECUTE format('CREATE TABLE mdq.entry_%s PARTITION OF mdq.entry FOR VALUES IN (%s)', id, id);
            EXECUTE format('CREATE TABLE mdq.folder_%s PARTITION OF mdq.folder FOR VALUES IN (%s)', id, id);
            EXECUTE format('CREATE TABLE mdq.content_%s PARTITION OF mdq.content FOR VALUES IN (%s)', id, id);
            RETURN id;
        END $$;

        CREATE FUNCTION mdq.remove_host(host_name text) RETURNS boolean LANGUAGE plpgsql AS $$
        DECLARE
            id smallint;
        BEGIN
            SELECT host_id INTO id FROM mdq.host WHERE name = host_name FOR UPDATE;
            IF NOT FOUND THEN
                RETURN false;
            END IF;
            EXECUTE format('DROP TABLE IF EXISTS mdq.entry_%s, mdq.folder_%s, mdq.content_%s', id, id, id);
            DELETE FROM mdq.host WHERE host_id = id;
            RETURN true;
        END $$;
        """#
}
