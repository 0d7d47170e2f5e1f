-- bitemporal: the write path of the fact store (version 1).
--
-- record() is a sequenced update (SQL:2011 UPDATE ... FOR PORTION OF) and
-- retract() a sequenced delete, both along valid time and both recorded at a
-- knowledge time t:
--   1. lock the key (its bitemporal.fact_key row), *then* read its versions,
--      so that a writer waiting on the lock sees the remainders the previous
--      writer re-recorded (under READ COMMITTED each statement takes a fresh
--      snapshot after the lock is granted);
--   2. close at t the knowledge of every currently known version of the same
--      key and source whose valid period overlaps the written one;
--   3. re-record the parts of those versions outside the written period as
--      new versions known from t (pieces meet exactly at the boundaries);
--   4. record() then inserts the new version, known from t.
-- Closing comes before re-recording, so the exclusion constraint never sees
-- two open versions at once.
--
-- Errors (SQLSTATE):
--   BT001 invalid period        BT002 knowledge time earlier than recorded
--   BT003 knowledge time later than the present
--   BT004 unknown key           BT005 invalid key or source
--   BT007 invalid value         BT008 idempotency key reused for another request

CREATE TYPE bitemporal.recorded AS (
    version_id  bigint,
    created     boolean,
    superseded  bigint[],
    known_at    timestamptz
);
COMMENT ON TYPE bitemporal.recorded IS
    'Result of bitemporal.record: the version holding the value, whether it was created (false: the value was already known for the whole period), the versions whose knowledge was closed, and the knowledge time used.';

CREATE FUNCTION bitemporal.check_key_part(what text, part text, errcode text DEFAULT 'BT005')
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- The limit keeps every name well inside a btree index entry.
    IF part IS NULL OR part = '' THEN
        RAISE EXCEPTION '% must be a non-empty string', what
            USING ERRCODE = errcode;
    END IF;
    IF octet_length(part) > 1024 THEN
        RAISE EXCEPTION '% is % bytes long; the limit is 1024', what, octet_length(part)
            USING ERRCODE = errcode,
                  HINT = 'Names say what something is about; keep long text in the value.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_key_part(text, text, text) IS
    'Raises errcode (default BT005) unless a name (entity, attribute, source, idempotency key, memory namespace or item id) is a non-empty string of at most 1024 bytes.';

CREATE FUNCTION bitemporal.lock_key(entity text, attribute text, known_at timestamptz, create_missing boolean)
RETURNS timestamptz
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    me   xid8 := pg_catalog.pg_current_xact_id();
    k    bitemporal.fact_key;
    t    timestamptz;
BEGIN
    PERFORM bitemporal.check_key_part('entity', entity);
    PERFORM bitemporal.check_key_part('attribute', attribute);
    IF known_at > pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', known_at, pg_catalog.clock_timestamp()
            USING ERRCODE = 'BT003',
                  HINT = 'The store cannot have learned something in the future; omit known_at to use the transaction time.';
    END IF;
    IF known_at IN ('infinity', '-infinity') THEN
        RAISE EXCEPTION 'knowledge time must be finite, not %', known_at
            USING ERRCODE = 'BT001';
    END IF;
    PERFORM bitemporal.check_instant('knowledge time', known_at);

    LOOP
        SELECT * INTO k FROM bitemporal.fact_key fk
         WHERE fk.entity = lock_key.entity AND fk.attribute = lock_key.attribute
           FOR UPDATE;
        EXIT WHEN FOUND;
        IF NOT create_missing THEN
            RAISE EXCEPTION 'unknown key (%, %): nothing was ever recorded for it', entity, attribute
                USING ERRCODE = 'BT004';
        END IF;
        t := coalesce(known_at, pg_catalog.transaction_timestamp());
        INSERT INTO bitemporal.fact_key AS fk (entity, attribute, first_known_at, last_known_at, last_txid)
        VALUES (entity, attribute, t, t, me)
        ON CONFLICT ON CONSTRAINT fact_key_pkey DO NOTHING;
        IF FOUND THEN
            RETURN t;
        END IF;
        -- Another transaction created the key first: lock its row and go on.
    END LOOP;

    IF known_at IS NULL THEN
        -- The transaction time, unless another transaction that took this lock
        -- before us recorded a later one: then just after it, so that
        -- knowledge of the key only moves forward in the serial order.
        t := greatest(pg_catalog.transaction_timestamp(),
                      CASE WHEN k.last_txid = me THEN k.last_known_at
                           ELSE k.last_known_at + interval '1 microsecond' END);
    ELSIF known_at < k.last_known_at OR (known_at = k.last_known_at AND k.last_txid <> me) THEN
        RAISE EXCEPTION 'knowledge time % is not later than knowledge already recorded for (%, %) at %',
                known_at, entity, attribute, k.last_known_at
            USING ERRCODE = 'BT002',
                  HINT = 'History is never rewritten: a correction is recorded now, not in the past. Omit known_at to use the transaction time.';
    ELSE
        t := known_at;
    END IF;
    RETURN t;
END;
$$;
COMMENT ON FUNCTION bitemporal.lock_key(text, text, timestamptz, boolean) IS
    'Locks a key for writing (creating it when asked) and returns the knowledge time to write at: known_at if given and valid, else the transaction time (moved just past knowledge a concurrent transaction recorded first). Raises BT002, BT003, BT004, BT005.';

CREATE FUNCTION bitemporal.advance_key(entity text, attribute text, known_at timestamptz)
RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    UPDATE bitemporal.fact_key fk
       SET last_known_at = advance_key.known_at, last_txid = pg_catalog.pg_current_xact_id()
     WHERE fk.entity = advance_key.entity AND fk.attribute = advance_key.attribute;
END;
COMMENT ON FUNCTION bitemporal.advance_key(text, text, timestamptz) IS
    'Records that a key changed at a knowledge time (called by the write functions with the key locked).';

CREATE FUNCTION bitemporal.cut(entity text, attribute text, source text, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
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
            DELETE FROM bitemporal.fact_version v WHERE v.version_id = r.version_id;
        ELSIF lower(r.known_period) >= known_at THEN
            RAISE EXCEPTION 'knowledge time % is not later than version % (known from %)',
                    known_at, r.version_id, lower(r.known_period)
                USING ERRCODE = 'BT002';
        ELSE
            UPDATE bitemporal.fact_version v
               SET known_period = tstzrange(lower(v.known_period), known_at, '[)')
             WHERE v.version_id = r.version_id;
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
COMMENT ON FUNCTION bitemporal.cut(text, text, text, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of a key and source overlapping a valid period and re-records their remainders outside it. Returns the ended version ids. Call with the key locked (bitemporal.lock_key).';

CREATE FUNCTION bitemporal.record(
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
AS $$
#variable_conflict use_variable
DECLARE
    period  tstzrange;
    t       timestamptz;
    same_id bigint;
    request bitemporal.fact_request;
    result  bitemporal.recorded;
BEGIN
    PERFORM bitemporal.check_key_part('source', source);
    IF value IS NULL OR value = 'null'::jsonb THEN
        RAISE EXCEPTION 'value must not be null'
            USING ERRCODE = 'BT007',
                  HINT = 'To say a value no longer applies, retract its valid period.';
    END IF;
    period := bitemporal.valid_period(valid_from, valid_to);

    IF idempotency_key IS NOT NULL THEN
        PERFORM bitemporal.check_key_part('idempotency key', idempotency_key);
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

    t := bitemporal.lock_key(entity, attribute, known_at, true);

    -- Already known, with this value, for the whole period: change nothing.
    SELECT (array_agg(v.version_id ORDER BY lower(v.valid_period) NULLS FIRST))[1]
      INTO same_id
      FROM bitemporal.fact_version v
     WHERE v.entity = entity AND v.attribute = attribute AND v.source = source
       AND upper_inf(v.known_period) AND v.valid_period && period
    HAVING bool_and(v.value = value)
       AND range_agg(v.valid_period * period) = tstzmultirange(period);
    IF same_id IS NOT NULL THEN
        result := (same_id, false, '{}'::bigint[], NULL::timestamptz);
    ELSE
        result.superseded := bitemporal.cut(entity, attribute, source, period, t);
        INSERT INTO bitemporal.fact_version
               (entity, attribute, source, value, valid_period, known_period, recorded_by)
        VALUES (entity, attribute, source, value, period, tstzrange(t, NULL, '[)'), recorded_by)
        RETURNING version_id INTO result.version_id;
        PERFORM bitemporal.advance_key(entity, attribute, t);
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

CREATE FUNCTION bitemporal.retract(
    entity      text,
    attribute   text,
    source      text,
    valid_from  timestamptz DEFAULT NULL,
    valid_to    timestamptz DEFAULT NULL,
    known_at    timestamptz DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    period tstzrange;
    t      timestamptz;
    ended  bigint[];
BEGIN
    PERFORM bitemporal.check_key_part('source', source);
    period := bitemporal.valid_period(valid_from, valid_to);
    t := bitemporal.lock_key(entity, attribute, known_at, false);
    ended := bitemporal.cut(entity, attribute, source, period, t);
    IF cardinality(ended) > 0 THEN
        PERFORM bitemporal.advance_key(entity, attribute, t);
    END IF;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal.retract(text, text, text, timestamptz, timestamptz, timestamptz) IS
    'Sequenced delete: from known_at (default: the transaction time) the source no longer asserts any value for [valid_from, valid_to); remainders outside it are re-recorded. Returns the ended version ids (empty: nothing to retract). Errors: BT001, BT002, BT003, BT004 unknown key, BT005.';
