-- bitemporal: the read path of the fact store (version 2): an as-of lookup
-- about current knowledge costs a few btree probes, whatever the history.
--
-- Version 1 answered every as-of question with the GiST index of the
-- exclusion constraint: correct for any (valid_at, known_at), but a GiST scan
-- is slow to start (it sets up its support functions for five columns) and
-- checks every entry of every page it visits. Most questions are about
-- current knowledge, and for those a btree can do the work:
--
-- * bitemporal.fact_key.last_known_at is the latest knowledge time recorded
--   for a key: every write at knowledge time t opens versions known from t
--   and closes versions at t, then sets last_known_at to t, under the key's
--   lock, in the same transaction (bitemporal.record, retract, record_many).
--   So no version of a key has a known period that starts or ends after
--   last_known_at, and for known_at >= last_known_at the versions known at
--   known_at are exactly those with open knowledge: a closed one ended at or
--   before last_known_at <= known_at.
-- * Those versions are in fact_version_current_valid_idx, a partial btree
--   ordered by the end of the valid period. One source's versions with open
--   knowledge never overlap (the exclusion constraint), so the versions that
--   contain valid_at are among the first entries after valid_at: the scan
--   starts at valid_at and reads only the versions that end later (one per
--   source, plus those announced for later).
--
-- bitemporal.as_of reads fact_key once and takes one of two branches of a
-- UNION ALL, each guarded by a one-time filter on last_known_at, so the
-- other branch never runs: the btree for current knowledge, the GiST index
-- of the exclusion constraint for an earlier knowledge time. It stays one
-- SQL statement, which the planner inlines into the caller's query.

-- Versions with open knowledge by key and the end, then the start, of their
-- valid period (unbounded ends as +-infinity, which a stored period never
-- has): what an as-of lookup about current knowledge reads.
CREATE INDEX fact_version_current_valid_idx ON bitemporal.fact_version
    (entity, attribute,
     coalesce(upper(valid_period), 'infinity'::timestamptz),
     coalesce(lower(valid_period), '-infinity'::timestamptz))
    WHERE upper_inf(known_period);
COMMENT ON INDEX bitemporal.fact_version_current_valid_idx IS
    'Current versions (open knowledge) by key, then end and start of the valid period (unbounded = +-infinity): bitemporal.as_of for current knowledge scans it from valid_at, reading only versions that end later.';

COMMENT ON INDEX bitemporal.fact_version_no_overlap IS
    'Enforces that one source never holds two overlapping valid periods for a key within one knowledge period; serves as-of lookups for an earlier knowledge time (bitemporal.as_of), history and the per-key audit functions.';
COMMENT ON INDEX bitemporal.fact_version_pkey IS
    'Versions by id: version references (evidence, provenance, superseding versions).';
COMMENT ON INDEX bitemporal.fact_key_pkey IS
    'Keys: the per-key write lock, the existence check of bitemporal.require_key and the latest knowledge time that bitemporal.as_of branches on.';

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
AS $$
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.fact_key k
     CROSS JOIN LATERAL (
        -- Current knowledge: the btree. The valid-period test is spelt twice:
        -- as bounds the btree can use (the end as a row comparison, which
        -- PostgreSQL 18 does not turn into a skip scan over every end, and
        -- the start checked inside the index), and as the exact test
        -- range_contains_elem(), a function call rather than the @> operator
        -- so that no GiST index looks applicable to this branch.
        SELECT c.version_id, c.entity, c.attribute, c.source, c.value,
               c.valid_period, c.known_period, c.recorded_by, c.carried_from
          FROM bitemporal.fact_version c
         WHERE k.last_known_at <= coalesce(as_of.known_at, pg_catalog.now())
           AND c.entity = as_of.entity
           AND c.attribute = as_of.attribute
           AND upper_inf(c.known_period)
           AND (coalesce(upper(c.valid_period), 'infinity'::timestamptz),
                coalesce(lower(c.valid_period), '-infinity'::timestamptz))
               >= (coalesce(as_of.valid_at, pg_catalog.now()), '-infinity'::timestamptz)
           AND coalesce(lower(c.valid_period), '-infinity'::timestamptz)
               <= coalesce(as_of.valid_at, pg_catalog.now())
           AND pg_catalog.range_contains_elem(c.valid_period, coalesce(as_of.valid_at, pg_catalog.now()))
           AND pg_catalog.range_contains_elem(c.known_period, coalesce(as_of.known_at, pg_catalog.now()))
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
     ORDER BY v.version_id
$$;
COMMENT ON FUNCTION bitemporal.as_of(text, text, timestamptz, timestamptz) IS
    'Versions of a key eligible at (valid_at, known_at) (NULL = now), ORDER BY version_id. Several rows mean several sources; see bitemporal.resolve for the status. A key never recorded gives no rows. At or after the key''s latest knowledge time it reads the current versions'' btree (fact_version_current_valid_idx), before it the exclusion constraint''s GiST index.';
