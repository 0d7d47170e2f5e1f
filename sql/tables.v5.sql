-- bitemporal: application tables' writes re-record by value (version 5;
-- migration 0023; issue 14).
--
-- bitemporal_internal.table_record as tables.v4.sql defines it, and
-- bitemporal_internal.table_cut, changed in one way: every version they
-- insert goes in with INSERT ... VALUES, where they used INSERT ... SELECT
-- (table_record: of the image's columns; table_cut: of the remainders, in the
-- statement that ended the version). The reason is facts_write.v7.sql's: on
-- Citus an INSERT ... SELECT runs through the coordinator and reaches the
-- shard by COPY, and Citus commits a transaction that copied rows in two
-- phases (PREPARE TRANSACTION, then COMMIT PREPARED after the coordinator's
-- commit); an INSERT ... VALUES is routed to the key's shard, and a write to
-- one key of a distributed table commits in one phase. table_cut now ends a
-- version (UPDATE or DELETE ... RETURNING it) and then inserts each of its
-- remainders (none, one or two), lowest first, as before, so the exclusion
-- constraint still never sees the version and a remainder both open.
--
-- On one node the rows, their order and the errors are the same.

-- bitemporal_internal.table_record as tables.v4.sql defines it, its insert by value.
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
        -- Version 5: by value, one routed insert on Citus (see the header).
        EXECUTE pg_catalog.format(
            'INSERT INTO %s (%s, valid_period, known_period) VALUES (%s, $2, tstzrange($3, NULL, ''[)'')) RETURNING version_id',
            tab, bitemporal_internal.column_list(columns), bitemporal_internal.column_list(columns, '($1).'))
           INTO result.version_id USING image, period, t;
        -- Version 3: the key's latest knowledge is advanced by the table's
        -- insert trigger (bitemporal_internal.key_knowledge_event), as the
        -- separate UPDATE of advance_table_key did a second time.
        result.created := true;
        result.known_at := t;
        PERFORM bitemporal_internal.check_table_references(d);
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_record(anyelement, timestamptz, timestamptz, timestamptz) IS
    'Records a row image (key and value columns of an application table''s row type) for [valid_from, valid_to), known from known_at (default: the transaction time): a sequenced update with the semantics of bitemporal.record; an erased version never holds the row''s values (version 2, table_erasure.v1.sql), so a row with every value column NULL is recorded over it. Usually called through the table''s generated <table>_record(). Errors: BT001, BT002, BT003, BT005, BT401, BT403; the table''s own constraints (23502 a null in a NOT NULL column, 23514 a CHECK) as PostgreSQL raises them.';

-- bitemporal_internal.table_cut as tables.v4.sql defines it (version 4), each
-- remainder inserted by value (version 5).
CREATE OR REPLACE FUNCTION bitemporal_internal.table_cut(d bitemporal.app_table, image anyelement, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    me      xid8 := pg_catalog.pg_current_xact_id();
    tab     text := pg_catalog.format('%I.%I', d.table_schema, d.table_name);
    columns text[] := d.key_columns || d.value_columns;
    -- The statements' texts, built once a call rather than once a version
    -- (each built name list is a function call).
    by_key  text := bitemporal_internal.key_match(d, 'v', '($3).');
    closing text := pg_catalog.format(
        'UPDATE %s v SET known_period = tstzrange(lower(v.known_period), $2, ''[)'') '
        'WHERE %s AND v.version_id = $1 RETURNING ROW(v.*)::%s AS ended_version', tab, by_key, tab);
    removing text := pg_catalog.format(
        'DELETE FROM %s v WHERE %s AND v.version_id = $1 RETURNING ROW(v.*)::%s AS ended_version', tab, by_key, tab);
    re_record text := pg_catalog.format(
        'INSERT INTO %s (%s, valid_period, known_period, carried_from) VALUES (%s, $2, tstzrange($3, NULL, ''[)''), $4)',
        tab, bitemporal_internal.column_list(columns), bitemporal_internal.column_list(columns, '($1).'));
    v       record;
    -- The version ended, as the table's row type: ROW(v.*), since a column may be
    -- named v, and PL/pgSQL takes no %TYPE of a composite polymorphic argument.
    done    record;
    unseen  boolean;
    piece   tstzrange;
    ended   bigint[] := '{}';
BEGIN
    -- As bitemporal_internal.cut: end each overlapping current version (close its
    -- knowledge or, if this transaction wrote it at this very knowledge time,
    -- remove it: nobody saw it), then re-record its parts outside the period.
    -- The version is ended before its remainders are inserted, so the
    -- exclusion constraint never sees both open. The version is named by its
    -- key as well as its id (one shard on Citus).
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
        EXECUTE CASE WHEN unseen THEN removing ELSE closing END
           INTO done USING v.version_id, known_at, image;
        -- A multirange's ranges come in order, the one open below first.
        FOREACH piece IN ARRAY ARRAY(SELECT p FROM unnest(tstzmultirange((done.ended_version).valid_period) - tstzmultirange(period)) AS p)
        LOOP
            EXECUTE re_record
              USING done.ended_version, piece, known_at,
                    CASE WHEN unseen THEN v.carried_from ELSE coalesce(v.carried_from, v.version_id) END;
        END LOOP;
        ended := ended || v.version_id;
    END LOOP;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_cut(bitemporal.app_table, anyelement, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of the image''s key overlapping a valid period and re-records their remainders outside it, one INSERT ... VALUES each (on Citus: routed to the key''s shard, so a single-key write commits in one phase); returns the ended version ids. Call with the key locked. The rule of bitemporal_internal.cut; each version ended is named by key and id.';
