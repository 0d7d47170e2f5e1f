-- bitemporal: as_of for statements that are not prepared (issue 15; migration
-- 0037).
--
-- bitemporal.as_of is one SQL statement, which the planner inlines into the
-- query that calls it: inside a larger query, and as a prepared statement's
-- generic plan, that is the fastest read. A statement that is not prepared
-- (psql, or a client behind a pooler in transaction mode, which must not
-- prepare) is planned at every call, and planning as_of's inlined body takes
-- several times its execution: from Python, at 1M versions, 0.68 ms a call not
-- prepared against 0.20 ms prepared on PostgreSQL 18 (0.98 against 0.37 on 15).
-- bitemporal.as_of_planned asks the same question from a PL/pgSQL function,
-- whose statement the session plans once and keeps: 0.27 ms not prepared, 0.22
-- prepared (0.49 and 0.40 on 15; python -m benchmarks anatomy, 2026-12-06).
-- The Python API calls it on connections that never prepare.
--
-- SECURITY INVOKER, as as_of: the API picks this function or as_of by how
-- the connection prepares, so both must need the same rights (SELECT on the
-- tables: the reader and auditor roles), or a connection's settings would
-- decide what a role may read. search_path pinned; as_of called by its
-- qualified name.

CREATE FUNCTION bitemporal.as_of_planned(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL)
RETURNS SETOF bitemporal.versions
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
BEGIN
    RETURN QUERY
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.as_of(entity, attribute, valid_at, known_at) AS v
     ORDER BY v.version_id;
END;
$$;
COMMENT ON FUNCTION bitemporal.as_of_planned(text, text, timestamptz, timestamptz) IS
    'bitemporal.as_of (same arguments, same versions, by version id, the caller''s rights) from a PL/pgSQL function, whose plan the session keeps: for statements that are not prepared (psql, a pooler in transaction mode), which plan as_of''s inlined body at every call. Inside a larger query or in a prepared statement, as_of itself is faster.';
