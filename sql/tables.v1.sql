-- bitemporal: application tables (version 1).
--
-- An application's own table, with typed key and value columns, made
-- bitemporal under the fact store's rules: each row is a version with a
-- half-open valid_period (when it applies) and known_period (when the table
-- held it); a write is a sequenced update or delete along valid time,
-- recorded at a knowledge time that never moves backwards for a key; history
-- is append-only (the fact store's triggers' rule, for any table).
--
-- bitemporal.enable_table(relation, key_columns, valid_from) turns a table,
-- new and empty or holding rows, into one:
--   * it adds version_id (identity, primary key), valid_period, known_period,
--     carried_from and recorded_in; the period CHECKs; the GiST exclusion
--     constraint over key + both periods; a partial index of current versions;
--     and indexes of knowledge starts and ends (for changes in a window);
--   * existing rows become the first versions: valid from valid_from (NULL:
--     unbounded), known from the transaction time;
--   * it creates <table>_key, one row per key: the key's lock and its latest
--     knowledge time, as bitemporal.fact_key is for the fact store;
--   * it generates typed functions in the table's schema (see
--     bitemporal.create_table_functions), thin wrappers over the generic
--     functions of this file, which hold the one implementation of the writes.
--
-- The generic functions take a row of the table's type (an image: the key and
-- value columns; the bitemporal columns are ignored) and find the table from
-- the row's type. Statements on the table are built with format('%I') from
-- the registry bitemporal.app_table.
--
-- Errors (SQLSTATE): those of the fact store (BT001 period, BT002/BT003
-- knowledge time, BT004 unknown key, BT005 invalid key, BT006 append-only),
-- the table's own constraints as PostgreSQL raises them (23502, 23514, ...), plus
--   BT401 not a bitemporal table       BT402 the table cannot be made bitemporal
--   BT403 a temporal reference would be broken

CREATE TABLE bitemporal.app_table (
    table_schema    text        NOT NULL,
    table_name      text        NOT NULL,
    key_columns     text[]      NOT NULL,
    value_columns   text[]      NOT NULL,
    key_table       text        NOT NULL,
    -- The primary key the table had before, restored by disable_table.
    old_primary_key text,
    -- The generated functions (regprocedure text), dropped with the table.
    functions       text[]      NOT NULL DEFAULT '{}',
    enabled_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT app_table_pkey PRIMARY KEY (table_schema, table_name),
    CONSTRAINT app_table_has_key CHECK (cardinality(key_columns) > 0)
);
COMMENT ON TABLE bitemporal.app_table IS
    'Application tables made bitemporal by bitemporal.enable_table: their key and value columns, key table and generated functions.';

CREATE FUNCTION bitemporal.table_definition(relation regclass)
RETURNS bitemporal.app_table
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    d bitemporal.app_table;
BEGIN
    SELECT a.* INTO d
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      JOIN bitemporal.app_table a ON a.table_schema = n.nspname AND a.table_name = c.relname
     WHERE c.oid = relation;
    IF NOT FOUND THEN
        RAISE EXCEPTION '% is not a bitemporal table', relation
            USING ERRCODE = 'BT401',
                  HINT = 'Make it one with bitemporal.enable_table() (op.create_bitemporal_table in Alembic).';
    END IF;
    RETURN d;
END;
$$;
COMMENT ON FUNCTION bitemporal.table_definition(regclass) IS
    'The registry row of a bitemporal application table. Raises BT401 for any other relation.';

CREATE FUNCTION bitemporal.row_relation(row_type regtype)
RETURNS regclass
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT nullif(t.typrelid, 0)::regclass FROM pg_catalog.pg_type t WHERE t.oid = row_type);
COMMENT ON FUNCTION bitemporal.row_relation(regtype) IS
    'The table whose row type row_type is (NULL for a type that is not a table''s row type).';

CREATE FUNCTION bitemporal.column_list(columns text[], prefix text DEFAULT '')
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT pg_catalog.string_agg(prefix || pg_catalog.quote_ident(c), ', ' ORDER BY i)
          FROM pg_catalog.unnest(columns) WITH ORDINALITY AS u (c, i));
COMMENT ON FUNCTION bitemporal.column_list(text[], text) IS
    'Quoted column names, each after prefix (e.g. ''v.'' or ''($1).''), comma-separated: for statements built with format().';

CREATE FUNCTION bitemporal.key_match(d bitemporal.app_table, alias text, image text DEFAULT '($1).')
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
-- ROW(a, b) = ROW(x, y) is expanded by the parser into a = x AND b = y: the
-- key's indexes apply.
RETURN pg_catalog.format('ROW(%s) = ROW(%s)',
                         bitemporal.column_list(d.key_columns, alias || '.'),
                         bitemporal.column_list(d.key_columns, image));
COMMENT ON FUNCTION bitemporal.key_match(bitemporal.app_table, text, text) IS
    'The condition "the row alias has the key of the image" for statements built with format().';

CREATE FUNCTION bitemporal.key_text(d bitemporal.app_table, image anyelement)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT pg_catalog.string_agg(pg_catalog.format('%s=%s', c, pg_catalog.to_jsonb(image) -> c), ', ' ORDER BY i)
      FROM pg_catalog.unnest(d.key_columns) WITH ORDINALITY AS u (c, i)
$$;
COMMENT ON FUNCTION bitemporal.key_text(bitemporal.app_table, anyelement) IS
    'A key as text for messages: column=value, ...';

CREATE FUNCTION bitemporal.lock_table_key(
    d bitemporal.app_table, image anyelement, known_at timestamptz, create_missing boolean)
RETURNS timestamptz
LANGUAGE plpgsql
AS $$
DECLARE
    keys   text := pg_catalog.format('%I.%I', d.table_schema, d.key_table);
    img    jsonb := pg_catalog.to_jsonb(image);
    c      text;
    last_at timestamptz;
    last_tx xid8;
    t      timestamptz;
    n      bigint;
BEGIN
    FOREACH c IN ARRAY d.key_columns LOOP
        IF img -> c = 'null'::jsonb THEN
            RAISE EXCEPTION 'key column % of %.% must not be null', c, d.table_schema, d.table_name
                USING ERRCODE = 'BT005';
        END IF;
    END LOOP;
    PERFORM bitemporal.check_knowledge_time(known_at);

    LOOP
        EXECUTE pg_catalog.format(
            'SELECT k.last_known_at, k.last_txid FROM %s k WHERE %s FOR UPDATE',
            keys, bitemporal.key_match(d, 'k'))
           INTO last_at, last_tx USING image;
        EXIT WHEN last_at IS NOT NULL;
        IF NOT create_missing THEN
            RAISE EXCEPTION 'unknown key (%) in %.%: nothing was ever recorded for it',
                    bitemporal.key_text(d, image), d.table_schema, d.table_name
                USING ERRCODE = 'BT004',
                      HINT = 'Check the key''s values.';
        END IF;
        t := coalesce(known_at, pg_catalog.transaction_timestamp());
        EXECUTE pg_catalog.format(
            'INSERT INTO %s (%s, first_known_at, last_known_at, last_txid) SELECT %s, $2, $2, $3 ON CONFLICT DO NOTHING',
            keys, bitemporal.column_list(d.key_columns), bitemporal.column_list(d.key_columns, '($1).'))
            USING image, t, pg_catalog.pg_current_xact_id();
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n > 0 THEN
            RETURN t;
        END IF;
        -- Another transaction created the key first: lock its row and go on.
    END LOOP;
    RETURN bitemporal.knowledge_time(known_at, last_at, last_tx,
                                     pg_catalog.format('(%s) in %I.%I', bitemporal.key_text(d, image),
                                                       d.table_schema, d.table_name));
END;
$$;
COMMENT ON FUNCTION bitemporal.lock_table_key(bitemporal.app_table, anyelement, timestamptz, boolean) IS
    'Locks the key of an image in its table''s key table (creating it when asked) and returns the knowledge time to write at, by the rules of bitemporal.lock_key. Raises BT002, BT003, BT004, BT005.';

CREATE FUNCTION bitemporal.advance_table_key(d bitemporal.app_table, image anyelement, known_at timestamptz)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    EXECUTE pg_catalog.format(
        'UPDATE %I.%I k SET last_known_at = $2, last_txid = pg_catalog.pg_current_xact_id() WHERE %s',
        d.table_schema, d.key_table, bitemporal.key_match(d, 'k'))
        USING image, known_at;
END;
$$;
COMMENT ON FUNCTION bitemporal.advance_table_key(bitemporal.app_table, anyelement, timestamptz) IS
    'Records that a key of an application table changed at a knowledge time (called with the key locked).';

CREATE FUNCTION bitemporal.table_cut(d bitemporal.app_table, image anyelement, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
AS $$
DECLARE
    me      xid8 := pg_catalog.pg_current_xact_id();
    tab     text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    columns text[] := d.key_columns || d.value_columns;
    v       record;
    unseen  boolean;
    ended   bigint[] := '{}';
BEGIN
    -- As bitemporal.cut: end each overlapping current version (close its
    -- knowledge or, if this transaction wrote it at this very knowledge time,
    -- remove it: nobody saw it) and, in the same statement, re-record its
    -- parts outside the period. The version is ended before its remainders
    -- are inserted, so the exclusion constraint never sees both open.
    FOR v IN EXECUTE pg_catalog.format(
            'SELECT v.version_id, lower(v.known_period) AS known_from, v.recorded_in, v.carried_from FROM %s v'
            ' WHERE %s AND upper_inf(v.known_period) AND v.valid_period && $2 ORDER BY v.version_id',
            tab, bitemporal.key_match(d, 'v'))
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
            'SELECT %s, piece, tstzrange($2, NULL, ''[)''), $4 '
            '  FROM ended e, unnest(tstzmultirange(e.valid_period) - tstzmultirange($3)) AS piece '
            ' ORDER BY lower(piece) NULLS FIRST',
            CASE WHEN unseen THEN pg_catalog.format('DELETE FROM %s v WHERE v.version_id = $1', tab)
                 ELSE pg_catalog.format('UPDATE %s v SET known_period = tstzrange(lower(v.known_period), $2, ''[)'') '
                                        'WHERE v.version_id = $1', tab) END,
            tab, bitemporal.column_list(columns), bitemporal.column_list(columns, 'e.'))
            USING v.version_id, known_at, period,
                  CASE WHEN unseen THEN v.carried_from ELSE coalesce(v.carried_from, v.version_id) END;
        ended := ended || v.version_id;
    END LOOP;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal.table_cut(bitemporal.app_table, anyelement, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of the image''s key overlapping a valid period and re-records their remainders outside it; returns the ended version ids. Call with the key locked. The rule of bitemporal.cut.';

CREATE FUNCTION bitemporal.check_table_references(d bitemporal.app_table)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    names text;
BEGIN
    -- Temporal references are deferred constraint triggers, because a write
    -- passes through states that break them (a version closed before its
    -- remainders are re-recorded). Making them immediate checks what the write
    -- queued now, so a violation is refused by the write that caused it. The
    -- registry names them (add_reference): <name> on the child, <name>_parent
    -- on the parent, each in its table's schema.
    SELECT pg_catalog.string_agg(t.name, ', ') INTO names
      FROM (SELECT pg_catalog.format('%I.%I', r.child_schema, r.name)
              FROM bitemporal.app_reference r
             WHERE (r.child_schema, r.child_table) = (d.table_schema, d.table_name)
            UNION ALL
            SELECT pg_catalog.format('%I.%I', r.parent_schema, r.name || '_parent')
              FROM bitemporal.app_reference r
             WHERE (r.parent_schema, r.parent_table) = (d.table_schema, d.table_name)) AS t (name);
    IF names IS NOT NULL THEN
        EXECUTE 'SET CONSTRAINTS ' || names || ' IMMEDIATE';
        EXECUTE 'SET CONSTRAINTS ' || names || ' DEFERRED';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_table_references(bitemporal.app_table) IS
    'Checks now the temporal references a write to an application table queued (their constraint triggers are deferred, so that a write''s intermediate states do not trip them). Raises BT403.';

CREATE FUNCTION bitemporal.table_record(
    image       anyelement,
    valid_from  timestamptz DEFAULT NULL,
    valid_to    timestamptz DEFAULT NULL,
    known_at    timestamptz DEFAULT NULL)
RETURNS bitemporal.recorded
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    d       bitemporal.app_table := bitemporal.table_definition(bitemporal.row_relation(pg_catalog.pg_typeof(image)));
    tab     text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    columns text[] := d.key_columns || d.value_columns;
    period  tstzrange;
    t       timestamptz;
    same_id bigint;
    result  bitemporal.recorded;
BEGIN
    period := bitemporal.valid_period(valid_from, valid_to);
    t := bitemporal.lock_table_key(d, image, known_at, true);

    -- Already known, with these values, for the whole period: change nothing.
    EXECUTE pg_catalog.format(
        'SELECT (array_agg(v.version_id ORDER BY lower(v.valid_period) NULLS FIRST))[1] FROM %s v '
        ' WHERE %s AND upper_inf(v.known_period) AND v.valid_period && $2 '
        'HAVING bool_and(%s) AND range_agg(v.valid_period * $2) = tstzmultirange($2)',
        tab, bitemporal.key_match(d, 'v'),
        CASE WHEN cardinality(d.value_columns) = 0 THEN 'true'
             ELSE pg_catalog.format('ROW(%s) IS NOT DISTINCT FROM ROW(%s)',
                                    bitemporal.column_list(d.value_columns, 'v.'),
                                    bitemporal.column_list(d.value_columns, '($1).')) END)
       INTO same_id USING image, period;
    IF same_id IS NOT NULL THEN
        result := (same_id, false, '{}'::bigint[], NULL::timestamptz);
    ELSE
        result.superseded := bitemporal.table_cut(d, image, period, t);
        EXECUTE pg_catalog.format(
            'INSERT INTO %s (%s, valid_period, known_period) SELECT %s, $2, tstzrange($3, NULL, ''[)'') RETURNING version_id',
            tab, bitemporal.column_list(columns), bitemporal.column_list(columns, '($1).'))
           INTO result.version_id USING image, period, t;
        PERFORM bitemporal.advance_table_key(d, image, t);
        result.created := true;
        result.known_at := t;
        PERFORM bitemporal.check_table_references(d);
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION bitemporal.table_record(anyelement, timestamptz, timestamptz, timestamptz) IS
    'Records a row image (key and value columns of an application table''s row type) for [valid_from, valid_to), known from known_at (default: the transaction time): a sequenced update with the semantics of bitemporal.record. Usually called through the table''s generated <table>_record(). Errors: BT001, BT002, BT003, BT005, BT401, BT403; the table''s own constraints (23502 a null in a NOT NULL column, 23514 a CHECK) as PostgreSQL raises them.';

CREATE FUNCTION bitemporal.table_retract(
    image       anyelement,
    valid_from  timestamptz DEFAULT NULL,
    valid_to    timestamptz DEFAULT NULL,
    known_at    timestamptz DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    d      bitemporal.app_table := bitemporal.table_definition(bitemporal.row_relation(pg_catalog.pg_typeof(image)));
    period tstzrange;
    t      timestamptz;
    ended  bigint[];
BEGIN
    period := bitemporal.valid_period(valid_from, valid_to);
    t := bitemporal.lock_table_key(d, image, known_at, false);
    ended := bitemporal.table_cut(d, image, period, t);
    IF cardinality(ended) > 0 THEN
        PERFORM bitemporal.advance_table_key(d, image, t);
        PERFORM bitemporal.check_table_references(d);
    END IF;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal.table_retract(anyelement, timestamptz, timestamptz, timestamptz) IS
    'Sequenced delete of the image''s key over [valid_from, valid_to), known from known_at: the semantics of bitemporal.retract. Returns the ended version ids. Usually called through <table>_retract(). Errors: BT001, BT002, BT003, BT004, BT005, BT401, BT403.';

CREATE FUNCTION bitemporal.require_table_key(image anyelement)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    d     bitemporal.app_table := bitemporal.table_definition(bitemporal.row_relation(pg_catalog.pg_typeof(image)));
    found boolean;
BEGIN
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT FROM %I.%I k WHERE %s)',
                              d.table_schema, d.key_table, bitemporal.key_match(d, 'k'))
       INTO found USING image;
    IF NOT found THEN
        RAISE EXCEPTION 'unknown key (%) in %.%: nothing was ever recorded for it',
                bitemporal.key_text(d, image), d.table_schema, d.table_name
            USING ERRCODE = 'BT004',
                  HINT = 'Check the key''s values.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.require_table_key(anyelement) IS
    'Raises BT004 if nothing was ever recorded for the image''s key in its application table.';

CREATE FUNCTION bitemporal.table_changes(relation regclass, known_from timestamptz DEFAULT NULL, known_to timestamptz DEFAULT NULL)
RETURNS TABLE (change bitemporal.change_kind, changed_at timestamptz, version_id bigint, by_version_ids bigint[])
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    d bitemporal.app_table := bitemporal.table_definition(relation);
BEGIN
    IF known_from IS NOT NULL AND known_to IS NOT NULL AND known_to <= known_from THEN
        RAISE EXCEPTION 'knowledge window [%, %) is %', known_from, known_to,
                CASE WHEN known_to = known_from THEN 'empty' ELSE 'inverted' END
            USING ERRCODE = 'BT001',
                  HINT = 'A window is half-open [known_from, known_to): known_to must be later than known_from.';
    END IF;
    -- The classification of bitemporal.changes: a re-recorded remainder is not
    -- learned; a closed version is superseded if, at the time its knowledge
    -- ended, a new assertion for its key overlapping it became known, else
    -- retracted.
    RETURN QUERY EXECUTE pg_catalog.format(
        'SELECT c.* FROM ('
        '  SELECT ''learned''::bitemporal.change_kind, lower(v.known_period), v.version_id, ''{}''::bigint[]'
        '    FROM %1$s v'
        '   WHERE v.carried_from IS NULL'
        '     AND lower(v.known_period) >= coalesce($1, ''-infinity'') AND lower(v.known_period) < coalesce($2, ''infinity'')'
        '  UNION ALL'
        '  SELECT CASE WHEN cardinality(s.ids) > 0 THEN ''superseded'' ELSE ''retracted'' END::bitemporal.change_kind,'
        '         upper(v.known_period), v.version_id, s.ids'
        '    FROM %1$s v'
        '   CROSS JOIN LATERAL ('
        '         SELECT coalesce(array_agg(w.version_id ORDER BY w.version_id), ''{}'') AS ids FROM %1$s w'
        '          WHERE %2$s AND w.valid_period && v.valid_period AND w.carried_from IS NULL'
        '            AND lower(w.known_period) = upper(v.known_period)) s'
        '   WHERE NOT upper_inf(v.known_period)'
        '     AND upper(v.known_period) >= coalesce($1, ''-infinity'') AND upper(v.known_period) < coalesce($2, ''infinity'')'
        ') AS c (change, changed_at, version_id, by_version_ids)'
        ' ORDER BY c.changed_at, c.version_id, c.change',
        pg_catalog.format('%I.%I', d.table_schema, d.table_name),
        bitemporal.key_match(d, 'w', 'v.'))
        USING known_from, known_to;
END;
$$;
COMMENT ON FUNCTION bitemporal.table_changes(regclass, timestamptz, timestamptz) IS
    'What an application table learned, superseded or retracted in the knowledge window [known_from, known_to) (NULL = unbounded), as bitemporal.changes classifies it, ORDER BY changed_at, version_id. Raises BT001 for an empty or inverted window, BT401 for a table that is not bitemporal.';

CREATE FUNCTION bitemporal.table_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- The rule of bitemporal.fact_version_guard, for any application table.
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION '%.% is append-only: TRUNCATE is not allowed', TG_TABLE_SCHEMA, TG_TABLE_NAME
            USING ERRCODE = 'BT006';
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.recorded_in = pg_catalog.pg_current_xact_id() THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION '%.% is append-only: version % cannot be deleted', TG_TABLE_SCHEMA, TG_TABLE_NAME, OLD.version_id
            USING ERRCODE = 'BT006',
                  HINT = 'Retract the valid period with the table''s _retract() function; history stays.';
    END IF;
    IF NOT upper_inf(OLD.known_period) THEN
        RAISE EXCEPTION 'version % of %.% is already closed (known %): committed history cannot change',
                OLD.version_id, TG_TABLE_SCHEMA, TG_TABLE_NAME, OLD.known_period
            USING ERRCODE = 'BT006';
    END IF;
    IF pg_catalog.to_jsonb(NEW) - 'known_period' IS DISTINCT FROM pg_catalog.to_jsonb(OLD) - 'known_period'
       OR lower(NEW.known_period) IS DISTINCT FROM lower(OLD.known_period)
       OR upper_inf(NEW.known_period)
       OR upper(NEW.known_period) > pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'version % of %.% can only have its open knowledge period closed, at a time not later than now',
                OLD.version_id, TG_TABLE_SCHEMA, TG_TABLE_NAME
            USING ERRCODE = 'BT006',
                  HINT = 'Write through the table''s _record() and _retract() functions.';
    END IF;
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal.table_guard() IS
    'Trigger for application tables: refuses TRUNCATE, DELETE of committed versions and any UPDATE other than closing an open knowledge period once (SQLSTATE BT006).';

CREATE FUNCTION bitemporal.create_table_functions(relation regclass)
RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
    d        bitemporal.app_table := bitemporal.table_definition(relation);
    tab      text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    columns  text[] := d.key_columns || d.value_columns;
    nkeys    int := cardinality(d.key_columns);
    ncols    int := cardinality(d.key_columns) + cardinality(d.value_columns);
    key_args text;
    all_args text;
    key_types text;
    all_types text;
    full_row text;
    key_row  text;
    times    text := 'valid_from timestamptz DEFAULT NULL, valid_to timestamptz DEFAULT NULL, known_at timestamptz DEFAULT NULL';
    fns      text[] := '{}';
BEGIN
    -- Parameters: the key columns, then the value columns, named and typed as
    -- the columns are.
    SELECT pg_catalog.string_agg(pg_catalog.format('%I %s', c, pg_catalog.format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY i)
             FILTER (WHERE i <= nkeys),
           pg_catalog.string_agg(pg_catalog.format('%I %s', c, pg_catalog.format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY i),
           pg_catalog.string_agg(pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY i) FILTER (WHERE i <= nkeys),
           pg_catalog.string_agg(pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY i)
      INTO key_args, all_args, key_types, all_types
      FROM pg_catalog.unnest(columns) WITH ORDINALITY AS u (c, i)
      JOIN pg_catalog.pg_attribute a ON a.attrelid = relation AND a.attname = u.c;
    -- Row images of the table's type: parameter $i for the i-th column, NULL
    -- for the bitemporal (and generated) columns. The key image fills only
    -- the key.
    SELECT pg_catalog.format('ROW(%s)::%s', pg_catalog.string_agg(coalesce('$' || i, 'NULL'), ', ' ORDER BY a.attnum), tab),
           pg_catalog.format('ROW(%s)::%s', pg_catalog.string_agg(
               CASE WHEN i <= nkeys THEN '$' || i ELSE 'NULL' END, ', ' ORDER BY a.attnum), tab)
      INTO full_row, key_row
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.unnest(columns) WITH ORDINALITY AS u (c, i) ON u.c = a.attname
     WHERE a.attrelid = relation AND a.attnum > 0 AND NOT a.attisdropped;

    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(%3$s, %4$s) RETURNS bitemporal.recorded LANGUAGE sql '
        'RETURN bitemporal.table_record(%5$s, $%6$s, $%7$s, $%8$s)',
        d.table_schema, d.table_name || '_record', all_args, times, full_row, ncols + 1, ncols + 2, ncols + 3);
    fns := fns || pg_catalog.format('%I.%I(%s, timestamptz, timestamptz, timestamptz)',
                                    d.table_schema, d.table_name || '_record', all_types);
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(%3$s, %4$s) RETURNS bigint[] LANGUAGE sql '
        'RETURN bitemporal.table_retract(%5$s, $%6$s, $%7$s, $%8$s)',
        d.table_schema, d.table_name || '_retract', key_args, times, key_row, nkeys + 1, nkeys + 2, nkeys + 3);
    fns := fns || pg_catalog.format('%I.%I(%s, timestamptz, timestamptz, timestamptz)',
                                    d.table_schema, d.table_name || '_retract', key_types);
    -- One SQL statement: the planner inlines it into the caller's query, where
    -- a condition on the key reaches the table's indexes.
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(valid_at timestamptz DEFAULT NULL, known_at timestamptz DEFAULT NULL) '
        'RETURNS SETOF %3$s LANGUAGE sql STABLE AS $f$ SELECT v.* FROM %3$s v '
        'WHERE v.valid_period @> coalesce($1, pg_catalog.now()) AND v.known_period @> coalesce($2, pg_catalog.now()) $f$',
        d.table_schema, d.table_name || '_as_of', tab);
    fns := fns || pg_catalog.format('%I.%I(timestamptz, timestamptz)', d.table_schema, d.table_name || '_as_of');
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(%3$s) RETURNS SETOF %4$s LANGUAGE plpgsql STABLE AS $f$ BEGIN '
        'PERFORM bitemporal.require_table_key(%5$s); '
        'RETURN QUERY SELECT v.* FROM %4$s v WHERE ROW(%6$s) = ROW(%7$s) ORDER BY v.version_id; END $f$',
        d.table_schema, d.table_name || '_history', key_args, tab, key_row,
        bitemporal.column_list(d.key_columns, 'v.'),
        (SELECT pg_catalog.string_agg('$' || i, ', ' ORDER BY i) FROM pg_catalog.generate_series(1, nkeys) i));
    fns := fns || pg_catalog.format('%I.%I(%s)', d.table_schema, d.table_name || '_history', key_types);
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(known_from timestamptz DEFAULT NULL, known_to timestamptz DEFAULT NULL) '
        'RETURNS TABLE (change bitemporal.change_kind, changed_at timestamptz, version_id bigint, by_version_ids bigint[]) '
        'LANGUAGE sql STABLE AS $f$ SELECT * FROM bitemporal.table_changes(%3$L::regclass, $1, $2) $f$',
        d.table_schema, d.table_name || '_changes', tab);
    fns := fns || pg_catalog.format('%I.%I(timestamptz, timestamptz)', d.table_schema, d.table_name || '_changes');

    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[1], pg_catalog.format(
        'Records a row of %s for [valid_from, valid_to) (NULL = open), known from known_at (default: the transaction time): a sequenced update; an identical row already known changes nothing. See bitemporal.table_record.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[2], pg_catalog.format(
        'Retracts a key of %s over [valid_from, valid_to), known from known_at: a sequenced delete. Returns the ended version ids. See bitemporal.table_retract.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[3], pg_catalog.format(
        'Versions of %s eligible at (valid_at, known_at) (NULL = now): filter by key in the caller''s query.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[4], pg_catalog.format(
        'Every version of a key of %s, superseded ones included, ORDER BY version_id. Raises BT004 for a key never recorded.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[5], pg_catalog.format(
        'What %s learned, superseded or retracted in the knowledge window [known_from, known_to). See bitemporal.table_changes.', tab));
    -- The writes run with the table owner's rights, so that a writer role
    -- needs EXECUTE on them and no privilege on the table.
    PERFORM bitemporal.secure_write_function(fns[1]::regprocedure);
    PERFORM bitemporal.secure_write_function(fns[2]::regprocedure);

    UPDATE bitemporal.app_table a SET functions = fns
     WHERE a.table_schema = d.table_schema AND a.table_name = d.table_name;
    RETURN fns;
END;
$$;
COMMENT ON FUNCTION bitemporal.create_table_functions(regclass) IS
    'Generates the typed functions of an application table in its schema: <table>_record(key..., values..., valid_from, valid_to, known_at), <table>_retract(key..., valid_from, valid_to, known_at) (both SECURITY DEFINER, no EXECUTE for PUBLIC), <table>_as_of(valid_at, known_at), <table>_history(key...) and <table>_changes(known_from, known_to). Returns their signatures.';

CREATE FUNCTION bitemporal.enable_table(relation regclass, key_columns text[], valid_from timestamptz DEFAULT NULL)
RETURNS text[]
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    reserved text[] := ARRAY['version_id', 'valid_period', 'known_period', 'carried_from', 'recorded_in',
                             'valid_from', 'valid_to', 'valid_at', 'known_at', 'known_from', 'known_to',
                             'first_known_at', 'last_known_at', 'last_txid'];
    schema_name text;
    table_name  text;
    kind        char;
    tab         text;
    key_table   text;
    key_list    text;
    value_cols  text[];
    old_pk      text;
    problem     text;
    initial     tstzrange;
BEGIN
    SELECT n.nspname, c.relname, c.relkind INTO schema_name, table_name, kind
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = relation;
    tab := pg_catalog.format('%I.%I', schema_name, table_name);
    key_table := table_name || '_key';
    key_list := bitemporal.column_list(key_columns);

    -- Everything that would stop the table from holding versions, said
    -- before anything changes.
    problem := CASE
        WHEN kind <> 'r' THEN 'only an ordinary table can be made bitemporal'
        WHEN EXISTS (SELECT FROM bitemporal.app_table a WHERE a.table_schema = schema_name AND a.table_name = table_name)
            THEN 'it is bitemporal already'
        -- The longest name derived from the table's, <table>_valid_period_half_open,
        -- must fit in PostgreSQL's 63 bytes rather than be cut short.
        WHEN pg_catalog.octet_length(table_name) > 40
            THEN pg_catalog.format('its name is %s bytes long, and the names derived from it (such as %s) need it to be at most 40',
                                   pg_catalog.octet_length(table_name), table_name || '_valid_period_half_open')
        WHEN coalesce(cardinality(key_columns), 0) = 0 THEN 'it needs at least one key column'
        WHEN cardinality(key_columns) <> (SELECT count(DISTINCT k) FROM pg_catalog.unnest(key_columns) k)
            THEN 'a key column is named twice'
        END;
    IF problem IS NULL THEN
        SELECT 'it has no column ' || k INTO problem
          FROM pg_catalog.unnest(key_columns) k
         WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
                            WHERE a.attrelid = relation AND a.attname = k AND a.attnum > 0 AND NOT a.attisdropped)
         LIMIT 1;
    END IF;
    IF problem IS NULL THEN
        SELECT pg_catalog.format('its column %s has a name bitemporal uses (%s)', a.attname,
                                 pg_catalog.array_to_string(reserved, ', ')) INTO problem
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = relation AND a.attnum > 0 AND NOT a.attisdropped AND a.attname = ANY (reserved)
         LIMIT 1;
    END IF;
    IF problem IS NULL THEN
        SELECT pg_catalog.format('key column %s is generated', a.attname) INTO problem
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = relation AND a.attname = ANY (key_columns) AND a.attgenerated <> ''
         LIMIT 1;
    END IF;
    IF problem IS NULL THEN
        SELECT pg_catalog.format('%s references it by foreign key %s; a key repeats across versions, so drop that foreign key (or make it a temporal reference with bitemporal.add_reference)',
                                 con.conrelid::regclass, con.conname) INTO problem
          FROM pg_catalog.pg_constraint con
         WHERE con.confrelid = relation AND con.contype = 'f'
         LIMIT 1;
    END IF;
    IF problem IS NULL THEN
        SELECT pg_catalog.format('its %s constraint %s would be broken by versions repeating a key; drop it first',
                                 CASE con.contype WHEN 'p' THEN 'primary key' WHEN 'u' THEN 'unique' ELSE 'exclusion' END,
                                 con.conname) INTO problem
          FROM pg_catalog.pg_constraint con
         WHERE con.conrelid = relation AND con.contype IN ('p', 'u', 'x')
           -- A primary key on exactly the key columns is replaced by the versions' own.
           AND NOT (con.contype = 'p' AND (SELECT pg_catalog.array_agg(a.attname::text ORDER BY a.attname)
                                             FROM pg_catalog.pg_attribute a
                                            WHERE a.attrelid = relation AND a.attnum = ANY (con.conkey))
                                          = (SELECT pg_catalog.array_agg(k ORDER BY k) FROM pg_catalog.unnest(key_columns) k))
         LIMIT 1;
    END IF;
    IF problem IS NULL AND pg_catalog.to_regclass(pg_catalog.format('%I.%I', schema_name, key_table)) IS NOT NULL THEN
        problem := pg_catalog.format('its key table %I.%I exists already', schema_name, key_table);
    END IF;
    IF problem IS NULL THEN
        EXECUTE pg_catalog.format(
            'SELECT CASE WHEN count(*) FILTER (WHERE ROW(%1$s) IS NOT NULL) < count(*) THEN ''a row has a null key'' '
            '            WHEN count(DISTINCT ROW(%1$s)) < count(*) THEN ''two rows have the same key'' END FROM %2$s',
            key_list, tab) INTO problem;
    END IF;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '% cannot be made bitemporal: %', tab, problem
            USING ERRCODE = 'BT402';
    END IF;

    SELECT pg_catalog.array_agg(a.attname::text ORDER BY a.attnum) INTO value_cols
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = relation AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
       AND NOT a.attname = ANY (key_columns);
    SELECT con.conname INTO old_pk FROM pg_catalog.pg_constraint con WHERE con.conrelid = relation AND con.contype = 'p';
    IF old_pk IS NOT NULL THEN
        EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', tab, old_pk);
    END IF;

    -- Rows already there become the first versions, known from now.
    initial := bitemporal.valid_period(valid_from, NULL);
    EXECUTE pg_catalog.format(
        'ALTER TABLE %1$s'
        '  ADD COLUMN version_id bigint GENERATED ALWAYS AS IDENTITY,'
        '  ADD COLUMN valid_period tstzrange NOT NULL DEFAULT %2$L,'
        '  ADD COLUMN known_period tstzrange NOT NULL DEFAULT tstzrange(transaction_timestamp(), NULL, ''[)''),'
        '  ADD COLUMN carried_from bigint,'
        '  ADD COLUMN recorded_in xid8 NOT NULL DEFAULT pg_current_xact_id()',
        tab, initial);
    EXECUTE pg_catalog.format(
        'ALTER TABLE %1$s ALTER COLUMN valid_period DROP DEFAULT, ALTER COLUMN known_period DROP DEFAULT, %2$s',
        tab, (SELECT pg_catalog.string_agg(pg_catalog.format('ALTER COLUMN %I SET NOT NULL', k), ', ')
                FROM pg_catalog.unnest(key_columns) k));
    EXECUTE pg_catalog.format(
        'ALTER TABLE %1$s'
        '  ADD CONSTRAINT %2$I PRIMARY KEY (version_id),'
        '  ADD CONSTRAINT %3$I CHECK ('
        '      NOT isempty(valid_period) AND (lower_inc(valid_period) OR lower_inf(valid_period))'
        '      AND NOT upper_inc(valid_period)'
        '      AND (lower_inf(valid_period) OR isfinite(lower(valid_period)))'
        '      AND (upper_inf(valid_period) OR isfinite(upper(valid_period)))),'
        '  ADD CONSTRAINT %4$I CHECK ('
        '      NOT isempty(known_period) AND lower_inc(known_period) AND isfinite(lower(known_period))'
        '      AND NOT upper_inc(known_period) AND (upper_inf(known_period) OR isfinite(upper(known_period)))),'
        '  ADD CONSTRAINT %5$I EXCLUDE USING gist (%6$s, valid_period WITH &&, known_period WITH &&)',
        tab, table_name || '_pkey', table_name || '_valid_period_half_open',
        table_name || '_known_period_half_open', table_name || '_no_overlap',
        (SELECT pg_catalog.string_agg(pg_catalog.format('%I WITH =', k), ', ') FROM pg_catalog.unnest(key_columns) k));
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s USING gist (%s, valid_period) WHERE upper_inf(known_period)',
                              table_name || '_current_idx', tab, key_list);
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s (lower(known_period))', table_name || '_known_from_idx', tab);
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s (upper(known_period)) WHERE NOT upper_inf(known_period)',
                              table_name || '_known_to_idx', tab);

    -- The key table: typed like the key columns.
    EXECUTE pg_catalog.format(
        'CREATE TABLE %1$I.%2$I (%3$s, first_known_at timestamptz NOT NULL, last_known_at timestamptz NOT NULL,'
        ' last_txid xid8 NOT NULL, CONSTRAINT %4$I PRIMARY KEY (%5$s),'
        ' CONSTRAINT %6$I CHECK (first_known_at <= last_known_at))',
        schema_name, key_table,
        (SELECT pg_catalog.string_agg(pg_catalog.format('%I %s NOT NULL', k, pg_catalog.format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY i)
           FROM pg_catalog.unnest(key_columns) WITH ORDINALITY AS u (k, i)
           JOIN pg_catalog.pg_attribute a ON a.attrelid = relation AND a.attname = u.k),
        key_table || '_pkey', key_list, key_table || '_known_order');
    EXECUTE pg_catalog.format(
        'INSERT INTO %1$I.%2$I (%3$s, first_known_at, last_known_at, last_txid)'
        ' SELECT DISTINCT %3$s, transaction_timestamp(), transaction_timestamp(), pg_current_xact_id() FROM %4$s',
        schema_name, key_table, key_list, tab);
    EXECUTE pg_catalog.format('ALTER TABLE %1$s ADD CONSTRAINT %2$I FOREIGN KEY (%3$s) REFERENCES %4$I.%5$I (%3$s)',
                              tab, table_name || '_key_fkey', key_list, schema_name, key_table);

    EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION bitemporal.fact_version_stamp_insert()',
                              table_name || '_stamp_insert', tab);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION bitemporal.table_guard()',
                              table_name || '_append_only', tab);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION bitemporal.table_guard()',
                              table_name || '_no_truncate', tab);

    EXECUTE pg_catalog.format('COMMENT ON COLUMN %s.valid_period IS %L', tab,
                              'When the row applies in the world: [start, end), unbounded end = end not known.');
    EXECUTE pg_catalog.format('COMMENT ON COLUMN %s.known_period IS %L', tab,
                              'When the table held this version: [recorded, superseded), unbounded end = still held.');
    EXECUTE pg_catalog.format('COMMENT ON TABLE %I.%I IS %L', schema_name, key_table, pg_catalog.format(
        'Every key %s has recorded, with its first and latest knowledge time; its row lock serialises writers of the key.', tab));

    INSERT INTO bitemporal.app_table (table_schema, table_name, key_columns, value_columns, key_table, old_primary_key)
    VALUES (schema_name, table_name, key_columns, coalesce(value_cols, '{}'), key_table, old_pk);
    RETURN bitemporal.create_table_functions(relation);
END;
$$;
COMMENT ON FUNCTION bitemporal.enable_table(regclass, text[], timestamptz) IS
    'Makes an ordinary table bitemporal, keyed by key_columns; every other column is a value column. Rows already there become versions valid from valid_from (NULL: unbounded) and known from the transaction time. Adds the period columns, constraints, indexes, append-only triggers and the <table>_key table, and generates the table''s functions (returned). Raises BT402, saying why, for a table that cannot hold versions.';

CREATE FUNCTION bitemporal.refresh_table(relation regclass)
RETURNS text[]
LANGUAGE plpgsql
AS $$
DECLARE
    d         bitemporal.app_table := bitemporal.table_definition(relation);
    acls      text[];  -- each function's ACL, NULL for the default
    fns       text[];
    statement text;
BEGIN
    -- After ALTER TABLE added or dropped a value column: the functions'
    -- signatures and row images follow the table's columns. Their privileges
    -- are the application's, so the new functions get the old ones'.
    SELECT pg_catalog.array_agg(p.proacl::text ORDER BY f.i) INTO acls
      FROM pg_catalog.unnest(d.functions) WITH ORDINALITY AS f (fn, i)
      JOIN pg_catalog.pg_proc p ON p.oid = f.fn::regprocedure;
    PERFORM bitemporal.drop_table_functions(d);
    UPDATE bitemporal.app_table a
       SET value_columns = coalesce((
               SELECT pg_catalog.array_agg(att.attname::text ORDER BY att.attnum)
                 FROM pg_catalog.pg_attribute att
                WHERE att.attrelid = relation AND att.attnum > 0 AND NOT att.attisdropped AND att.attgenerated = ''
                  AND NOT att.attname = ANY (d.key_columns)
                  AND att.attname NOT IN ('version_id', 'valid_period', 'known_period', 'carried_from', 'recorded_in')),
               '{}')
     WHERE a.table_schema = d.table_schema AND a.table_name = d.table_name;
    fns := bitemporal.create_table_functions(relation);
    -- A function whose ACL was not the default has its privileges given again
    -- from scratch: PUBLIC's EXECUTE taken away, then every EXECUTE grant of
    -- the old function (PUBLIC's included) made anew.
    FOR statement IN
        SELECT s.sql FROM (
            SELECT f.i, 0 AS step, pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', fns[f.i]) AS sql
              FROM pg_catalog.generate_subscripts(acls, 1) AS f (i)
             WHERE acls[f.i] IS NOT NULL
            UNION ALL
            SELECT f.i, 1, pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', fns[f.i],
                               CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                    ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END,
                               CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
              FROM pg_catalog.generate_subscripts(acls, 1) AS f (i),
                   pg_catalog.aclexplode(acls[f.i]::aclitem[]) AS a
             WHERE a.privilege_type = 'EXECUTE') AS s
         ORDER BY s.i, s.step
    LOOP
        EXECUTE statement;
    END LOOP;
    RETURN fns;
END;
$$;
COMMENT ON FUNCTION bitemporal.refresh_table(regclass) IS
    'Regenerates an application table''s functions after value columns were added or dropped, with the EXECUTE grants the old ones had. Returns their signatures.';

-- Temporal references: a child table's columns name a key of a parent table,
-- and at every valid time of each current child version the parent must hold
-- a current version of that key. PostgreSQL 18's FOREIGN KEY (..., PERIOD ...)
-- does not fit: it needs the parent's key to be UNIQUE (..., valid_period
-- WITHOUT OVERLAPS), and a table keeping history along knowledge time holds
-- many versions of a key whose valid periods overlap. So the reference is a
-- pair of deferred constraint triggers, on every PostgreSQL version, checked
-- at the end of each write function (bitemporal.check_table_references).

CREATE TABLE bitemporal.app_reference (
    child_schema   text   NOT NULL,
    child_table    text   NOT NULL,
    name           text   NOT NULL,
    child_columns  text[] NOT NULL,
    parent_schema  text   NOT NULL,
    parent_table   text   NOT NULL,
    CONSTRAINT app_reference_pkey PRIMARY KEY (child_schema, child_table, name),
    CONSTRAINT app_reference_child_fkey FOREIGN KEY (child_schema, child_table)
        REFERENCES bitemporal.app_table (table_schema, table_name),
    CONSTRAINT app_reference_parent_fkey FOREIGN KEY (parent_schema, parent_table)
        REFERENCES bitemporal.app_table (table_schema, table_name)
);
COMMENT ON TABLE bitemporal.app_reference IS
    'Temporal references between application tables (bitemporal.add_reference): child columns naming a parent key that must exist over each current child version''s valid period.';

CREATE FUNCTION bitemporal.check_reference(ref bitemporal.app_reference, child_version bigint)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    parent   bitemporal.app_table := bitemporal.table_definition(
                 pg_catalog.format('%I.%I', ref.parent_schema, ref.parent_table)::regclass);
    child    text := pg_catalog.format('%I.%I', ref.child_schema, ref.child_table);
    refs     text := bitemporal.column_list(ref.child_columns, 'c.');
    applies  boolean;
    valid    tstzrange;
    covered  tstzmultirange;
    key      text;
BEGIN
    -- The version as it is now: closed or removed later in the transaction,
    -- or with a null reference (MATCH SIMPLE), there is nothing to check.
    EXECUTE pg_catalog.format('SELECT upper_inf(c.known_period) AND ROW(%s) IS NOT NULL FROM %s c WHERE c.version_id = $1',
                              refs, child)
       INTO applies USING child_version;
    IF applies IS NOT TRUE THEN
        RETURN;
    END IF;
    -- Share-lock the parent's key: its writers (which lock it FOR UPDATE) wait
    -- for this transaction, and this check sees any of them that committed.
    EXECUTE pg_catalog.format(
        'SELECT FROM %I.%I k, %s c WHERE c.version_id = $1 AND ROW(%s) = ROW(%s) FOR SHARE OF k',
        parent.table_schema, parent.key_table, child, bitemporal.column_list(parent.key_columns, 'k.'), refs)
        USING child_version;
    EXECUTE pg_catalog.format(
        'SELECT c.valid_period, ROW(%2$s)::text,'
        '       coalesce((SELECT range_agg(p.valid_period) FROM %3$I.%4$I p'
        '                  WHERE ROW(%5$s) = ROW(%2$s) AND upper_inf(p.known_period)), ''{}'')'
        '  FROM %1$s c WHERE c.version_id = $1',
        child, refs, parent.table_schema, parent.table_name, bitemporal.column_list(parent.key_columns, 'p.'))
       INTO valid, key, covered USING child_version;
    IF NOT covered @> valid THEN
        RAISE EXCEPTION 'temporal reference % violated: version % of % refers to % of %.% over %, which holds it only over %',
                ref.name, child_version, child, key, ref.parent_schema, ref.parent_table, valid,
                CASE WHEN isempty(covered) THEN 'no period' ELSE covered::text END
            USING ERRCODE = 'BT403',
                  HINT = 'Record the parent first (for the whole period), or shorten the child''s valid period.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal.check_reference(bitemporal.app_reference, bigint) IS
    'Raises BT403 unless the parent table currently holds the key a current child version refers to over the version''s whole valid period.';

CREATE FUNCTION bitemporal.reference_child_check()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ref bitemporal.app_reference;
BEGIN
    SELECT * INTO STRICT ref FROM bitemporal.app_reference r
     WHERE r.child_schema = TG_TABLE_SCHEMA AND r.child_table = TG_TABLE_NAME AND r.name = TG_ARGV[0];
    PERFORM bitemporal.check_reference(ref, NEW.version_id);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal.reference_child_check() IS
    'Constraint trigger on a child table (argument: the reference''s name): a new version must refer to a parent key held over its valid period (BT403).';

CREATE FUNCTION bitemporal.reference_parent_check()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ref     bitemporal.app_reference;
    parent  bitemporal.app_table;
    orphan  bigint;
BEGIN
    SELECT * INTO STRICT ref FROM bitemporal.app_reference r
     WHERE r.child_schema = TG_ARGV[0] AND r.child_table = TG_ARGV[1] AND r.name = TG_ARGV[2];
    parent := bitemporal.table_definition(TG_RELID);
    -- A parent version's knowledge ended (or an unseen one was removed): is
    -- every current child version of that key still covered?
    EXECUTE pg_catalog.format(
        'SELECT c.version_id FROM %1$I.%2$I c'
        ' WHERE ROW(%3$s) = ROW(%4$s) AND upper_inf(c.known_period)'
        '   AND NOT coalesce((SELECT range_agg(p.valid_period) FROM %5$I.%6$I p'
        '                      WHERE ROW(%7$s) = ROW(%3$s) AND upper_inf(p.known_period)), ''{}'') @> c.valid_period'
        ' ORDER BY c.version_id LIMIT 1',
        ref.child_schema, ref.child_table, bitemporal.column_list(ref.child_columns, 'c.'),
        bitemporal.column_list(parent.key_columns, '($1).'), parent.table_schema, parent.table_name,
        bitemporal.column_list(parent.key_columns, 'p.'))
       INTO orphan USING OLD;
    IF orphan IS NOT NULL THEN
        PERFORM bitemporal.check_reference(ref, orphan);
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal.reference_parent_check() IS
    'Constraint trigger on a parent table (arguments: the child''s schema, table and the reference''s name): when a parent version''s knowledge ends, current child versions of its key must still be covered (BT403).';

CREATE FUNCTION bitemporal.add_reference(child regclass, columns text[], parent regclass, name text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    c       bitemporal.app_table := bitemporal.table_definition(child);
    p       bitemporal.app_table := bitemporal.table_definition(parent);
    ref     bitemporal.app_reference;
    problem text;
    v       bigint;
BEGIN
    name := coalesce(name, c.table_name || '_' || pg_catalog.array_to_string(columns, '_') || '_fkey');
    SELECT CASE
        WHEN coalesce(cardinality(columns), 0) <> cardinality(p.key_columns)
            THEN pg_catalog.format('%s has %s key columns (%s), not %s',
                                   parent, cardinality(p.key_columns), pg_catalog.array_to_string(p.key_columns, ', '),
                                   coalesce(cardinality(columns), 0))
        ELSE (SELECT pg_catalog.format('%s has no column %s, or its type is not that of %s.%s', child, u.col, parent, u.pk)
                FROM ROWS FROM (pg_catalog.unnest(columns), pg_catalog.unnest(p.key_columns)) AS u (col, pk)
               WHERE NOT EXISTS (
                     SELECT FROM pg_catalog.pg_attribute ca, pg_catalog.pg_attribute pa
                      WHERE ca.attrelid = child AND ca.attname = u.col AND NOT ca.attisdropped
                        AND pa.attrelid = parent AND pa.attname = u.pk
                        AND (ca.atttypid, ca.atttypmod) = (pa.atttypid, pa.atttypmod))
               LIMIT 1) END
      INTO problem;
    -- Its parent-side trigger is named <name>_parent, within PostgreSQL's 63 bytes.
    IF problem IS NULL AND pg_catalog.octet_length(name) > 56 THEN
        problem := pg_catalog.format('the name is %s bytes long, and %s needs it to be at most 56 (pass a shorter name)',
                                     pg_catalog.octet_length(name), name || '_parent');
    END IF;
    IF problem IS NULL AND EXISTS (SELECT FROM bitemporal.app_reference r
                                    WHERE (r.child_schema, r.child_table, r.name) = (c.table_schema, c.table_name, name)) THEN
        problem := pg_catalog.format('%s already has a reference named %s', child, name);
    END IF;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'cannot add temporal reference %: %', name, problem
            USING ERRCODE = 'BT402';
    END IF;

    INSERT INTO bitemporal.app_reference (child_schema, child_table, name, child_columns, parent_schema, parent_table)
    VALUES (c.table_schema, c.table_name, name, columns, p.table_schema, p.table_name)
    RETURNING * INTO ref;
    -- What the parent-side check looks up: current child versions by reference.
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s (%s) WHERE upper_inf(known_period)',
                              name || '_idx', child, bitemporal.column_list(columns));
    EXECUTE pg_catalog.format(
        'CREATE CONSTRAINT TRIGGER %I AFTER INSERT ON %s DEFERRABLE INITIALLY DEFERRED FOR EACH ROW '
        'EXECUTE FUNCTION bitemporal.reference_child_check(%L)', name, child, name);
    EXECUTE pg_catalog.format(
        'CREATE CONSTRAINT TRIGGER %I AFTER UPDATE OR DELETE ON %s DEFERRABLE INITIALLY DEFERRED FOR EACH ROW '
        'EXECUTE FUNCTION bitemporal.reference_parent_check(%L, %L, %L)',
        name || '_parent', parent, c.table_schema, c.table_name, name);
    -- The rows already there must satisfy it too.
    FOR v IN EXECUTE pg_catalog.format('SELECT c.version_id FROM %s c WHERE upper_inf(c.known_period) ORDER BY c.version_id', child)
    LOOP
        PERFORM bitemporal.check_reference(ref, v);
    END LOOP;
    RETURN name;
END;
$$;
COMMENT ON FUNCTION bitemporal.add_reference(regclass, text[], regclass, text) IS
    'Adds a temporal reference from child columns to the key of a parent application table: at every valid time of each current child version, the parent must hold a current version of that key (nulls: no reference). Checked at the end of each write (BT403); existing rows are checked now. Returns its name (default <child>_<columns>_fkey). Raises BT401, BT402.';

CREATE FUNCTION bitemporal.drop_reference(child regclass, name text)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    c   bitemporal.app_table := bitemporal.table_definition(child);
    ref bitemporal.app_reference;
BEGIN
    DELETE FROM bitemporal.app_reference r
     WHERE (r.child_schema, r.child_table, r.name) = (c.table_schema, c.table_name, name)
    RETURNING * INTO ref;
    IF NOT FOUND THEN
        RAISE EXCEPTION '% has no temporal reference named %', child, name
            USING ERRCODE = 'BT401';
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %I.%I', name || '_parent', ref.parent_schema, ref.parent_table);
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', name, child);
    EXECUTE pg_catalog.format('DROP INDEX %I.%I', c.table_schema, name || '_idx');
END;
$$;
COMMENT ON FUNCTION bitemporal.drop_reference(regclass, text) IS
    'Drops a temporal reference added by bitemporal.add_reference. Raises BT401 if there is none of that name.';

CREATE FUNCTION bitemporal.drop_table_functions(d bitemporal.app_table)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY d.functions LOOP
        EXECUTE pg_catalog.format('DROP FUNCTION %s', fn);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal.drop_table_functions(bitemporal.app_table) IS
    'Drops the functions generated for an application table.';

CREATE FUNCTION bitemporal.drop_table(relation regclass)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    d   bitemporal.app_table := bitemporal.table_definition(relation);
    ref bitemporal.app_reference;
BEGIN
    SELECT * INTO ref FROM bitemporal.app_reference r
     WHERE (r.parent_schema, r.parent_table) = (d.table_schema, d.table_name)
       AND (r.child_schema, r.child_table) <> (d.table_schema, d.table_name)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '%.% cannot be dropped: %.% refers to it (temporal reference %)',
                d.table_schema, d.table_name, ref.child_schema, ref.child_table, ref.name
            USING ERRCODE = 'BT402',
                  HINT = 'Drop the reference (bitemporal.drop_reference) or the referring table first.';
    END IF;
    FOR ref IN SELECT * FROM bitemporal.app_reference r
                WHERE (r.child_schema, r.child_table) = (d.table_schema, d.table_name) LOOP
        PERFORM bitemporal.drop_reference(relation, ref.name);
    END LOOP;
    PERFORM bitemporal.drop_table_functions(d);
    DELETE FROM bitemporal.app_table a WHERE (a.table_schema, a.table_name) = (d.table_schema, d.table_name);
    EXECUTE pg_catalog.format('DROP TABLE %I.%I', d.table_schema, d.table_name);
    EXECUTE pg_catalog.format('DROP TABLE %I.%I', d.table_schema, d.key_table);
END;
$$;
COMMENT ON FUNCTION bitemporal.drop_table(regclass) IS
    'Drops an application table with its history, key table, generated functions and the temporal references it makes. Raises BT402 while another table refers to it.';

CREATE FUNCTION bitemporal.disable_table(relation regclass)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    d       bitemporal.app_table := bitemporal.table_definition(relation);
    tab     text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    written bigint;
BEGIN
    -- Only what enable_table made may be undone: the first versions, one per
    -- key, unchanged. Anything recorded since is history, never thrown away.
    EXECUTE pg_catalog.format(
        'SELECT count(*) FROM %s v WHERE NOT upper_inf(v.known_period) OR lower(v.known_period) <> $1', tab)
       INTO written USING d.enabled_at;
    IF written > 0 THEN
        RAISE EXCEPTION '% cannot go back to an ordinary table: % versions were recorded since it was made bitemporal, and that history would be lost',
                tab, written
            USING ERRCODE = 'BT402',
                  HINT = 'Copy its history elsewhere first, or keep it bitemporal.';
    END IF;
    IF EXISTS (SELECT FROM bitemporal.app_reference r
                WHERE (r.parent_schema, r.parent_table) = (d.table_schema, d.table_name)
                   OR (r.child_schema, r.child_table) = (d.table_schema, d.table_name)) THEN
        RAISE EXCEPTION '% cannot go back to an ordinary table while it has temporal references', tab
            USING ERRCODE = 'BT402',
                  HINT = 'Drop them first with bitemporal.drop_reference.';
    END IF;
    PERFORM bitemporal.drop_table_functions(d);
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', d.table_name || '_stamp_insert', tab);
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', d.table_name || '_append_only', tab);
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', d.table_name || '_no_truncate', tab);
    EXECUTE pg_catalog.format(
        'ALTER TABLE %s DROP COLUMN version_id, DROP COLUMN valid_period, DROP COLUMN known_period,'
        ' DROP COLUMN carried_from, DROP COLUMN recorded_in', tab);
    EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', tab, d.table_name || '_key_fkey');
    EXECUTE pg_catalog.format('DROP TABLE %I.%I', d.table_schema, d.key_table);
    IF d.old_primary_key IS NOT NULL THEN
        EXECUTE pg_catalog.format('ALTER TABLE %s ADD CONSTRAINT %I PRIMARY KEY (%s)',
                                  tab, d.old_primary_key, bitemporal.column_list(d.key_columns));
    END IF;
    DELETE FROM bitemporal.app_table a WHERE (a.table_schema, a.table_name) = (d.table_schema, d.table_name);
END;
$$;
COMMENT ON FUNCTION bitemporal.disable_table(regclass) IS
    'Turns an application table made bitemporal by enable_table back into an ordinary table (restoring its primary key), provided nothing was recorded since: history is never thrown away (BT402 otherwise).';
