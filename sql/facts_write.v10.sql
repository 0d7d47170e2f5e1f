-- bitemporal: a single-key write is one call on the key's node (version 10,
-- migration 0028; issue 14).
--
-- bitemporal.record and bitemporal.retract (facts_write.v9.sql, v6) locked
-- the key (bitemporal_internal.lock_key), announced their knowledge time to
-- bitemporal.settled_knowledge_time, then read, ended and inserted versions,
-- each a statement of its own. On Citus each of those statements was a
-- command from the coordinator to the key's worker: five for an interior
-- change, then COMMIT.
--
-- Now the announcement comes first, on the node where the write is asked
-- (the coordinator, where settled_knowledge_time looks for it), and
-- everything that reads or writes the key is one function,
-- bitemporal_internal.write_key, which bitemporal.distribute() (version 4,
-- citus.v5.sql) delegates to the worker holding the key: one command, then
-- COMMIT (in one phase: one worker).
--
-- The knowledge time is the one lock_key gave. lock_key announced
-- t = greatest(transaction time, the key's latest knowledge + 1 us) after the
-- lock, moved just past the settled floor when at or before it. Announced
-- first, the transaction time is moved past the floor (a), and write_key takes
-- greatest(a, the key's latest knowledge + 1 us): the same time. The
-- announcement of a covers every later time, so nothing settles at or after
-- it before the write commits. An explicit known_at is announced as it is
-- (BT002 at or before the settled knowledge time) and then checked against
-- the key (BT002 before its latest knowledge), as before but in that order.
-- What changes: a writer waiting for the key's lock holds its announcement
-- meanwhile, so the settled knowledge time waits for it too.

CREATE FUNCTION bitemporal_internal.write_key(
    entity         text,
    attribute      text,
    source         text,
    period         tstzrange,
    announced      timestamptz,
    requested      timestamptz,
    value          jsonb,
    recorded_by    text,
    create_missing boolean,
    OUT known_at   timestamptz,
    OUT same_id    bigint,
    OUT ended      bigint[],
    OUT version_id bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    k bitemporal.fact_key;
BEGIN
    LOOP
        SELECT * INTO k FROM bitemporal.fact_key fk
         WHERE fk.entity = write_key.entity AND fk.attribute = write_key.attribute
           FOR UPDATE;
        EXIT WHEN FOUND;
        IF NOT create_missing THEN
            RAISE EXCEPTION 'unknown key (%, %): nothing was ever recorded for it', entity, attribute
                USING ERRCODE = 'BT004';
        END IF;
        INSERT INTO bitemporal.fact_key AS fk (entity, attribute, first_known_at, last_known_at, last_txid)
        VALUES (entity, attribute, announced, announced, pg_catalog.pg_current_xact_id())
        ON CONFLICT ON CONSTRAINT fact_key_pkey DO NOTHING;
        IF FOUND THEN
            known_at := announced;
            EXIT;
        END IF;
        -- Another transaction created the key first: lock its row and go on.
    END LOOP;
    IF known_at IS NULL THEN
        known_at := greatest(announced, bitemporal_internal.knowledge_time(
            requested, k.last_known_at, k.last_txid, pg_catalog.format('(%s, %s)', entity, attribute)));
    END IF;
    SELECT s.same_id, s.ended, s.version_id INTO same_id, ended, version_id
      FROM bitemporal_internal.supersede(entity, attribute, source, period, known_at, value, recorded_by) s;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.write_key(text, text, text, tstzrange, timestamptz, timestamptz, jsonb, text, boolean) IS
    'What bitemporal.record (value) and bitemporal.retract (value NULL) do to a key once their knowledge time is announced (announced, by bitemporal_internal.announce_write): locks the key (creating it when create_missing), takes the knowledge time (requested if given and valid, else announced moved just past the key''s latest knowledge), then bitemporal_internal.supersede. On Citus delegated to the worker holding the key (bitemporal.distribute(), version 4). Raises BT002, BT004.';

CREATE FUNCTION bitemporal_internal.announce_write(entity text, attribute text, known_at timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.check_key_part('entity', entity);
    PERFORM bitemporal_internal.check_key_part('attribute', attribute);
    PERFORM bitemporal_internal.check_knowledge_time(known_at);
    RETURN bitemporal_internal.announce_knowledge(coalesce(known_at, pg_catalog.transaction_timestamp()),
                                                  known_at IS NULL);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.announce_write(text, text, timestamptz) IS
    'For bitemporal.record and bitemporal.retract, before bitemporal_internal.write_key: checks the key and known_at, and announces to bitemporal.settled_knowledge_time the time the write will record at or after: known_at, or the transaction time moved just past the settled knowledge time. Raises BT002, BT003, BT005.';

-- bitemporal.record as facts_write.v9.sql defines it, the key locked and
-- written by bitemporal_internal.write_key after the announcement.
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

    t := bitemporal_internal.announce_write(entity, attribute, known_at);
    -- Already known, with this value, for the whole period: change nothing.
    -- Otherwise the overlapping versions are ended, and their remainders and
    -- the new version inserted together. (A call in FROM: Citus delegates it.)
    SELECT w.known_at, w.same_id, w.ended, w.version_id INTO t, same_id, result.superseded, result.version_id
      FROM bitemporal_internal.write_key(entity, attribute, source, period, t, known_at, value, recorded_by, true) w;
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

-- bitemporal.retract as facts_write.v6.sql defines it, through
-- bitemporal_internal.write_key without a value.
CREATE OR REPLACE FUNCTION bitemporal.retract(
    entity      text,
    attribute   text,
    source      text,
    valid_from  timestamptz DEFAULT NULL,
    valid_to    timestamptz DEFAULT NULL,
    known_at    timestamptz DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    period tstzrange;
    t      timestamptz;
    ended  bigint[];
BEGIN
    PERFORM bitemporal_internal.check_key_part('source', source);
    period := bitemporal_internal.valid_period(valid_from, valid_to);
    t := bitemporal_internal.announce_write(entity, attribute, known_at);
    -- Each version cut moved the key's knowledge to its time (fact_version_knowledge).
    SELECT w.ended INTO ended
      FROM bitemporal_internal.write_key(entity, attribute, source, period, t, known_at, NULL, NULL, false) w;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal.retract(text, text, text, timestamptz, timestamptz, timestamptz) IS
    'Sequenced delete: from known_at (default: the transaction time) the source no longer asserts any value for [valid_from, valid_to); remainders outside it are re-recorded. Returns the ended version ids (empty: nothing to retract). Errors: BT001, BT002, BT003, BT004 unknown key, BT005.';

-- Called by nothing now.
DROP FUNCTION bitemporal_internal.lock_key(text, text, timestamptz, boolean);
DROP FUNCTION bitemporal_internal.cut(text, text, text, tstzrange, timestamptz);
