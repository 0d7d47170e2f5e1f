-- bitemporal: invalidation notifications carry ids only (version 2).
--
-- Any role that may connect may LISTEN on any channel: PostgreSQL has no
-- privilege for it. Version 1 (provenance.v1.sql) put the key and source of
-- every closed version in the payload, so a role with no grant on bitemporal
-- read them. The payload now holds only what names no fact: the version id,
-- the change (superseded or retracted), the knowledge time and the
-- superseding version ids. A reader turns an id into its version (key,
-- source, value, periods) through the view bitemporal.versions
-- (WHERE version_id = ...), which needs USAGE on the schema and SELECT on the
-- view, as every read does.
--
-- The channel's name is a constant, bitemporal_invalidation (Python:
-- bitemporal.CHANNEL): the function that returned it is not API and moves to
-- bitemporal_internal with the other helpers (surface.v1.sql).

ALTER FUNCTION bitemporal.invalidation_channel() SET SCHEMA bitemporal_internal;
COMMENT ON FUNCTION bitemporal_internal.invalidation_channel() IS
    'The NOTIFY channel on which a supersession or retraction is announced at commit (for bitemporal_internal.fact_version_notify_closed): LISTEN bitemporal_invalidation.';

CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_notify_closed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    by_ids bigint[];
BEGIN
    -- The rule of bitemporal_internal.superseding_versions, written out here so that
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
        bitemporal_internal.invalidation_channel(),
        pg_catalog.jsonb_build_object(
            'version_id', NEW.version_id,
            'change', CASE WHEN pg_catalog.cardinality(by_ids) > 0 THEN 'superseded' ELSE 'retracted' END,
            'known_at', bitemporal_internal.iso_time(upper(NEW.known_period)),
            'by', pg_catalog.to_jsonb(by_ids))::text);
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION bitemporal_internal.fact_version_notify_closed() FROM PUBLIC;
COMMENT ON FUNCTION bitemporal_internal.fact_version_notify_closed() IS
    'Trigger (deferred to commit): announces on bitemporal_invalidation that a version''s knowledge was closed, as JSON with ids, kind and time only: version_id, change (superseded or retracted), known_at and by (the superseding versions). SELECT ... FROM bitemporal.versions WHERE version_id = ... turns an id into its version for a role that may read versions.';
