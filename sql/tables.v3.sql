-- bitemporal: application tables (version 3).
--
-- Changes from version 2 (tables.v2.sql), loaded by migration 0010:
--   * enable_table, refusing a table that an ordinary table references by a
--     foreign key (BT402), names the fix that keeps the reference: a foreign
--     key to the <table>_key table, which holds each key once.
-- Everything else is as in version 2.

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
        -- The fix that keeps the reference: each key is once in the key table.
        SELECT pg_catalog.format('%s references it by foreign key %s; a key repeats across versions, so drop that foreign key '
                                 'and refer to its key table %I.%I instead, which this creates and which holds each key once '
                                 '(in Alembic: op.create_key_foreign_key), or make it a temporal reference with bitemporal.add_reference',
                                 con.conrelid::regclass, con.conname, schema_name, key_table) INTO problem
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
