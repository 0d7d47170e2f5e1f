-- bitemporal: migration 0031's table changes (one integer for a key in the
-- version table's indexes) on a store already distributed by Citus.
--
-- integer_key.v1.sql changes the tables with Citus's DDL propagation off, as
-- on a store not distributed yet, and refuses a distributed one: its shards
-- are on the workers. Here the same changes (the same columns, defaults,
-- sequence, constraints, indexes and comments as that file's steps 1 and 2)
-- go to every shard, in the forms Citus accepts:
--   * propagation on, one connection a worker (the migration then changes
--     functions in the same transaction, which Citus refuses after a
--     parallel operation on a distributed table), and the tables' triggers
--     switched off and on again on the shards (citus.enable_unsafe_triggers);
--   * the sequence owned by the column before it becomes the column's default:
--     Citus distributes a default's sequence and cannot alter it afterwards;
--   * the default and NOT NULL as two statements: Citus refuses a nextval()
--     default beside another subcommand;
--   * every change inside a DO block: Citus sends some commands (ALTER TABLE
--     ... DISABLE TRIGGER, SET NOT NULL) to the workers as the text of the
--     whole query string that holds them, which the workers refuse when it
--     holds several commands ("cannot insert multiple commands into a
--     prepared statement"); PL/pgSQL runs each statement as its own text.
-- The keys are numbered -1, -2, ... within their entity, as integer_key.v1.sql
-- numbers them (nextval() cannot run in a distributed UPDATE): the numbering
-- runs on each shard, since a key's rows all live on its entity's shard.
--
-- Migration 0031 runs this file, then the functions of integer_key.v1.sql
-- (its step 3) on the coordinator alone; bitemporal.distribute() and
-- citus_functions.v1.sql, which follow every upgrade of a Citus database,
-- adapt them to Citus and send them to the workers.

SET LOCAL citus.enable_ddl_propagation = on;
SET LOCAL citus.multi_shard_modify_mode = 'sequential';
SET LOCAL citus.enable_unsafe_triggers = on;

-- 1. The keys' integers.
DO $$
BEGIN
    CREATE SEQUENCE bitemporal.fact_key_key_id_seq AS bigint;
    COMMENT ON SEQUENCE bitemporal.fact_key_key_id_seq IS
        'The key_id of each new key of bitemporal.fact_key.';
    ALTER TABLE bitemporal.fact_key ADD COLUMN key_id bigint;
    ALTER TABLE bitemporal.fact_key DISABLE TRIGGER USER;  -- key_guard refuses any other change
    UPDATE bitemporal.fact_key k
       SET key_id = -n.n
      FROM (SELECT f.entity, f.attribute,
                   pg_catalog.row_number() OVER (PARTITION BY f.entity ORDER BY f.attribute) AS n
              FROM bitemporal.fact_key f) n
     WHERE n.entity = k.entity AND n.attribute = k.attribute;
    ALTER TABLE bitemporal.fact_key ENABLE TRIGGER USER;
    ALTER SEQUENCE bitemporal.fact_key_key_id_seq OWNED BY bitemporal.fact_key.key_id;
    ALTER TABLE bitemporal.fact_key
        ALTER COLUMN key_id SET DEFAULT pg_catalog.nextval('bitemporal.fact_key_key_id_seq'::regclass);
    ALTER TABLE bitemporal.fact_key ALTER COLUMN key_id SET NOT NULL;
    ALTER TABLE bitemporal.fact_key
        ADD CONSTRAINT fact_key_key_id_unique UNIQUE (key_id, entity);
    COMMENT ON INDEX bitemporal.fact_key_key_id_unique IS
        'A key''s integer is unique within its entity: reads of a key''s versions by (key_id, entity) read that key''s only.';
    COMMENT ON COLUMN bitemporal.fact_key.key_id IS
        'The key as one integer, unique within its entity, in the version table''s indexes (bitemporal.fact_version.key_id).';
END
$$;

-- 2. The versions' integers, with the GiST indexes rebuilt over them (indexes
-- first, as in integer_key.v1.sql). bitemporal.distribute gave the version
-- table the partitioned layout: its constraint is on the partitioned table
-- from PostgreSQL 17, on each partition before.
DO $$
DECLARE
    tbls  regclass[];
    names text[];
BEGIN
    ALTER TABLE bitemporal.fact_version ADD COLUMN key_id bigint NOT NULL DEFAULT 0;
    COMMENT ON COLUMN bitemporal.fact_version.key_id IS
        'The key''s bitemporal.fact_key.key_id (forced by the trigger fact_version_knowledge; 0 only in a row refused anyway).';
    SELECT pg_catalog.array_agg(c.conrelid::regclass ORDER BY c.oid), pg_catalog.array_agg(c.conname::text ORDER BY c.oid)
      INTO tbls, names
      FROM pg_catalog.pg_constraint c
     WHERE c.contype = 'x' AND c.conislocal
       AND c.conname OPERATOR(pg_catalog.~~) 'fact_version_no_overlap%'
       AND (c.conrelid = 'bitemporal.fact_version'::regclass
            OR c.conrelid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                               WHERE i.inhparent = 'bitemporal.fact_version'::regclass));
    FOR i IN 1 .. pg_catalog.cardinality(names) LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', tbls[i], names[i]);
    END LOOP;
    DROP INDEX bitemporal.fact_version_current_idx;
    ALTER TABLE bitemporal.fact_version DISABLE TRIGGER USER;  -- the append-only guard
    UPDATE bitemporal.fact_version v
       SET key_id = k.key_id
      FROM bitemporal.fact_key k
     WHERE k.entity = v.entity AND k.attribute = v.attribute;
    ALTER TABLE bitemporal.fact_version ENABLE TRIGGER USER;
    FOR i IN 1 .. pg_catalog.cardinality(names) LOOP
        EXECUTE pg_catalog.format(
            'ALTER TABLE %s ADD CONSTRAINT %I EXCLUDE USING gist ('
            'key_id WITH =, entity WITH =, source WITH =, valid_period WITH &&, known_period WITH &&)',
            tbls[i], names[i]);
        EXECUTE pg_catalog.format(
            'COMMENT ON INDEX bitemporal.%I IS %L', names[i],
            'Enforces that one source never holds two overlapping valid periods for a key within one '
            'knowledge period; serves as-of lookups for an earlier knowledge time (bitemporal.as_of), '
            'history and the per-key audit functions, by the key''s integer (key_id).');
    END LOOP;
    CREATE INDEX fact_version_current_idx ON bitemporal.fact_version
        USING gist (key_id, source, valid_period)
        WHERE upper_inf(known_period);
    COMMENT ON INDEX bitemporal.fact_version_current_idx IS
        'Current versions (open knowledge) by key (its integer), source and valid period: what record() and retract() read, whatever the length of the history.';
END
$$;

-- The partitions' copies of the two indexes named as integer_key.v1.sql names
-- them (bitemporal.partition_versions's <index>_p<k>).
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT i.inhrelid::regclass AS child, p.relname AS parent, c.relname AS part
          FROM pg_catalog.pg_inherits i
          JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
          JOIN pg_catalog.pg_index x ON x.indexrelid = i.inhrelid
          JOIN pg_catalog.pg_class c ON c.oid = x.indrelid
         WHERE p.relnamespace = 'bitemporal'::regnamespace
           AND p.relname IN ('fact_version_no_overlap', 'fact_version_current_idx')
    LOOP
        EXECUTE pg_catalog.format('ALTER INDEX %s RENAME TO %I', r.child,
                                  r.parent || pg_catalog.substr(r.part, pg_catalog.length('fact_version') + 1));
    END LOOP;
END
$$;

-- The functions that follow change the coordinator's definitions alone.
SET LOCAL citus.enable_ddl_propagation = off;
