-- bitemporal: optional hash partitioning of the version table by entity (version 2).
--
-- Version 1 (partitioning.v1.sql) re-points the views reading
-- bitemporal.fact_version when it rebuilds the table. Since migration 0009 the
-- fact store's SQL functions have SQL-standard bodies (search_path.v1.sql),
-- which are bound to the table by OID like a view: version 2 also creates
-- those again over the new table. Everything else is as in version 1.

CREATE OR REPLACE FUNCTION bitemporal.partition_versions(partitions integer)
RETURNS bigint
LANGUAGE plpgsql
-- Catalog definitions are deparsed under this search_path, so every name in
-- them comes out schema-qualified.
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    old_name     CONSTANT text := 'fact_version_before_rebuild';
    source       oid;
    was          integer;
    -- PostgreSQL 17 accepts an exclusion constraint on a partitioned table if
    -- it compares the partition key with =; before, only on each partition.
    excl_on_parent boolean := current_setting('server_version_num')::integer >= 170000;
    entity_att   smallint;
    first_part   oid;
    pkey         text;
    pkey_cols    text[];
    parent_ddl   text[] := '{}';   -- constraints, indexes, triggers on bitemporal.fact_version
    each_ddl     text[] := '{}';   -- the same on every partition: %1$s is its name, %2$s its _p<k> suffix
    view_ddl     text[] := '{}';
    function_ddl text[] := '{}';   -- CREATE OR REPLACE of functions whose SQL-standard body reads the table
    refs         record;
    ref_list     jsonb := '[]';
    acl          text[] := '{}';   -- GRANT ... ON %s TO ...
    tbl_owner    name;
    tbl_comment  text;
    seqs         jsonb := '[]';
    seq_state    jsonb;
    cname        text;
    note         text;
    cols         text;
    copied       bigint;
    r            record;
    k            integer;
    ddl          text;
BEGIN
    IF partitions IS NULL OR partitions < 0 OR partitions > 1024 THEN
        RAISE EXCEPTION 'partitions must be between 0 (a plain table) and 1024, not %', partitions
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- Locked before anything is read: a concurrent rebuild, if any, is
    -- over by then and the table found below is the one in force.
    LOCK TABLE bitemporal.fact_version IN ACCESS EXCLUSIVE MODE;
    source := to_regclass('bitemporal.fact_version');
    was := bitemporal.version_partitions();
    IF partitions = was THEN
        RETURN 0;
    END IF;
    SELECT a.attnum INTO entity_att FROM pg_attribute a WHERE a.attrelid = source AND a.attname = 'entity';
    SELECT i.inhrelid INTO first_part FROM pg_inherits i WHERE i.inhparent = source ORDER BY i.inhrelid LIMIT 1;
    SELECT pg_get_userbyid(c.relowner), obj_description(c.oid, 'pg_class') INTO tbl_owner, tbl_comment
      FROM pg_class c WHERE c.oid = source;

    -- Constraints other than CHECK and NOT NULL (LIKE copies those), with the
    -- per-partition exclusion constraints of a layout made before 17.
    FOR r IN
        SELECT c.oid, c.conname, c.contype, c.conkey, c.conexclop, c.conrelid = source AS on_parent,
               CASE WHEN c.contype <> 'f' THEN obj_description(c.conindid, 'pg_class') END AS index_note
          FROM pg_constraint c
         WHERE (c.conrelid = source OR (c.conrelid = first_part AND c.contype = 'x'))
           AND c.conparentid = 0 AND c.contype IN ('p', 'u', 'x', 'f')
         ORDER BY c.contype = 'f', c.conname
    LOOP
        IF r.contype = 'p' THEN
            -- The key gains entity when partitioned and loses it (appended
            -- last by the previous rebuild) when not.
            SELECT array_agg(a.attname::text ORDER BY kc.n) INTO pkey_cols
              FROM unnest(r.conkey) WITH ORDINALITY AS kc(attnum, n)
              JOIN pg_attribute a ON a.attrelid = source AND a.attnum = kc.attnum;
            IF partitions > 0 AND NOT 'entity' = ANY (pkey_cols) THEN
                pkey_cols := pkey_cols || 'entity'::text;
            ELSIF partitions = 0 AND was > 0 AND pkey_cols[cardinality(pkey_cols)] = 'entity' THEN
                pkey_cols := pkey_cols[1:cardinality(pkey_cols) - 1];
            END IF;
            SELECT string_agg(quote_ident(c), ', ') INTO pkey FROM unnest(pkey_cols) c;
            parent_ddl := parent_ddl || format('ALTER TABLE bitemporal.fact_version ADD CONSTRAINT %I PRIMARY KEY (%s)',
                                               r.conname, pkey);
            IF r.index_note IS NOT NULL THEN
                parent_ddl := parent_ddl || format('COMMENT ON INDEX bitemporal.%I IS %L', r.conname, r.index_note);
            END IF;
            CONTINUE;
        END IF;
        IF partitions > 0 AND r.contype IN ('u', 'x') AND NOT (
                entity_att = ANY (r.conkey)
                AND (r.contype = 'u' OR (SELECT o.oprname = '='
                                           FROM pg_operator o
                                          WHERE o.oid = r.conexclop[array_position(r.conkey, entity_att)]))) THEN
            RAISE EXCEPTION 'constraint % of bitemporal.fact_version does not compare entity for equality: it cannot be kept when partitioning by entity',
                    r.conname
                USING ERRCODE = 'feature_not_supported';
        END IF;
        -- A per-partition copy is named after the original plus _p<k>.
        cname := CASE WHEN r.on_parent THEN r.conname ELSE regexp_replace(r.conname, '_p[0-9]+$', '') END;
        note := obj_description(r.oid, 'pg_constraint');
        IF r.contype = 'x' AND partitions > 0 AND NOT excl_on_parent THEN
            each_ddl := each_ddl || format('ALTER TABLE %%1$s ADD CONSTRAINT %I %s', cname || '%2$s',
                                           replace(pg_get_constraintdef(r.oid), '%', '%%'));
            IF note IS NOT NULL THEN
                each_ddl := each_ddl || format('COMMENT ON CONSTRAINT %I ON %%1$s IS %s', cname || '%2$s',
                                               replace(quote_literal(note), '%', '%%'));
            END IF;
            IF r.index_note IS NOT NULL THEN
                each_ddl := each_ddl || format('COMMENT ON INDEX bitemporal.%I IS %s', cname || '%2$s',
                                               replace(quote_literal(r.index_note), '%', '%%'));
            END IF;
            CONTINUE;
        END IF;
        parent_ddl := parent_ddl || format('ALTER TABLE bitemporal.fact_version ADD CONSTRAINT %I %s',
                                           cname, pg_get_constraintdef(r.oid));
        IF note IS NOT NULL THEN
            parent_ddl := parent_ddl || format('COMMENT ON CONSTRAINT %I ON bitemporal.fact_version IS %L', cname, note);
        END IF;
        IF r.index_note IS NOT NULL THEN
            parent_ddl := parent_ddl || format('COMMENT ON INDEX bitemporal.%I IS %L', cname, r.index_note);
        END IF;
    END LOOP;

    -- Indexes that back no constraint.
    FOR r IN
        SELECT i.indexrelid, pg_get_indexdef(i.indexrelid) AS def, obj_description(i.indexrelid, 'pg_class') AS note
          FROM pg_index i
         WHERE i.indrelid = source
           AND NOT EXISTS (SELECT FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = source)
         ORDER BY i.indexrelid
    LOOP
        parent_ddl := parent_ddl || replace(r.def, ' ON ONLY ', ' ON ');
        IF r.note IS NOT NULL THEN
            parent_ddl := parent_ddl || format('COMMENT ON INDEX %s IS %L', r.indexrelid::regclass, r.note);
        END IF;
    END LOOP;

    -- Triggers (but not the ones standing in for foreign keys, below).
    FOR r IN
        SELECT t.tgname, pg_get_triggerdef(t.oid) AS def, t.tgtype & 1 = 0 AS per_statement,
               obj_description(t.oid, 'pg_trigger') AS note
          FROM pg_trigger t
         WHERE t.tgrelid = source AND NOT t.tgisinternal AND t.tgparentid = 0
           AND t.tgfoid <> 'bitemporal_internal.version_reference_delete()'::regprocedure
         ORDER BY t.tgname
    LOOP
        parent_ddl := parent_ddl || r.def;
        IF r.note IS NOT NULL THEN
            parent_ddl := parent_ddl || format('COMMENT ON TRIGGER %I ON bitemporal.fact_version IS %L', r.tgname, r.note);
        END IF;
        IF r.per_statement AND partitions > 0 THEN
            each_ddl := each_ddl || replace(replace(r.def, '%', '%%'), ' ON bitemporal.fact_version ', ' ON %1$s ');
        END IF;
    END LOOP;

    -- Foreign keys referencing the table: real ones, or their stand-in triggers.
    FOR refs IN
        SELECT c.conname AS name, c.conrelid::regclass::text AS tbl, a.attname::text AS col, c.confdeltype::text AS action
          FROM pg_constraint c
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
         WHERE c.contype = 'f' AND c.confrelid = source AND c.conparentid = 0
        UNION ALL
        SELECT t.tgname, args[1], args[2], args[3]
          FROM pg_trigger t,
               LATERAL (SELECT string_to_array(rtrim(encode(t.tgargs, 'escape'), '\000'), '\000')) AS a(args)
         WHERE t.tgrelid = source AND t.tgfoid = 'bitemporal_internal.version_reference_delete()'::regprocedure
    LOOP
        IF refs.action NOT IN ('a', 'r', 'c') THEN
            RAISE EXCEPTION 'foreign key % on % references bitemporal.fact_version with an ON DELETE action partitioning cannot keep',
                    refs.name, refs.tbl
                USING ERRCODE = 'feature_not_supported';
        END IF;
        ref_list := ref_list || to_jsonb(refs);
    END LOOP;
    IF EXISTS (SELECT FROM pg_constraint c
                WHERE c.contype = 'f' AND c.confrelid = source
                  AND (cardinality(c.conkey) <> 1 OR c.confkey <> ARRAY[(SELECT a.attnum FROM pg_attribute a
                                                                          WHERE a.attrelid = source
                                                                            AND a.attname = 'version_id')]))
    THEN
        RAISE EXCEPTION 'a foreign key references bitemporal.fact_version by something other than version_id alone'
            USING ERRCODE = 'feature_not_supported';
    END IF;

    -- Views reading the table directly (views on those views are unaffected).
    FOR r IN
        SELECT DISTINCT w.ev_class AS view, c.relkind, c.reloptions
          FROM pg_depend d JOIN pg_rewrite w ON w.oid = d.objid JOIN pg_class c ON c.oid = w.ev_class
         WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = source AND w.ev_class <> source
    LOOP
        IF r.relkind <> 'v' THEN
            RAISE EXCEPTION '% reads bitemporal.fact_version and is not a view: drop it first', r.view::regclass
                USING ERRCODE = 'feature_not_supported';
        END IF;
        view_ddl := view_ddl || format('CREATE OR REPLACE VIEW %s %s AS %s', r.view::regclass,
                                       CASE WHEN r.reloptions IS NOT NULL
                                            THEN format('WITH (%s)', array_to_string(r.reloptions, ', ')) END,
                                       pg_get_viewdef(r.view));
    END LOOP;

    -- Functions with a SQL-standard body reading the table directly: bound to
    -- it by OID, they would keep the old table from being dropped. Their
    -- definitions, deparsed now (names schema-qualified under this function's
    -- search_path), are created again over the new table, in place (same
    -- OID, grants, comment and dependents).
    SELECT coalesce(array_agg(pg_get_functiondef(f.oid) ORDER BY f.oid), '{}') INTO function_ddl
      FROM (SELECT DISTINCT d.objid AS oid FROM pg_depend d
             WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_class'::regclass
               AND d.refobjid = source) f;

    -- Privileges on the table (the owner's are implicit).
    SELECT coalesce(array_agg(format('GRANT %s ON %%s TO %s%s', p.privilege_type,
                                     CASE WHEN p.grantee = 0 THEN 'PUBLIC'
                                          ELSE replace(p.grantee::regrole::text, '%', '%%') END,
                                     CASE WHEN p.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)), '{}')
      INTO acl
      FROM pg_class c, aclexplode(c.relacl) p
     WHERE c.oid = source AND p.grantee <> c.relowner;

    -- Identity sequences: moved aside (so the new table's get their names)
    -- and their position carried over.
    FOR r IN
        SELECT a.attname, pg_get_serial_sequence('bitemporal.fact_version', a.attname) AS seq
          FROM pg_attribute a WHERE a.attrelid = source AND a.attidentity <> ''
    LOOP
        EXECUTE format('SELECT jsonb_build_object(''col'', %L, ''last'', last_value, ''called'', is_called) FROM %s',
                       r.attname, r.seq) INTO seq_state;
        seqs := seqs || seq_state;
        EXECUTE format('ALTER SEQUENCE %s RENAME TO %I', r.seq, old_name || '_' || r.attname || '_seq');
    END LOOP;

    -- The rebuild: move the table aside, create the new one, copy, re-point,
    -- drop the old one, then re-create what was captured above.
    EXECUTE format('ALTER TABLE bitemporal.fact_version RENAME TO %I', old_name);
    FOR r IN SELECT i.inhrelid::regclass AS part, row_number() OVER (ORDER BY i.inhrelid) AS n
               FROM pg_inherits i WHERE i.inhparent = source LOOP
        EXECUTE format('ALTER TABLE %s RENAME TO %I', r.part, old_name || '_p' || r.n);
    END LOOP;
    EXECUTE format('CREATE TABLE bitemporal.fact_version (LIKE bitemporal.%I INCLUDING ALL EXCLUDING INDEXES) %s',
                   old_name, CASE WHEN partitions > 0 THEN 'PARTITION BY HASH (entity)' ELSE '' END);
    FOR k IN 0 .. partitions - 1 LOOP
        EXECUTE format('CREATE TABLE bitemporal.fact_version_p%s PARTITION OF bitemporal.fact_version '
                       'FOR VALUES WITH (MODULUS %s, REMAINDER %s)', k, partitions, k);
        EXECUTE format('COMMENT ON TABLE bitemporal.fact_version_p%s IS %L', k,
                       format('Partition %s of %s of bitemporal.fact_version: the versions of the entities whose hash leaves remainder %s (see bitemporal.partition_versions).',
                              k + 1, partitions, k));
    END LOOP;
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
      FROM pg_attribute a
     WHERE a.attrelid = 'bitemporal.fact_version'::regclass AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attgenerated = '';
    -- Before any trigger exists: rows are copied as they are (recorded_in kept).
    EXECUTE format('INSERT INTO bitemporal.fact_version (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM bitemporal.%I',
                   cols, cols, old_name);
    GET DIAGNOSTICS copied = ROW_COUNT;
    FOREACH ddl IN ARRAY view_ddl LOOP
        EXECUTE ddl;
    END LOOP;
    FOREACH ddl IN ARRAY function_ddl LOOP
        EXECUTE ddl;
    END LOOP;
    FOR refs IN SELECT * FROM jsonb_to_recordset(ref_list) AS x(name text, tbl text, col text, action text) LOOP
        IF was > 0 THEN
            EXECUTE format('DROP TRIGGER %I ON %s', refs.name, refs.tbl);
        ELSE
            EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', refs.tbl, refs.name);
        END IF;
    END LOOP;
    EXECUTE format('DROP TABLE bitemporal.%I', old_name);

    FOR r IN SELECT * FROM jsonb_to_recordset(seqs) AS x(col text, last bigint, called boolean) LOOP
        PERFORM setval(pg_get_serial_sequence('bitemporal.fact_version', r.col), r.last, r.called);
    END LOOP;
    FOREACH ddl IN ARRAY parent_ddl LOOP
        EXECUTE ddl;
    END LOOP;
    FOR refs IN SELECT * FROM jsonb_to_recordset(ref_list) AS x(name text, tbl text, col text, action text) LOOP
        IF partitions > 0 THEN
            EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OF %I ON %s FOR EACH ROW '
                           'EXECUTE FUNCTION bitemporal_internal.version_reference_check(%L)', refs.name, refs.col, refs.tbl, refs.col);
            EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON bitemporal.fact_version FOR EACH ROW '
                           'EXECUTE FUNCTION bitemporal_internal.version_reference_delete(%L, %L, %L)',
                           refs.name, refs.tbl, refs.col, refs.action);
            EXECUTE format('COMMENT ON TRIGGER %I ON %s IS %L', refs.name, refs.tbl,
                           'Foreign key to bitemporal.fact_version (version_id), which a partitioned table cannot have: the referenced version must exist.');
            EXECUTE format('COMMENT ON TRIGGER %I ON bitemporal.fact_version IS %L', refs.name,
                           format('Foreign key %s from %s, which a partitioned table cannot have: its ON DELETE action.',
                                  refs.name, refs.tbl));
        ELSE
            EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (%I) REFERENCES bitemporal.fact_version (version_id)%s',
                           refs.tbl, refs.name, refs.col,
                           CASE refs.action WHEN 'c' THEN ' ON DELETE CASCADE' WHEN 'r' THEN ' ON DELETE RESTRICT' ELSE '' END);
        END IF;
    END LOOP;

    -- Per partition: what partitions do not inherit, and the _p<k> names of
    -- what they do.
    FOR k IN 0 .. partitions - 1 LOOP
        FOREACH ddl IN ARRAY each_ddl LOOP
            EXECUTE format(ddl, format('bitemporal.fact_version_p%s', k), '_p' || k);
        END LOOP;
        FOR r IN
            SELECT i.inhrelid::regclass AS child, p.relname AS parent
              FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent JOIN pg_index x ON x.indexrelid = i.inhrelid
             WHERE x.indrelid = format('bitemporal.fact_version_p%s', k)::regclass
        LOOP
            -- Renaming an index renames the constraint it backs, if any.
            EXECUTE format('ALTER INDEX %s RENAME TO %I', r.child, r.parent || '_p' || k);
        END LOOP;
    END LOOP;

    FOR r IN SELECT 'bitemporal.fact_version' AS rel
             UNION ALL SELECT format('bitemporal.fact_version_p%s', g.n) FROM generate_series(0, partitions - 1) g(n)
    LOOP
        IF tbl_owner <> current_user THEN
            EXECUTE format('ALTER TABLE %s OWNER TO %I', r.rel, tbl_owner);
        END IF;
        FOREACH ddl IN ARRAY acl LOOP
            EXECUTE format(ddl, r.rel);
        END LOOP;
    END LOOP;
    EXECUTE format('COMMENT ON TABLE bitemporal.fact_version IS %L', tbl_comment);
    EXECUTE 'ANALYZE bitemporal.fact_version';
    RETURN copied;
END;
$$;
REVOKE ALL ON FUNCTION bitemporal.partition_versions(integer) FROM PUBLIC;
COMMENT ON FUNCTION bitemporal.partition_versions(integer) IS
    'Rebuilds bitemporal.fact_version as the given number of hash partitions of entity (0: one plain table), copying every version, and carries over its indexes, constraints, triggers, views, functions with SQL-standard bodies reading it, privileges and identity. Holds an exclusive lock on the table while it runs (readers and writers wait). Returns the number of versions copied (0 when the layout was already the one asked for).';
