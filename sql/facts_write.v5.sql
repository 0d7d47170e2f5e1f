-- bitemporal: the write path's statements name their key's entity (version 5,
-- migration 0015).
--
-- bitemporal_internal.cut as surface.v1.sql defines it, changed in one way:
-- the DELETE and the UPDATE of a version filter by its entity as well as its
-- id. The id alone finds the row, but only in the index of every partition
-- (partitioned layout) or on every shard (Citus, distributed by entity): with
-- the entity, one partition or one shard is touched, and on Citus the
-- statement is routed to the one worker holding the key instead of locking
-- every shard, which would serialise all writers.

CREATE OR REPLACE FUNCTION bitemporal_internal.cut(entity text, attribute text, source text, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    me     xid8 := pg_catalog.pg_current_xact_id();
    r      bitemporal.fact_version;
    unseen boolean;
    ended  bigint[] := '{}';
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
        ELSIF lower(r.known_period) >= known_at THEN
            RAISE EXCEPTION 'knowledge time % is not later than version % (known from %)',
                    known_at, r.version_id, lower(r.known_period)
                USING ERRCODE = 'BT002';
        ELSE
            UPDATE bitemporal.fact_version v
               SET known_period = tstzrange(lower(v.known_period), known_at, '[)')
             WHERE v.entity = r.entity AND v.version_id = r.version_id;
        END IF;
        ended := ended || r.version_id;

        INSERT INTO bitemporal.fact_version
               (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
        SELECT r.entity, r.attribute, r.source, r.value, piece, tstzrange(known_at, NULL, '[)'),
               r.recorded_by,
               CASE WHEN unseen AND r.recorded_in = me THEN r.carried_from
                    ELSE coalesce(r.carried_from, r.version_id) END
          FROM unnest(tstzmultirange(r.valid_period) - tstzmultirange(period)) AS piece
         ORDER BY lower(piece) NULLS FIRST;
    END LOOP;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.cut(text, text, text, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of a key and source overlapping a valid period and re-records their remainders outside it. Returns the ended version ids. Call with the key locked (bitemporal_internal.lock_key).';
