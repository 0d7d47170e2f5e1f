-- bitemporal: on a store distributed by Citus, the workers' copies of our
-- functions keep PUBLIC out where the coordinator does. Run after
-- citus_functions.v1.sql by bitemporal.migrations.distribute, after every
-- upgrade of a Citus database, and by migration 0040 (both ways).
--
-- When a definition changed (a migration's CREATE OR REPLACE, sent on by
-- citus_functions.v1.sql), Citus 13.2.2 creates the function anew on a worker
-- and gives it the coordinator's grants, but not the coordinator's REVOKE
-- from PUBLIC: the worker's copy got PUBLIC's default EXECUTE back. Found with
-- migration 0040, which changed bitemporal_internal.announce_knowledge, a
-- SECURITY DEFINER function no role may call, and
-- tests/citus/test_upgrade_of_a_distributed_store.py, which compares every
-- node's catalog. A REVOKE on the coordinator changes nothing there and
-- Citus sends it to the workers.
--
-- Run under the caller's search_path: the block pins its own while it runs,
-- and restores the caller's.
DO $$
DECLARE
    r           record;
    caller_path text := pg_catalog.current_setting('search_path');
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
    FOR r IN SELECT p.oid::regprocedure AS f
               FROM pg_catalog.pg_proc p
               JOIN pg_catalog.pg_dist_object o
                 ON o.classid = 'pg_catalog.pg_proc'::regclass AND o.objid = p.oid
              WHERE p.pronamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)
                AND p.proacl IS NOT NULL
                AND NOT EXISTS (SELECT FROM pg_catalog.aclexplode(p.proacl) a WHERE a.grantee = 0)
              ORDER BY p.oid LOOP
        -- A regprocedure's text is its quoted, qualified signature. (No format():
        -- the driver would take its %s for a parameter of this script.)
        EXECUTE 'REVOKE ALL ON FUNCTION ' || r.f::text || ' FROM PUBLIC';
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', caller_path, true);
END
$$;
