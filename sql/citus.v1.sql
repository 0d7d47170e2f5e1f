-- bitemporal: running distributed on Citus (issue 14; migration 0015).
--
-- bitemporal.distribute() turns a migrated store on a Citus coordinator into
-- a distributed one, and is run again after every later migration (it is
-- idempotent; `bitemporal db upgrade --citus` and migrate(citus=True) do
-- both). On plain PostgreSQL nothing here runs: the functions exist, and
-- distribute() refuses (BT502) without the citus extension.
--
-- What it does, and why:
--
--   * Versions and keys are distributed by entity and co-located, so every
--     statement about one key is routed to the one shard holding it, and an
--     entity's attributes stay together. The version table is first given the
--     partitioned layout's shape (bitemporal.partition_versions, one partition
--     unless it already has some): Citus needs the distribution column in
--     every unique and exclusion constraint, and that layout's primary key is
--     (entity, version_id), with evidence's foreign key to a version kept by
--     triggers.
--   * bitemporal.erasures becomes a reference table (a copy on every node):
--     the version table's append-only guard, which runs on the worker holding
--     the shard, lets an erasure through only if it finds the erasure's row.
--   * Every other table (registries of application tables, idempotency
--     requests, evidence, provenance, decay memory, retention policies) stays
--     on the coordinator, a plain local table: none is keyed by entity, none
--     is read on a worker, and so none of their triggers fires there (a
--     reference table's triggers fire on every node: the registry's would
--     create triggers on tables the workers do not have). Statements that
--     join them with the versions are planned by Citus on the coordinator.
--   * Function bodies. Citus cannot plan a LANGUAGE sql function over a
--     distributed table with parameters ("parameterized queries for SQL
--     functions referencing distributed tables are not supported"), and a
--     SQL-standard body that reads a table is a catalog dependency that Citus
--     follows into a cycle when it distributes that table. Every such function
--     is re-created as PL/pgSQL with the same query (RETURN QUERY, RETURN, or
--     the statement itself), its parameters qualified by the function's name as
--     the deparsed body already has them, columns winning over parameters as in
--     SQL (#variable_conflict use_column).
--   * Transaction identity. The write path compares transaction ids (the
--     transaction that last moved a key's knowledge may write at that time
--     again; a version superseded by the transaction that created it is
--     removed). On Citus, the coordinator and each worker run their own local
--     transactions, whose ids differ, and Citus evaluates functions in a
--     modifying statement on the coordinator while triggers run on the worker.
--     Every pg_current_xact_id() in our functions and column defaults is
--     replaced by bitemporal_internal.citus_transaction_id(): the distributed
--     transaction's identifier, the same on every node of one transaction.
--     Likewise its time: each node's transaction starts at its own instant, so
--     a version's knowledge time (the coordinator's) and its recorded_at (the
--     worker's trigger) would differ, and live writes would look back-dated.
--     now() and transaction_timestamp() become
--     bitemporal_internal.citus_transaction_timestamp(), Citus's stamp of the
--     distributed transaction. Both make the transaction a distributed one
--     when it is not yet, so that they answer the same before and after its
--     first statement on a worker.
--   * The invalidation NOTIFY trigger is dropped: it would fire on the worker
--     holding the shard (listeners on the coordinator hear nothing), and a
--     transaction that ran NOTIFY cannot be prepared for the distributed
--     commit. bitemporal.changes() is the feed on Citus.
--   * The functions that run on a worker are propagated there: those of the
--     triggers of the distributed and reference tables, the single-key reads,
--     and every function of ours they call (found by name in their bodies),
--     callees first (a SQL body is checked against the functions the worker
--     already has). The others run on the coordinator only, and some could not
--     be created on a worker at all (their bodies name the row types of tables
--     kept on the coordinator). as_of and history are distributed with
--     entity as their distribution argument, so that a call outside a
--     transaction block runs whole on the worker holding the key. resolve is
--     not (Citus reports a circular dependency for it): it runs on the
--     coordinator and sends its few statements to that worker. Nor are the
--     writes: they announce their knowledge time in pg_locks on the node they
--     run on, which bitemporal.settled_knowledge_time() reads on the
--     coordinator; their statements are routed to the key's worker.
--   * Objects Citus creates on the workers only as dependencies of what it
--     propagates, and that only function bodies name (the knowledge floor
--     sequence, which the knowledge trigger reads; composite types such as
--     bitemporal.batch_item), get there as the dependencies of a function made
--     for the purpose, propagated, and dropped.

CREATE FUNCTION bitemporal_internal.citus_transaction_id()
RETURNS xid8
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
BEGIN
    SELECT * INTO t FROM pg_catalog.get_current_transaction_id();
    IF t.transaction_number = 0 THEN
        -- Not a distributed transaction yet (nothing sent to a worker so far):
        -- make it one, so that the id is the same before and after its first
        -- statement on a worker. Citus gives a transaction its identifier when
        -- it starts an intermediate result: here an empty one, on this node.
        PERFORM pg_catalog.create_intermediate_result('bitemporal_transaction_id', 'SELECT 1 WHERE false');
        SELECT * INTO t FROM pg_catalog.get_current_transaction_id();
    END IF;
    -- Hashed into the upper half of xid8's range, apart from local ids.
    RETURN ((pg_catalog.hashtextextended(
                pg_catalog.format('%s/%s/%s', t.initiator_node_identifier, t.transaction_number,
                                  t.transaction_stamp), 0)
             & 4611686018427387903) | 4611686018427387904)::text::xid8;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_transaction_id() IS
    'On Citus, the identifier of the current distributed transaction as an xid8, the same on the coordinator and on every worker it reaches (a hash of Citus''s distributed transaction id; the local transaction id outside one): what bitemporal.distribute() puts in place of pg_current_xact_id() in the write path. STABLE: Citus evaluates it once on the coordinator for a routed UPDATE.';

CREATE FUNCTION bitemporal_internal.citus_transaction_timestamp()
RETURNS timestamptz
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
BEGIN
    SELECT * INTO t FROM pg_catalog.get_current_transaction_id();
    IF t.transaction_number = 0 THEN
        -- As in citus_transaction_id(): a distributed transaction from now on.
        PERFORM pg_catalog.create_intermediate_result('bitemporal_transaction_id', 'SELECT 1 WHERE false');
        SELECT * INTO t FROM pg_catalog.get_current_transaction_id();
    END IF;
    RETURN t.transaction_stamp;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_transaction_timestamp() IS
    'On Citus, the time of the current distributed transaction, the same on the coordinator and on every worker it reaches (Citus''s stamp of the distributed transaction): what bitemporal.distribute() puts in place of now() and transaction_timestamp() in our functions, so that a version''s knowledge time (given on the coordinator) and its recorded_at (stamped on the worker) are one instant, as they are on one node.';

CREATE FUNCTION bitemporal_internal.citus_adapt_function(f regprocedure)
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
BEGIN
    SELECT * INTO p FROM pg_catalog.pg_proc WHERE oid = f;
    IF p.prosqlbody IS NOT NULL AND EXISTS (
        SELECT FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_class c ON c.oid = d.refobjid
         WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = f
           AND d.refclassid = 'pg_catalog.pg_class'::regclass AND c.relkind IN ('r', 'p', 'v')
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
          AND (def !~ '\m(transaction_timestamp|now)\(\)' OR strpos(def, 'app_table') > 0) THEN
        RETURN false;
    END IF;
    -- Not in the application tables' machinery: those tables stay on the
    -- coordinator, where now() is the transaction's time, and the SQL it
    -- generates must not name our internal schema (its callers may not use it).
    IF strpos(def, 'app_table') = 0 THEN
        def := regexp_replace(def, '(pg_catalog\.)?\m(transaction_timestamp|now)\(\)',
                              'bitemporal_internal.citus_transaction_timestamp()', 'g');
    END IF;
    def := replace(def, 'pg_catalog.pg_current_xact_id()', 'bitemporal_internal.citus_transaction_id()');
    def := replace(def, 'pg_current_xact_id()', 'bitemporal_internal.citus_transaction_id()');
    -- Citus cannot plan an EXISTS subquery with no columns over a distributed
    -- table when it is not routed to one shard ("a column definition list is
    -- required for functions returning record"): give it one.
    def := regexp_replace(def, 'EXISTS(\s*)\((\s*)SELECT(\s+)FROM', 'EXISTS\1(\2SELECT 1\3FROM', 'gi');
    EXECUTE def;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_adapt_function(regprocedure) IS
    'For bitemporal.distribute(): re-creates one function in the shape Citus can run (a SQL-standard body that reads our tables as PL/pgSQL; pg_current_xact_id() as bitemporal_internal.citus_transaction_id(), now() and transaction_timestamp() as bitemporal_internal.citus_transaction_timestamp(); EXISTS (SELECT FROM ...) as EXISTS (SELECT 1 FROM ...)); returns whether it changed anything.';

-- record_many on Citus. Its set-based statements join the batch with the
-- key and version tables laterally, which Citus cannot plan over distributed
-- tables ("complex joins are only supported when all distributed tables are
-- co-located and joined on their distribution columns"). This is the
-- definition of its semantics instead: bitemporal.record for each row, in
-- order, in one transaction; the same checks first (every row, before
-- anything is read), the keys locked in the same order, a row refused for its knowledge time (BT002) reported
-- with the others and the later rows of its key skipped, and BT301 listing
-- them all, nothing written. distribute() makes bitemporal.record_many call
-- it.
-- For bitemporal.stale() on Citus: the versions it reads (the columns it
-- reads), by function. Citus refuses a recursive CTE over a distributed table
-- unless it filters by the distribution column; read through these (PL/pgSQL,
-- their queries planned on their own), the versions are no table of stale()'s
-- query. (Not the version table's row type: partition_versions rebuilds it.)
CREATE FUNCTION bitemporal_internal.citus_input_versions()
RETURNS TABLE (version_id bigint, entity text, attribute text, source text, value jsonb,
               valid_period tstzrange, known_period tstzrange, erased_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY SELECT v.version_id, v.entity, v.attribute, v.source, v.value, v.valid_period,
                        v.known_period, v.erased_at
                   FROM bitemporal.fact_version v
                  WHERE v.version_id IN (SELECT i.input_version FROM bitemporal.artifact_input i
                                          WHERE i.input_version IS NOT NULL);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_input_versions() IS
    'On Citus, for bitemporal.stale(): every version some artifact was derived from.';

CREATE FUNCTION bitemporal_internal.citus_versions(ids bigint[])
RETURNS TABLE (version_id bigint, entity text, attribute text, source text, value jsonb,
               valid_period tstzrange, known_period tstzrange, erased_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY SELECT v.version_id, v.entity, v.attribute, v.source, v.value, v.valid_period,
                        v.known_period, v.erased_at
                   FROM bitemporal.fact_version v WHERE v.version_id = ANY (ids);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_versions(bigint[]) IS
    'On Citus, for bitemporal.stale(): the versions with these ids.';

CREATE FUNCTION bitemporal_internal.record_many_by_row(batch bitemporal.batch_row[], max_errors integer DEFAULT 100)
RETURNS TABLE (line bigint, version_id bigint, created boolean, superseded bigint[], known_at timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    present    timestamptz := pg_catalog.clock_timestamp();
    tx_time    timestamptz := pg_catalog.transaction_timestamp();
    report_max integer := greatest(coalesce(max_errors, 100), 1);
    bad        jsonb := '[]';      -- [[line, sqlstate, reason], ...]
    bad_count  bigint := 0;
    failed     jsonb := '[]';      -- [[entity, attribute], ...] with a refused row
    u          record;
    done       bitemporal.recorded;
BEGIN
    IF batch IS NULL OR cardinality(batch) = 0 THEN
        RETURN;
    END IF;
    SELECT count(*),
           coalesce(jsonb_agg(jsonb_build_array(p.line, p.problem[1], p.problem[2]) ORDER BY p.line)
                        FILTER (WHERE p.rank <= report_max), '[]')
      INTO bad_count, bad
      FROM (SELECT q.line, q.problem, row_number() OVER (ORDER BY q.line) AS rank
              FROM (SELECT b.line,
                           bitemporal_internal.batch_row_problem(b.entity, b.attribute, b.source, b.value,
                                                                 b.valid_from, b.valid_to, b.known_at, present) AS problem
                      FROM unnest(batch) WITH ORDINALITY
                           AS b(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by, line)
                   ) q
             WHERE q.problem IS NOT NULL) p;
    IF bad_count > 0 THEN
        PERFORM bitemporal_internal.raise_batch_error(bad_count, bad);
    END IF;

    -- As record_many does: the knowledge times announced, then every key locked
    -- (the missing ones created, known from their first row's knowledge time)
    -- in (entity, attribute) order, so that batches never deadlock.
    tx_time := bitemporal_internal.announce_knowledge(tx_time, true);
    PERFORM bitemporal_internal.announce_knowledge(pg_catalog.min(b.known_at), false)
       FROM unnest(batch) AS b(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by)
      HAVING pg_catalog.min(b.known_at) IS NOT NULL;
    FOR u IN SELECT DISTINCT ON (b.entity, b.attribute) b.entity, b.attribute, coalesce(b.known_at, tx_time) AS t
               FROM unnest(batch) WITH ORDINALITY
                    AS b(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by, line)
              ORDER BY b.entity, b.attribute, b.line LOOP
        INSERT INTO bitemporal.fact_key AS fk (entity, attribute, first_known_at, last_known_at, last_txid)
        VALUES (u.entity, u.attribute, u.t, u.t, bitemporal_internal.citus_transaction_id())
        ON CONFLICT ON CONSTRAINT fact_key_pkey DO UPDATE SET last_txid = fk.last_txid WHERE false;
    END LOOP;

    FOR u IN SELECT b.*
               FROM unnest(batch) WITH ORDINALITY
                    AS b(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by, line)
              ORDER BY b.line LOOP
        CONTINUE WHEN failed @> jsonb_build_array(jsonb_build_array(u.entity, u.attribute));
        BEGIN
            done := bitemporal.record(u.entity, u.attribute, u.source, u.value, u.valid_from, u.valid_to,
                                      u.known_at, u.recorded_by);
            line := u.line;
            version_id := done.version_id;
            created := done.created;
            superseded := done.superseded;
            known_at := done.known_at;
            RETURN NEXT;
        EXCEPTION WHEN SQLSTATE 'BT002' THEN
            bad := bad || jsonb_build_array(jsonb_build_array(u.line, 'BT002', SQLERRM));
            bad_count := bad_count + 1;
            failed := failed || jsonb_build_array(jsonb_build_array(u.entity, u.attribute));
        END;
    END LOOP;
    IF bad_count > 0 THEN
        PERFORM bitemporal_internal.raise_batch_error(
            bad_count,
            (SELECT jsonb_agg(r.row ORDER BY (r.row ->> 0)::bigint)
               FROM (SELECT b.row FROM jsonb_array_elements(bad) b(row)
                      ORDER BY (b.row ->> 0)::bigint LIMIT report_max) r));
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.record_many_by_row(bitemporal.batch_row[], integer) IS
    'bitemporal.record_many on Citus (bitemporal.distribute() makes it call this): the same checks, then bitemporal.record for each row in order, refused rows (BT002) collected and the later rows of their keys skipped; BT301 with every bad row, nothing written. Same results as record_many, one row at a time.';

CREATE FUNCTION bitemporal.distribute(shard_count integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r          record;
    role_name  text;
    roles      text[];
    stmt       text;
    readers    CONSTANT text[] := ARRAY[
        'bitemporal.as_of(text,text,timestamp with time zone,timestamp with time zone)',
        'bitemporal.history(text,text)'];
    named      text;
    def        text;
    progress   boolean;
    last_error text;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'bitemporal.distribute() needs the citus extension in this database'
            USING ERRCODE = 'BT502',
                  HINT = 'Run it on a Citus coordinator (CREATE EXTENSION citus, and the workers added with citus_add_node).';
    END IF;
    IF shard_count IS NOT NULL AND shard_count NOT BETWEEN 1 AND 64000 THEN
        RAISE EXCEPTION 'shard_count must be from 1 to 64000, not %', shard_count USING ERRCODE = 'BT502';
    END IF;

    -- 1. The coordinator's own catalog, before Citus propagates anything.
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class
                    WHERE oid = 'bitemporal.fact_version'::regclass AND relkind = 'p') THEN
        PERFORM bitemporal.partition_versions(1);
    END IF;
    -- Not this file's own functions: they name pg_current_xact_id() on purpose.
    FOR r IN SELECT p.oid::regprocedure AS f FROM pg_catalog.pg_proc p
              WHERE p.pronamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)
                AND p.oid NOT IN ('bitemporal.distribute(integer)'::regprocedure,
                                  'bitemporal_internal.citus_adapt_function(regprocedure)'::regprocedure,
                                  'bitemporal_internal.citus_transaction_id()'::regprocedure,
                                  'bitemporal_internal.citus_transaction_timestamp()'::regprocedure)
              ORDER BY p.oid LOOP
        PERFORM bitemporal_internal.citus_adapt_function(r.f);
    END LOOP;
    -- as_of reads current knowledge through current_versions inside its query
    -- on fact_key. Once both are PL/pgSQL, that query would run on the worker
    -- and call a function that queries a distributed table from there, which
    -- Citus refuses ("cannot execute a distributed query from a query on a
    -- shard"): its Citus form has the same two branches spelt out.
    CREATE OR REPLACE FUNCTION bitemporal.as_of(
        entity    text,
        attribute text,
        valid_at  timestamptz DEFAULT NULL,
        known_at  timestamptz DEFAULT NULL)
    RETURNS SETOF bitemporal.versions
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $as_of$
    #variable_conflict use_column
    BEGIN
        RETURN QUERY
        SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
               v.valid_period, v.known_period, v.recorded_by, v.carried_from
          FROM bitemporal.fact_key k
         CROSS JOIN LATERAL (
            SELECT c.version_id, c.entity, c.attribute, c.source, c.value,
                   c.valid_period, c.known_period, c.recorded_by, c.carried_from
              FROM bitemporal.fact_version c
             WHERE k.last_known_at <= coalesce(as_of.known_at, bitemporal_internal.citus_transaction_timestamp())
               AND c.entity = as_of.entity
               AND c.attribute = as_of.attribute
               AND upper_inf(c.known_period)
               AND c.valid_period @> coalesce(as_of.valid_at, bitemporal_internal.citus_transaction_timestamp())
            UNION ALL
            SELECT p.version_id, p.entity, p.attribute, p.source, p.value,
                   p.valid_period, p.known_period, p.recorded_by, p.carried_from
              FROM bitemporal.fact_version p
             WHERE k.last_known_at > coalesce(as_of.known_at, bitemporal_internal.citus_transaction_timestamp())
               AND p.entity = as_of.entity
               AND p.attribute = as_of.attribute
               AND p.valid_period @> coalesce(as_of.valid_at, bitemporal_internal.citus_transaction_timestamp())
               AND p.known_period @> coalesce(as_of.known_at, bitemporal_internal.citus_transaction_timestamp())
         ) v
         WHERE k.entity = as_of.entity
           AND k.attribute = as_of.attribute
         ORDER BY v.version_id;
    END;
    $as_of$;
    -- A version removed by the transaction that created it takes its
    -- evidence along (partitioning.v2.sql's trigger): from a worker, that
    -- delete would be a distributed query inside one on a shard. Evidence is
    -- not attached on Citus yet (its own check refuses the insert there).
    DROP TRIGGER IF EXISTS evidence_version_fkey ON bitemporal.fact_version;
    FOR r IN SELECT a.adrelid::regclass AS tbl, att.attname,
                    pg_catalog.pg_get_expr(a.adbin, a.adrelid) AS expr
               FROM pg_catalog.pg_attrdef a
               JOIN pg_catalog.pg_attribute att ON att.attrelid = a.adrelid AND att.attnum = a.adnum
               JOIN pg_catalog.pg_class c ON c.oid = a.adrelid
              WHERE c.relnamespace = 'bitemporal'::regnamespace AND NOT c.relispartition
                AND pg_catalog.pg_get_expr(a.adbin, a.adrelid) LIKE '%pg_current_xact_id()%' LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT bitemporal_internal.citus_transaction_id()',
                                  r.tbl, r.attname);
    END LOOP;
    DROP TRIGGER IF EXISTS fact_version_notify_closed ON bitemporal.fact_version;
    -- changes() asks, per closed version, which versions superseded it through
    -- a function reading the version table: on Citus a query pushed down to
    -- the shards cannot call one ("cannot push down this subquery"). The same
    -- question as a lateral subquery joined on entity is co-located.
    CREATE OR REPLACE FUNCTION bitemporal.changes(
        known_from timestamptz DEFAULT NULL,
        known_to   timestamptz DEFAULT NULL,
        entity     text DEFAULT NULL,
        attribute  text DEFAULT NULL)
    RETURNS SETOF bitemporal.change
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $changes$
    #variable_conflict use_variable
    BEGIN
        IF known_from IS NOT NULL AND known_to IS NOT NULL AND known_to <= known_from THEN
            RAISE EXCEPTION 'knowledge window [%, %) is %', known_from, known_to,
                    CASE WHEN known_to = known_from THEN 'empty' ELSE 'inverted' END
                USING ERRCODE = 'BT001',
                      HINT = 'A window is half-open [known_from, known_to): known_to must be later than known_from.';
        END IF;
        RETURN QUERY
        SELECT c.* FROM (
            SELECT 'learned'::bitemporal.change_kind, lower(v.known_period), v.version_id,
                   v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
                   v.recorded_by, v.carried_from, '{}'::bigint[]
              FROM bitemporal.fact_version v
             WHERE v.carried_from IS NULL
               AND lower(v.known_period) >= coalesce(known_from, '-infinity')
               AND lower(v.known_period) < coalesce(known_to, 'infinity')
               AND (entity IS NULL OR v.entity = entity)
               AND (attribute IS NULL OR v.attribute = attribute)
            UNION ALL
            SELECT CASE WHEN pg_catalog.cardinality(s.by_ids) > 0 THEN 'superseded'
                        ELSE 'retracted' END::bitemporal.change_kind,
                   upper(v.known_period), v.version_id,
                   v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
                   v.recorded_by, v.carried_from, s.by_ids
              FROM bitemporal.fact_version v
             CROSS JOIN LATERAL (
                   SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}'::bigint[]) AS by_ids
                     FROM bitemporal.fact_version w
                    WHERE w.entity = v.entity AND w.attribute = v.attribute AND w.source = v.source
                      AND w.valid_period && v.valid_period AND w.known_period @> upper(v.known_period)
                      AND lower(w.known_period) = upper(v.known_period) AND w.carried_from IS NULL) s
             WHERE NOT upper_inf(v.known_period)
               AND upper(v.known_period) >= coalesce(known_from, '-infinity')
               AND upper(v.known_period) < coalesce(known_to, 'infinity')
               AND (entity IS NULL OR v.entity = entity)
               AND (attribute IS NULL OR v.attribute = attribute)
        ) AS c (change, changed_at, version_id, entity, attribute, source, value, valid_period,
                known_period, recorded_by, carried_from, by_version_ids)
        ORDER BY c.changed_at, c.version_id, c.change;
    END;
    $changes$;
    def := regexp_replace(
        regexp_replace(
            pg_catalog.pg_get_functiondef('bitemporal.stale(timestamptz)'::regprocedure),
            'LEFT JOIN bitemporal\.fact_version v ON \(\(v\.version_id = i\.input_version\)\)',
            'LEFT JOIN bitemporal_internal.citus_input_versions() v ON ((v.version_id = i.input_version))'),
        'FROM bitemporal\.fact_version w\s+WHERE \(w\.version_id = ANY \(f\.by_ids\)\)',
        'FROM bitemporal_internal.citus_versions(f.by_ids) w');
    IF strpos(def, 'bitemporal.fact_version') > 0 THEN
        RAISE EXCEPTION 'cannot adapt bitemporal.stale to Citus: it reads the version table in an unexpected shape'
            USING ERRCODE = 'BT502';
    END IF;
    EXECUTE def;
    -- record_artifact checks its inputs exist with a subquery correlated to the
    -- array it unnests, which Citus refuses over a distributed table
    -- ("correlated subqueries are not supported when the FROM clause contains
    -- a set returning function"): the same check, the missing ids found by one
    -- uncorrelated query.
    IF strpos(pg_catalog.pg_get_functiondef(
                  'bitemporal.record_artifact(text,text,bigint[],bigint[],jsonb,timestamptz,text)'::regprocedure),
              'WHERE NOT EXISTS (SELECT 1 FROM bitemporal.fact_version v WHERE v.version_id = g.id) LIMIT 1;') > 0 THEN
        EXECUTE replace(
            pg_catalog.pg_get_functiondef(
                'bitemporal.record_artifact(text,text,bigint[],bigint[],jsonb,timestamptz,text)'::regprocedure),
            'WHERE NOT EXISTS (SELECT 1 FROM bitemporal.fact_version v WHERE v.version_id = g.id) LIMIT 1;',
            'WHERE g.id = ANY (ARRAY(SELECT pg_catalog.unnest(version_ids) EXCEPT SELECT v.version_id '
            'FROM bitemporal.fact_version v WHERE v.version_id = ANY (version_ids))) LIMIT 1;');
    ELSIF strpos(pg_catalog.pg_get_functiondef(
                     'bitemporal.record_artifact(text,text,bigint[],bigint[],jsonb,timestamptz,text)'::regprocedure),
                 'EXCEPT SELECT v.version_id') = 0 THEN
        RAISE EXCEPTION 'cannot adapt bitemporal.record_artifact to Citus: its version check has an unexpected shape'
            USING ERRCODE = 'BT502';
    END IF;
    -- CREATE OR REPLACE keeps record_many's privileges.
    CREATE OR REPLACE FUNCTION bitemporal.record_many(batch bitemporal.batch_row[], max_errors integer DEFAULT 100)
    RETURNS TABLE (line bigint, version_id bigint, created boolean, superseded bigint[], known_at timestamptz)
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $record_many$
    BEGIN
        RETURN QUERY SELECT * FROM bitemporal_internal.record_many_by_row(batch, max_errors);
    END;
    $record_many$;

    -- 2. Distribution, with Citus propagating what it creates.
    PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    -- The roles granted our objects, as Citus's own roles. First created on
    -- every worker where missing, committed there at once (a role created in
    -- this transaction would be invisible to Citus's other connections to the
    -- worker, which create the shards and their grants); then marked
    -- distributed in this database, so that a later GRANT of one to a login
    -- role reaches the workers too. Citus marks the owner of an object it
    -- propagates: a schema each one owns, for a moment.
    SELECT coalesce(pg_catalog.array_agg(x.rolname ORDER BY x.rolname), '{}'),
           coalesce(pg_catalog.string_agg(pg_catalog.format(
               'IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = %L) THEN CREATE ROLE %I %s; END IF;',
               x.rolname, x.rolname, CASE WHEN x.rolcanlogin THEN 'LOGIN' ELSE 'NOLOGIN' END), ' '
               ORDER BY x.rolname), '')
      INTO roles, stmt
      FROM (SELECT DISTINCT ro.rolname, ro.rolcanlogin
              FROM (SELECT (pg_catalog.aclexplode(n.nspacl)).grantee FROM pg_catalog.pg_namespace n
                     WHERE n.nspname IN ('bitemporal', 'bitemporal_internal') AND n.nspacl IS NOT NULL
                    UNION
                    SELECT (pg_catalog.aclexplode(c.relacl)).grantee FROM pg_catalog.pg_class c
                     WHERE c.relnamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)
                       AND c.relacl IS NOT NULL
                    UNION
                    SELECT (pg_catalog.aclexplode(p.proacl)).grantee FROM pg_catalog.pg_proc p
                     WHERE p.pronamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)
                       AND p.proacl IS NOT NULL) g (grantee)
              JOIN pg_catalog.pg_roles ro ON ro.oid = g.grantee
             WHERE NOT ro.rolsuper
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object o
                                WHERE o.classid = 'pg_catalog.pg_authid'::regclass AND o.objid = ro.oid)) x;
    IF pg_catalog.cardinality(roles) > 0 THEN
        -- All at once, before this transaction holds anything on a worker.
        SELECT pg_catalog.string_agg(w.nodename || ':' || w.nodeport || ': ' || w.result, '; ')
          INTO last_error
          FROM pg_catalog.run_command_on_workers(
                   -- On the worker only: Citus would send a worker's DDL on to the
                   -- other nodes, the coordinator included, where this transaction
                   -- holds the roles.
                   'SET citus.enable_ddl_propagation TO off; DO $r$BEGIN ' || stmt || ' END$r$') w
         WHERE NOT w.success;
        IF last_error IS NOT NULL THEN
            RAISE EXCEPTION 'cannot create the roles % on the workers: %', roles, last_error
                USING ERRCODE = 'BT502';
        END IF;
    END IF;
    FOREACH role_name IN ARRAY roles LOOP
        EXECUTE pg_catalog.format('CREATE SCHEMA bitemporal_citus_role AUTHORIZATION %I', role_name);
        DROP SCHEMA bitemporal_citus_role;
    END LOOP;
    -- The schemas' grants, again with Citus propagating them: those made while
    -- migrating stayed on the coordinator, and a role's query on a worker
    -- (a delegated read) needs USAGE there.
    FOR r IN SELECT n.nspname, ro.rolname, a.privilege_type
               FROM pg_catalog.pg_namespace n
              CROSS JOIN LATERAL pg_catalog.aclexplode(n.nspacl) a
               JOIN pg_catalog.pg_roles ro ON ro.oid = a.grantee
              WHERE n.nspname IN ('bitemporal', 'bitemporal_internal') AND a.grantee <> n.nspowner
              ORDER BY 1, 2, 3 LOOP
        EXECUTE pg_catalog.format('GRANT %s ON SCHEMA %I TO %I', r.privilege_type, r.nspname, r.rolname);
    END LOOP;
    -- One connection a worker: the version table's foreign key to the keys is
    -- created in the same transaction as both become distributed.
    PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
    IF shard_count IS NOT NULL THEN
        PERFORM pg_catalog.set_config('citus.shard_count', shard_count::text, true);
    END IF;
    -- The distributed tables' trigger functions first: a shard's triggers need
    -- them on its worker (the other functions follow the tables, whose row
    -- types some of them name).
    FOR r IN SELECT DISTINCT p.oid::regprocedure AS f FROM pg_catalog.pg_proc p
               JOIN pg_catalog.pg_trigger g ON g.tgfoid = p.oid
              WHERE g.tgrelid IN ('bitemporal.fact_key'::regclass, 'bitemporal.fact_version'::regclass)
                AND p.pronamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace)
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object o
                                 WHERE o.classid = 'pg_catalog.pg_proc'::regclass AND o.objid = p.oid) LOOP
        PERFORM pg_catalog.create_distributed_function(r.f);
    END LOOP;
    -- A store distributed later holds rows, which Citus copies into the new
    -- shards: our triggers must not take that copy for new writes (they would
    -- stamp recorded_at anew and refuse old knowledge). Off for the copy, on
    -- again on every shard afterwards; the rows arrive as they were.
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid = 'bitemporal.fact_key'::regclass) THEN
        ALTER TABLE bitemporal.fact_key DISABLE TRIGGER USER;
        PERFORM pg_catalog.create_distributed_table('bitemporal.fact_key', 'entity');
        ALTER TABLE bitemporal.fact_key ENABLE TRIGGER USER;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid = 'bitemporal.fact_version'::regclass) THEN
        ALTER TABLE bitemporal.fact_version DISABLE TRIGGER USER;
        PERFORM pg_catalog.create_distributed_table('bitemporal.fact_version', 'entity',
                                                    colocate_with => 'bitemporal.fact_key');
        ALTER TABLE bitemporal.fact_version ENABLE TRIGGER USER;
    END IF;

    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid = 'bitemporal.erasures'::regclass) THEN
        ALTER TABLE bitemporal.erasures DISABLE TRIGGER USER;
        PERFORM pg_catalog.create_reference_table('bitemporal.erasures');
        ALTER TABLE bitemporal.erasures ENABLE TRIGGER USER;
    END IF;

    SELECT pg_catalog.string_agg(t.oid::regtype::text, ', ' ORDER BY t.oid) INTO named
      FROM pg_catalog.pg_type t
      JOIN pg_catalog.pg_class c ON c.oid = t.typrelid AND c.relkind = 'c'
     WHERE t.typnamespace IN ('bitemporal'::regnamespace, 'bitemporal_internal'::regnamespace);
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION bitemporal_internal.citus_dependencies(%s) RETURNS bigint LANGUAGE sql '
        'RETURN pg_catalog.currval(''bitemporal.knowledge_floor''::regclass)', named);
    EXECUTE pg_catalog.format('SELECT pg_catalog.create_distributed_function(%L::regprocedure)',
                              'bitemporal_internal.citus_dependencies(' || named || ')');
    EXECUTE pg_catalog.format('DROP FUNCTION bitemporal_internal.citus_dependencies(%s)', named);

    -- The functions a worker runs, with every function of ours they call,
    -- propagated callees first; a call of itself does not count.
    CREATE TEMPORARY TABLE bitemporal_citus_call ON COMMIT DROP AS
    WITH RECURSIVE f AS (
        SELECT p.oid, n.nspname || '.' || p.proname || '(' AS call, pg_catalog.pg_get_functiondef(p.oid) AS def
          FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
         WHERE p.prokind = 'f'
           -- Of the API only the delegated reads: no worker runs another (a name
           -- in a message would be taken for a call here), and Citus reports a
           -- circular dependency for resolve, then refuses every GRANT on it.
           AND (n.nspname = 'bitemporal_internal'
                OR p.oid IN (SELECT u.f::regprocedure FROM pg_catalog.unnest(readers) u(f)))
           -- Not those naming the row type of a table on the coordinator, in
           -- their signature or in a variable they declare: a PL/pgSQL caller
           -- may call them in a branch a worker never takes.
           AND pg_catalog.pg_get_functiondef(p.oid) !~ (
               SELECT E'\\s(' || pg_catalog.string_agg(pg_catalog.replace(c.oid::regclass::text, '.', E'\\.'), '|')
                      || E')(%ROWTYPE)?(\\[\\])?\\s*(;|:=)'
                 FROM pg_catalog.pg_class c
                WHERE c.relnamespace = 'bitemporal'::regnamespace AND c.relkind IN ('r', 'p')
                  AND NOT c.relispartition
                  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition dp WHERE dp.logicalrelid = c.oid))
           AND NOT EXISTS (
               SELECT FROM pg_catalog.pg_depend d
                 JOIN pg_catalog.pg_type ty ON ty.oid = d.refobjid
                 JOIN pg_catalog.pg_class c ON c.oid = ty.typrelid AND c.relkind IN ('r', 'p')
                WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid
                  AND d.refclassid = 'pg_catalog.pg_type'::regclass
                  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition dp WHERE dp.logicalrelid = c.oid))),
    edge AS (
        SELECT a.oid AS caller, b.oid AS callee FROM f a JOIN f b ON a.oid <> b.oid AND strpos(a.def, b.call) > 0),
    need AS (
        -- (Citus's own triggers on them, citus_truncate_trigger, are not ours.)
        SELECT g.tgfoid AS oid FROM pg_catalog.pg_trigger g JOIN f ON f.oid = g.tgfoid
         WHERE g.tgrelid IN ('bitemporal.fact_key'::regclass, 'bitemporal.fact_version'::regclass,
                             'bitemporal.erasures'::regclass) AND NOT g.tgisinternal
        UNION
        SELECT u.f::regprocedure::oid FROM pg_catalog.unnest(readers) u(f)
        UNION
        SELECT e.callee FROM need JOIN edge e ON e.caller = need.oid)
    SELECT need.oid AS fn, e.callee FROM need LEFT JOIN edge e ON e.caller = need.oid;
    LOOP
        progress := false;
        FOR r IN SELECT DISTINCT c.fn::regprocedure AS f FROM bitemporal_citus_call c
                  WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object o
                                     WHERE o.classid = 'pg_catalog.pg_proc'::regclass AND o.objid = c.fn)
                    AND NOT EXISTS (SELECT FROM bitemporal_citus_call d
                                     WHERE d.fn = c.fn AND d.callee IS NOT NULL
                                       AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object o
                                                        WHERE o.classid = 'pg_catalog.pg_proc'::regclass
                                                          AND o.objid = d.callee)) LOOP
            PERFORM pg_catalog.create_distributed_function(r.f);
            progress := true;
        END LOOP;
        EXIT WHEN NOT progress;
    END LOOP;
    SELECT pg_catalog.string_agg(DISTINCT c.fn::regprocedure::text, ', ') INTO last_error
      FROM bitemporal_citus_call c
     WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object o
                        WHERE o.classid = 'pg_catalog.pg_proc'::regclass AND o.objid = c.fn);
    IF last_error IS NOT NULL THEN
        RAISE EXCEPTION 'cannot propagate % to the workers: they call each other', last_error
            USING ERRCODE = 'BT502';
    END IF;
    DROP TABLE bitemporal_citus_call;
    -- Citus takes resolve along as a dependency of one of these (it does not say
    -- of which), then reports a circular dependency for it and refuses every
    -- GRANT on it. No worker calls it: it is no distributed object.
    PERFORM pg_catalog.citus_unmark_object_distributed(
                'pg_catalog.pg_proc'::regclass,
                'bitemporal.resolve(text,text,timestamptz,timestamptz,timestamptz)'::regprocedure, 0, false)
      FROM pg_catalog.pg_dist_object o
     WHERE o.classid = 'pg_catalog.pg_proc'::regclass
       AND o.objid = 'bitemporal.resolve(text,text,timestamptz,timestamptz,timestamptz)'::regprocedure;
    -- Then the reads get their distribution argument (a function that another
    -- one's propagation took along as a plain dependency gets it too).
    FOR r IN SELECT u.f::regprocedure AS f FROM pg_catalog.unnest(readers) u(f) LOOP
        PERFORM pg_catalog.create_distributed_function(r.f, 'entity', colocate_with => 'bitemporal.fact_key');
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal.distribute(integer) IS
    'On a Citus coordinator: distributes the store (versions and keys by entity, co-located, in shard_count shards or Citus''s default; bitemporal.erasures as a reference table, the other tables on the coordinator; every function on every node but those naming a coordinator table''s row type; as_of and history delegated to the worker holding the key). Idempotent: run it again after every migration (bitemporal db upgrade --citus does). Owner only. BT502 without Citus.';
REVOKE ALL ON FUNCTION bitemporal.distribute(integer) FROM PUBLIC;
