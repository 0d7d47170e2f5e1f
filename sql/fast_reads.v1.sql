-- bitemporal: faster reads (issue 15, items 2 and 4; migration 0014).
--
-- bitemporal.resolve, as erasure.v1.sql defines it, answered with one query
-- instead of three:
--   * the key: the query that reads the versions joins bitemporal.fact_key,
--     which says whether the key exists; bitemporal_internal.require_key (the
--     name checks, then BT004) runs only when it does not. A key found there
--     was checked when it was first written, so the name checks cannot fail
--     for it; the errors and their order are the same as before (BT005, BT004,
--     then BT003, BT001);
--   * the interpretation: a question about an earlier valid time than its
--     knowledge time compares the answer with what the store said at the valid
--     time itself (historical or retrospective), which took a second as-of
--     query through the GiST index. Not when the key's knowledge last changed
--     at or before valid_at (fact_key.last_known_at, the invariant
--     bitemporal.as_of branches on: every version's knowledge starts and ends
--     at or before it): then no version was recorded or closed between
--     valid_at and known_at, the two answers are the same, and it is
--     historical without asking. That is most questions about the past.
--
-- Why PL/pgSQL and not a SQL function. resolve is SECURITY DEFINER (a writer
-- holds no SELECT on the tables and resolves through it; surface.v1.sql), and
-- returns one composite value: PostgreSQL inlines neither a SECURITY DEFINER
-- function nor one that returns a single row of a composite type, so a
-- LANGUAGE sql body would gain no inlining, only lose the plan PL/pgSQL keeps
-- for the session. Measured on 2026-12-01 with the same logic in both
-- languages (PostgreSQL 18, 110k versions, EXPLAIN ANALYZE, 300 questions):
-- PL/pgSQL 0.086 ms, LANGUAGE sql with a standard body 0.115 ms, the previous
-- definition 0.128 ms. The pinned search_path (a SET clause, about 0.007 ms a
-- call) stays: every PL/pgSQL function has it (search_path.v1.sql).

-- bitemporal.resolve, as erasure.v1.sql defines it, with one query.
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

    -- Erased versions stay eligible (the answer rests on them too) but have
    -- no value: the status comes from the values left, and is erased only
    -- when every eligible version is erased.
    SELECT k.last_known_at, e.vals, e.ids, e.erased
      INTO last_known, a."values", a.version_ids, erased
      FROM bitemporal.fact_key k
     CROSS JOIN LATERAL (
        SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value) FILTER (WHERE v.value IS NOT NULL), '[]'::jsonb) AS vals,
               coalesce(array_agg(v.version_id ORDER BY v.version_id), '{}') AS ids,
               coalesce(bool_or(v.value IS NULL), false) AS erased
          FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v) e
     WHERE k.entity = entity AND k.attribute = attribute;
    IF NOT FOUND THEN
        -- Raises: BT005 for a malformed name, else BT004.
        PERFORM bitemporal_internal.require_key(entity, attribute);
    END IF;
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
COMMENT ON FUNCTION bitemporal.resolve(text, text, timestamptz, timestamptz, timestamptz) IS
    'Answers (valid_at, known_at) for a key (NULL = present, which defaults to now()): status missing / supported / conflict from the distinct eligible values that are not erased (erased when every eligible version is erased), the value when supported, the versions it rests on (erased ones included) and its interpretation (current, known_then, historical, retrospective, announced_future, missing, erased). Errors: BT003 known_at after present, BT004 unknown key.';
