-- bitemporal: erasure of application tables' values (version 1).
--
-- The fact store's erasure (erasure.v1.sql, migration 0012) for application
-- tables. <table>_erase(key..., reason), generated for every bitemporal table
-- (bitemporal_internal.create_table_functions version 3; migration 0013
-- generates it for the tables made bitemporal before), calls
-- bitemporal_internal.table_erase, which
--   * locks the key in <table>_key (as every write of the key does), so it
--     serializes with concurrent writes of the key;
--   * records one bitemporal.erasures row: scope 'table', relation
--     (schema.table), key (the key columns as jsonb), the version ids it
--     clears, the reason, who and when;
--   * sets every value column of those versions to NULL. Keys, periods,
--     version ids and carried_from stay: history keeps its shape, the values
--     are gone. A version already listed by an earlier erasure of the table is
--     left alone, so a second erasure records nothing and returns NULL.
-- bitemporal_internal.table_guard (version 3) allows exactly that update: a
-- version listed by an erasures row of the current transaction for its table
-- may have its value columns set to NULL, nothing else.
--
-- bitemporal_internal.table_record (version 2) records a row whose value
-- columns are all NULL over an erased version: an erased version never holds
-- values.
--
-- Readers, who may not read bitemporal.erasures (reasons name requests), see
-- which versions of an application table are erased, and when, in the view
-- bitemporal.table_erasures.
--
-- Errors (SQLSTATE): BT004 unknown key, BT005 a NULL key column, BT009 blank
-- reason, BT401 not a bitemporal table, BT404 a value column is NOT NULL, so
-- its values cannot be cleared (drop the constraint first: an erased version
-- has no value); 42501 without EXECUTE on <table>_erase.

CREATE OR REPLACE FUNCTION bitemporal_internal.create_table_functions(relation regclass)
RETURNS text[]
LANGUAGE plpgsql
-- The functions it creates with SQL-standard bodies (<table>_record, _retract)
-- are bound under this search_path.
SET search_path = pg_catalog, pg_temp
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
        'RETURN bitemporal_internal.table_record(%5$s, $%6$s, $%7$s, $%8$s)',
        d.table_schema, d.table_name || '_record', all_args, times, full_row, ncols + 1, ncols + 2, ncols + 3);
    fns := fns || pg_catalog.format('%I.%I(%s, timestamptz, timestamptz, timestamptz)',
                                    d.table_schema, d.table_name || '_record', all_types);
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(%3$s, %4$s) RETURNS bigint[] LANGUAGE sql '
        'RETURN bitemporal_internal.table_retract(%5$s, $%6$s, $%7$s, $%8$s)',
        d.table_schema, d.table_name || '_retract', key_args, times, key_row, nkeys + 1, nkeys + 2, nkeys + 3);
    fns := fns || pg_catalog.format('%I.%I(%s, timestamptz, timestamptz, timestamptz)',
                                    d.table_schema, d.table_name || '_retract', key_types);
    -- One SQL statement: the planner inlines it into the caller's query, where
    -- a condition on the key reaches the table's indexes. So no SET clause
    -- (it prevents inlining) and no standard body (it would tie the function
    -- to the table's columns, which ALTER TABLE may change before
    -- refresh_table): the caller's search_path parses it, so every name in it
    -- is schema-qualified, the operators included.
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(valid_at timestamptz DEFAULT NULL, known_at timestamptz DEFAULT NULL) '
        'RETURNS SETOF %3$s LANGUAGE sql STABLE AS $f$ SELECT v.* FROM %3$s v '
        'WHERE v.valid_period OPERATOR(pg_catalog.@>) coalesce($1, pg_catalog.now()) '
        'AND v.known_period OPERATOR(pg_catalog.@>) coalesce($2, pg_catalog.now()) $f$',
        d.table_schema, d.table_name || '_as_of', tab);
    fns := fns || pg_catalog.format('%I.%I(timestamptz, timestamptz)', d.table_schema, d.table_name || '_as_of');
    -- Self-contained (the check of require_table_key written out): it runs
    -- with the caller's rights, and a reader may not use bitemporal_internal.
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(%3$s) RETURNS SETOF %4$s LANGUAGE plpgsql STABLE '
        'SET search_path = pg_catalog, pg_temp AS $f$ BEGIN '
        'IF NOT EXISTS (SELECT FROM %5$I.%6$I k WHERE ROW(%7$s) = ROW(%9$s)) THEN '
        'RAISE EXCEPTION %10$L, pg_catalog.concat_ws(%11$L, %12$s), %13$L, %14$L '
        'USING ERRCODE = %15$L, HINT = %16$L; END IF; '
        'RETURN QUERY SELECT v.* FROM %4$s v WHERE ROW(%8$s) = ROW(%9$s) ORDER BY v.version_id; END $f$',
        d.table_schema, d.table_name || '_history', key_args, tab, d.table_schema, d.key_table,
        bitemporal_internal.column_list(d.key_columns, 'k.'),
        bitemporal_internal.column_list(d.key_columns, 'v.'),
        (SELECT pg_catalog.string_agg('$' || i, ', ' ORDER BY i) FROM pg_catalog.generate_series(1, nkeys) i),
        'unknown key (%) in %.%: nothing was ever recorded for it', ', ',
        (SELECT pg_catalog.string_agg(pg_catalog.format('pg_catalog.format(%L, %L, pg_catalog.to_jsonb($%s))', '%s=%s', c, i),
                                      ', ' ORDER BY i)
           FROM pg_catalog.unnest(d.key_columns) WITH ORDINALITY AS u (c, i)),
        d.table_schema, d.table_name, 'BT004', 'Check the key''s values.');
    fns := fns || pg_catalog.format('%I.%I(%s)', d.table_schema, d.table_name || '_history', key_types);
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(known_from timestamptz DEFAULT NULL, known_to timestamptz DEFAULT NULL) '
        'RETURNS TABLE (change bitemporal.change_kind, changed_at timestamptz, version_id bigint, by_version_ids bigint[]) '
        'LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp '
        'AS $f$ SELECT * FROM bitemporal.table_changes(%3$L::regclass, $1, $2) $f$',
        d.table_schema, d.table_name || '_changes', tab);
    fns := fns || pg_catalog.format('%I.%I(timestamptz, timestamptz)', d.table_schema, d.table_name || '_changes');
    -- Version 3: the key's erasure. Its reason parameter is left unnamed when a
    -- key column is called reason (the call passes it by position).
    EXECUTE pg_catalog.format(
        'CREATE FUNCTION %1$I.%2$I(%3$s, %4$s text) RETURNS bitemporal.erasures LANGUAGE sql '
        'RETURN bitemporal_internal.table_erase(%5$s, $%6$s)',
        d.table_schema, d.table_name || '_erase', key_args,
        CASE WHEN 'reason' = ANY (d.key_columns) THEN '' ELSE 'reason' END, key_row, nkeys + 1);
    fns := fns || pg_catalog.format('%I.%I(%s, text)', d.table_schema, d.table_name || '_erase', key_types);

    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[1], pg_catalog.format(
        'Records a row of %s for [valid_from, valid_to) (NULL = open), known from known_at (default: the transaction time): a sequenced update; an identical row already known changes nothing. See bitemporal_internal.table_record.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[2], pg_catalog.format(
        'Retracts a key of %s over [valid_from, valid_to), known from known_at: a sequenced delete. Returns the ended version ids. See bitemporal_internal.table_retract.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[3], pg_catalog.format(
        'Versions of %s eligible at (valid_at, known_at) (NULL = now): filter by key in the caller''s query.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[4], pg_catalog.format(
        'Every version of a key of %s, superseded ones included, ORDER BY version_id. Raises BT004 for a key never recorded.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[5], pg_catalog.format(
        'What %s learned, superseded or retracted in the knowledge window [known_from, known_to). See bitemporal.table_changes.', tab));
    EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fns[6], pg_catalog.format(
        'Erases a key of %s: clears the value columns of every version of the key (periods and key stay) and records why in bitemporal.erasures (scope table). Returns that row, or NULL when every version was erased already. Only for a role granted EXECUTE (bitemporal_eraser). See bitemporal_internal.table_erase.', tab));
    -- The writes run with the table owner's rights, so that a writer role
    -- needs EXECUTE on them and no privilege on the table.
    PERFORM bitemporal_internal.secure_write_function(fns[1]::regprocedure);
    PERFORM bitemporal_internal.secure_write_function(fns[2]::regprocedure);
    PERFORM bitemporal_internal.secure_write_function(fns[6]::regprocedure);

    UPDATE bitemporal.app_table a SET functions = fns
     WHERE a.table_schema = d.table_schema AND a.table_name = d.table_name;
    RETURN fns;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.create_table_functions(regclass) IS
    'Generates the typed functions of an application table in its schema: <table>_record(key..., values..., valid_from, valid_to, known_at), <table>_retract(key..., valid_from, valid_to, known_at), <table>_erase(key..., reason) (the three SECURITY DEFINER, no EXECUTE for PUBLIC), <table>_as_of(valid_at, known_at), <table>_history(key...) and <table>_changes(known_from, known_to). Returns their signatures.';

CREATE VIEW bitemporal.table_erasures AS
SELECT e.relation, e.version_ids, e.erasure_id, e.erased_at
  FROM bitemporal.erasures e
 WHERE e.scope = 'table';
COMMENT ON VIEW bitemporal.table_erasures IS
    'Which versions of application tables were erased, and when, for readers (bitemporal.erasures, with who and why, is for the auditor and the eraser): relation (schema.table as format(''%I.%I'')), version_ids, erasure_id, erased_at. Ask with version_ids @> ARRAY[version_id]. A remainder re-recorded from an erased version after its erasure is not listed: it has no values, and its carried_from is.';

CREATE FUNCTION bitemporal_internal.table_erase(
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
        EXECUTE pg_catalog.format('UPDATE %s v SET (%s) = ROW(%s) WHERE v.version_id = ANY ($1)',
                                  tab, bitemporal_internal.column_list(d.value_columns),
                                  pg_catalog.array_to_string(pg_catalog.array_fill('NULL'::text, ARRAY[cardinality(d.value_columns)]), ', '))
            USING ids;
    END IF;
    RETURN erasure;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_erase(anyelement, text, text, bigint[]) IS
    'Erases the image''s key of its application table: locks the key, records a bitemporal.erasures row (scope table, relation, key, version ids, reason, policy) and sets the value columns of those versions to NULL; only_versions limits it to those versions (retention). Versions an earlier erasure of the table lists are skipped; returns NULL when none is left. Usually called through <table>_erase(). Errors: BT004, BT005, BT009, BT401, BT404.';

-- bitemporal_internal.table_record as surface.v1.sql defines it, changed in the
-- no-op test only ("already known, with these values, for the whole period").
-- An erased version has every value column NULL, so a row whose value columns
-- are all NULL compared equal to it, and recording that row over an erased
-- version wrote nothing. An erased version never holds values: for such a
-- row, the test also requires that no candidate version is erased, by the
-- definition the reads use (bitemporal_internal.table_erase,
-- bitemporal.table_erasures): an erasure of the table lists it, or it has no
-- values and its carried_from (the origin of a remainder, of a remainder's
-- remainder too: cuts carry the origin) is listed. A row with a value compares
-- unequal to an erased version anyway: its query stays as before.
CREATE OR REPLACE FUNCTION bitemporal_internal.table_record(
    image       anyelement,
    valid_from  timestamptz DEFAULT NULL,
    valid_to    timestamptz DEFAULT NULL,
    known_at    timestamptz DEFAULT NULL)
RETURNS bitemporal.recorded
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    d       bitemporal.app_table := bitemporal.table_definition(bitemporal_internal.row_relation(pg_catalog.pg_typeof(image)));
    tab     text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    columns text[] := d.key_columns || d.value_columns;
    img     jsonb := pg_catalog.to_jsonb(image);
    period  tstzrange;
    t       timestamptz;
    same_id bigint;
    holds   text;
    result  bitemporal.recorded;
BEGIN
    period := bitemporal_internal.valid_period(valid_from, valid_to);
    t := bitemporal_internal.lock_table_key(d, image, known_at, true);

    -- Already known, with these values, for the whole period: change nothing.
    holds := CASE WHEN cardinality(d.value_columns) = 0 THEN 'true'
                  ELSE pg_catalog.format('ROW(%s) IS NOT DISTINCT FROM ROW(%s)',
                                         bitemporal_internal.column_list(d.value_columns, 'v.'),
                                         bitemporal_internal.column_list(d.value_columns, '($1).')) END;
    -- Every value column of the row NULL (or a jsonb column's JSON null, which
    -- only adds an exact test): an erased version does not hold it. The
    -- containment tests reach the erasures' GIN index.
    IF NOT EXISTS (SELECT FROM pg_catalog.unnest(d.value_columns) AS u (col) WHERE img -> u.col <> 'null'::jsonb) THEN
        holds := pg_catalog.format(
            '%s AND NOT EXISTS (SELECT FROM bitemporal.erasures e'
            '                    WHERE e.scope = ''table'' AND e.relation = $3 AND e.version_ids @> ARRAY[v.version_id])'
            ' AND NOT (%s AND v.carried_from IS NOT NULL'
            '          AND EXISTS (SELECT FROM bitemporal.erasures e'
            '                       WHERE e.scope = ''table'' AND e.relation = $3 AND e.version_ids @> ARRAY[v.carried_from]))',
            holds,
            coalesce((SELECT pg_catalog.string_agg(pg_catalog.format('v.%I IS NULL', u.col), ' AND ')
                        FROM pg_catalog.unnest(d.value_columns) AS u (col)), 'true'));
    END IF;
    EXECUTE pg_catalog.format(
        'SELECT (array_agg(v.version_id ORDER BY lower(v.valid_period) NULLS FIRST))[1] FROM %s v '
        ' WHERE %s AND upper_inf(v.known_period) AND v.valid_period && $2 '
        'HAVING bool_and(%s) AND range_agg(v.valid_period * $2) = tstzmultirange($2)',
        tab, bitemporal_internal.key_match(d, 'v'), holds)
       INTO same_id USING image, period, tab;
    IF same_id IS NOT NULL THEN
        result := (same_id, false, '{}'::bigint[], NULL::timestamptz);
    ELSE
        result.superseded := bitemporal_internal.table_cut(d, image, period, t);
        EXECUTE pg_catalog.format(
            'INSERT INTO %s (%s, valid_period, known_period) SELECT %s, $2, tstzrange($3, NULL, ''[)'') RETURNING version_id',
            tab, bitemporal_internal.column_list(columns), bitemporal_internal.column_list(columns, '($1).'))
           INTO result.version_id USING image, period, t;
        PERFORM bitemporal_internal.advance_table_key(d, image, t);
        result.created := true;
        result.known_at := t;
        PERFORM bitemporal_internal.check_table_references(d);
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_record(anyelement, timestamptz, timestamptz, timestamptz) IS
    'Records a row image (key and value columns of an application table''s row type) for [valid_from, valid_to), known from known_at (default: the transaction time): a sequenced update with the semantics of bitemporal.record; an erased version never holds the row''s values (version 2, table_erasure.v1.sql), so a row with every value column NULL is recorded over it. Usually called through the table''s generated <table>_record(). Errors: BT001, BT002, BT003, BT005, BT401, BT403; the table''s own constraints (23502 a null in a NOT NULL column, 23514 a CHECK) as PostgreSQL raises them.';

CREATE FUNCTION bitemporal_internal.table_erasing(relation regclass, old_row anyelement, new_row anyelement)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d      bitemporal.app_table := bitemporal.table_definition(relation);
    tab    text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    old_j  jsonb := pg_catalog.to_jsonb(old_row);
    new_j  jsonb := pg_catalog.to_jsonb(new_row);
BEGIN
    -- Only the value columns change, each to NULL ...
    IF old_j - d.value_columns IS DISTINCT FROM new_j - d.value_columns
       OR EXISTS (SELECT FROM pg_catalog.unnest(d.value_columns) AS c WHERE new_j -> c <> 'null'::jsonb) THEN
        RETURN false;
    END IF;
    -- ... of a version an erasure of this transaction lists for this table.
    RETURN EXISTS (
        SELECT FROM bitemporal.erasures e
         WHERE e.scope = 'table' AND e.relation = tab
           AND e.recorded_in = pg_catalog.pg_current_xact_id()
           AND e.version_ids @> ARRAY[(old_j ->> 'version_id')::bigint]);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_erasing(regclass, anyelement, anyelement) IS
    'For bitemporal_internal.table_guard: whether an update of an application table''s version is its erasure, allowed: only value columns change, each to NULL, and an erasures row of the current transaction lists the version for the table.';

CREATE OR REPLACE FUNCTION bitemporal_internal.table_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The rule of bitemporal_internal.fact_version_guard, for any application table.
    -- Version 3: an erasure (bitemporal_internal.table_erase) clears the value
    -- columns of versions it listed in bitemporal.erasures, closed ones too.
    IF TG_OP = 'UPDATE' THEN
        IF bitemporal_internal.table_erasing(TG_RELID, OLD, NEW) THEN
            RETURN NEW;
        END IF;
    END IF;
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
    -- Closing is a knowledge event too (version 2).
    PERFORM bitemporal_internal.table_knowledge_event(TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW,
                                             upper(NEW.known_period), upper(NEW.known_period));
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_guard() IS
    'Trigger for application tables: refuses TRUNCATE, DELETE of committed versions, any UPDATE other than closing an open knowledge period once or an erasure clearing the value columns of versions it listed (bitemporal_internal.table_erasing), and a closing before the key''s latest knowledge (SQLSTATE BT006).';
