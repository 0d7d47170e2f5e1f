-- bitemporal: the invalidation NOTIFY, on or off (issue 15; migration 0029).
--
-- A transaction that closes a version's knowledge announces it on
-- bitemporal_invalidation when it commits (the deferred trigger
-- fact_version_notify_closed, provenance.v2.sql). PostgreSQL makes every
-- committing transaction that sent a NOTIFY take one lock, for the whole
-- database cluster, from before its commit record until after it (async.c:
-- queue entries appear in commit order). Concurrent writers therefore commit
-- one after another, each waiting for the one before to flush its commit:
-- measured on 2 vCPUs, PostgreSQL 15, eight clients of pgbench each recording
-- one change a transaction, 1,606-1,626 writes/s with the trigger against
-- 2,233-2,261 without. A store whose caches poll bitemporal.changes(), or that
-- has no caches to invalidate, can switch the trigger off.
--
-- The switch is the trigger's own state (pg_trigger.tgenabled, recursing to
-- the partitions of the partitioned layout): ALTER TABLE ... DISABLE TRIGGER,
-- which only the table's owner may run. set_invalidation_notify runs with its
-- caller's rights, so no role but the owner (or a member of it) can silence the
-- feed; it says so first, in words a role that tried can act on. Erasures
-- (bitemporal_internal.erase_versions) announce each erased version whatever
-- the switch says: a cache must drop an erased value, and erasures are rare.
-- On Citus distribute() has dropped the trigger (the NOTIFY would fire on the
-- workers), so the feed is off there and cannot be switched on.

-- Whether writes announce closed versions on bitemporal_invalidation.
CREATE FUNCTION bitemporal.invalidation_notify()
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce((SELECT t.tgenabled <> 'D'
                       FROM pg_catalog.pg_trigger t
                      WHERE t.tgrelid = 'bitemporal.fact_version'::regclass
                        AND t.tgname = 'fact_version_notify_closed'), false);
END;
COMMENT ON FUNCTION bitemporal.invalidation_notify() IS
    'Whether a transaction that closes a version''s knowledge (a supersession or a retraction) announces it on bitemporal_invalidation at commit: the state of the trigger fact_version_notify_closed (bitemporal.set_invalidation_notify). False on Citus, where there is no such trigger.';

CREATE FUNCTION bitemporal.set_invalidation_notify(enabled boolean)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The trigger's state on the table (its partitions follow it); NULL: no trigger.
    state "char"  := (SELECT t.tgenabled FROM pg_catalog.pg_trigger t
                       WHERE t.tgrelid = 'bitemporal.fact_version'::regclass
                         AND t.tgname = 'fact_version_notify_closed');
    was   boolean := coalesce(state <> 'D', false);
    owner name    := (SELECT c.relowner::regrole::name FROM pg_catalog.pg_class c
                       WHERE c.oid = 'bitemporal.fact_version'::regclass);
BEGIN
    IF enabled IS NULL THEN
        RAISE EXCEPTION 'enabled must be true or false, not null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT pg_catalog.pg_has_role(current_user, owner, 'USAGE') THEN
        RAISE EXCEPTION 'only the store''s owner (%) may switch the invalidation NOTIFY, not %', owner, current_user
            USING ERRCODE = '42501',
                  HINT = 'Run it as the role that migrates the store: bitemporal db notify on|off.';
    END IF;
    IF state IS NULL AND enabled THEN
        RAISE EXCEPTION 'this store sends no invalidation NOTIFY: it is distributed on Citus, where the NOTIFY would fire on the workers'
            USING ERRCODE = 'BT502',
                  HINT = 'Read what changed with bitemporal.changes(known_from, known_to) (store.facts.changes).';
    END IF;
    IF state IS NOT NULL AND enabled <> was THEN
        EXECUTE pg_catalog.format('ALTER TABLE bitemporal.fact_version %s TRIGGER fact_version_notify_closed',
                                  CASE WHEN enabled THEN 'ENABLE' ELSE 'DISABLE' END);
    END IF;
    RETURN was;
END;
$$;
COMMENT ON FUNCTION bitemporal.set_invalidation_notify(boolean) IS
    'Switches the invalidation NOTIFY of writes on or off (the trigger fact_version_notify_closed; erasures announce themselves either way) and returns the previous state. Off, concurrent writers no longer commit one at a time (PostgreSQL serializes the commits of transactions that sent a NOTIFY); read bitemporal.changes() instead. The store''s owner only (42501); BT502 to switch it on on Citus; waits for writes in flight.';
