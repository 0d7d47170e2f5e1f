-- bitemporal: application tables (version 2).
--
-- Changes from version 1 (tables.v1.sql), loaded by migration 0009:
--   * enable_table and create_table_functions run with search_path pinned to
--     pg_catalog, pg_temp, so the CHECK constraints, index predicates and
--     SQL-standard function bodies they create are bound to pg_catalog's
--     functions and operators, never to ones planted in a writable schema;
--   * every generated function is safe from the caller's search_path:
--     <table>_record and _retract as before (standard bodies, then SECURITY
--     DEFINER with a pinned search_path), <table>_history and _changes with a
--     pinned search_path, <table>_as_of (inlined into the caller's query, so
--     without a SET clause) with every name schema-qualified;
--   * the functions a reader calls, table_changes and the generated
--     <table>_history, run with the caller's rights and name nothing in
--     bitemporal_internal (which only the owner may use): each is written out
--     in full instead of calling the internal helpers (key_match,
--     require_table_key). Their results and errors are unchanged;
--   * enable_table and refresh_table refuse (BT402) a caller who does not own
--     the table: the generated write functions are SECURITY DEFINER, owned by
--     the caller, and the table's triggers fire inside them, so they must
--     belong to the table's owner. bitemporal_internal.regenerate_table is
--     refresh_table without that check, for migrations;
--   * enable_table and refresh_table refuse (BT402) a column of a type
--     without an equality operator (json, xml, point), with which every write
--     failed (bitemporal_internal.equality_problem);
--   * table_cut names the remainders it re-records r.piece, not piece, which
--     a value column of that name made ambiguous (42702) in every cut and
--     retract: every name a generated statement uses is qualified by an alias.

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
    -- The writes run with the table owner's rights, so that a writer role
    -- needs EXECUTE on them and no privilege on the table.
    PERFORM bitemporal_internal.secure_write_function(fns[1]::regprocedure);
    PERFORM bitemporal_internal.secure_write_function(fns[2]::regprocedure);

    UPDATE bitemporal.app_table a SET functions = fns
     WHERE a.table_schema = d.table_schema AND a.table_name = d.table_name;
    RETURN fns;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.create_table_functions(regclass) IS
    'Generates the typed functions of an application table in its schema: <table>_record(key..., values..., valid_from, valid_to, known_at), <table>_retract(key..., valid_from, valid_to, known_at) (both SECURITY DEFINER, no EXECUTE for PUBLIC), <table>_as_of(valid_at, known_at), <table>_history(key...) and <table>_changes(known_from, known_to). Returns their signatures.';

CREATE FUNCTION bitemporal_internal.equality_problem(relation regclass)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col record;
BEGIN
    -- A write compares a row's columns with the versions already known (and
    -- the key's with =): a type without an equality operator (json, xml,
    -- point) would make every write fail. Tried as the write path spells it,
    -- under the same search_path.
    FOR col IN
        SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type_name
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = relation AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
         ORDER BY a.attnum
    LOOP
        BEGIN
            EXECUTE pg_catalog.format('SELECT NULL::%1$s IS NOT DISTINCT FROM NULL::%1$s', col.type_name);
        EXCEPTION WHEN undefined_function THEN
            RETURN pg_catalog.format('its column %I is of type %s, which has no equality operator (= %s, %s): '
                                     'a write compares a row''s values with those already known; use jsonb for JSON',
                                     col.attname, col.type_name, col.type_name, col.type_name);
        END;
    END LOOP;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.equality_problem(regclass) IS
    'Why a table cannot be (or stay) bitemporal for want of equality: its first column whose type has no = operator (json, xml, point), said as a reason; NULL if every column has one.';

CREATE OR REPLACE FUNCTION bitemporal.enable_table(relation regclass, key_columns text[], valid_from timestamptz DEFAULT NULL)
RETURNS text[]
LANGUAGE plpgsql
-- The DDL it runs binds the table's CHECK constraints, index predicates and
-- generated functions under this search_path.
SET search_path = pg_catalog, pg_temp
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
    key_list := bitemporal_internal.column_list(key_columns);

    -- Everything that would stop the table from holding versions, said
    -- before anything changes.
    problem := CASE
        WHEN kind <> 'r' THEN 'only an ordinary table can be made bitemporal'
        -- The generated write functions are SECURITY DEFINER, owned by whoever
        -- runs this: the table's owner, or its triggers would run with another
        -- role's rights at every write.
        WHEN pg_catalog.pg_get_userbyid((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = relation)) <> current_user
            THEN pg_catalog.format('it is owned by %I, and its generated write functions, which run with the rights of '
                                   'their owner (as would the table''s triggers), would belong to %I: make it bitemporal '
                                   'as its owner, or first ALTER TABLE %s OWNER TO %I',
                                   pg_catalog.pg_get_userbyid((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = relation)),
                                   current_user, relation, current_user)
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
    IF problem IS NULL THEN
        problem := bitemporal_internal.equality_problem(relation);
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
    initial := bitemporal_internal.valid_period(valid_from, NULL);
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

    EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE INSERT ON %s FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.fact_version_stamp_insert()',
                              table_name || '_stamp_insert', tab);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.table_guard()',
                              table_name || '_append_only', tab);
    EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION bitemporal_internal.table_guard()',
                              table_name || '_no_truncate', tab);

    EXECUTE pg_catalog.format('COMMENT ON COLUMN %s.valid_period IS %L', tab,
                              'When the row applies in the world: [start, end), unbounded end = end not known.');
    EXECUTE pg_catalog.format('COMMENT ON COLUMN %s.known_period IS %L', tab,
                              'When the table held this version: [recorded, superseded), unbounded end = still held.');
    EXECUTE pg_catalog.format('COMMENT ON TABLE %I.%I IS %L', schema_name, key_table, pg_catalog.format(
        'Every key %s has recorded, with its first and latest knowledge time; its row lock serialises writers of the key.', tab));

    INSERT INTO bitemporal.app_table (table_schema, table_name, key_columns, value_columns, key_table, old_primary_key)
    VALUES (schema_name, table_name, key_columns, coalesce(value_cols, '{}'), key_table, old_pk);
    RETURN bitemporal_internal.create_table_functions(relation);
END;
$$;
COMMENT ON FUNCTION bitemporal.enable_table(regclass, text[], timestamptz) IS
    'Makes an ordinary table bitemporal, keyed by key_columns; every other column is a value column. Rows already there become versions valid from valid_from (NULL: unbounded) and known from the transaction time. Adds the period columns, constraints, indexes, append-only triggers and the <table>_key table, and generates the table''s functions (returned). Raises BT402, saying why, for a table that cannot hold versions.';

CREATE OR REPLACE FUNCTION bitemporal.table_changes(relation regclass, known_from timestamptz DEFAULT NULL, known_to timestamptz DEFAULT NULL)
RETURNS TABLE (change bitemporal.change_kind, changed_at timestamptz, version_id bigint, by_version_ids bigint[])
LANGUAGE plpgsql STABLE
-- Part of the API (a reader calls it through <table>_changes), so it names
-- nothing in bitemporal_internal, which only the owner may use.
SET search_path = pg_catalog, pg_temp
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
        (SELECT pg_catalog.format('ROW(%s) = ROW(%s)',
                                  pg_catalog.string_agg('w.' || pg_catalog.quote_ident(c), ', ' ORDER BY i),
                                  pg_catalog.string_agg('v.' || pg_catalog.quote_ident(c), ', ' ORDER BY i))
           FROM pg_catalog.unnest(d.key_columns) WITH ORDINALITY AS u (c, i)))
        USING known_from, known_to;
END;
$$;
COMMENT ON FUNCTION bitemporal.table_changes(regclass, timestamptz, timestamptz) IS
    'What an application table learned, superseded or retracted in the knowledge window [known_from, known_to) (NULL = unbounded), as bitemporal.changes classifies it, ORDER BY changed_at, version_id. Raises BT001 for an empty or inverted window, BT401 for a table that is not bitemporal.';

CREATE FUNCTION bitemporal_internal.regenerate_table(relation regclass)
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
    PERFORM bitemporal_internal.drop_table_functions(d);
    UPDATE bitemporal.app_table a
       SET value_columns = coalesce((
               SELECT pg_catalog.array_agg(att.attname::text ORDER BY att.attnum)
                 FROM pg_catalog.pg_attribute att
                WHERE att.attrelid = relation AND att.attnum > 0 AND NOT att.attisdropped AND att.attgenerated = ''
                  AND NOT att.attname = ANY (d.key_columns)
                  AND att.attname NOT IN ('version_id', 'valid_period', 'known_period', 'carried_from', 'recorded_in')),
               '{}')
     WHERE a.table_schema = d.table_schema AND a.table_name = d.table_name;
    fns := bitemporal_internal.create_table_functions(relation);
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
COMMENT ON FUNCTION bitemporal_internal.regenerate_table(regclass) IS
    'What bitemporal.refresh_table does, without its check of the caller (migrations regenerate every table''s functions as they were owned): the functions generated again, with the EXECUTE grants the old ones had. Returns their signatures.';

CREATE OR REPLACE FUNCTION bitemporal.refresh_table(relation regclass)
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d bitemporal.app_table := bitemporal.table_definition(relation);
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
    RETURN bitemporal_internal.regenerate_table(relation);
END;
$$;
COMMENT ON FUNCTION bitemporal.refresh_table(regclass) IS
    'Regenerates an application table''s functions after value columns were added or dropped, with the EXECUTE grants the old ones had. Returns their signatures. Raises BT402 unless the caller owns the table (the write functions run with their owner''s rights), or for a column of a type without equality.';

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
            CASE WHEN unseen THEN pg_catalog.format('DELETE FROM %s v WHERE v.version_id = $1', tab)
                 ELSE pg_catalog.format('UPDATE %s v SET known_period = tstzrange(lower(v.known_period), $2, ''[)'') '
                                        'WHERE v.version_id = $1', tab) END,
            tab, bitemporal_internal.column_list(columns), bitemporal_internal.column_list(columns, 'e.'))
            USING v.version_id, known_at, period,
                  CASE WHEN unseen THEN v.carried_from ELSE coalesce(v.carried_from, v.version_id) END;
        ended := ended || v.version_id;
    END LOOP;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_cut(bitemporal.app_table, anyelement, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of the image''s key overlapping a valid period and re-records their remainders outside it; returns the ended version ids. Call with the key locked. The rule of bitemporal_internal.cut.';
