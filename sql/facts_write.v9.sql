-- bitemporal: a write inserts its versions in one statement (version 9,
-- migration 0027; issues 14 and 15).
--
-- bitemporal.record (facts_write.v8.sql) inserted each remainder of a version
-- it ended with an INSERT of its own, in bitemporal_internal.supersede, and
-- then the new version with one more. An interior change (a new value inside
-- a version's valid period) was three INSERTs. Now supersede collects the
-- remainders and inserts them together with the new version, up to three rows
-- a statement: an interior change is one INSERT.
--
-- Why: on Citus each statement on a version is a command sent to the key's
-- worker, and a single-key write's latency is mostly those round trips (an
-- interior change sent seven commands; now five). The rows go as one
-- INSERT ... VALUES, which Citus routes by value to the key's shard; an
-- INSERT ... SELECT would go through the coordinator and COPY, which commits
-- in two phases (migration 0023). On one node it saves executor runs.
--
-- The rule is unchanged: the same versions ended or removed in the same
-- order, the same remainders (in the same order, so with ids in the same
-- order), then the new version, the same errors. The new version is told from
-- the remainders by carried_from, which only a remainder has.

CREATE FUNCTION bitemporal_internal.supersede(
    entity      text,
    attribute   text,
    source      text,
    period      tstzrange,
    known_at    timestamptz,
    value       jsonb,
    recorded_by text,
    OUT same_id    bigint,
    OUT ended      bigint[],
    OUT version_id bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    me       xid8 := pg_catalog.pg_current_xact_id();
    r        record;
    unseen   boolean;
    carried  bigint;
    piece    tstzrange;
    -- The rows to insert, in order: the remainders, then the new version.
    periods  tstzrange[] := '{}';
    vals     jsonb[] := '{}';
    bys      text[] := '{}';
    carrieds bigint[] := '{}';
    done     integer := 0;  -- rows inserted so far
    batch    integer;
BEGIN
    ended := '{}';
    FOR r IN
        SELECT v.version_id, v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
               v.recorded_by, v.carried_from, v.recorded_in,
               -- The no-op test over all the overlapping versions. An erased
               -- version (value NULL) never holds the value.
               bool_and(v.value IS NOT DISTINCT FROM supersede.value) OVER every AS same_value,
               range_agg(v.valid_period * supersede.period) OVER every AS covered,
               first_value(v.version_id) OVER (every ORDER BY lower(v.valid_period) NULLS FIRST
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS first_id
          FROM bitemporal.fact_version v
         WHERE v.entity = supersede.entity AND v.attribute = supersede.attribute AND v.source = supersede.source
           AND upper_inf(v.known_period) AND v.valid_period && supersede.period
        WINDOW every AS ()
         ORDER BY v.version_id
    LOOP
        IF supersede.value IS NOT NULL AND r.same_value AND r.covered = tstzmultirange(supersede.period) THEN
            -- Already known, with this value, for the whole period.
            same_id := r.first_id;
            RETURN;
        END IF;
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
            periods := periods || piece;
            vals := vals || r.value;
            bys := bys || r.recorded_by;
            carrieds := carrieds || carried;
        END LOOP;
    END LOOP;
    IF value IS NOT NULL THEN
        periods := periods || period;
        vals := vals || value;
        bys := bys || recorded_by;
        carrieds := carrieds || NULL::bigint;
    END IF;

    -- Three rows a statement at most: one statement for an interior change
    -- (two remainders and the new version), the common worst case. Each
    -- names its rows' values, so Citus routes it to the key's shard. Only the
    -- new version has no carried_from.
    WHILE done < cardinality(periods) LOOP
        batch := least(cardinality(periods) - done, 3);
        IF batch = 3 THEN
            FOR r IN
                INSERT INTO bitemporal.fact_version AS v
                       (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
                VALUES (entity, attribute, source, vals[done + 1], periods[done + 1], tstzrange(known_at, NULL, '[)'), bys[done + 1], carrieds[done + 1]),
                       (entity, attribute, source, vals[done + 2], periods[done + 2], tstzrange(known_at, NULL, '[)'), bys[done + 2], carrieds[done + 2]),
                       (entity, attribute, source, vals[done + 3], periods[done + 3], tstzrange(known_at, NULL, '[)'), bys[done + 3], carrieds[done + 3])
                RETURNING v.version_id, v.carried_from
            LOOP
                IF r.carried_from IS NULL THEN
                    version_id := r.version_id;
                END IF;
            END LOOP;
        ELSIF batch = 2 THEN
            FOR r IN
                INSERT INTO bitemporal.fact_version AS v
                       (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
                VALUES (entity, attribute, source, vals[done + 1], periods[done + 1], tstzrange(known_at, NULL, '[)'), bys[done + 1], carrieds[done + 1]),
                       (entity, attribute, source, vals[done + 2], periods[done + 2], tstzrange(known_at, NULL, '[)'), bys[done + 2], carrieds[done + 2])
                RETURNING v.version_id, v.carried_from
            LOOP
                IF r.carried_from IS NULL THEN
                    version_id := r.version_id;
                END IF;
            END LOOP;
        ELSE
            INSERT INTO bitemporal.fact_version AS v
                   (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
            VALUES (entity, attribute, source, vals[done + 1], periods[done + 1], tstzrange(known_at, NULL, '[)'), bys[done + 1], carrieds[done + 1])
            RETURNING CASE WHEN v.carried_from IS NULL THEN v.version_id ELSE supersede.version_id END
                 INTO version_id;
        END IF;
        done := done + batch;
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.supersede(text, text, text, tstzrange, timestamptz, jsonb, text) IS
    'For bitemporal.record, with the key locked (bitemporal_internal.lock_key): if the current versions of the key and source overlapping the period already hold value (not NULL) over all of it, returns the first of them (same_id) and changes nothing; otherwise ends them at known_at and inserts their remainders outside the period, then the new version (value, recorded_by), up to three rows an INSERT ... VALUES; returns the ended version ids and the new version''s id. Value NULL: no new version (bitemporal_internal.cut). Version 2, facts_write.v9.sql.';

-- The rule of facts_write.v8.sql's cut, through version 2 of supersede. A
-- standard body: its names are bound when it is created, with no search_path
-- to pin.
CREATE OR REPLACE FUNCTION bitemporal_internal.cut(entity text, attribute text, source text, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE sql
RETURN (bitemporal_internal.supersede(entity, attribute, source, period, known_at, NULL::jsonb, NULL::text)).ended;
COMMENT ON FUNCTION bitemporal_internal.cut(text, text, text, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of a key and source overlapping a valid period and re-records their remainders outside it, up to three an INSERT ... VALUES (on Citus: routed to the key''s shard, so a single-key write commits in one phase). Returns the ended version ids. Call with the key locked (bitemporal_internal.lock_key). bitemporal_internal.supersede without a value.';

DROP FUNCTION bitemporal_internal.supersede(text, text, text, tstzrange, timestamptz, jsonb);

-- bitemporal.record as facts_write.v8.sql defines it, its new version inserted
-- by bitemporal_internal.supersede (version 2) with the remainders.
CREATE OR REPLACE FUNCTION bitemporal.record(
    entity          text,
    attribute       text,
    source          text,
    value           jsonb,
    valid_from      timestamptz DEFAULT NULL,
    valid_to        timestamptz DEFAULT NULL,
    known_at        timestamptz DEFAULT NULL,
    recorded_by     text        DEFAULT NULL,
    idempotency_key text        DEFAULT NULL)
RETURNS bitemporal.recorded
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    period  tstzrange;
    t       timestamptz;
    same_id bigint;
    request bitemporal.fact_request;
    result  bitemporal.recorded;
BEGIN
    PERFORM bitemporal_internal.check_key_part('source', source);
    IF value IS NULL OR value = 'null'::jsonb THEN
        RAISE EXCEPTION 'value must not be null'
            USING ERRCODE = 'BT007',
                  HINT = 'To say a value no longer applies, retract its valid period.';
    END IF;
    period := bitemporal_internal.valid_period(valid_from, valid_to);

    IF idempotency_key IS NOT NULL THEN
        PERFORM bitemporal_internal.check_key_part('idempotency key', idempotency_key);
        -- Claims the key, or waits for the transaction that claimed it and
        -- then finds its row (or, if that one rolled back, claims it now).
        INSERT INTO bitemporal.fact_request AS r
               (idempotency_key, entity, attribute, source, value, valid_period, known_at)
        VALUES (idempotency_key, entity, attribute, source, value, period, known_at)
        ON CONFLICT ON CONSTRAINT fact_request_pkey DO NOTHING;
        IF NOT FOUND THEN
            SELECT * INTO request FROM bitemporal.fact_request r WHERE r.idempotency_key = idempotency_key;
            IF (request.entity, request.attribute, request.source, request.value, request.valid_period)
               IS DISTINCT FROM (entity, attribute, source, value, period)
               OR (known_at IS NOT NULL AND request.known_at IS DISTINCT FROM known_at) THEN
                RAISE EXCEPTION 'idempotency key % was already used for a different request', idempotency_key
                    USING ERRCODE = 'BT008',
                          HINT = 'Use a new key for a new request; reuse a key only to retry the same one.';
            END IF;
            RETURN jsonb_populate_record(NULL::bitemporal.recorded, request.result);
        END IF;
    END IF;

    t := bitemporal_internal.lock_key(entity, attribute, known_at, true);

    -- Already known, with this value, for the whole period: change nothing.
    -- Otherwise the overlapping versions are ended, and their remainders and
    -- the new version inserted together.
    SELECT s.same_id, s.ended, s.version_id INTO same_id, result.superseded, result.version_id
      FROM bitemporal_internal.supersede(entity, attribute, source, period, t, value, recorded_by) s;
    IF same_id IS NOT NULL THEN
        result := (same_id, false, '{}'::bigint[], NULL::timestamptz);
    ELSE
        -- The key's knowledge moved to t with this insert (fact_version_knowledge).
        result.created := true;
        result.known_at := t;
    END IF;

    IF idempotency_key IS NOT NULL THEN
        UPDATE bitemporal.fact_request r SET result = to_jsonb(result)
         WHERE r.idempotency_key = idempotency_key;
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION bitemporal.record(text, text, text, jsonb, timestamptz, timestamptz, timestamptz, text, text) IS
    'Records that a source says value applies over [valid_from, valid_to) (NULL = open), known from known_at (default: the transaction time). A sequenced update: overlapping current versions of the same key and source are closed, their remainders re-recorded. Recording what is already known for the whole period changes nothing (created = false). With an idempotency key, a retry of the same request returns the first result and writes nothing. Errors: BT001 period, BT002/BT003 knowledge time, BT005 key, BT007 value, BT008 idempotency key reused.';
