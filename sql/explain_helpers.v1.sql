-- bitemporal: the explain functions' helpers that read versions, as PL/pgSQL
-- (issue 15; migration 0036).
--
-- bitemporal.explain, answer_since and answer_corrected call three
-- LANGUAGE sql functions that read the version table: distinct_values (in
-- loops over a key's knowledge times), value_run, and explain_version (once a
-- version, inside explain's query). PostgreSQL before 18 plans a SQL
-- function's body again in every query or transaction that calls it, and a
-- BEGIN ATOMIC body that reads tables is never inlined. PL/pgSQL keeps the
-- plan of each statement for the session. Measured on PostgreSQL 15.20
-- (2,000 keys of 25 versions, explain one a transaction; docs/performance.md):
-- distinct_values alone 0.39 ms as SQL, 0.07 ms as PL/pgSQL.
--
-- Each function keeps its arguments, result, volatility, query and comment
-- (CREATE OR REPLACE keeps the comment and the privileges): only the language
-- changes, and with it the pinned search_path every PL/pgSQL function of ours
-- has. distinct_values's query is erasure.v1.sql's, value_run's
-- integer_key.v1.sql's, explain_version's erasure.v1.sql's.

-- The distinct values, not erased, eligible at (valid_at, known_at).
CREATE OR REPLACE FUNCTION bitemporal_internal.distinct_values(
    entity text, attribute text, valid_at timestamptz, known_at timestamptz)
RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value), '[]'::jsonb)
              FROM bitemporal.as_of(entity, attribute, valid_at, known_at) v
             WHERE v.value IS NOT NULL);
END;
$$;

-- The run of valid time around valid_at over which the key held value, as
-- known at known_at.
CREATE OR REPLACE FUNCTION bitemporal_internal.value_run(
    entity text, attribute text, value jsonb, valid_at timestamptz, known_at timestamptz)
RETURNS tstzrange
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT r
              FROM unnest((SELECT range_agg(v.valid_period)
                             FROM bitemporal.fact_version v
                            WHERE v.key_id = (SELECT k.key_id FROM bitemporal.fact_key k
                                               WHERE k.entity = value_run.entity AND k.attribute = value_run.attribute)
                              AND v.entity = value_run.entity
                              AND v.known_period @> value_run.known_at AND v.value = value_run.value)) AS r
             WHERE r @> value_run.valid_at);
END;
$$;

-- One version as explain lists it, with when it was erased and its evidence.
CREATE OR REPLACE FUNCTION bitemporal_internal.explain_version(v bitemporal.versions)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN jsonb_build_object(
        'version_id', v.version_id,
        'source', v.source,
        'value', v.value,
        'valid_from', bitemporal_internal.iso_time(lower(v.valid_period)),
        'valid_to', bitemporal_internal.iso_time(upper(v.valid_period)),
        'known_from', bitemporal_internal.iso_time(lower(v.known_period)),
        'known_to', bitemporal_internal.iso_time(upper(v.known_period)),
        'recorded_by', v.recorded_by,
        'carried_from', v.carried_from,
        'erased_at', bitemporal_internal.iso_time(
            (SELECT w.erased_at FROM bitemporal.fact_version w
              WHERE w.version_id = v.version_id AND w.entity = v.entity)),
        'evidence', coalesce(
            (SELECT jsonb_agg(jsonb_build_object(
                        'evidence_id', e.evidence_id, 'document', e.document, 'passage', e.passage)
                    ORDER BY e.evidence_id)
               FROM bitemporal.evidence e
              WHERE e.version_id IN (v.version_id, v.carried_from)),
            '[]'));
END;
$$;
