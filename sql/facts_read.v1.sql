-- bitemporal: the read path of the fact store (version 1).
--
-- A question is a pair (valid_at, known_at); NULL means the present (the
-- transaction time, now()). Which versions are eligible is decided by the two
-- periods only: never by which version is newest, nor by ingestion order.
-- Eligible versions are returned ORDER BY version_id, for reproducibility:
-- order is not authority.

CREATE VIEW bitemporal.versions AS
SELECT version_id, entity, attribute, source, value,
       valid_period, known_period, recorded_by, carried_from
  FROM bitemporal.fact_version;
COMMENT ON VIEW bitemporal.versions IS
    'Every fact version with both periods: the readable face of bitemporal.fact_version.';

CREATE FUNCTION bitemporal.as_of(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE PARALLEL SAFE
-- A single SQL statement, so the planner can inline it into the caller's
-- query and use the key's index.
AS $$
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.fact_version v
     WHERE v.entity = as_of.entity
       AND v.attribute = as_of.attribute
       AND v.valid_period @> coalesce(as_of.valid_at, pg_catalog.now())
       AND v.known_period @> coalesce(as_of.known_at, pg_catalog.now())
     ORDER BY v.version_id
$$;
COMMENT ON FUNCTION bitemporal.as_of(text, text, timestamptz, timestamptz) IS
    'Versions of a key eligible at (valid_at, known_at) (NULL = now), ORDER BY version_id. Several rows mean several sources; see bitemporal.resolve for the status. A key never recorded gives no rows.';

CREATE FUNCTION bitemporal.require_key(entity text, attribute text)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    PERFORM bitemporal.check_key_part('entity', entity);
    PERFORM bitemporal.check_key_part('attribute', attribute);
    PERFORM FROM bitemporal.fact_key k WHERE k.entity = require_key.entity AND k.attribute = require_key.attribute;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown key (%, %): nothing was ever recorded for it', entity, attribute
            USING ERRCODE = 'BT004',
                  HINT = 'Check the spelling of entity and attribute.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.require_key(text, text) IS
    'Raises BT004 if nothing was ever recorded for the key (usually a misspelt entity or attribute), BT005 if it is malformed.';

CREATE TYPE bitemporal.answer AS (
    status          bitemporal.answer_status,
    value           jsonb,
    "values"        jsonb,
    version_ids     bigint[],
    valid_at        timestamptz,
    known_at        timestamptz,
    interpretation  bitemporal.interpretation,
    present         timestamptz
);
COMMENT ON TYPE bitemporal.answer IS
    'Result of bitemporal.resolve: status, the value when supported, the sorted distinct values (a jsonb array), the eligible version ids, the question asked, its interpretation and the present it was read against.';

CREATE FUNCTION bitemporal.distinct_values(
    entity text, attribute text, valid_at timestamptz, known_at timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value), '[]'::jsonb)
      FROM bitemporal.as_of(entity, attribute, valid_at, known_at) v
$$;
COMMENT ON FUNCTION bitemporal.distinct_values(text, text, timestamptz, timestamptz) IS
    'The distinct values eligible at (valid_at, known_at), as a sorted jsonb array.';

CREATE FUNCTION bitemporal.resolve(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS bitemporal.answer
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
DECLARE
    a bitemporal.answer;
BEGIN
    PERFORM bitemporal.require_key(entity, attribute);
    a.present  := coalesce(present, pg_catalog.now());
    a.valid_at := coalesce(valid_at, a.present);
    a.known_at := coalesce(known_at, a.present);
    IF a.known_at > a.present THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', a.known_at, a.present
            USING ERRCODE = 'BT003',
                  HINT = 'Nobody can say today what the store will know later; ask with known_at <= present.';
    END IF;
    IF NOT (isfinite(a.valid_at) AND isfinite(a.known_at)) THEN
        RAISE EXCEPTION 'question times must be finite (valid_at %, known_at %)', a.valid_at, a.known_at
            USING ERRCODE = 'BT001';
    END IF;
    PERFORM bitemporal.check_instant('valid_at', a.valid_at);
    PERFORM bitemporal.check_instant('known_at', a.known_at);

    SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value), '[]'::jsonb),
           coalesce(array_agg(v.version_id ORDER BY v.version_id), '{}')
      INTO a."values", a.version_ids
      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;

    a.status := CASE jsonb_array_length(a."values")
                    WHEN 0 THEN 'missing'
                    WHEN 1 THEN 'supported'
                    ELSE 'conflict' END;
    a.value := CASE WHEN a.status = 'supported' THEN a."values" -> 0 END;
    a.interpretation := CASE
        WHEN a.status = 'missing' THEN 'missing'
        WHEN a.valid_at > a.known_at THEN 'announced_future'
        WHEN a.valid_at = a.known_at AND a.known_at = a.present THEN 'current'
        WHEN a.valid_at = a.known_at THEN 'known_then'
        -- valid_at < known_at: did later knowledge change the answer for that time?
        WHEN a."values" = bitemporal.distinct_values(entity, attribute, a.valid_at, a.valid_at)
            THEN 'historical'
        ELSE 'retrospective' END;
    RETURN a;
END;
$$;
COMMENT ON FUNCTION bitemporal.resolve(text, text, timestamptz, timestamptz, timestamptz) IS
    'Answers (valid_at, known_at) for a key (NULL = present, which defaults to now()): status missing / supported / conflict from the distinct eligible values, the value when supported, the versions it rests on and its interpretation (current, known_then, historical, retrospective, announced_future, missing). Errors: BT003 known_at after present, BT004 unknown key.';

CREATE FUNCTION bitemporal.history(entity text, attribute text)
RETURNS SETOF bitemporal.versions
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    PERFORM bitemporal.require_key(entity, attribute);
    RETURN QUERY
        SELECT v.* FROM bitemporal.versions v
         WHERE v.entity = history.entity AND v.attribute = history.attribute
         ORDER BY v.version_id;
END;
$$;
COMMENT ON FUNCTION bitemporal.history(text, text) IS
    'Every version of a key, superseded ones included, with both periods, ORDER BY version_id. Raises BT004 for a key never recorded.';
