-- bitemporal: an answer with the versions it rests on, in one call (issues 14
-- and 15; migration 0025).
--
-- bitemporal.resolve answers a question with the ids of the versions it rests
-- on; a program that shows those versions (the Python API's Answer.versions)
-- asked for them in the same statement, joining bitemporal.as_of at the
-- answer's question. On one node that is one statement either way. On Citus a
-- statement that calls two functions is not delegated: the coordinator ran
-- resolve and as_of itself, and each sent its queries to the key's worker,
-- three commands for one answer. bitemporal.resolve_versions asks both inside
-- one function, which distribute() delegates by entity (citus.v4.sql): the
-- whole question is one command, run on the worker holding the key.
--
-- STABLE, so on one node (and on the worker, where a delegated call runs) its
-- two queries read the one snapshot of the statement that calls it: the
-- versions are those the answer's ids name. A call that Citus does not
-- delegate (inside a transaction block) runs on the coordinator, where each
-- query routed to the worker takes a snapshot of its own; the Python API
-- compares the ids with the versions and asks again when a write fell between
-- them (bitemporal.operations.whole).

CREATE FUNCTION bitemporal.resolve_versions(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS TABLE (answer bitemporal.answer, version bitemporal.versions)
LANGUAGE plpgsql STABLE
-- As resolve and history: a role that may read resolves without SELECT on the tables.
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    a bitemporal.answer := bitemporal.resolve(entity, attribute, valid_at, known_at, present);
BEGIN
    -- One row a version, by id; one row with no version when none is eligible.
    RETURN QUERY
    SELECT a, v
      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) AS v
     ORDER BY v.version_id;
    IF NOT FOUND THEN
        answer := a;
        RETURN NEXT;
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.resolve_versions(text, text, timestamptz, timestamptz, timestamptz) IS
    'bitemporal.resolve''s answer (same arguments, same errors) with the versions it rests on: one row a version eligible at the answer''s question (bitemporal.as_of at its valid_at and known_at), by version id, each with the answer; one row with a NULL version when none is eligible. On Citus one command, delegated to the worker holding the key.';
