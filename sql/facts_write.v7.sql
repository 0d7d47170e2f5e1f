-- bitemporal: a write re-records its remainders by value (version 7,
-- migration 0023; issue 14).
--
-- bitemporal_internal.cut as facts_write.v5.sql defines it, changed in one
-- way: the parts of an ended version outside the written period (none, one or
-- two: a period minus a period) are inserted one INSERT ... VALUES each,
-- where they were one INSERT ... SELECT over the multirange difference.
--
-- Why: on Citus an INSERT ... SELECT whose SELECT reads no distributed table
-- runs through the coordinator, which sends the rows to the shard by COPY, and
-- Citus commits every transaction that copied rows with two-phase commit
-- (PREPARE TRANSACTION on the worker, COMMIT PREPARED after the coordinator's
-- own commit). So every record that cut a version and every retraction took
-- two phases, though they touch one key on one worker: one more round trip,
-- more flushes on the worker, and the window docs/citus.md described, between
-- the coordinator's commit and the worker's, in which a settled knowledge
-- time could be handed out before the write it must include was visible.
-- An INSERT ... VALUES is routed to the key's shard like any single-row
-- insert, and a transaction that wrote on one worker only commits in one
-- phase: the worker commits first, then the coordinator.
--
-- On one node nothing changes but the plan: the same rows, in the same order
-- (lower bound first), so their version ids keep that order.

CREATE OR REPLACE FUNCTION bitemporal_internal.cut(entity text, attribute text, source text, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    me      xid8 := pg_catalog.pg_current_xact_id();
    r       bitemporal.fact_version;
    unseen  boolean;
    carried bigint;
    piece   tstzrange;
    ended   bigint[] := '{}';
BEGIN
    FOR r IN
        SELECT * FROM bitemporal.fact_version v
         WHERE v.entity = cut.entity AND v.attribute = cut.attribute AND v.source = cut.source
           AND upper_inf(v.known_period) AND v.valid_period && cut.period
         ORDER BY v.version_id
    LOOP
        unseen := lower(r.known_period) = known_at;
        IF unseen AND r.recorded_in = me THEN
            -- Written earlier in this transaction at the same knowledge time:
            -- nobody ever saw it, and closing it would leave an empty period.
            DELETE FROM bitemporal.fact_version v
             WHERE v.entity = r.entity AND v.version_id = r.version_id;
            carried := r.carried_from;
        ELSIF lower(r.known_period) >= known_at THEN
            RAISE EXCEPTION 'knowledge time % is not later than version % (known from %)',
                    known_at, r.version_id, lower(r.known_period)
                USING ERRCODE = 'BT002';
        ELSE
            UPDATE bitemporal.fact_version v
               SET known_period = tstzrange(lower(v.known_period), known_at, '[)')
             WHERE v.entity = r.entity AND v.version_id = r.version_id;
            carried := coalesce(r.carried_from, r.version_id);
        END IF;
        ended := ended || r.version_id;

        -- A multirange's ranges come in order, the one open below first.
        FOREACH piece IN ARRAY ARRAY(SELECT p FROM unnest(tstzmultirange(r.valid_period) - tstzmultirange(period)) AS p)
        LOOP
            INSERT INTO bitemporal.fact_version
                   (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
            VALUES (r.entity, r.attribute, r.source, r.value, piece, tstzrange(known_at, NULL, '[)'),
                    r.recorded_by, carried);
        END LOOP;
    END LOOP;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.cut(text, text, text, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of a key and source overlapping a valid period and re-records their remainders outside it, one INSERT ... VALUES each (on Citus: routed to the key''s shard, so a single-key write commits in one phase). Returns the ended version ids. Call with the key locked (bitemporal_internal.lock_key).';
