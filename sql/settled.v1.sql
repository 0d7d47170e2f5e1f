-- bitemporal: a settled knowledge time, whose answers never change (version 1).
--
-- An answer for knowledge time S can still change if some write commits a
-- version known from (or closed at) S or earlier: a write in flight, or a
-- later one with an explicit known_at. bitemporal.settled_knowledge_time()
-- returns an S that no such write can reach, for any role that may call it:
--
--   * writes announce their knowledge times: before a write uses knowledge
--     time t, its transaction holds a shared advisory lock whose 64-bit key
--     encodes t (bitemporal_internal.announce_knowledge); pg_locks shows every
--     session's locks to every role, unlike pg_stat_activity, and a lock is
--     released only when the transaction ends (by then its writes are
--     visible to every later statement);
--   * a floor closes knowledge: bitemporal.knowledge_floor, a sequence
--     (so that it is seen at once by every session, outside transactions),
--     holds the greatest settled time handed out; a write announcing t at or
--     before the floor is refused (BT002) when its knowledge time was given
--     (known_at), or moved just past the floor when it is the transaction
--     time (so writes without known_at never fail because of it).
--
-- settled_knowledge_time(), with readers taking turns: (1) raises the floor
-- to C = clock_timestamp(); (2) reads the lowest announced time L in
-- pg_locks; (3) sets the floor to max(previous floor, S) and returns
-- S = least(C, L - 1 microsecond). Why a write w at knowledge time t <= S
-- cannot commit after the call: if w announced t before step (2) read
-- pg_locks and was still running, t >= L > S; if it had committed, it is
-- visible to every statement after the call. Otherwise w announced t after
-- step (2), so it read the floor (after taking its lock) after step (1): the
-- floor was then C or, after step (3), at least S, and w was refused or
-- moved past it. A transaction that announced t writes only at t or later
-- (announce_knowledge is called again for an earlier time). Answers read in
-- a statement that starts after the call returned (READ COMMITTED, or a
-- transaction begun afterwards) never change.
--
-- Keys of the advisory locks: bits 59-61 hold 5 (a tag), bits 0-58 the
-- microseconds since 0001-01-01 00:00 UTC. An application's own advisory lock
-- that happens to look like one can only make the settled time earlier.

CREATE SEQUENCE bitemporal.knowledge_floor AS bigint MINVALUE 0 START WITH 0;
COMMENT ON SEQUENCE bitemporal.knowledge_floor IS
    'The greatest settled knowledge time handed out (microseconds since 0001-01-01 UTC; 0: none): writes at or before it are refused (known_at given) or moved past it. Maintained by bitemporal.settled_knowledge_time.';

CREATE FUNCTION bitemporal_internal.knowledge_micros(t timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN (pg_catalog.extract('epoch', t) * 1000000)::bigint + 62135596800000000;
COMMENT ON FUNCTION bitemporal_internal.knowledge_micros(timestamptz) IS
    'Microseconds from 0001-01-01 00:00 UTC to t: how knowledge times are kept in bitemporal.knowledge_floor and in the keys of the advisory locks that announce writes.';

CREATE FUNCTION bitemporal_internal.knowledge_from_micros(m bigint)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN timestamptz '0001-01-01 00:00:00+00' + (m / 1000000) * interval '1 second' + (m % 1000000) * interval '1 microsecond';
COMMENT ON FUNCTION bitemporal_internal.knowledge_from_micros(bigint) IS
    'The inverse of bitemporal_internal.knowledge_micros.';

CREATE FUNCTION bitemporal_internal.announce_knowledge(t timestamptz, movable boolean)
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    m      bigint := bitemporal_internal.knowledge_micros(t);
    held   text := pg_catalog.current_setting('bitemporal.announced_knowledge', true);
    floor_ bigint;
BEGIN
    -- Already announced an earlier time: that lock covers this one.
    IF held IS NOT NULL AND held <> '' AND m >= held::bigint THEN
        RETURN t;
    END IF;
    LOOP
        -- The lock first, then the floor (see the proof above).
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
REVOKE ALL ON FUNCTION bitemporal_internal.announce_knowledge(timestamptz, boolean) FROM PUBLIC;
COMMENT ON FUNCTION bitemporal_internal.announce_knowledge(timestamptz, boolean) IS
    'Called by the write path before it writes at knowledge time t: announces t (a transaction-scoped shared advisory lock, unless an earlier time is already announced) and returns it, or, if t is not later than bitemporal.knowledge_floor, raises BT002 (movable false: known_at was given) or returns the first instant after the floor (movable true: the transaction time).';

CREATE FUNCTION bitemporal.settled_knowledge_time()
RETURNS timestamptz
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    turn     CONSTANT bigint := -4776046337129871360;  -- any key outside the announcements' tag
    c        timestamptz;
    previous bigint;
    lowest   bigint;
    settled  timestamptz;
BEGIN
    PERFORM pg_catalog.pg_advisory_lock(turn);
    BEGIN
        SELECT s.last_value INTO previous FROM bitemporal.knowledge_floor s;
        c := pg_catalog.clock_timestamp();
        IF bitemporal_internal.knowledge_micros(c) > previous THEN
            PERFORM pg_catalog.setval('bitemporal.knowledge_floor', bitemporal_internal.knowledge_micros(c));
        END IF;
        SELECT pg_catalog.min(k.key & ((1::bigint << 59) - 1)) INTO lowest
          FROM pg_catalog.pg_locks l,
               LATERAL (SELECT (l.classid::bigint << 32) | l.objid::bigint AS key) k
         WHERE l.locktype = 'advisory' AND l.objsubid = 1
           AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
           AND k.key >> 59 = 5;
        settled := least(c, bitemporal_internal.knowledge_from_micros(lowest) - interval '1 microsecond');
        PERFORM pg_catalog.setval('bitemporal.knowledge_floor',
                                  greatest(previous, bitemporal_internal.knowledge_micros(settled)));
        PERFORM pg_catalog.pg_advisory_unlock(turn);
    EXCEPTION WHEN OTHERS THEN
        PERFORM pg_catalog.pg_advisory_unlock(turn);
        RAISE;
    END;
    RETURN greatest(settled, bitemporal_internal.knowledge_from_micros(previous));
END;
$$;
COMMENT ON FUNCTION bitemporal.settled_knowledge_time()
    IS 'A knowledge time whose answers never change: no write in flight, and no later write, can commit a version known from (or closed at) it or earlier. Ask questions with known_at at or before it in a statement that starts after the call. Calling it closes knowledge up to the time returned: a later write with an explicit known_at at or before it is refused (BT002); writes without known_at are recorded after it.';
