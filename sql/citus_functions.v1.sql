-- bitemporal: on a store distributed by Citus, the workers' copies of our
-- functions made the coordinator's again: after the bitemporal.distribute()
-- that follows every upgrade of a Citus database
-- (bitemporal.migrations.distribute), and in migration 0031's downgrade.
--
-- bitemporal.distribute() sends a function to the workers when it first
-- makes it a distributed object, after adapting the coordinator's definition
-- to Citus (the transaction id and timestamp functions, the Citus forms of a
-- few reads). A migration that redefines such a function later changes the
-- coordinator's definition; distribute() adapts it again there, but Citus does
-- not send an object it has already distributed a second time, so the workers
-- would keep the old definition: a shard's trigger running last migration's
-- code. Run after distribute(), this sends every distributed function of
-- ours, as the coordinator now defines it (CREATE OR REPLACE, which Citus
-- propagates, keeps each one's distribution argument and co-location).
--
-- Run after the migrations, under the caller's search_path: the block pins its
-- own while it runs (as migrations pin theirs), so that no object or operator
-- of another schema stands in for pg_catalog's, and restores the caller's.
DO $$
DECLARE
    r           record;
    caller_path text := pg_catalog.current_setting('search_path');
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
    PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
    FOR r IN SELECT p.oid
               FROM pg_catalog.pg_proc p
               JOIN pg_catalog.pg_dist_object o
                 ON o.classid = 'pg_catalog.pg_proc'::regclass AND o.objid = p.oid
              WHERE p.pronamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)
              ORDER BY p.oid LOOP
        EXECUTE pg_catalog.pg_get_functiondef(r.oid);
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', caller_path, true);
END
$$;
