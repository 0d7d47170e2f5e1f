-- bitemporal: faster reads (issue 15, items 2 and 4; migration 0014).
--
-- bitemporal.resolve, as erasure.v1.sql defines it, answered with fewer and
-- cheaper queries:
--   * the key: one primary-key lookup in bitemporal.fact_key gives both
--     whether the key exists and its last_known_at; bitemporal_internal.
--     require_key (the name checks, then BT004) runs only when it does not
--     exist. A key found there was checked when it was first written, so the
--     name checks cannot fail for it; the errors and their order are the same
--     as before (BT005, BT004, then BT003, BT001);
--   * the versions: about current knowledge (known_at at or after the key's
--     last_known_at, the invariant bitemporal.as_of branches on), the btree
--     branch of as_of alone, bitemporal_internal.current_versions; otherwise
--     as_of. A plan that holds the GiST branch pays for setting up that index
--     scan even when the branch never runs, a good third of a current lookup;
--   * the interpretation: a question about an earlier valid time than its
--     knowledge time compares the answer with what the store said at the valid
--     time itself (historical or retrospective), which took a second as-of
--     query through the GiST index. Not when the key's knowledge last changed
--     at or before valid_at: every version's knowledge starts and ends at or
--     before last_known_at, so no version was recorded or closed between
--     valid_at and known_at, the two answers are the same, and it is
--     historical without asking. That is most questions about the past.
--
-- Why PL/pgSQL and not a SQL function. resolve is SECURITY DEFINER (a writer
-- holds no SELECT on the tables and resolves through it; surface.v1.sql), and
-- returns one composite value: PostgreSQL inlines neither a SECURITY DEFINER
-- function nor one that returns a single row of a composite type, so a
-- LANGUAGE sql body would gain no inlining, only lose the plans PL/pgSQL keeps
-- for the session (and the choice of one query by branch). Measured on
-- 2026-12-01 with the same single query in both languages (PostgreSQL 18,
-- 110k versions, EXPLAIN ANALYZE, 300 questions, interleaved): PL/pgSQL 0.086
-- ms, LANGUAGE sql with a standard body 0.115 ms, the previous definition
-- 0.128 ms; then 0.067 ms against 0.096 ms once current knowledge skips the
-- GiST branch. The pinned search_path (a SET clause, about 0.007 ms a call)
-- stays: every PL/pgSQL function has it (search_path.v1.sql).

-- bitemporal_internal.current_versions: the btree branch of bitemporal.as_of
-- (search_path.v1.sql), unchanged, as a function of its own (standard body,
-- inlinable): what the store knows at known_at about valid_at, for a known_at
-- at or after the key's last_known_at (for an earlier one it can miss closed
-- versions: ask bitemporal.as_of). The valid-period test is spelt twice: as
-- bounds the btree can use (the end as a row comparison, which PostgreSQL 18
-- does not turn into a skip scan over every end, and the start checked inside
-- the index), and as the exact test range_contains_elem(), a function call
-- rather than the @> operator so that no GiST index looks applicable.
CREATE FUNCTION bitemporal_internal.current_versions(
    entity text, attribute text, valid_at timestamptz, known_at timestamptz)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT c.version_id, c.entity, c.attribute, c.source, c.value,
           c.valid_period, c.known_period, c.recorded_by, c.carried_from
      FROM bitemporal.fact_version c
     WHERE c.entity = current_versions.entity
       AND c.attribute = current_versions.attribute
       AND upper_inf(c.known_period)
       AND (coalesce(upper(c.valid_period), 'infinity'::timestamptz),
            coalesce(lower(c.valid_period), '-infinity'::timestamptz))
           >= (current_versions.valid_at, '-infinity'::timestamptz)
       AND coalesce(lower(c.valid_period), '-infinity'::timestamptz)
           <= current_versions.valid_at
       AND pg_catalog.range_contains_elem(c.valid_period, current_versions.valid_at)
       AND pg_catalog.range_contains_elem(c.known_period, current_versions.known_at);
END;
COMMENT ON FUNCTION bitemporal_internal.current_versions(text, text, timestamptz, timestamptz) IS
    'The versions of a key eligible at (valid_at, known_at) for a known_at at or after the key''s last_known_at (current knowledge), through the partial btree fact_version_current_valid_idx: the first branch of bitemporal.as_of.';

-- bitemporal.as_of, as search_path.v1.sql defines it, its first branch read
-- through bitemporal_internal.current_versions (the same statement once
-- inlined: the same plan).
CREATE OR REPLACE FUNCTION bitemporal.as_of(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE PARALLEL SAFE
-- A single SQL statement, so the planner can inline it into the caller's
-- query. Both branches select exactly the versions whose valid period
-- contains valid_at and whose known period contains known_at; the first
-- only runs when, by the invariant above, no closed version can qualify.
BEGIN ATOMIC
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.fact_key k
     CROSS JOIN LATERAL (
        -- Current knowledge: the btree.
        SELECT c.version_id, c.entity, c.attribute, c.source, c.value,
               c.valid_period, c.known_period, c.recorded_by, c.carried_from
          FROM bitemporal_internal.current_versions(
                   as_of.entity, as_of.attribute,
                   coalesce(as_of.valid_at, pg_catalog.now()),
                   coalesce(as_of.known_at, pg_catalog.now())) c
         WHERE k.last_known_at <= coalesce(as_of.known_at, pg_catalog.now())
        UNION ALL
        -- An earlier knowledge time: the GiST index of the exclusion constraint.
        SELECT p.version_id, p.entity, p.attribute, p.source, p.value,
               p.valid_period, p.known_period, p.recorded_by, p.carried_from
          FROM bitemporal.fact_version p
         WHERE k.last_known_at > coalesce(as_of.known_at, pg_catalog.now())
           AND p.entity = as_of.entity
           AND p.attribute = as_of.attribute
           AND p.valid_period @> coalesce(as_of.valid_at, pg_catalog.now())
           AND p.known_period @> coalesce(as_of.known_at, pg_catalog.now())
     ) v
     WHERE k.entity = as_of.entity
       AND k.attribute = as_of.attribute
     ORDER BY v.version_id;
END;

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

    SELECT k.last_known_at INTO last_known
      FROM bitemporal.fact_key k
     WHERE k.entity = entity AND k.attribute = attribute;
    IF NOT FOUND THEN
        -- Raises: BT005 for a malformed name, else BT004.
        PERFORM bitemporal_internal.require_key(entity, attribute);
    END IF;
    -- Erased versions stay eligible (the answer rests on them too) but have
    -- no value: the status comes from the values left, and is erased only
    -- when every eligible version is erased. One of two queries, so that the
    -- plan of the usual one holds no GiST scan (see above).
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
