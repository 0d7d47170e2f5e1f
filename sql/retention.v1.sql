-- bitemporal: retention policies (version 1).
--
-- A retention policy says how long closed knowledge of an attribute of the
-- fact store, or of an application table, is kept: versions whose knowledge
-- ended (upper(known_period)) more than keep_for before the present are
-- erased by bitemporal.apply_retention(), a job to run from cron or pg_cron.
-- Current knowledge (an open known_period) is never touched, whatever its age:
-- retention forgets what the store no longer holds, not what it holds.
--
-- Each run erases through the erasure machinery (erasure.v1.sql for the fact
-- store, table_erasure.v1.sql for application tables): per key, the key's lock,
-- one bitemporal.erasures row listing the versions it cleared, with policy set
-- to the policy's name and a reason naming the policy and its interval.
-- Versions an erasure already lists are skipped, so a second run erases
-- nothing new. Months and days of keep_for are counted in UTC (the functions
-- pin TimeZone), so the cut-off is the same in every session.
--
-- A policy is named by what it keeps: 'fact:<attribute>' or
-- 'table:<schema.table>'. Only the eraser role (bitemporal_eraser) may set a
-- policy (bitemporal.set_retention) or apply them: a policy is a standing
-- decision to erase, the power the eraser has already; the writer has neither.
--
-- Errors (SQLSTATE): BT010 an invalid policy (a name that is neither, keep_for
-- not positive), BT005 a malformed attribute, BT401 not a bitemporal table,
-- BT404 (table_erase) a NOT NULL value column.

CREATE TABLE bitemporal.retention_policy (
    policy      text        NOT NULL,
    scope       text        NOT NULL,
    attribute   text,
    relation    text,
    keep_for    interval    NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    created_by  name        NOT NULL DEFAULT session_user,
    comment     text,
    CONSTRAINT retention_policy_pkey PRIMARY KEY (policy),
    CONSTRAINT retention_policy_target CHECK (
        (scope = 'fact' AND attribute IS NOT NULL AND relation IS NULL AND policy = 'fact:' || attribute)
        OR (scope = 'table' AND relation IS NOT NULL AND attribute IS NULL AND policy = 'table:' || relation)),
    CONSTRAINT retention_policy_keep_for_positive CHECK (keep_for > interval '0')
);
COMMENT ON TABLE bitemporal.retention_policy IS
    'Retention policies: closed knowledge of an attribute (scope fact, policy fact:<attribute>) or of an application table (scope table, policy table:<schema.table>) is erased by bitemporal.apply_retention() once it ended more than keep_for ago. Set with bitemporal.set_retention.';
COMMENT ON COLUMN bitemporal.retention_policy.keep_for IS
    'How long a version is kept after its knowledge ended; months and days counted in UTC.';

CREATE FUNCTION bitemporal.set_retention(policy text, keep_for interval, comment text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    attribute text;
    relation  text;
    d         bitemporal.app_table;
    name      text;
BEGIN
    IF policy LIKE 'fact:%' THEN
        attribute := pg_catalog.substr(policy, 6);
        PERFORM bitemporal_internal.check_key_part('attribute', attribute);
        name := policy;
    ELSIF policy LIKE 'table:%' THEN
        IF pg_catalog.to_regclass(pg_catalog.substr(policy, 7)) IS NULL THEN
            RAISE EXCEPTION 'there is no table %', pg_catalog.substr(policy, 7)
                USING ERRCODE = 'BT401',
                      HINT = 'Name the table with its schema: table:<schema>.<table>.';
        END IF;
        d := bitemporal.table_definition(pg_catalog.to_regclass(pg_catalog.substr(policy, 7)));
        relation := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
        name := 'table:' || relation;
    ELSE
        RAISE EXCEPTION 'a retention policy is named fact:<attribute> or table:<table>, not %',
                coalesce(pg_catalog.quote_literal(policy), 'NULL')
            USING ERRCODE = 'BT010';
    END IF;
    IF keep_for IS NULL THEN
        DELETE FROM bitemporal.retention_policy p WHERE p.policy = name;
        RETURN name;
    END IF;
    IF NOT keep_for > interval '0' THEN
        RAISE EXCEPTION 'a retention policy keeps closed knowledge for a positive interval, not %', keep_for
            USING ERRCODE = 'BT010',
                  HINT = 'Pass NULL to drop the policy.';
    END IF;
    INSERT INTO bitemporal.retention_policy AS p (policy, scope, attribute, relation, keep_for, comment)
    VALUES (name, CASE WHEN attribute IS NULL THEN 'table' ELSE 'fact' END, attribute, relation, keep_for, comment)
    ON CONFLICT ON CONSTRAINT retention_policy_pkey DO UPDATE
        SET keep_for = EXCLUDED.keep_for, comment = EXCLUDED.comment,
            created_at = EXCLUDED.created_at, created_by = EXCLUDED.created_by;
    RETURN name;
END;
$$;
REVOKE ALL ON FUNCTION bitemporal.set_retention(text, interval, text) FROM PUBLIC;
COMMENT ON FUNCTION bitemporal.set_retention(text, interval, text) IS
    'Sets a retention policy: fact:<attribute> (the fact store''s versions of that attribute) or table:<table> (a bitemporal application table''s versions); bitemporal.apply_retention() erases those whose knowledge ended more than keep_for ago. keep_for NULL drops the policy. Returns the policy''s name (a table''s schema-qualified). Only for the role bitemporal_eraser. Errors: BT005, BT010, BT401.';

CREATE FUNCTION bitemporal.apply_retention()
RETURNS TABLE (policy text, keys bigint, versions bigint)
LANGUAGE plpgsql
SECURITY DEFINER
-- The cut-off, now() - keep_for, counts months and days in UTC.
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $$
#variable_conflict use_column
DECLARE
    p       bitemporal.retention_policy;
    cutoff  timestamptz;
    why     text;
    k       record;
    erased  bitemporal.erasures;
    d       bitemporal.app_table;
BEGIN
    FOR p IN SELECT * FROM bitemporal.retention_policy r ORDER BY r.policy LOOP
        cutoff := pg_catalog.now() - p.keep_for;
        why := pg_catalog.format('retention policy %s: knowledge ended more than %s ago', p.policy, p.keep_for);
        policy := p.policy;
        keys := 0;
        versions := 0;
        IF p.scope = 'fact' THEN
            FOR k IN
                SELECT v.entity, pg_catalog.array_agg(v.version_id ORDER BY v.version_id) AS ids
                  FROM bitemporal.fact_version v
                 WHERE v.attribute = p.attribute
                   AND NOT upper_inf(v.known_period) AND upper(v.known_period) < cutoff
                   AND v.erasure_id IS NULL
                 GROUP BY v.entity ORDER BY v.entity
            LOOP
                -- The erasure of bitemporal.erase, of these versions only (no row: none left).
                SELECT * INTO erased FROM bitemporal_internal.erase_versions(k.entity, p.attribute, why, k.ids, p.policy);
                IF erased.erasure_id IS NOT NULL THEN
                    keys := keys + 1;
                    versions := versions + cardinality(erased.version_ids);
                END IF;
            END LOOP;
        ELSE
            SELECT a.* INTO d FROM bitemporal.app_table a
             WHERE pg_catalog.format('%I.%I', a.table_schema, a.table_name) = p.relation;
            CONTINUE WHEN NOT FOUND;  -- the table is no longer bitemporal: nothing to keep or erase
            FOR k IN EXECUTE pg_catalog.format(
                'SELECT pg_catalog.jsonb_build_object(%s) AS key, pg_catalog.array_agg(v.version_id ORDER BY v.version_id) AS ids '
                '  FROM %s v '
                ' WHERE NOT upper_inf(v.known_period) AND upper(v.known_period) < $1 '
                '   AND NOT EXISTS (SELECT FROM bitemporal.erasures e WHERE e.relation = $2 AND v.version_id = ANY (e.version_ids)) '
                ' GROUP BY %s ORDER BY %s',
                (SELECT pg_catalog.string_agg(pg_catalog.format('%L, v.%I', c, c), ', ' ORDER BY i)
                   FROM pg_catalog.unnest(d.key_columns) WITH ORDINALITY AS u (c, i)),
                p.relation,
                bitemporal_internal.column_list(d.key_columns, 'v.'), bitemporal_internal.column_list(d.key_columns, 'v.'))
                USING cutoff, p.relation
            LOOP
                EXECUTE pg_catalog.format(
                    -- In FROM: (f()).* would call the function once per column.
                    'SELECT * FROM bitemporal_internal.table_erase(pg_catalog.jsonb_populate_record(NULL::%s, $1), $2, $3, $4)',
                    p.relation)
                   INTO erased USING k.key, why, p.policy, k.ids;
                IF erased.erasure_id IS NOT NULL THEN
                    keys := keys + 1;
                    versions := versions + cardinality(erased.version_ids);
                END IF;
            END LOOP;
        END IF;
        RETURN NEXT;
    END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION bitemporal.apply_retention() FROM PUBLIC;
COMMENT ON FUNCTION bitemporal.apply_retention() IS
    'Applies every retention policy: for each, erases the versions whose knowledge ended more than keep_for ago (never current knowledge), one bitemporal.erasures row per key with policy set. Idempotent. Returns per policy the keys and versions erased by this run. Run it from cron or pg_cron as the eraser role.';

-- bitemporal.grant_roles, as erasure.v1.sql defines it, and: the eraser alone
-- gets set_retention and apply_retention too (the writer gets every other
-- SECURITY DEFINER function of the API, as before), and may read the policies
-- and the registry of application tables (store.app_tables looks a table up
-- there before calling its <table>_erase, which its owner grants).
CREATE OR REPLACE FUNCTION bitemporal.grant_roles(
    reader  text DEFAULT 'bitemporal_reader',
    writer  text DEFAULT 'bitemporal_writer',
    auditor text DEFAULT 'bitemporal_auditor',
    eraser  text DEFAULT 'bitemporal_eraser')
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    role_name  text;
    may_create boolean;
    granted    text[] := '{}';
    obj        record;
BEGIN
    SELECT r.rolcreaterole OR r.rolsuper INTO may_create FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
    FOREACH role_name IN ARRAY ARRAY[reader, writer, auditor, eraser] LOOP
        CONTINUE WHEN role_name IS NULL;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name) THEN
            IF NOT may_create THEN
                RAISE NOTICE 'role % does not exist and % may not create it; skipped (grant to existing roles with bitemporal.grant_roles(reader, writer, auditor, eraser))',
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
               AND c.relname NOT IN ('memory_log', 'fact_request', 'erasures', 'alembic_version')
        LOOP
            EXECUTE format('GRANT SELECT ON %s TO %I', obj.rel, reader);
        END LOOP;
    END IF;
    IF writer = ANY (granted) THEN
        FOR obj IN
            SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = 'bitemporal'::regnamespace AND p.prosecdef
               AND NOT (p.proname LIKE 'erase%' OR p.proname IN ('set_retention', 'apply_retention'))
        LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', obj.fn, writer);
        END LOOP;
    END IF;
    IF auditor = ANY (granted) THEN
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA bitemporal TO %I', auditor);
    END IF;
    IF eraser = ANY (granted) THEN
        FOR obj IN
            SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = 'bitemporal'::regnamespace AND p.prosecdef
               AND (p.proname LIKE 'erase%' OR p.proname IN ('set_retention', 'apply_retention'))
        LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', obj.fn, eraser);
        END LOOP;
        EXECUTE format('GRANT SELECT ON bitemporal.erasures TO %I', eraser);
        EXECUTE format('GRANT SELECT ON bitemporal.retention_policy, bitemporal.app_table TO %I', eraser);
    END IF;
    RETURN granted;
END;
$$;
COMMENT ON FUNCTION bitemporal.grant_roles(text, text, text, text) IS
    'Creates the reader, writer, auditor and eraser roles if missing (and allowed) and grants them their privileges (the eraser: EXECUTE on the erase functions and on set_retention and apply_retention, which no other role gets, and SELECT on bitemporal.erasures, bitemporal.retention_policy and bitemporal.app_table, the registry an application table''s erasure looks its table up in); pass existing role names to grant to those instead, NULL to skip one. Idempotent. Returns the roles granted to.';
