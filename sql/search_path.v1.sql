-- bitemporal: every function runs with objects bound to pg_catalog and bitemporal,
-- whatever the caller's search_path (migration 0009).
--
-- A statement parsed with public on the search path resolves an unqualified
-- function or operator to an exact match planted there (public.upper_inf(tstzrange)
-- beats pg_catalog.upper_inf(anyrange)), and runs it with the rights of
-- whoever calls. Two ways keep that out, depending on the kind of function:
--   * PL/pgSQL functions (and SQL functions that cannot have a standard body,
--     because they take polymorphic arguments) run with
--     SET search_path = pg_catalog, pg_temp: surface.v1.sql and tables.v2.sql
--     create each again with it;
--   * the fact store's SQL functions below must stay inlinable into the
--     caller's query (a SET clause prevents inlining): they have SQL-standard
--     bodies (BEGIN ATOMIC ... END), which PostgreSQL parses once, when the
--     function is created, and binds to functions, operators and tables by
--     OID. The migration loads this file under SET LOCAL search_path =
--     pg_catalog, pg_temp, so that binding can only find pg_catalog's objects
--     and those named with their schema.
-- A standard body is bound to the tables it reads, like a view:
-- bitemporal.partition_versions (partitioning.v2.sql) creates these functions
-- again when it rebuilds bitemporal.fact_version.
--
-- The bodies are those of the files named before each, unchanged; only
-- AS $$ ... $$ became BEGIN ATOMIC ... END. CREATE OR REPLACE keeps each
-- function's OID, grants, comment and dependents.

-- bitemporal.as_of, as facts_read.v2.sql defines it.
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
     ORDER BY v.version_id;
END;

-- bitemporal_internal.distinct_values, as facts_read.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal_internal.distinct_values(
    entity text, attribute text, valid_at timestamptz, known_at timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value), '[]'::jsonb)
      FROM bitemporal.as_of(entity, attribute, valid_at, known_at) v;
END;

-- bitemporal_internal.superseding_versions, as changes.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal_internal.superseding_versions(
    entity text, attribute text, source text, valid_period tstzrange, closed_at timestamptz)
RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}')
      FROM bitemporal.fact_version w
     WHERE w.entity = superseding_versions.entity
       AND w.attribute = superseding_versions.attribute
       AND w.source = superseding_versions.source
       AND w.valid_period && superseding_versions.valid_period
       AND w.known_period @> superseding_versions.closed_at
       AND lower(w.known_period) = superseding_versions.closed_at
       AND w.carried_from IS NULL;
END;

-- bitemporal_internal.knowledge_edges, as explain.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal_internal.knowledge_edges(entity text, attribute text, valid_at timestamptz)
RETURNS SETOF timestamptz
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT DISTINCT b.t
      FROM bitemporal.fact_version v
     CROSS JOIN LATERAL (VALUES (lower(v.known_period)), (upper(v.known_period))) AS b(t)
     WHERE v.entity = knowledge_edges.entity AND v.attribute = knowledge_edges.attribute
       AND v.valid_period @> knowledge_edges.valid_at AND b.t IS NOT NULL
     ORDER BY b.t;
END;

-- bitemporal_internal.value_run, as explain.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal_internal.value_run(
    entity text, attribute text, value jsonb, valid_at timestamptz, known_at timestamptz)
RETURNS tstzrange
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT r
      FROM unnest((SELECT pg_catalog.range_agg(v.valid_period)
                     FROM bitemporal.fact_version v
                    WHERE v.entity = value_run.entity AND v.attribute = value_run.attribute
                      AND v.known_period @> value_run.known_at AND v.value = value_run.value)) AS r
     WHERE r @> value_run.valid_at;
END;

-- bitemporal_internal.explain_version, as explain.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal_internal.explain_version(v bitemporal.versions)
RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT pg_catalog.jsonb_build_object(
        'version_id', v.version_id,
        'source', v.source,
        'value', v.value,
        'valid_from', bitemporal_internal.iso_time(lower(v.valid_period)),
        'valid_to', bitemporal_internal.iso_time(upper(v.valid_period)),
        'known_from', bitemporal_internal.iso_time(lower(v.known_period)),
        'known_to', bitemporal_internal.iso_time(upper(v.known_period)),
        'recorded_by', v.recorded_by,
        'carried_from', v.carried_from,
        'evidence', coalesce(
            (SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                        'evidence_id', e.evidence_id, 'document', e.document, 'passage', e.passage)
                    ORDER BY e.evidence_id)
               FROM bitemporal.evidence e
              WHERE e.version_id IN (v.version_id, v.carried_from)),
            '[]'));
END;

-- bitemporal_internal.eligible, as evidence.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal_internal.eligible(
    valid_at   timestamptz DEFAULT NULL,
    known_at   timestamptz DEFAULT NULL,
    entity     text        DEFAULT NULL,
    attribute  text        DEFAULT NULL)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.fact_version v
     WHERE v.valid_period @> coalesce(eligible.valid_at, pg_catalog.now())
       AND v.known_period @> coalesce(eligible.known_at, pg_catalog.now())
       AND (eligible.entity IS NULL OR v.entity = eligible.entity)
       AND (eligible.attribute IS NULL OR v.attribute = eligible.attribute);
END;

-- bitemporal.retrospective_diff, as audit.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal.retrospective_diff(
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
BEGIN ATOMIC
    SELECT a.status, a."values", a.version_ids,
           b.status, b."values", b.version_ids,
           a."values" IS DISTINCT FROM b."values"
      FROM bitemporal.resolve(entity, attribute, valid_at, known_then, coalesce(known_now, pg_catalog.now())) a,
           bitemporal.resolve(entity, attribute, valid_at, known_now, coalesce(known_now, pg_catalog.now())) b;
END;

-- bitemporal.stale, as provenance.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal.stale(known_at timestamptz DEFAULT NULL)
RETURNS SETOF bitemporal.stale_input
LANGUAGE sql STABLE
BEGIN ATOMIC
    WITH RECURSIVE
    asked AS (
        SELECT coalesce(stale.known_at, pg_catalog.now()) AS t
    ),
    live AS (
        SELECT a.* FROM bitemporal.artifact a, asked
         WHERE a.derived_at <= asked.t AND (a.retired_at IS NULL OR a.retired_at > asked.t)
    ),
    -- Every artifact each live artifact depends on, itself included. UNION
    -- (not ALL) keeps one row per pair however many paths lead there.
    reach (root, node) AS (
        SELECT l.artifact_id, l.artifact_id FROM live l
        UNION
        SELECT r.root, i.input_artifact
          FROM reach r JOIN bitemporal.artifact_input i ON i.artifact_id = r.node
         WHERE i.input_artifact IS NOT NULL
    ),
    causes AS (
        SELECT r.root, r.node,
               CASE WHEN v.version_id IS NULL THEN 'discarded'
                    WHEN pg_catalog.cardinality(s.by_ids) > 0 THEN 'superseded'
                    ELSE 'retracted' END::bitemporal.stale_cause AS cause,
               upper(v.known_period) AS changed_at, i.input_version AS version_id,
               v.entity, v.attribute, v.source, v.value, NULL::bigint AS input_artifact,
               s.by_ids
          FROM reach r
          JOIN bitemporal.artifact_input i ON i.artifact_id = r.node AND i.input_version IS NOT NULL
          LEFT JOIN bitemporal.fact_version v ON v.version_id = i.input_version
          CROSS JOIN asked
          CROSS JOIN LATERAL (
                SELECT bitemporal_internal.superseding_versions(v.entity, v.attribute, v.source,
                                                       v.valid_period, upper(v.known_period)) AS by_ids) s
         WHERE v.version_id IS NULL
            OR (NOT upper_inf(v.known_period) AND upper(v.known_period) <= asked.t)
        UNION ALL
        SELECT r.root, r.node, 'input_retired', a.retired_at, NULL, NULL, NULL, NULL, NULL,
               a.artifact_id, '{}'::bigint[]
          FROM reach r
          JOIN bitemporal.artifact_input i ON i.artifact_id = r.node AND i.input_artifact IS NOT NULL
          JOIN bitemporal.artifact a ON a.artifact_id = i.input_artifact
          CROSS JOIN asked
         WHERE a.retired_at <= asked.t
    ),
    -- Each cause once per stale artifact, through the most direct path.
    firsts AS (
        SELECT DISTINCT ON (c.root, c.version_id, c.input_artifact) c.*
          FROM causes c
         ORDER BY c.root, c.version_id, c.input_artifact, (c.node = c.root) DESC, c.node
    )
    SELECT f.root, l.kind, l.ref, l.derived_at, f.cause, f.changed_at, f.version_id,
           f.entity, f.attribute, f.source, f.value, f.input_artifact, f.node, f.by_ids,
           CASE f.cause
               WHEN 'superseded' THEN pg_catalog.format(
                   'version %s (%s/%s, source %s: %s) superseded on %s by %s',
                   f.version_id, f.entity, f.attribute, f.source, bitemporal_internal.human_value(f.value),
                   bitemporal_internal.human_time(f.changed_at),
                   (SELECT pg_catalog.string_agg(pg_catalog.format('version %s (%s)', w.version_id,
                                                                   bitemporal_internal.human_value(w.value)),
                                                 ', ' ORDER BY w.version_id)
                      FROM bitemporal.fact_version w WHERE w.version_id = ANY (f.by_ids)))
               WHEN 'retracted' THEN pg_catalog.format(
                   'version %s (%s/%s, source %s: %s) retracted on %s',
                   f.version_id, f.entity, f.attribute, f.source, bitemporal_internal.human_value(f.value),
                   bitemporal_internal.human_time(f.changed_at))
               WHEN 'discarded' THEN pg_catalog.format(
                   'version %s no longer exists: it was replaced inside the transaction that recorded it',
                   f.version_id)
               ELSE pg_catalog.format(
                   'input artifact %s (%s %s) retired on %s',
                   f.input_artifact, ia.kind, ia.ref, bitemporal_internal.human_time(f.changed_at))
           END
           || CASE WHEN f.node <> f.root
                   THEN pg_catalog.format(', through artifact %s (%s %s)', f.node, via.kind, via.ref)
                   ELSE '' END
      FROM firsts f
      JOIN live l ON l.artifact_id = f.root
      JOIN bitemporal.artifact via ON via.artifact_id = f.node
      LEFT JOIN bitemporal.artifact ia ON ia.artifact_id = f.input_artifact
     ORDER BY f.root, f.changed_at NULLS FIRST, f.version_id, f.input_artifact;
END;

-- bitemporal.dependents, as provenance.v1.sql defines it.
CREATE OR REPLACE FUNCTION bitemporal.dependents(
    version_ids  bigint[] DEFAULT '{}',
    artifact_ids bigint[] DEFAULT '{}')
RETURNS SETOF bitemporal.artifact
LANGUAGE sql STABLE
BEGIN ATOMIC
    WITH RECURSIVE down (artifact_id) AS (
        SELECT i.artifact_id FROM bitemporal.artifact_input i
         WHERE i.input_version = ANY (coalesce(dependents.version_ids, '{}'))
            OR i.input_artifact = ANY (coalesce(dependents.artifact_ids, '{}'))
        UNION
        SELECT i.artifact_id FROM down d JOIN bitemporal.artifact_input i ON i.input_artifact = d.artifact_id
    )
    SELECT a.* FROM bitemporal.artifact a
     WHERE a.artifact_id IN (SELECT d.artifact_id FROM down d) AND a.retired_at IS NULL
     ORDER BY a.artifact_id;
END;

