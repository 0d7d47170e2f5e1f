-- bitemporal on Citus, version 3 (migration 0018): answers at a settled
-- knowledge time never change on Citus either (issue 14).
--
-- The load test found, now and then, an answer at a settled knowledge time
-- that changed afterwards. Not a write visible too late: Citus commits a
-- distributed write's workers (COMMIT PREPARED, or COMMIT without two-phase
-- commit) from the coordinator's commit before the coordinator releases its
-- locks, so the write's announcement there holds the settled time down until
-- its versions are visible on the workers. A torn read: resolve, PL/pgSQL,
-- read the key's last_known_at in one statement and, when that was at or
-- before known_at, only the open versions (bitemporal_internal.current_versions)
-- in the next. On one node both statements share the caller's snapshot; on
-- Citus each is its own query on the worker, with a snapshot of its own. A
-- write that closed a version at a time after known_at and committed between
-- the two left that version in neither: the first statement saw the key's
-- old last_known_at, the second found the version closed. That answer then
-- "changed" once the write was in every snapshot (the version is still known
-- at known_at).
--
-- Here citus_adapt_function (version 3), which bitemporal.distribute() runs on
-- every function, makes a PL/pgSQL body read through bitemporal.as_of where it
-- read bitemporal_internal.current_versions: on Citus as_of is one query that
-- takes the key's last_known_at and the versions it chooses by it from one
-- snapshot (distribute() gives it that form), so both branches of resolve
-- answer from a single snapshot, at the cost current_versions had (one query
-- routed to the key's worker). Nothing changes on one node, nor on a Citus
-- coordinator until distribute() runs (bitemporal db upgrade --citus does).

-- bitemporal_internal.citus_adapt_function as distributed_tables.v1.sql defines
-- it (version 2), and a PL/pgSQL body's reads of current knowledge through
-- bitemporal.as_of: see version 3 above.

CREATE OR REPLACE FUNCTION bitemporal_internal.citus_adapt_function(f regprocedure)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    def     text := pg_catalog.pg_get_functiondef(f);
    head    text;
    body    text;
    stmt    text;
    p       pg_catalog.pg_proc;
    -- Version 3: how a PL/pgSQL body reads current knowledge (fast_reads.v1.sql).
    current_read CONSTANT text := 'FROM bitemporal_internal.current_versions(';
    -- (enable_table's versions are known from the transaction's start, which is
    -- bitemporal.app_table.enabled_at, a column default: disable_table compares them.)
    untimed CONSTANT regprocedure[] := ARRAY['bitemporal_internal.create_table_functions(regclass)',
                                             'bitemporal.enable_table(regclass,text[],timestamptz)']::regprocedure[];
BEGIN
    SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = f;
    -- Version 2: a body reading our composite types' columns too ('c'): see
    -- distributed_tables.v1.sql's header.
    IF p.prosqlbody IS NOT NULL AND EXISTS (
        SELECT FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_class c ON c.oid = d.refobjid
         WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = f
           AND d.refclassid = 'pg_catalog.pg_class'::regclass AND c.relkind IN ('r', 'p', 'v', 'c')
           AND c.relnamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)) THEN
        body := substring(def FROM E'\nBEGIN ATOMIC\n(.*);\nEND\\s*$');
        head := substring(def FROM E'^(.*?)\nBEGIN ATOMIC\n');
        stmt := CASE
            WHEN p.proretset THEN 'RETURN QUERY ' || body || ';'
            WHEN p.prorettype = 'pg_catalog.void'::regtype THEN body || ';'
            ELSE 'RETURN (' || body || ');' END;
        IF body IS NULL THEN
            body := substring(def FROM E'\nRETURN (.*?)\\s*$');
            head := substring(def FROM E'^(.*?)\nRETURN ');
            stmt := 'RETURN ' || body || ';';
        END IF;
        IF head IS NULL OR body IS NULL THEN
            RAISE EXCEPTION 'cannot adapt % to Citus: its SQL-standard body has an unexpected shape', f
                USING ERRCODE = 'BT502';
        END IF;
        -- A PL/pgSQL body is bound at run time: pin the path, as every such
        -- function of ours does (the deparsed body names every object with
        -- its schema).
        IF head !~ E'\n SET search_path' THEN
            head := head || E'\n SET search_path TO ''pg_catalog'', ''pg_temp''';
        END IF;
        -- A SQL-standard body is bound when created, and a role may call an API
        -- function whose body calls our internals without any right on their
        -- schema; a PL/pgSQL body looks them up when it runs. The API's such
        -- functions (reads) run as the owner, like resolve and history.
        IF p.pronamespace = 'bitemporal'::regnamespace AND NOT p.prosecdef THEN
            head := head || E'\n SECURITY DEFINER';
        END IF;
        def := regexp_replace(head, E'\n LANGUAGE sql(\n|$)', E'\n LANGUAGE plpgsql\\1')
            || E'\nAS $citus$\n#variable_conflict use_column\nBEGIN\n' || stmt || E'\nEND\n$citus$';
    ELSIF strpos(def, 'pg_current_xact_id()') = 0 AND def !~* 'EXISTS\s*\(\s*SELECT\s+FROM'
          AND strpos(def, current_read) = 0
          AND (def !~ '\m(transaction_timestamp|now)\(\)' OR f = ANY (untimed)) THEN
        RETURN false;
    END IF;
    -- Version 2: the application tables' writes too (lock_table_key gave a
    -- new key the coordinator's transaction time, and the key's next write
    -- in the same transaction Citus's stamp). Not the functions it generates
    -- for a table: they must not name our internal schema (their callers may
    -- not use it).
    IF f <> ALL (untimed) THEN
        def := regexp_replace(def, '(pg_catalog\.)?\m(transaction_timestamp|now)\(\)',
                              'bitemporal_internal.citus_transaction_timestamp()', 'g');
    END IF;
    def := replace(def, 'pg_catalog.pg_current_xact_id()', 'bitemporal_internal.citus_transaction_id()');
    def := replace(def, 'pg_current_xact_id()', 'bitemporal_internal.citus_transaction_id()');
    -- Citus cannot plan an EXISTS subquery with no columns over a distributed
    -- table when it is not routed to one shard ("a column definition list is
    -- required for functions returning record"): give it one.
    def := regexp_replace(def, 'EXISTS(\s*)\((\s*)SELECT(\s+)FROM', 'EXISTS\1(\2SELECT 1\3FROM', 'gi');
    -- Version 3: current_versions is right only for a known_at at or after the
    -- key's last_known_at read in the same snapshot. A PL/pgSQL body that read
    -- it in an earlier statement (resolve) had its own snapshot for each on
    -- Citus: bitemporal.as_of checks it in the query that reads the versions
    -- (a SQL-standard body is one statement, and as_of's own is replaced by
    -- distribute()).
    IF p.prosqlbody IS NULL THEN
        def := replace(def, current_read, 'FROM bitemporal.as_of(');
    END IF;
    EXECUTE def;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_adapt_function(regprocedure) IS
    'For bitemporal.distribute(): re-creates one function in the shape Citus can run (a PL/pgSQL body''s reads of bitemporal_internal.current_versions through bitemporal.as_of, which on Citus takes the key''s last_known_at and the versions from one snapshot, version 3, citus.v3.sql; a SQL-standard body that reads our tables as PL/pgSQL; pg_current_xact_id() as bitemporal_internal.citus_transaction_id(), now() and transaction_timestamp() as bitemporal_internal.citus_transaction_timestamp(); EXISTS (SELECT FROM ...) as EXISTS (SELECT 1 FROM ...)); returns whether it changed anything.';
