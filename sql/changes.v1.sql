-- bitemporal: what the store learned, superseded or retracted in a knowledge
-- window (version 1), for audits, syncs and cache invalidation.
--
-- Every change of knowledge is visible in bitemporal.fact_version itself: a
-- version's known period starts when the store learned it and, once closed,
-- ends when the store stopped holding it. A window [known_from, known_to) is
-- half-open like every period here. In it:
--   learned     a version whose knowledge starts in the window and that asserts
--               something new (carried_from IS NULL). A remainder re-recorded
--               when a write cut an older version (carried_from set) repeats
--               what was already known for that part of the valid time: it is
--               not learned, and appears only as a consequence of the write
--               that cut its original;
--   superseded  a version whose knowledge ends in the window because, at that
--               same knowledge time, the same source asserted a new value for
--               all or part of its valid period (the superseding versions are
--               listed in by_version_ids);
--   retracted   a version whose knowledge ends in the window with no new
--               assertion of the same source overlapping it: a sequenced
--               delete (bitemporal.retract).
-- One write closes a version exactly once, so the classification is fixed
-- when it happens. When one transaction both retracts and records for the
-- same key and source at one knowledge time, a closed version overlapped by
-- the new value counts as superseded.
--
-- A version closed inside the transaction that created it was never visible
-- and is not kept (see facts_write.v1.sql): it appears nowhere.

CREATE TYPE bitemporal.change_kind AS ENUM ('learned', 'superseded', 'retracted');
COMMENT ON TYPE bitemporal.change_kind IS
    'learned: a new assertion became known (not a re-recorded remainder); superseded: the same source asserted a new value for part or all of the version''s valid period at the time its knowledge ended; retracted: its knowledge ended with no such new value (a sequenced delete).';

-- The window's bounds are looked up by knowledge time, not by key.
CREATE INDEX fact_version_known_from_idx ON bitemporal.fact_version (lower(known_period));
COMMENT ON INDEX bitemporal.fact_version_known_from_idx IS
    'Versions by the start of their knowledge: what was learned in a window (bitemporal.changes).';
CREATE INDEX fact_version_known_to_idx ON bitemporal.fact_version (upper(known_period))
    WHERE NOT upper_inf(known_period);
COMMENT ON INDEX bitemporal.fact_version_known_to_idx IS
    'Closed versions by the end of their knowledge: what was superseded or retracted in a window (bitemporal.changes).';

CREATE FUNCTION bitemporal.superseding_versions(
    entity text, attribute text, source text, valid_period tstzrange, closed_at timestamptz)
RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}')
      FROM bitemporal.fact_version w
     WHERE w.entity = superseding_versions.entity
       AND w.attribute = superseding_versions.attribute
       AND w.source = superseding_versions.source
       AND w.valid_period && superseding_versions.valid_period
       AND w.known_period @> superseding_versions.closed_at
       AND lower(w.known_period) = superseding_versions.closed_at
       AND w.carried_from IS NULL
$$;
COMMENT ON FUNCTION bitemporal.superseding_versions(text, text, text, tstzrange, timestamptz) IS
    'For a version of (entity, attribute, source) over valid_period whose knowledge ended at closed_at: the new assertions of the same source, known from closed_at, overlapping it (empty: it was retracted, not superseded).';

CREATE TYPE bitemporal.change AS (
    change          bitemporal.change_kind,
    changed_at      timestamptz,
    version_id      bigint,
    entity          text,
    attribute       text,
    source          text,
    value           jsonb,
    valid_period    tstzrange,
    known_period    tstzrange,
    recorded_by     text,
    carried_from    bigint,
    by_version_ids  bigint[]
);
COMMENT ON TYPE bitemporal.change IS
    'One row of bitemporal.changes: what happened (learned, superseded, retracted), when (a knowledge time), to which version, and for superseded the versions that superseded it.';

CREATE FUNCTION bitemporal.changes(
    known_from  timestamptz DEFAULT NULL,
    known_to    timestamptz DEFAULT NULL,
    entity      text        DEFAULT NULL,
    attribute   text        DEFAULT NULL)
RETURNS SETOF bitemporal.change
LANGUAGE plpgsql STABLE
AS $$
#variable_conflict use_variable
BEGIN
    IF known_from IS NOT NULL AND known_to IS NOT NULL AND known_to <= known_from THEN
        RAISE EXCEPTION 'knowledge window [%, %) is %', known_from, known_to,
                CASE WHEN known_to = known_from THEN 'empty' ELSE 'inverted' END
            USING ERRCODE = 'BT001',
                  HINT = 'A window is half-open [known_from, known_to): known_to must be later than known_from.';
    END IF;
    RETURN QUERY
    SELECT c.* FROM (
        SELECT 'learned'::bitemporal.change_kind, lower(v.known_period), v.version_id,
               v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
               v.recorded_by, v.carried_from, '{}'::bigint[]
          FROM bitemporal.fact_version v
         WHERE v.carried_from IS NULL
           AND lower(v.known_period) >= coalesce(known_from, '-infinity')
           AND lower(v.known_period) < coalesce(known_to, 'infinity')
           AND (entity IS NULL OR v.entity = entity)
           AND (attribute IS NULL OR v.attribute = attribute)
        UNION ALL
        SELECT CASE WHEN pg_catalog.cardinality(s.by_ids) > 0 THEN 'superseded'
                    ELSE 'retracted' END::bitemporal.change_kind,
               upper(v.known_period), v.version_id,
               v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
               v.recorded_by, v.carried_from, s.by_ids
          FROM bitemporal.fact_version v
         CROSS JOIN LATERAL (
               SELECT bitemporal.superseding_versions(v.entity, v.attribute, v.source,
                                                      v.valid_period, upper(v.known_period)) AS by_ids) s
         WHERE NOT upper_inf(v.known_period)
           AND upper(v.known_period) >= coalesce(known_from, '-infinity')
           AND upper(v.known_period) < coalesce(known_to, 'infinity')
           AND (entity IS NULL OR v.entity = entity)
           AND (attribute IS NULL OR v.attribute = attribute)
    ) AS c (change, changed_at, version_id, entity, attribute, source, value, valid_period,
            known_period, recorded_by, carried_from, by_version_ids)
    ORDER BY c.changed_at, c.version_id, c.change;
END;
$$;
COMMENT ON FUNCTION bitemporal.changes(timestamptz, timestamptz, text, text) IS
    'What the store learned, superseded or retracted in the knowledge window [known_from, known_to) (NULL = unbounded), optionally for one entity and/or attribute, ORDER BY changed_at, version_id. A re-recorded remainder (carried_from set) is not learned. Raises BT001 for an empty or inverted window.';
