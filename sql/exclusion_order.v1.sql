-- bitemporal: the exclusion constraint compares the periods before the text
-- columns (issue 15; migration 0033).
--
-- fact_version_no_overlap was (key_id =, entity =, source =, valid &&,
-- known &&). Every version a write inserts, and every version of a table the
-- constraint is added to, is checked by one scan of its index for the
-- versions it would overlap. All versions of one key share key_id, entity
-- and source (a source at a time), so that scan met each version of the key
-- on its pages and compared both text columns before either period. Now the
-- periods come second and third: (key_id =, known &&, valid &&, entity =,
-- source =). The scan rejects a version on its knowledge period, which
-- overlaps a new version's only while the older one is still known, or on
-- its valid period, before any text is compared. It still visits every page
-- holding the key's versions: a page's bound on knowledge is open as soon as
-- it holds one current version.
--
-- Measured by adding the constraint to a filled table (990,000 versions of
-- 10,000 keys of 99 versions; 2026-12-05, 2 vCPUs, stock settings):
-- PostgreSQL 18 29.1-29.6 s before, 19.8-20.3 s after; PostgreSQL 15 71.2 s
-- before, 58.6 s after. Writes and lookups in the store: docs/performance.md.
--
-- Nothing else changes: the same columns, operators and name, one shape for
-- every layout. entity still takes part (with =), as a hash-partitioned or
-- Citus-distributed table needs; key_id still comes first, so every read of
-- a key's versions (by key_id and entity) still narrows the index to the key.
-- The constraint is dropped and added again: every version is checked once
-- more, under an exclusive lock of the version table.
--
-- Each command is a statement of its own inside a DO block, so that on a
-- store distributed by Citus (migration 0033 turns DDL propagation on first)
-- every shard's constraint changes with it.

DO $$
DECLARE
    -- Each exclusion constraint of the rule, and the table holding it: the
    -- version table's, or on a table partitioned before PostgreSQL 17 each
    -- partition's own (fact_version_no_overlap_p<k>), replaced where it is.
    tbls  regclass[];
    names text[];
BEGIN
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
        EXECUTE pg_catalog.format(
            'ALTER TABLE %s ADD CONSTRAINT %I EXCLUDE USING gist ('
            'key_id WITH =, known_period WITH &&, valid_period WITH &&, entity WITH =, source WITH =)',
            tbls[i], names[i]);
        EXECUTE pg_catalog.format(
            'COMMENT ON INDEX bitemporal.%I IS %L', names[i],
            'Enforces that one source never holds two overlapping valid periods for a key within one '
            'knowledge period; serves as-of lookups for an earlier knowledge time (bitemporal.as_of), '
            'history and the per-key audit functions, by the key''s integer (key_id), then the periods.');
    END LOOP;
END
$$;

-- From PostgreSQL 17 the constraint added to a partitioned table above makes
-- copies on its partitions named by PostgreSQL: each is renamed as
-- bitemporal.partition_versions names them, <index>_p<k> (partitioning.v2.sql).
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
           AND p.relname = 'fact_version_no_overlap'
    LOOP
        -- Renaming an index renames the constraint it backs.
        EXECUTE pg_catalog.format('ALTER INDEX %s RENAME TO %I', r.child,
                                  r.parent || pg_catalog.substr(r.part, pg_catalog.length('fact_version') + 1));
    END LOOP;
END
$$;
