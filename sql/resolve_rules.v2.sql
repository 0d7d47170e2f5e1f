-- bitemporal: an answer's interpretation read by a statement, not by a SQL
-- function inside an expression (issue 15; migration 0035).
--
-- bitemporal_internal.answer_rules (resolve_rules.v1.sql) tells a historical
-- answer from a retrospective one, when the key's knowledge changed after
-- valid_at, by comparing the answer's values with those known at valid_at:
-- bitemporal_internal.distinct_values, called in a CASE expression. That is a
-- LANGUAGE sql function, and PostgreSQL before 18 plans its body (and the
-- as_of it inlines) again at every call: measured on PostgreSQL 15.20 at
-- 98,000 versions, the call took 0.48 ms and resolve 0.39 ms, against 0.11 ms
-- with the same query as a statement of answer_rules, whose plan PL/pgSQL
-- keeps for the session (docs/performance.md). The query is distinct_values's
-- (erasure.v1.sql): the distinct values of the versions eligible at
-- (valid_at, valid_at) that are not erased. It runs only when the earlier
-- cases leave the interpretation open, as the CASE arm did.
--
-- The checks of the question and their order, the status, the value and the
-- cases of the interpretation and their order are resolve_rules.v1.sql's.
-- distinct_values stays: the explain functions call it.

CREATE OR REPLACE FUNCTION bitemporal_internal.answer_rules(
    a          bitemporal.answer,
    entity     text,
    attribute  text,
    last_known timestamptz,
    erased     boolean)
RETURNS bitemporal.answer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    known_then jsonb;
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
        WHEN last_known <= a.valid_at THEN 'historical' END;
    IF a.interpretation IS NULL THEN
        -- Otherwise by the values known at valid_at itself.
        SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value), '[]'::jsonb)
          INTO known_then
          FROM bitemporal.as_of(entity, attribute, a.valid_at, a.valid_at) v
         WHERE v.value IS NOT NULL;
        a.interpretation := CASE WHEN a."values" = known_then THEN 'historical' ELSE 'retrospective' END;
    END IF;
    RETURN a;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.answer_rules(bitemporal.answer, text, text, timestamptz, boolean) IS
    'For bitemporal.resolve and bitemporal.resolve_versions: completes an answer whose question (present, valid_at, known_at), values and version ids are set: checks the question (BT003, BT001), then sets status, value and interpretation (reading the values known at valid_at when the key''s knowledge changed after it; version 2, resolve_rules.v2.sql). last_known is the key''s last_known_at; erased whether an eligible version is erased.';
