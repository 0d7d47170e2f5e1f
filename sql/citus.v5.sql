-- bitemporal on Citus, version 5 (migration 0028): single-key writes
-- delegated too (issue 14).
--
--   * bitemporal_internal.citus_delegated_writes(): the functions distribute()
--     delegates, forced, to the worker holding the key, by their entity
--     argument: bitemporal_internal.write_key (facts_write.v10.sql), all that
--     record and retract do to a key once their knowledge time is announced on
--     the coordinator. They call it inside their own transaction, where Citus
--     delegates only a function distributed with force_delegation, and only
--     when the call is in a FROM clause (not a PL/pgSQL simple expression);
--     the distribution argument is then a constant of each execution's plan.
--     A write is one command to the worker, then COMMIT (one phase), where an
--     interior change sent five.
--   * bitemporal.distribute(), version 4: as citus.v4.sql defines it
--     (version 3), propagating those functions with their callees and
--     delegating them.

CREATE FUNCTION bitemporal_internal.citus_delegated_writes()
RETURNS regprocedure[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
RETURN ARRAY[
    'bitemporal_internal.write_key(text,text,text,tstzrange,timestamp with time zone,timestamp with time zone,jsonb,text,boolean)'
]::regprocedure[];
COMMENT ON FUNCTION bitemporal_internal.citus_delegated_writes() IS
    'For bitemporal.distribute() (version 4, citus.v5.sql): the single-key writes delegated, forced (they are called inside a transaction), by their entity argument to the worker holding the key (write_key).';

-- bitemporal.distribute as citus.v4.sql defines it (version 3), with the
-- writes of bitemporal_internal.citus_delegated_writes().

CREATE OR REPLACE FUNCTION bitemporal.distribute(shard_count integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r          record;
    role_name  text;
    roles      text[];
    stmt       text;
    -- Version 3: the list is bitemporal_internal.citus_delegated_reads().
    readers    CONSTANT regprocedure[] := bitemporal_internal.citus_delegated_reads();
    -- Version 4: and the writes, bitemporal_internal.citus_delegated_writes().
    writers    CONSTANT regprocedure[] := bitemporal_internal.citus_delegated_writes();
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
    -- delete would be a distributed query inside one on a shard. On Citus the
    -- evidence goes at commit instead, on the coordinator (version 2:
    -- bitemporal_internal.citus_evidence_kept).
    DROP TRIGGER IF EXISTS evidence_version_fkey ON bitemporal.fact_version;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_trigger
                    WHERE tgrelid = 'bitemporal.evidence'::regclass AND tgname = 'evidence_version_removed') THEN
        CREATE CONSTRAINT TRIGGER evidence_version_removed AFTER INSERT ON bitemporal.evidence
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
            EXECUTE FUNCTION bitemporal_internal.citus_evidence_kept();
        COMMENT ON TRIGGER evidence_version_removed ON bitemporal.evidence IS
            'On Citus: evidence of a version its own transaction removed goes at commit (see bitemporal_internal.citus_evidence_kept).';
    END IF;
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
    -- (citus.v2.sql) Readers read bitemporal.table_erasures, not the erasures
    -- table under it, and on Citus a view's shards are read with the reader's
    -- privileges: see bitemporal_internal.citus_erasures_readable.
    PERFORM bitemporal_internal.citus_erasures_readable();

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
                OR p.oid IN (SELECT u.f::oid FROM pg_catalog.unnest(readers) u(f)))
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
        SELECT u.f::oid FROM pg_catalog.unnest(readers) u(f)
        UNION
        SELECT u.f::oid FROM pg_catalog.unnest(writers) u(f)
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
    -- Then the reads get their distribution argument (a function that another
    -- one's propagation took along as a plain dependency gets it too).
    FOR r IN SELECT u.f AS f FROM pg_catalog.unnest(readers) u(f) LOOP
        PERFORM pg_catalog.create_distributed_function(r.f, 'entity', colocate_with => 'bitemporal.fact_key');
    END LOOP;
    -- Version 4: the writes too, called by record and retract inside their
    -- transaction on the coordinator, where only a forced delegation applies
    -- (Citus then keeps the rest of the transaction on that worker's key).
    FOR r IN SELECT u.f AS f FROM pg_catalog.unnest(writers) u(f) LOOP
        PERFORM pg_catalog.create_distributed_function(r.f, 'entity', colocate_with => 'bitemporal.fact_key',
                                                       force_delegation => true);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal.distribute(integer) IS
    'On a Citus coordinator: distributes the store (versions and keys by entity, co-located, in shard_count shards or Citus''s default; bitemporal.erasures as a reference table, the other tables on the coordinator; every function on every node but those naming a coordinator table''s row type; the reads bitemporal_internal.citus_delegated_reads() lists, and the writes bitemporal_internal.citus_delegated_writes() lists, delegated to the worker holding the key, version 4, citus.v5.sql; bitemporal.table_erasures read through a function run as its owner, version 2, citus.v2.sql). Idempotent: run it again after every migration (bitemporal db upgrade --citus does). Owner only. BT502 without Citus.';
REVOKE ALL ON FUNCTION bitemporal.distribute(integer) FROM PUBLIC;
