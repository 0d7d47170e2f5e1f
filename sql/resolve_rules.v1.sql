-- bitemporal: an answer's rules in one place, and resolve_versions reading the
-- versions once (issue 15; migration 0026).
--
-- bitemporal.resolve_versions (resolve_versions.v1.sql) called resolve, which
-- read the eligible versions to aggregate them, then read them again through
-- as_of to return them. Here it reads them once, into an array, and takes both
-- the answer and the rows it returns from it. What makes an answer of the
-- versions (the checks of the question and their order, the status, the value
-- and the interpretation) moves out of resolve into
-- bitemporal_internal.answer_rules, which both functions call, so that the
-- two cannot answer differently.
--
-- Measured on 2026-12-04 (PostgreSQL 15.20, 2,000 keys, rounds of 1,000
-- questions, taking turns; docs/performance.md): the Python API's resolve
-- (through resolve_versions) 0.82-0.87 of its time about current knowledge
-- and 0.89-0.96 about the past; resolve on the server 1.01-1.15x its time
-- (the call of answer_rules). Answers, errors and their order are unchanged.

-- What resolve computed after reading the versions, unchanged: the checks of
-- the question (BT003, then BT001, then the instants' range, BT001), the status
-- from the distinct values left unerased, the value when supported, and the
-- interpretation (see fast_reads.v1.sql for why last_known answers most
-- questions about the past without a second read).
CREATE FUNCTION bitemporal_internal.answer_rules(
    a          bitemporal.answer,
    entity     text,
    attribute  text,
    last_known timestamptz,
    erased     boolean)
RETURNS bitemporal.answer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF a.known_at > a.present THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', a.known_at, a.present
            USING ERRCODE = 'BT003',
                  HINT = 'Nobody can say today what the store will know later; ask with known_at <= present.';
    END IF;
    IF NOT (isfinite(a.valid_at) AND isfinite(a.known_at)) THEN
        RAISE EXCEPTION 'question times must be finite (valid_at %, known_at %)', a.valid_at, a.known_at
            USING ERRCODE = 'BT001';
    END IF;
    PERFORM bitemporal_internal.check_instant('valid_at', a.valid_at);
    PERFORM bitemporal_internal.check_instant('known_at', a.known_at);

    a.status := CASE jsonb_array_length(a."values")
                    WHEN 0 THEN CASE WHEN erased THEN 'erased' ELSE 'missing' END
                    WHEN 1 THEN 'supported'
                    ELSE 'conflict' END;
    a.value := CASE WHEN a.status = 'supported' THEN a."values" -> 0 END;
    a.interpretation := CASE
        WHEN a.status = 'missing' THEN 'missing'
        WHEN a.status = 'erased' THEN 'erased'
        WHEN a.valid_at > a.known_at THEN 'announced_future'
        WHEN a.valid_at = a.known_at AND a.known_at = a.present THEN 'current'
        WHEN a.valid_at = a.known_at THEN 'known_then'
        -- valid_at < known_at: did later knowledge change the answer for that
        -- time? Not if the key's knowledge last changed at or before it.
        WHEN last_known <= a.valid_at THEN 'historical'
        WHEN a."values" = bitemporal_internal.distinct_values(entity, attribute, a.valid_at, a.valid_at)
            THEN 'historical'
        ELSE 'retrospective' END;
    RETURN a;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.answer_rules(bitemporal.answer, text, text, timestamptz, boolean) IS
    'For bitemporal.resolve and bitemporal.resolve_versions: completes an answer whose question (present, valid_at, known_at), values and version ids are set: checks the question (BT003, BT001), then sets status, value and interpretation. last_known is the key''s last_known_at; erased whether an eligible version is erased.';

-- bitemporal.resolve, as fast_reads.v1.sql defines it, its rules in
-- answer_rules.
CREATE OR REPLACE FUNCTION bitemporal.resolve(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS bitemporal.answer
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    a           bitemporal.answer;
    erased      boolean;
    last_known  timestamptz;
BEGIN
    a.present  := coalesce(present, pg_catalog.now());
    a.valid_at := coalesce(valid_at, a.present);
    a.known_at := coalesce(known_at, a.present);

    SELECT k.last_known_at INTO last_known
      FROM bitemporal.fact_key k
     WHERE k.entity = entity AND k.attribute = attribute;
    IF NOT FOUND THEN
        -- Raises: BT005 for a malformed name, else BT004.
        PERFORM bitemporal_internal.require_key(entity, attribute);
    END IF;
    -- Erased versions stay eligible (the answer rests on them too) but have
    -- no value. One of two queries, so that the plan of the usual one holds
    -- no GiST scan (fast_reads.v1.sql).
    IF last_known <= a.known_at THEN
        SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value) FILTER (WHERE v.value IS NOT NULL), '[]'::jsonb),
               coalesce(array_agg(v.version_id ORDER BY v.version_id), '{}'),
               coalesce(bool_or(v.value IS NULL), false)
          INTO a."values", a.version_ids, erased
          FROM bitemporal_internal.current_versions(entity, attribute, a.valid_at, a.known_at) v;
    ELSE
        SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value) FILTER (WHERE v.value IS NOT NULL), '[]'::jsonb),
               coalesce(array_agg(v.version_id ORDER BY v.version_id), '{}'),
               coalesce(bool_or(v.value IS NULL), false)
          INTO a."values", a.version_ids, erased
          FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;
    END IF;
    RETURN bitemporal_internal.answer_rules(a, entity, attribute, last_known, erased);
END;
$$;
COMMENT ON FUNCTION bitemporal.resolve(text, text, timestamptz, timestamptz, timestamptz) IS
    'Answers (valid_at, known_at) for a key (NULL = present, which defaults to now()): status missing / supported / conflict from the distinct eligible values that are not erased (erased when every eligible version is erased), the value when supported, the versions it rests on (erased ones included) and its interpretation (current, known_then, historical, retrospective, announced_future, missing, erased). Errors: BT003 known_at after present, BT004 unknown key.';

-- bitemporal.resolve_versions, as resolve_versions.v1.sql defines it, reading
-- the versions once.
CREATE OR REPLACE FUNCTION bitemporal.resolve_versions(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS TABLE (answer bitemporal.answer, version bitemporal.versions)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    a           bitemporal.answer;
    erased      boolean;
    last_known  timestamptz;
    eligible    bitemporal.versions[];
BEGIN
    a.present  := coalesce(present, pg_catalog.now());
    a.valid_at := coalesce(valid_at, a.present);
    a.known_at := coalesce(known_at, a.present);

    SELECT k.last_known_at INTO last_known
      FROM bitemporal.fact_key k
     WHERE k.entity = entity AND k.attribute = attribute;
    IF NOT FOUND THEN
        PERFORM bitemporal_internal.require_key(entity, attribute);
    END IF;
    -- The eligible versions by id, read as resolve reads them.
    IF last_known <= a.known_at THEN
        SELECT coalesce(array_agg(v ORDER BY v.version_id), '{}') INTO eligible
          FROM bitemporal_internal.current_versions(entity, attribute, a.valid_at, a.known_at) v;
    ELSE
        SELECT coalesce(array_agg(v ORDER BY v.version_id), '{}') INTO eligible
          FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;
    END IF;
    SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value) FILTER (WHERE v.value IS NOT NULL), '[]'::jsonb),
           coalesce(array_agg(v.version_id ORDER BY v.version_id), '{}'),
           coalesce(bool_or(v.value IS NULL), false)
      INTO a."values", a.version_ids, erased
      FROM pg_catalog.unnest(eligible) v;
    a := bitemporal_internal.answer_rules(a, entity, attribute, last_known, erased);

    -- One row a version, by id; one row with no version when none is eligible.
    RETURN QUERY SELECT a, v FROM pg_catalog.unnest(eligible) v;
    IF NOT FOUND THEN
        answer := a;
        RETURN NEXT;
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.resolve_versions(text, text, timestamptz, timestamptz, timestamptz) IS
    'bitemporal.resolve''s answer (same arguments, same errors) with the versions it rests on: one row a version eligible at the answer''s question, by version id, each with the answer; one row with a NULL version when none is eligible. The versions are read once (version 2, resolve_rules.v1.sql). On Citus one command, delegated to the worker holding the key.';
