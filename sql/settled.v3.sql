-- bitemporal: a clear refusal of an infinite knowledge time written into the
-- version table directly (migration 0040).
--
-- bitemporal_internal.announce_knowledge (settled.v1.sql) turns the knowledge
-- time it announces into microseconds first. Every function that writes
-- refuses an infinite knowledge time before it calls it (BT001 or BT003, from
-- check_knowledge_time); the owner, who alone may INSERT into
-- bitemporal.fact_version, does not go through them, and the row's trigger
-- then announced the time as it was. Version 1 failed there with PostgreSQL's
-- own "cannot convert infinity to bigint" (22003) and, once migration 0039
-- computed the microseconds from an interval, "cannot subtract infinite
-- timestamps" (22008; from PostgreSQL 17, which has infinite intervals,
-- "cannot convert infinity to bigint", 0A000): the row was refused either
-- way, with a message that did not say which value was wrong. Version 2 says it, as the functions do:
-- BT001, "knowledge time must be finite, not infinity". NULL is as before
-- (the CHECK constraints refuse it). Nothing else changes: CREATE OR REPLACE
-- keeps the grants (on Citus's workers, citus_function_acls.v1.sql restores
-- them).

CREATE OR REPLACE FUNCTION bitemporal_internal.announce_knowledge(t timestamptz, movable boolean)
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m      bigint;
    held   text := pg_catalog.current_setting('bitemporal.announced_knowledge', true);
    floor_ bigint;
BEGIN
    -- Version 2: an infinite time has no microseconds. The functions refuse one
    -- before they get here (check_knowledge_time); a row the owner writes into
    -- bitemporal.fact_version directly does not pass them; its trigger calls this.
    IF NOT pg_catalog.isfinite(t) THEN
        RAISE EXCEPTION 'knowledge time must be finite, not %', t
            USING ERRCODE = 'BT001';
    END IF;
    m := bitemporal_internal.knowledge_micros(t);
    -- Already announced an earlier time: that lock covers this one.
    IF held IS NOT NULL AND held <> '' AND m >= held::bigint THEN
        RETURN t;
    END IF;
    LOOP
        -- The lock first, then the floor (settled.v1.sql gives the proof).
        PERFORM pg_catalog.pg_advisory_xact_lock_shared((5::bigint << 59) | m);
        SELECT s.last_value INTO floor_ FROM bitemporal.knowledge_floor s;
        EXIT WHEN m > floor_;
        IF NOT movable THEN
            RAISE EXCEPTION 'knowledge time % is not later than the settled knowledge time %',
                    t, bitemporal_internal.knowledge_from_micros(floor_)
                USING ERRCODE = 'BT002',
                      HINT = 'Answers up to bitemporal.settled_knowledge_time() never change: knowledge is recorded after it. Omit known_at to use the transaction time.';
        END IF;
        m := floor_ + 1;
        t := bitemporal_internal.knowledge_from_micros(m);
    END LOOP;
    -- Transaction-local: undone with the (sub)transaction that took the lock.
    PERFORM pg_catalog.set_config('bitemporal.announced_knowledge', m::text, true);
    RETURN t;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.announce_knowledge(timestamptz, boolean) IS
    'Called by the write path before it writes at knowledge time t: announces t (a transaction-scoped shared advisory lock, unless an earlier time is already announced) and returns it, or, if t is not later than bitemporal.knowledge_floor, raises BT002 (movable false: known_at was given) or returns the first instant after the floor (movable true: the transaction time). Raises BT001 for an infinite t.';

