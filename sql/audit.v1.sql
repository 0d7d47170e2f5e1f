-- bitemporal: the psql audit surface (version 1).
--
-- The questions auditors ask, as views and functions that need no Python:
--   facts in force now .................. bitemporal.facts_now
--   open conflicts now .................. bitemporal.conflicts_now
--   what was learned, superseded or
--   retracted in a window ............... bitemporal.changes(known_from, known_to)
--   what the store said then, next to
--   what we know now, for one valid time  bitemporal.retrospective_diff(...)
--   memory items evicted, and why ....... bitemporal.memory_evictions

CREATE VIEW bitemporal.facts_now AS
SELECT v.version_id, v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
       v.recorded_by
  FROM bitemporal.fact_version v
 WHERE upper_inf(v.known_period)
   AND v.valid_period @> pg_catalog.now();
COMMENT ON VIEW bitemporal.facts_now IS
    'Versions in force now, as the store knows now (valid_at = known_at = now()): one row per source; several distinct values for a key are a conflict (see bitemporal.conflicts_now).';

CREATE VIEW bitemporal.conflicts_now AS
SELECT f.entity, f.attribute,
       jsonb_agg(DISTINCT f.value ORDER BY f.value) AS "values",
       array_agg(DISTINCT f.source ORDER BY f.source) AS sources,
       array_agg(f.version_id ORDER BY f.version_id) AS version_ids
  FROM bitemporal.facts_now f
 GROUP BY f.entity, f.attribute
HAVING count(DISTINCT f.value) > 1;
COMMENT ON VIEW bitemporal.conflicts_now IS
    'Keys whose sources disagree now: the distinct values, the sources and the versions. A conflict is reported, never averaged or settled by ingestion order.';

CREATE FUNCTION bitemporal.retrospective_diff(
    entity     text,
    attribute  text,
    valid_at   timestamptz,
    known_then timestamptz,
    known_now  timestamptz DEFAULT NULL)
RETURNS TABLE (
    status_then     bitemporal.answer_status,
    values_then     jsonb,
    versions_then   bigint[],
    status_now      bitemporal.answer_status,
    values_now      jsonb,
    versions_now    bigint[],
    changed         boolean)
LANGUAGE sql STABLE
AS $$
    SELECT a.status, a."values", a.version_ids,
           b.status, b."values", b.version_ids,
           a."values" IS DISTINCT FROM b."values"
      FROM bitemporal.resolve(entity, attribute, valid_at, known_then, coalesce(known_now, pg_catalog.now())) a,
           bitemporal.resolve(entity, attribute, valid_at, known_now, coalesce(known_now, pg_catalog.now())) b
$$;
COMMENT ON FUNCTION bitemporal.retrospective_diff(text, text, timestamptz, timestamptz, timestamptz) IS
    'What the store said about a key for valid_at when it knew what it knew at known_then, next to what it says at known_now (default now()), and whether the answer changed. Errors as bitemporal.resolve.';

CREATE VIEW bitemporal.memory_evictions AS
SELECT l.log_id, l.namespace, l.item_id, l.turn AS evicted_turn, l.last_touched_turn,
       l.turn - l.last_touched_turn AS silent_turns, l.recall_count, l.stability_before AS stability,
       l.retention, n.policy, n.threshold, n.window_turns,
       CASE n.policy
           WHEN 'decay' THEN format('retention %s after %s silent turns fell below the threshold %s (stability %s, %s uses)',
                                    round(l.retention::numeric, 3), l.turn - l.last_touched_turn,
                                    n.threshold, round(l.stability_before::numeric, 1), l.recall_count)
           ELSE format('%s silent turns exceeded the window of %s', l.turn - l.last_touched_turn, n.window_turns)
       END AS reason,
       l.logged_at
  FROM bitemporal.memory_log l
  JOIN bitemporal.memory_namespace n ON n.name = l.namespace
 WHERE l.event = 'evict';
COMMENT ON VIEW bitemporal.memory_evictions IS
    'Every working-memory eviction with the numbers that decided it and a one-line reason. Filter by namespace and evicted_turn (or logged_at) for a window.';
