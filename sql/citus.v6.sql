-- bitemporal on Citus, version 6 (migration 0037): as_of_planned delegated
-- too (issue 15).
--
--   * bitemporal_internal.citus_delegated_reads(), version 2: as citus.v4.sql
--     defines it, and bitemporal.as_of_planned (as_of_planned.v1.sql), which
--     the Python API asks on connections that never prepare: one command on
--     the worker holding the key, as as_of. distribute() reads the list when
--     it runs, so it is unchanged; bitemporal db upgrade --citus runs it after
--     the migration.

CREATE OR REPLACE FUNCTION bitemporal_internal.citus_delegated_reads()
RETURNS regprocedure[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
RETURN ARRAY[
    'bitemporal.as_of(text,text,timestamp with time zone,timestamp with time zone)',
    'bitemporal.as_of_planned(text,text,timestamp with time zone,timestamp with time zone)',
    'bitemporal.history(text,text)',
    'bitemporal.resolve(text,text,timestamp with time zone,timestamp with time zone,timestamp with time zone)',
    'bitemporal.resolve_versions(text,text,timestamp with time zone,timestamp with time zone,timestamp with time zone)'
]::regprocedure[];
COMMENT ON FUNCTION bitemporal_internal.citus_delegated_reads() IS
    'For bitemporal.distribute() (version 3, citus.v4.sql, and later): the single-key reads delegated by their entity argument to the worker holding the key (as_of, as_of_planned, history, resolve, resolve_versions; version 2, citus.v6.sql).';
