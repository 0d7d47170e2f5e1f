-- bitemporal: application tables distributed on Citus (issue 14; migration 0016).
--
-- bitemporal.distribute_table(relation) distributes a bitemporal application
-- table of a distributed store by its first key column, its key table with
-- it (co-located), so that every statement about one key is routed to the one
-- shard holding it. What that takes, and why:
--
--   * The table's triggers run on the worker holding the shard, where the
--     registry (bitemporal.app_table, on the coordinator) is not, and where
--     the trigger's table is the shard (TG_TABLE_NAME is person_102040). A
--     distributed table's triggers therefore carry what they need as
--     arguments: the table's name, its key table's, and its key columns; its
--     value columns are the shard's own columns. bitemporal_internal.table_identity
--     answers that question for both kinds of table (arguments, or the
--     registry), and the rules themselves (bitemporal_internal.key_knowledge_event,
--     bitemporal_internal.erasing_row) take it as parameters: the registry's
--     function table_knowledge_event now calls the first, table_guard both (and
--     table_erasing, which nothing calls any more, is dropped), so one rule
--     serves both.
--   * Citus needs the distribution column in every unique constraint: the
--     primary key becomes (first key column, version_id). version_id stays an
--     identity, unique by its sequence.
--   * Every UPDATE and DELETE a write issues names the key (table_cut and
--     table_erase, here): on one node that changes nothing but the plan's
--     filter, on Citus it is what routes the statement to one shard.
--   * One knowledge time a transaction: citus_adapt_function (version 2) now
--     gives the application tables' writes Citus's transaction stamp too, as
--     it gave the fact store's (a new key took the coordinator's transaction
--     time, the key's next write in the same transaction the stamp).
--   * citus_adapt_function (version 2) also makes PL/pgSQL a SQL-standard
--     body that reads the columns of one of our composite types: Citus
--     follows such a dependency of retrospective_diff on resolve's result
--     type back to resolve, and refused to distribute resolve (citus.v2.sql).
--   * <table>_as_of is a SQL function, which Citus cannot plan over a
--     distributed table: such a table's is PL/pgSQL (citus_table_as_of), made
--     again by refresh_table (version 3).
--
-- Not distributed: a table with temporal references (bitemporal.add_reference),
-- whose checks read the other table of the reference from the trigger; it
-- stays on the coordinator, and distribute_table says so (BT502).
--
-- Migration 0016 loads this file with Citus's DDL propagation off: these
-- functions reach the workers from distribute_table, after distribute() has
-- given them Citus's transaction id.

-- bitemporal_internal.citus_adapt_function as citus.v1.sql defines it, but for
-- the application tables' writes: see its version 2 comment.
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
    EXECUTE def;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_adapt_function(regprocedure) IS
    'For bitemporal.distribute(): re-creates one function in the shape Citus can run (a SQL-standard body that reads our tables as PL/pgSQL; pg_current_xact_id() as bitemporal_internal.citus_transaction_id(), now() and transaction_timestamp() as bitemporal_internal.citus_transaction_timestamp(); EXISTS (SELECT FROM ...) as EXISTS (SELECT 1 FROM ...)); returns whether it changed anything.';

CREATE FUNCTION bitemporal_internal.table_identity(
    relation          regclass,
    args              text[],
    OUT table_name    text,
    OUT key_table     text,
    OUT key_columns   text[],
    OUT value_columns text[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_catalog.cardinality(args) >= 3 THEN
        -- A distributed table's trigger: relation may be a shard, on a worker.
        -- (TG_ARGV counts from 0: a slice counts from 1.)
        args := args[:];
        table_name := args[1];
        key_table := args[2];
        key_columns := args[3:];
        SELECT coalesce(pg_catalog.array_agg(a.attname::text ORDER BY a.attnum), '{}') INTO value_columns
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = relation AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
           AND NOT a.attname = ANY (key_columns)
           AND a.attname NOT IN ('version_id', 'valid_period', 'known_period', 'carried_from', 'recorded_in');
        RETURN;
    END IF;
    SELECT pg_catalog.format('%I.%I', a.table_schema, a.table_name),
           pg_catalog.format('%I.%I', a.table_schema, a.key_table), a.key_columns, a.value_columns
      INTO table_name, key_table, key_columns, value_columns
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      JOIN bitemporal.app_table a ON a.table_schema = n.nspname AND a.table_name = c.relname
     WHERE c.oid = relation;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_identity(regclass, text[]) IS
    'For the triggers of application tables: the table''s qualified name, its key table''s, its key and value columns. From the trigger''s arguments when it has them (a distributed table, whose trigger may run on a shard on a worker: value columns from the relation''s own columns), else from bitemporal.app_table; all NULL for a table not registered.';

CREATE FUNCTION bitemporal_internal.key_knowledge_event(
    table_name text, key_table text, key_columns text[], image anyelement, at timestamptz, latest timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    match   text := pg_catalog.format('ROW(%s) = ROW(%s)', bitemporal_internal.column_list(key_columns, 'k.'),
                                      bitemporal_internal.column_list(key_columns, '($1).'));
    last_at timestamptz;
    last_tx xid8;
BEGIN
    IF key_table IS NULL OR at IS NULL THEN
        RETURN;  -- not (or no longer) registered; an invalid period: its CHECK says why
    END IF;
    EXECUTE pg_catalog.format('SELECT k.last_known_at, k.last_txid FROM %s k WHERE %s', key_table, match)
       INTO last_at, last_tx USING image;
    IF last_at IS NULL THEN
        RETURN;  -- the foreign key to <table>_key refuses the row
    END IF;
    IF latest > pg_catalog.clock_timestamp()
       OR at < last_at
       OR (at = last_at AND last_tx <> pg_catalog.pg_current_xact_id()) THEN
        RAISE EXCEPTION 'version of (%) in % at %: knowledge of the key was already recorded at % (and the present is %); committed history cannot change',
                (SELECT pg_catalog.string_agg(pg_catalog.format('%s=%s', c, pg_catalog.to_jsonb(image) -> c), ', ' ORDER BY i)
                   FROM pg_catalog.unnest(key_columns) WITH ORDINALITY AS u (c, i)),
                table_name, at, last_at, pg_catalog.clock_timestamp()
            USING ERRCODE = 'BT006',
                  HINT = 'Write through the table''s _record() and _retract() functions, which record at the present.';
    END IF;
    IF latest > last_at OR last_tx <> pg_catalog.pg_current_xact_id() THEN
        EXECUTE pg_catalog.format(
            'UPDATE %s k SET last_known_at = $2, last_txid = pg_catalog.pg_current_xact_id() WHERE %s', key_table, match)
            USING image, latest;
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.key_knowledge_event(text, text, text[], anyelement, timestamptz, timestamptz) IS
    'The rule of bitemporal_internal.table_knowledge_event for a table named by its key table and key columns: a version of the image''s key inserted or closed at knowledge time at (latest, the latest of its times) must not precede the key''s latest knowledge (equal only within the transaction that recorded it) nor follow the present (BT006); latest becomes the key''s latest knowledge.';

CREATE OR REPLACE FUNCTION bitemporal_internal.table_knowledge_event(
    relation_schema text, relation_name text, image anyelement, at timestamptz, latest timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t record;
BEGIN
    -- Version 2: the rule is bitemporal_internal.key_knowledge_event's.
    SELECT pg_catalog.format('%I.%I', a.table_schema, a.table_name) AS table_name,
           pg_catalog.format('%I.%I', a.table_schema, a.key_table) AS key_table, a.key_columns
      INTO t
      FROM bitemporal.app_table a
     WHERE a.table_schema = relation_schema AND a.table_name = relation_name;
    IF FOUND THEN
        PERFORM bitemporal_internal.key_knowledge_event(t.table_name, t.key_table, t.key_columns, image, at, latest);
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_knowledge_event(text, text, anyelement, timestamptz, timestamptz) IS
    'For the triggers of application tables: bitemporal_internal.key_knowledge_event for a registered table (nothing for another).';

CREATE FUNCTION bitemporal_internal.erasing_row(table_name text, value_columns text[], old_row anyelement, new_row anyelement)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    old_j  jsonb := pg_catalog.to_jsonb(old_row);
    new_j  jsonb := pg_catalog.to_jsonb(new_row);
BEGIN
    -- Only the value columns change, each to NULL ...
    IF table_name IS NULL
       OR old_j - value_columns IS DISTINCT FROM new_j - value_columns
       OR EXISTS (SELECT FROM pg_catalog.unnest(value_columns) AS c WHERE new_j -> c <> 'null'::jsonb) THEN
        RETURN false;
    END IF;
    -- ... of a version an erasure of this transaction lists for this table.
    RETURN EXISTS (
        SELECT FROM bitemporal.erasures e
         WHERE e.scope = 'table' AND e.relation = table_name
           AND e.recorded_in = pg_catalog.pg_current_xact_id()
           AND e.version_ids @> ARRAY[(old_j ->> 'version_id')::bigint]);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.erasing_row(text, text[], anyelement, anyelement) IS
    'Whether an update of a version of an application table (its qualified name and value columns) is its erasure, allowed: only value columns change, each to NULL, and an erasures row of the current transaction lists the version for the table.';

-- table_guard (version 4, below) asks erasing_row itself: nothing calls
-- table_erasing any more.
DROP FUNCTION bitemporal_internal.table_erasing(regclass, anyelement, anyelement);

CREATE OR REPLACE FUNCTION bitemporal_internal.table_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- Version 4: the table as its arguments name it (a distributed table), else as registered.
    t    record := bitemporal_internal.table_identity(TG_RELID, TG_ARGV);
    name text := coalesce(t.table_name, pg_catalog.format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME));
BEGIN
    -- The rule of bitemporal_internal.fact_version_guard, for any application table.
    -- An erasure (bitemporal_internal.table_erase) clears the value columns of
    -- versions it listed in bitemporal.erasures, closed ones too.
    IF TG_OP = 'UPDATE' THEN
        IF bitemporal_internal.erasing_row(t.table_name, t.value_columns, OLD, NEW) THEN
            RETURN NEW;
        END IF;
    END IF;
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION '% is append-only: TRUNCATE is not allowed', name
            USING ERRCODE = 'BT006';
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.recorded_in = pg_catalog.pg_current_xact_id() THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION '% is append-only: version % cannot be deleted', name, OLD.version_id
            USING ERRCODE = 'BT006',
                  HINT = 'Retract the valid period with the table''s _retract() function; history stays.';
    END IF;
    IF NOT upper_inf(OLD.known_period) THEN
        RAISE EXCEPTION 'version % of % is already closed (known %): committed history cannot change',
                OLD.version_id, name, OLD.known_period
            USING ERRCODE = 'BT006';
    END IF;
    IF pg_catalog.to_jsonb(NEW) - 'known_period' IS DISTINCT FROM pg_catalog.to_jsonb(OLD) - 'known_period'
       OR lower(NEW.known_period) IS DISTINCT FROM lower(OLD.known_period)
       OR upper_inf(NEW.known_period)
       OR upper(NEW.known_period) > pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'version % of % can only have its open knowledge period closed, at a time not later than now',
                OLD.version_id, name
            USING ERRCODE = 'BT006',
                  HINT = 'Write through the table''s _record() and _retract() functions.';
    END IF;
    -- Closing is a knowledge event too.
    PERFORM bitemporal_internal.key_knowledge_event(t.table_name, t.key_table, t.key_columns, NEW,
                                                    upper(NEW.known_period), upper(NEW.known_period));
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_guard() IS
    'Trigger for application tables: refuses TRUNCATE, DELETE of committed versions, any UPDATE other than closing an open knowledge period once or an erasure clearing the value columns of versions it listed (bitemporal_internal.erasing_row), and a closing before the key''s latest knowledge (SQLSTATE BT006). Arguments, on a distributed table: see bitemporal_internal.table_identity.';

CREATE FUNCTION bitemporal_internal.table_stamp_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    t   record := bitemporal_internal.table_identity(TG_RELID, TG_ARGV);
    col name;
BEGIN
    -- What fact_version_stamp_insert does for a registered table, for one
    -- named by the trigger's arguments.
    NEW.recorded_in := pg_catalog.pg_current_xact_id();
    FOR col IN
        SELECT a.attname FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = TG_RELID AND a.attnum > 0 AND NOT a.attisdropped
           AND a.atttypid = 'pg_catalog.jsonb'::pg_catalog.regtype
    LOOP
        PERFORM bitemporal_internal.check_json_value(pg_catalog.format('column %I', col), pg_catalog.to_jsonb(NEW) -> col);
    END LOOP;
    PERFORM bitemporal_internal.key_knowledge_event(
        t.table_name, t.key_table, t.key_columns, NEW, lower(NEW.known_period),
        CASE WHEN upper_inf(NEW.known_period) THEN lower(NEW.known_period) ELSE upper(NEW.known_period) END);
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_stamp_insert() IS
    'BEFORE INSERT trigger of a distributed application table (bitemporal.distribute_table(relation)), with the table''s name, its key table''s and its key columns as arguments: stamps the writing transaction, checks jsonb values and the knowledge event (bitemporal_internal.key_knowledge_event), as fact_version_stamp_insert does for a table on the coordinator.';

CREATE OR REPLACE FUNCTION bitemporal_internal.table_cut(d bitemporal.app_table, image anyelement, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    me      xid8 := pg_catalog.pg_current_xact_id();
    tab     text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    columns text[] := d.key_columns || d.value_columns;
    v       record;
    unseen  boolean;
    ended   bigint[] := '{}';
BEGIN
    -- As bitemporal_internal.cut: end each overlapping current version (close its
    -- knowledge or, if this transaction wrote it at this very knowledge time,
    -- remove it: nobody saw it) and, in the same statement, re-record its
    -- parts outside the period. The version is ended before its remainders
    -- are inserted, so the exclusion constraint never sees both open.
    -- Version 3: the version is named by its key as well as its id (one shard).
    FOR v IN EXECUTE pg_catalog.format(
            'SELECT v.version_id, lower(v.known_period) AS known_from, v.recorded_in, v.carried_from FROM %s v'
            ' WHERE %s AND upper_inf(v.known_period) AND v.valid_period && $2 ORDER BY v.version_id',
            tab, bitemporal_internal.key_match(d, 'v'))
        USING image, period
    LOOP
        unseen := v.known_from = known_at AND v.recorded_in = me;
        IF NOT unseen AND v.known_from >= known_at THEN
            RAISE EXCEPTION 'knowledge time % is not later than version % of % (known from %)',
                    known_at, v.version_id, tab, v.known_from
                USING ERRCODE = 'BT002';
        END IF;
        EXECUTE pg_catalog.format(
            'WITH ended AS (%s RETURNING v.*) '
            'INSERT INTO %s (%s, valid_period, known_period, carried_from) '
            'SELECT %s, r.piece, tstzrange($2, NULL, ''[)''), $4 '
            '  FROM ended e, unnest(tstzmultirange(e.valid_period) - tstzmultirange($3)) AS r (piece) '
            ' ORDER BY lower(r.piece) NULLS FIRST',
            CASE WHEN unseen THEN pg_catalog.format('DELETE FROM %s v WHERE %s AND v.version_id = $1',
                                                    tab, bitemporal_internal.key_match(d, 'v', '($5).'))
                 ELSE pg_catalog.format('UPDATE %s v SET known_period = tstzrange(lower(v.known_period), $2, ''[)'') '
                                        'WHERE %s AND v.version_id = $1', tab, bitemporal_internal.key_match(d, 'v', '($5).')) END,
            tab, bitemporal_internal.column_list(columns), bitemporal_internal.column_list(columns, 'e.'))
            USING v.version_id, known_at, period,
                  CASE WHEN unseen THEN v.carried_from ELSE coalesce(v.carried_from, v.version_id) END, image;
        ended := ended || v.version_id;
    END LOOP;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_cut(bitemporal.app_table, anyelement, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of the image''s key overlapping a valid period and re-records their remainders outside it; returns the ended version ids. Call with the key locked. The rule of bitemporal_internal.cut; each version ended is named by key and id.';

CREATE FUNCTION bitemporal_internal.citus_table_as_of(d bitemporal.app_table)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tab text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
BEGIN
    -- Citus cannot plan a SQL function over a distributed table with
    -- parameters, inlined or not ("parameterized queries for SQL functions
    -- referencing distributed tables are not supported"): the same query as
    -- PL/pgSQL, run on the coordinator over every shard. (A question about one
    -- key, with the key's condition written beside the periods', is routed to
    -- its shard: the Python API asks so.) CREATE OR REPLACE keeps its grants.
    EXECUTE pg_catalog.format(
        'CREATE OR REPLACE FUNCTION %1$I.%2$I(valid_at timestamptz DEFAULT NULL, known_at timestamptz DEFAULT NULL) '
        'RETURNS SETOF %3$s LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $f$ BEGIN '
        'RETURN QUERY SELECT v.* FROM %3$s v '
        'WHERE v.valid_period @> coalesce($1, pg_catalog.now()) AND v.known_period @> coalesce($2, pg_catalog.now()); '
        'END $f$',
        d.table_schema, d.table_name || '_as_of', tab);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.citus_table_as_of(bitemporal.app_table) IS
    'For bitemporal.distribute_table(relation): re-creates a distributed table''s <table>_as_of as PL/pgSQL, the form Citus can plan, with the same answers and grants.';

-- bitemporal_internal.table_erase as table_erasure.v1.sql defines it, its
-- UPDATE naming the key.
CREATE OR REPLACE FUNCTION bitemporal_internal.table_erase(
    image anyelement, reason text, policy text DEFAULT NULL, only_versions bigint[] DEFAULT NULL)
RETURNS bitemporal.erasures
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    d        bitemporal.app_table := bitemporal.table_definition(bitemporal_internal.row_relation(pg_catalog.pg_typeof(image)));
    tab      text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    img      jsonb := pg_catalog.to_jsonb(image);
    c        text;
    found    boolean;
    ids      bigint[];
    not_null text;
    erasure  bitemporal.erasures;
BEGIN
    IF reason IS NULL OR pg_catalog.btrim(reason) = '' THEN
        RAISE EXCEPTION 'an erasure needs a reason'
            USING ERRCODE = 'BT009',
                  HINT = 'Say why: the request or the legal ground; the reason stays in bitemporal.erasures.';
    END IF;
    FOREACH c IN ARRAY d.key_columns LOOP
        IF img -> c = 'null'::jsonb THEN
            RAISE EXCEPTION 'key column % of %.% must not be null', c, d.table_schema, d.table_name
                USING ERRCODE = 'BT005';
        END IF;
    END LOOP;
    -- The key's lock, which every write of the key takes first.
    EXECUTE pg_catalog.format('SELECT true FROM %I.%I k WHERE %s FOR UPDATE',
                              d.table_schema, d.key_table, bitemporal_internal.key_match(d, 'k'))
       INTO found USING image;
    IF found IS NULL THEN
        RAISE EXCEPTION 'unknown key (%) in %.%: nothing was ever recorded for it',
                bitemporal_internal.key_text(d, image), d.table_schema, d.table_name
            USING ERRCODE = 'BT004',
                  HINT = 'Check the key''s values.';
    END IF;
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO not_null
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = tab::regclass AND a.attname = ANY (d.value_columns) AND a.attnotnull;
    IF not_null IS NOT NULL THEN
        RAISE EXCEPTION '%.% cannot be erased: value column % is NOT NULL, and an erased version has no value', d.table_schema, d.table_name, not_null
            USING ERRCODE = 'BT404',
                  HINT = pg_catalog.format('ALTER TABLE %s ALTER COLUMN ... DROP NOT NULL for each of them first.', tab);
    END IF;
    -- The key's versions (of only_versions, when given) not erased yet: none that an
    -- erasure of this table lists, nor a remainder re-recorded, without values, from an
    -- erased version after its erasure (see bitemporal.table_erasures).
    EXECUTE pg_catalog.format(
        'SELECT pg_catalog.array_agg(v.version_id ORDER BY v.version_id) FROM %s v WHERE %s '
        'AND ($2 IS NULL OR v.version_id = ANY ($2)) '
        'AND NOT EXISTS (SELECT FROM bitemporal.erasures e WHERE e.relation = $3 AND e.version_ids @> ARRAY[v.version_id]) '
        'AND NOT (%s AND EXISTS (SELECT FROM bitemporal.erasures e WHERE e.relation = $3 AND e.version_ids @> ARRAY[v.carried_from]))',
        tab, bitemporal_internal.key_match(d, 'v'),
        -- (u.col: c is a variable here)
        coalesce((SELECT pg_catalog.string_agg(pg_catalog.format('v.%I IS NULL', u.col), ' AND ')
                    FROM pg_catalog.unnest(d.value_columns) AS u (col)), 'true'))
       INTO ids USING image, only_versions, tab;
    IF ids IS NULL THEN
        RETURN NULL;  -- nothing left to erase: nothing recorded
    END IF;
    INSERT INTO bitemporal.erasures (reason, scope, relation, key, version_ids, policy)
    SELECT reason, 'table', tab, pg_catalog.jsonb_object_agg(k, img -> k), ids, policy
      FROM pg_catalog.unnest(d.key_columns) AS k
    RETURNING * INTO erasure;
    IF cardinality(d.value_columns) > 0 THEN
        -- Version 2: the versions named by key as well as id (one shard on Citus).
        EXECUTE pg_catalog.format('UPDATE %s v SET (%s) = ROW(%s) WHERE %s AND v.version_id = ANY ($1)',
                                  tab, bitemporal_internal.column_list(d.value_columns),
                                  pg_catalog.array_to_string(pg_catalog.array_fill('NULL'::text, ARRAY[cardinality(d.value_columns)]), ', '),
                                  bitemporal_internal.key_match(d, 'v', '($2).'))
            USING ids, image;
    END IF;
    RETURN erasure;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_erase(anyelement, text, text, bigint[]) IS
    'Erases the image''s key of its application table: locks the key, records a bitemporal.erasures row (scope table, relation, key, version ids, reason, policy) and sets the value columns of those versions to NULL; only_versions limits it to those versions (retention). Versions an earlier erasure of the table lists are skipped; returns NULL when none is left. Usually called through <table>_erase(). Errors: BT004, BT005, BT009, BT401, BT404.';

-- bitemporal.refresh_table as tables.v2.sql defines it, and then, for a
-- distributed table, its as_of in the form Citus can plan.
CREATE OR REPLACE FUNCTION bitemporal.refresh_table(relation regclass)
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d   bitemporal.app_table := bitemporal.table_definition(relation);
    fns text[];
BEGIN
    -- As enable_table: the new functions belong to the caller, so the caller
    -- must own the table.
    IF pg_catalog.pg_get_userbyid((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = relation)) <> current_user THEN
        RAISE EXCEPTION '%.% cannot be refreshed: it is owned by %, and its generated write functions, which run with the rights of their owner (as would the table''s triggers), would belong to %',
                d.table_schema, d.table_name,
                pg_catalog.pg_get_userbyid((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = relation)), current_user
            USING ERRCODE = 'BT402',
                  HINT = 'Refresh it as its owner.';
    END IF;
    -- A value column added since enable_table must be comparable too.
    IF bitemporal_internal.equality_problem(relation) IS NOT NULL THEN
        RAISE EXCEPTION '%.% cannot be refreshed: %', d.table_schema, d.table_name, bitemporal_internal.equality_problem(relation)
            USING ERRCODE = 'BT402';
    END IF;
    fns := bitemporal_internal.regenerate_table(relation);
    -- Version 3: a distributed table's as_of in the form Citus can plan again.
    -- (Nested: without Citus, the second query would not even parse.)
    IF EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        IF EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = relation) THEN
            PERFORM bitemporal_internal.citus_table_as_of(d);
        END IF;
    END IF;
    RETURN fns;
END;
$$;
COMMENT ON FUNCTION bitemporal.refresh_table(regclass) IS
    'Regenerates an application table''s functions after value columns were added or dropped, with the EXECUTE grants the old ones had (a distributed table''s as_of in its Citus form). Returns their signatures. Raises BT402 unless the caller owns the table (the write functions run with their owner''s rights), or for a column of a type without equality.';

CREATE FUNCTION bitemporal.distribute_table(relation regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d        bitemporal.app_table := bitemporal.table_definition(relation);
    tab      text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    keys     text := pg_catalog.format('%I.%I', d.table_schema, d.key_table);
    args     text;
    pkey     name;
    f        text;
    -- What the table's triggers run on the worker holding a shard, callees first.
    on_worker CONSTANT text[] := ARRAY[
        'bitemporal_internal.column_list(text[],text)',
        'bitemporal_internal.check_json_value(text,jsonb)',
        'bitemporal_internal.table_identity(regclass,text[])',
        'bitemporal_internal.key_knowledge_event(text,text,text[],anyelement,timestamp with time zone,timestamp with time zone)',
        'bitemporal_internal.erasing_row(text,text[],anyelement,anyelement)',
        'bitemporal_internal.table_guard()',
        'bitemporal_internal.table_stamp_insert()',
        'bitemporal_internal.key_guard()'];
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'bitemporal.distribute_table() needs the citus extension in this database'
            USING ERRCODE = 'BT502',
                  HINT = 'On plain PostgreSQL an application table is already whole on the one server.';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition
                    WHERE logicalrelid = 'bitemporal.fact_key'::regclass) THEN
        RAISE EXCEPTION 'cannot distribute %: the store is not distributed yet', tab
            USING ERRCODE = 'BT502',
                  HINT = 'Run bitemporal db upgrade --citus (SELECT bitemporal.distribute()) first.';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_dist_partition WHERE logicalrelid = relation) THEN
        RETURN;  -- distributed already
    END IF;
    IF EXISTS (SELECT FROM bitemporal.app_reference r
                WHERE (r.child_schema = d.table_schema AND r.child_table = d.table_name)
                   OR (r.parent_schema = d.table_schema AND r.parent_table = d.table_name)) THEN
        RAISE EXCEPTION 'cannot distribute %: it has temporal references, whose checks read the other table of the reference', tab
            USING ERRCODE = 'BT502',
                  HINT = 'Keep it on the coordinator, or drop its references first (bitemporal.drop_reference).';
    END IF;

    PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
    PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);
    FOREACH f IN ARRAY on_worker LOOP
        PERFORM bitemporal_internal.citus_adapt_function(f::regprocedure);
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object o
                        WHERE o.classid = 'pg_catalog.pg_proc'::regclass AND o.objid = f::regprocedure) THEN
            PERFORM pg_catalog.create_distributed_function(f::regprocedure);
        END IF;
    END LOOP;

    -- Citus needs the distribution column in the primary key.
    SELECT con.conname INTO pkey FROM pg_catalog.pg_constraint con WHERE con.conrelid = relation AND con.contype = 'p';
    EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I, ADD CONSTRAINT %I PRIMARY KEY (%I, version_id)',
                              tab, pkey, pkey, d.key_columns[1]);
    -- The triggers, naming the table for their runs on a shard.
    SELECT pg_catalog.string_agg(pg_catalog.quote_literal(a), ', ') INTO args
      FROM pg_catalog.unnest(ARRAY[tab, keys] || d.key_columns) a;
    EXECUTE pg_catalog.format(
        'DROP TRIGGER %1$I ON %4$s; DROP TRIGGER %2$I ON %4$s; DROP TRIGGER %3$I ON %4$s; '
        'CREATE TRIGGER %1$I BEFORE INSERT ON %4$s FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.table_stamp_insert(%5$s); '
        'CREATE TRIGGER %2$I BEFORE UPDATE OR DELETE ON %4$s FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.table_guard(%5$s); '
        'CREATE TRIGGER %3$I BEFORE TRUNCATE ON %4$s FOR EACH STATEMENT EXECUTE FUNCTION bitemporal_internal.table_guard(%5$s)',
        d.table_name || '_stamp_insert', d.table_name || '_append_only', d.table_name || '_no_truncate', tab, args);

    -- Rows already there are copied into the shards as they are: our
    -- triggers are off for the copy (they would take it for new writes).
    EXECUTE pg_catalog.format('ALTER TABLE %s DISABLE TRIGGER USER', keys);
    PERFORM pg_catalog.create_distributed_table(keys, d.key_columns[1]);
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE TRIGGER USER', keys);
    EXECUTE pg_catalog.format('ALTER TABLE %s DISABLE TRIGGER USER', tab);
    PERFORM pg_catalog.create_distributed_table(tab, d.key_columns[1], colocate_with => keys);
    EXECUTE pg_catalog.format('ALTER TABLE %s ENABLE TRIGGER USER', tab);
    PERFORM bitemporal_internal.citus_table_as_of(d);
END;
$$;
COMMENT ON FUNCTION bitemporal.distribute_table(regclass) IS
    'On a Citus coordinator whose store is distributed (bitemporal.distribute()): distributes a bitemporal application table by its first key column, its key table co-located with it, so that each key''s reads and writes go to one shard; rows already there are kept as they are. Its primary key becomes (first key column, version_id). Idempotent. BT502 without Citus, before the store is distributed, or for a table with temporal references; BT401 for a table that is not bitemporal.';
REVOKE ALL ON FUNCTION bitemporal.distribute_table(regclass) FROM PUBLIC;
