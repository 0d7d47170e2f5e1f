-- bitemporal: invalidation notifications carry ids only (version 2).
--
-- Any role that may connect may LISTEN on any channel: PostgreSQL has no
-- privilege for it. Version 1 (provenance.v1.sql) put the key and source of
-- every closed version in the payload, so a role with no grant on bitemporal
-- read them. The payload now holds only what names no fact: the version id,
-- the change (superseded or retracted), the knowledge time and the
-- superseding version ids. A reader turns an id into its version (key,
-- source, value, periods) with bitemporal.version(version_id), which needs
-- USAGE on the schema and SELECT on the versions, as every read does.

CREATE OR REPLACE FUNCTION bitemporal.fact_version_notify_closed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    by_ids bigint[];
BEGIN
    -- The rule of bitemporal.superseding_versions, written out here so that
    -- PL/pgSQL keeps its plan: every closed version runs it at commit.
    SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}')
      INTO by_ids
      FROM bitemporal.fact_version w
     WHERE w.entity = NEW.entity AND w.attribute = NEW.attribute AND w.source = NEW.source
       AND w.valid_period OPERATOR(pg_catalog.&&) NEW.valid_period
       AND w.known_period OPERATOR(pg_catalog.@>) upper(NEW.known_period)
       AND lower(w.known_period) = upper(NEW.known_period)
       AND w.carried_from IS NULL;
    PERFORM pg_catalog.pg_notify(
        bitemporal.invalidation_channel(),
        pg_catalog.jsonb_build_object(
            'version_id', NEW.version_id,
            'change', CASE WHEN pg_catalog.cardinality(by_ids) > 0 THEN 'superseded' ELSE 'retracted' END,
            'known_at', bitemporal.iso_time(upper(NEW.known_period)),
            'by', pg_catalog.to_jsonb(by_ids))::text);
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION bitemporal.fact_version_notify_closed() FROM PUBLIC;
COMMENT ON FUNCTION bitemporal.fact_version_notify_closed() IS
    'Trigger (deferred to commit): announces on bitemporal_invalidation that a version''s knowledge was closed, as JSON with ids, kind and time only: version_id, change (superseded or retracted), known_at and by (the superseding versions). bitemporal.version(version_id) turns an id into its key for a role that may read versions.';

CREATE FUNCTION bitemporal.version(version_id bigint)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT v.* FROM bitemporal.versions v WHERE v.version_id = version.version_id
$$;
COMMENT ON FUNCTION bitemporal.version(bigint) IS
    'The version with this id (no row if there is none), with its key, source, value and both periods: what an id in a bitemporal_invalidation notification names. Runs with the caller''s rights: readers may call it, a role with no grant on bitemporal may not.';
