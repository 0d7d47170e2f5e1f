-- bitemporal: an answer's question checked without a query per time (issue
-- 15, item 2: no PL/pgSQL round of PERFORMs; migration 0038).
--
-- bitemporal_internal.answer_rules (resolve_rules.v2.sql) checked each
-- question time with PERFORM bitemporal_internal.check_instant(...). A
-- PERFORM runs its expression as a query: PL/pgSQL starts and ends the
-- executor for it. An expression that reads no table is evaluated by
-- PL/pgSQL directly, so version 3 evaluates the same two calls, in the same
-- order, each in an assignment. check_instant is inlined there as before (a
-- comparison with the range's bounds) and raises through
-- instant_out_of_range the same error (BT001) for a time outside the range
-- only. Every resolve and resolve_versions
-- call goes through here. Measured on 2026-12-06 (10,000 versions, version 2
-- beside version 3 in one database, server time; docs/performance.md): in
-- one transaction (10,000 calls of resolve_versions a round in a PL/pgSQL
-- loop, ten rounds taking turns) 0.920x (PostgreSQL 15.20) and 0.911x (18.6)
-- version 2's time about current knowledge, 0.944x and 0.935x about a past
-- valid time, where the interpretation reads the values known then; each
-- call of resolve its own transaction (EXPLAIN ANALYZE, 3,000 calls each),
-- 0.978x and 0.976x about current knowledge, 1.000x and 0.969x about the
-- past: a transaction's first evaluation of an expression sets it up, which
-- takes back part of the gain.
--
-- Everything else is version 2's: the order of the checks, the status, the
-- value and the cases of the interpretation.

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
    in_range   boolean;  -- never read: check_instant raises for a time out of range
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
    -- Evaluated, not PERFORMed: see the head of this file. Two statements, so
    -- that valid_at is checked first.
    in_range := bitemporal_internal.check_instant('valid_at', a.valid_at) IS NULL;
    in_range := bitemporal_internal.check_instant('known_at', a.known_at) IS NULL;

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
    'For bitemporal.resolve and bitemporal.resolve_versions: completes an answer whose question (present, valid_at, known_at), values and version ids are set: checks the question (BT003, BT001), then sets status, value and interpretation (reading the values known at valid_at when the key''s knowledge changed after it; version 3, resolve_rules.v3.sql: the range checks of the question''s times evaluated as expressions). last_known is the key''s last_known_at; erased whether an eligible version is erased.';
