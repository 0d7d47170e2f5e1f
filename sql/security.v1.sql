-- bitemporal: roles and the write path's privileges (version 1).
--
-- Three roles, NOLOGIN, meant to be granted to the roles people and
-- applications log in as (GRANT bitemporal_writer TO my_app):
--   reader   reads facts and working memory: SELECT on the tables and views
--            (not the audit logs), and the read functions;
--   writer   writes only through the write functions, which are SECURITY
--            DEFINER with a pinned search_path: no INSERT, UPDATE, DELETE or
--            TRUNCATE on any table;
--   auditor  reads everything, logs and idempotency records included.
-- Independent of roles, triggers keep history append-only even for the table
-- owner (append_only.v1.sql, decay.v1.sql).
--
-- The write entry points are exactly the schema's SECURITY DEFINER functions:
-- bitemporal.grant_roles() gives the writer EXECUTE on those, and every
-- migration that adds one re-runs it. Their EXECUTE is revoked from PUBLIC.

CREATE FUNCTION bitemporal.secure_write_function(fn regprocedure)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    -- Everything the write functions touch is schema-qualified, so they need
    -- nothing on the search path; pg_temp last stops temporary objects from
    -- shadowing anything.
    EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', fn);
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn);
END;
$$;
COMMENT ON FUNCTION bitemporal.secure_write_function(regprocedure) IS
    'Makes a function a write entry point: SECURITY DEFINER with search_path pinned to pg_catalog, pg_temp, and no EXECUTE for PUBLIC (bitemporal.grant_roles gives it to the writer role).';

CREATE FUNCTION bitemporal.grant_roles(
    reader  text DEFAULT 'bitemporal_reader',
    writer  text DEFAULT 'bitemporal_writer',
    auditor text DEFAULT 'bitemporal_auditor')
RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
    role_name  text;
    may_create boolean;
    granted    text[] := '{}';
    obj        record;
BEGIN
    SELECT r.rolcreaterole OR r.rolsuper INTO may_create FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
    FOREACH role_name IN ARRAY ARRAY[reader, writer, auditor] LOOP
        CONTINUE WHEN role_name IS NULL;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name) THEN
            IF NOT may_create THEN
                RAISE NOTICE 'role % does not exist and % may not create it; skipped (grant to existing roles with bitemporal.grant_roles(reader, writer, auditor))',
                    role_name, current_user;
                CONTINUE;
            END IF;
            EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
        END IF;
        EXECUTE format('GRANT USAGE ON SCHEMA bitemporal TO %I', role_name);
        granted := granted || role_name;
    END LOOP;

    IF reader = ANY (granted) THEN
        FOR obj IN
            SELECT c.oid::regclass AS rel FROM pg_catalog.pg_class c
             WHERE c.relnamespace = 'bitemporal'::regnamespace AND c.relkind IN ('r', 'v', 'p')
               AND c.relname NOT IN ('memory_log', 'fact_request', 'alembic_version')
        LOOP
            EXECUTE format('GRANT SELECT ON %s TO %I', obj.rel, reader);
        END LOOP;
    END IF;
    IF writer = ANY (granted) THEN
        FOR obj IN
            SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = 'bitemporal'::regnamespace AND p.prosecdef
        LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', obj.fn, writer);
        END LOOP;
    END IF;
    IF auditor = ANY (granted) THEN
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA bitemporal TO %I', auditor);
    END IF;
    RETURN granted;
END;
$$;
COMMENT ON FUNCTION bitemporal.grant_roles(text, text, text) IS
    'Creates the reader, writer and auditor roles if missing (and allowed) and grants them their privileges; pass existing role names to grant to those instead, NULL to skip one. Idempotent. Returns the roles granted to.';

CREATE FUNCTION bitemporal.revoke_roles(
    reader  text DEFAULT 'bitemporal_reader',
    writer  text DEFAULT 'bitemporal_writer',
    auditor text DEFAULT 'bitemporal_auditor')
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY[reader, writer, auditor] LOOP
        CONTINUE WHEN role_name IS NULL
                   OR NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name);
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA bitemporal FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA bitemporal FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON SCHEMA bitemporal FROM %I', role_name);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal.revoke_roles(text, text, text) IS
    'Revokes what bitemporal.grant_roles granted (the roles themselves stay: they are cluster-wide and may serve other databases).';
