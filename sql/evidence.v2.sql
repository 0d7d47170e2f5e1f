-- bitemporal: evidence refuses text search configurations that do not last (version 2).
--
-- A text search configuration in a temporary schema (pg_temp) is dropped when
-- its session ends, but bitemporal.evidence.language (regconfig) records no
-- dependency on it: a passage indexed with one would make every later search
-- that reaches it fail ("cache lookup failed for text search configuration"),
-- for every role, for ever. bitemporal_internal.text_search_config (version 1 in
-- evidence.v1.sql) is redefined in place (same signature, same errors) to
-- refuse such configurations too.

CREATE OR REPLACE FUNCTION bitemporal_internal.text_search_config(name text, errcode text)
RETURNS regconfig
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    config regconfig;
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'text search configuration must be a non-empty name'
            USING ERRCODE = errcode;
    END IF;
    BEGIN
        config := name::regconfig;
    EXCEPTION WHEN undefined_object OR invalid_name OR syntax_error THEN
        RAISE EXCEPTION 'text search configuration "%" does not exist', name
            USING ERRCODE = errcode,
                  HINT = 'SELECT cfgname FROM pg_ts_config lists them (english, german, simple, ...).';
    END;
    IF EXISTS (SELECT FROM pg_catalog.pg_ts_config c JOIN pg_catalog.pg_namespace n ON n.oid = c.cfgnamespace
                WHERE c.oid = config
                  AND (n.nspname LIKE 'pg\_temp\_%' OR n.nspname LIKE 'pg\_toast\_temp\_%')) THEN
        RAISE EXCEPTION 'text search configuration "%" is temporary: it ends with its session', name
            USING ERRCODE = errcode,
                  HINT = 'Use a configuration in a permanent schema (english, german, simple, ...).';
    END IF;
    RETURN config;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.text_search_config(text, text) IS
    'The text search configuration called name, or raises SQLSTATE errcode (BT204 when searching, BT208 when adding evidence) if there is none or it is temporary (in pg_temp: it would vanish with its session and break every search reaching passages indexed with it).';
