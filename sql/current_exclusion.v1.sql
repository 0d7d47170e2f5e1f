-- bitemporal: the exclusion constraint holds current versions only, and
-- serves the writes; every version is in a plain GiST index of its periods
-- (issue 15; migration 0034).
--
-- Until 0033 the version table had two GiST indexes: the exclusion
-- constraint fact_version_no_overlap over every version, and
-- fact_version_current_idx over current ones (open knowledge), which the
-- writes read. Every version inserted or closed was checked by a probe of
-- the constraint's index that visited every page of its key's versions
-- overlapping it in validity, however long ago they were closed. Measured
-- against 0033 (docs/performance.md): the 10M fill 1.2x faster, changes that
-- end many versions up to 1.3x; single changes and lookups unchanged within
-- the noise.
--
-- Now:
--   * fact_version_no_overlap: (key_id =, source =, valid &&, known &&,
--     entity =) over the versions with open knowledge and those closed by
--     the transaction that recorded them (closed_at = recorded_at, both
--     stamped by the knowledge trigger). That is enough to forbid every
--     overlap: the trigger (fact_version_knowledge) makes each insert and
--     each closing happen at a knowledge time not earlier than the key's
--     latest, so two versions whose known periods overlap were both in this
--     index when the later one was inserted: the earlier one still current,
--     the later one current or inserted closed (which sets its closed_at to
--     its recorded_at). The rule and the name do not change, nor its
--     SQLSTATE (23P01). It is also the index
--     the writes read (bitemporal_internal.supersede, bitemporal.record_many,
--     ...: their queries ask for upper_inf(known_period), which implies its
--     predicate), in place of fact_version_current_idx, dropped;
--   * fact_version_periods_idx: (key_id, known_period, valid_period, entity)
--     over every version, no constraint: as-of lookups for an earlier
--     knowledge time, history and the per-key audit functions, by the key's
--     integer (the functions' queries do not change: where their comments
--     name the exclusion constraint's index, they now read this one).
--     entity comes last, as in 0033's constraint, so that a query of the
--     view bitemporal.versions by entity and attribute still reads an index.
--
-- The version table keeps two GiST indexes, and a write no longer probes its
-- key's closed versions. The constraint now relies on the knowledge trigger,
-- as the append-only history already does: an owner who disables the
-- triggers could already rewrite history, and with them off a version
-- inserted closed is no longer checked (docs/operations.md, "What is
-- trusted").
--
-- Each command is a statement of its own inside a DO block, so that on a
-- store distributed by Citus (migration 0034 turns DDL propagation on
-- first) every shard changes with it. On a table partitioned
-- before PostgreSQL 17 each partition holds its own constraint
-- (fact_version_no_overlap_p<k>), replaced where it is.

DO $$
DECLARE
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
    END LOOP;
    DROP INDEX bitemporal.fact_version_current_idx;
    CREATE INDEX fact_version_periods_idx ON bitemporal.fact_version
        USING gist (key_id, known_period, valid_period, entity);
    COMMENT ON INDEX bitemporal.fact_version_periods_idx IS
        'Every version by the key''s integer (key_id), knowledge period, valid period and entity: as-of lookups for an earlier knowledge time (bitemporal.as_of), history and the per-key audit functions.';
    FOR i IN 1 .. pg_catalog.cardinality(names) LOOP
        EXECUTE pg_catalog.format(
            'ALTER TABLE %s ADD CONSTRAINT %I EXCLUDE USING gist ('
            'key_id WITH =, source WITH =, valid_period WITH &&, known_period WITH &&, entity WITH =) '
            'WHERE (upper_inf(known_period) OR closed_at = recorded_at)',
            tbls[i], names[i]);
        EXECUTE pg_catalog.format(
            'COMMENT ON INDEX bitemporal.%I IS %L', names[i],
            'Enforces that one source never holds two overlapping valid periods for a key within one '
            'knowledge period, over the versions still known and those closed by the transaction that '
            'recorded them, which the knowledge trigger makes enough; what record() and retract() read, '
            'whatever the length of the history.');
    END LOOP;
END
$$;

-- From PostgreSQL 17 the constraint added to a partitioned table above, and
-- the index, make copies on its partitions named by PostgreSQL: each is
-- renamed as bitemporal.partition_versions names them, <index>_p<k>
-- (partitioning.v2.sql).
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
           AND p.relname IN ('fact_version_no_overlap', 'fact_version_periods_idx')
    LOOP
        -- Renaming an index renames the constraint it backs.
        EXECUTE pg_catalog.format('ALTER INDEX %s RENAME TO %I', r.child,
                                  r.parent || pg_catalog.substr(r.part, pg_catalog.length('fact_version') + 1));
    END LOOP;
END
$$;
