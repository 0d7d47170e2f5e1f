-- bitemporal: temporal references between distributed application tables
-- (issue 14; migration 0030).
--
-- On one node a temporal reference (bitemporal.add_reference) is a pair of
-- deferred constraint triggers, made immediate at the end of each write
-- (check_table_references), because a write passes through states that break
-- it. On Citus those triggers would run on the worker holding the shard, and
-- the coordinator's SET CONSTRAINTS does not reach it: they fire at the
-- worker's COMMIT, and a transaction writing one worker commits there after
-- the coordinator has (measured: "could not commit transaction for shard",
-- SQLSTATE XX000, the check's own error only a WARNING). So a reference
-- between distributed tables is checked by the write functions themselves,
-- at the end of each write, with the written key:
--
--   * both tables distributed and co-located, the child's distribution
--     column being the one that names the parent's (its first key column):
--     then a key's child versions and the parent versions they refer to are
--     on one shard group, and each check is routed to the worker holding
--     them: a child write's two statements (the parent's key share-locked,
--     then the coverage asked), a parent write's one (it holds the key). add_reference refuses (BT502) any other shape, and a reference
--     between a distributed table and one on the coordinator; it locks both
--     tables, as CREATE TRIGGER does on one node, so that a write waiting
--     meanwhile checks the new reference;
--   * bitemporal.app_reference.distributed marks such a reference: it has no
--     triggers. check_table_references (version 2) takes the written image:
--     for a reference whose child the write changed, the key's current child
--     versions must be covered; for one whose parent it changed, the current
--     child versions naming that parent key (bitemporal_internal.check_key_reference,
--     given the written table's definition, so that a write reads the
--     registry for the other table only).
--     table_record and table_retract (as tables.v5.sql and tables.v4.sql define
--     them) pass it their image; nothing else calls check_table_references.
--
-- What this does not enforce: a distributed table's rows written by hand by
-- the store's owner (no role but the owner may write them: roles write through
-- the functions). docs/citus.md says so.
--
-- bitemporal_internal.lock_table_key (version 2, at the end) inserts a new
-- key's row by value: one routed statement on Citus, one phase at commit.
--
-- On one node nothing changes: every reference there has distributed false,
-- and version 2 sets its triggers immediate as version 1 did.

ALTER TABLE bitemporal.app_reference ADD COLUMN distributed boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN bitemporal.app_reference.distributed IS
    'True for a reference between two co-located distributed tables (Citus): it has no triggers, and the tables'' write functions check it (bitemporal_internal.check_key_reference).';

-- Whether a table is distributed by Citus, and with which tables it is co-located.
CREATE FUNCTION bitemporal_internal.colocation_of(relation regclass)
RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    colocation integer;
BEGIN
    -- pg_dist_partition exists only with Citus: looked up by name, at run time.
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        RETURN NULL;
    END IF;
    EXECUTE 'SELECT p.colocationid FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1 AND p.partmethod = ''h'''
       INTO colocation USING relation;
    RETURN colocation;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.colocation_of(regclass) IS
    'The Citus co-location group of a distributed (hash) table; NULL for a table that is not distributed, or without Citus.';

CREATE FUNCTION bitemporal_internal.check_key_reference(
    ref bitemporal.app_reference, written bitemporal.app_table, image anyelement, as_child boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- The written table is the child (as_child) or the parent: the registry
    -- is read for the other one only when needed.
    parent  bitemporal.app_table := CASE WHEN as_child
                THEN bitemporal.table_definition(pg_catalog.format('%I.%I', ref.parent_schema, ref.parent_table)::regclass)
                ELSE written END;
    -- The image's columns that name the parent key: the reference's, in a
    -- child image; the key's, in a parent image.
    named   text := bitemporal_internal.column_list(
                CASE WHEN as_child THEN ref.child_columns ELSE parent.key_columns END, '($1).');
    applies boolean;
    key     text;
    found   record;
BEGIN
    -- A null in the reference (MATCH SIMPLE): nothing to check.
    EXECUTE pg_catalog.format('SELECT ROW(%1$s) IS NOT NULL, ROW(%1$s)::text', named) INTO applies, key USING image;
    IF NOT applies THEN
        RETURN;
    END IF;
    -- A child write share-locks the parent's key, as check_reference does: its
    -- writers wait for this transaction, and this check sees any of them that
    -- committed. (A parent write holds that key's row locked already.) Every
    -- table below is filtered by the key's distribution column: on Citus each
    -- statement goes to the one worker holding the key.
    IF as_child THEN
        EXECUTE pg_catalog.format('SELECT FROM %I.%I k WHERE ROW(%s) = ROW(%s) FOR SHARE',
                                  parent.table_schema, parent.key_table,
                                  bitemporal_internal.column_list(parent.key_columns, 'k.'), named)
            USING image;
    END IF;
    -- The current child versions concerned (a child write: its key's; a parent
    -- write: every one naming the parent key) that the parent's current
    -- versions do not cover; the first by id.
    EXECUTE pg_catalog.format(
        'SELECT c.version_id, c.valid_period, covered FROM %1$I.%2$I c,'
        '       (SELECT coalesce(range_agg(p.valid_period), ''{}'') FROM %3$I.%4$I p'
        '         WHERE ROW(%5$s) = ROW(%6$s) AND upper_inf(p.known_period)) AS h (covered)'
        ' WHERE ROW(%7$s) = ROW(%6$s) AND upper_inf(c.known_period) AND %8$s AND NOT covered @> c.valid_period'
        ' ORDER BY c.version_id LIMIT 1',
        ref.child_schema, ref.child_table, parent.table_schema, parent.table_name,
        bitemporal_internal.column_list(parent.key_columns, 'p.'), named,
        bitemporal_internal.column_list(ref.child_columns, 'c.'),
        CASE WHEN as_child THEN bitemporal_internal.key_match(written, 'c') ELSE 'true' END)
       INTO found USING image;
    IF found.version_id IS NOT NULL THEN
        -- The message of check_reference, word for word.
        RAISE EXCEPTION 'temporal reference % violated: version % of % refers to % of %.% over %, which holds it only over %',
                ref.name, found.version_id, pg_catalog.format('%I.%I', ref.child_schema, ref.child_table), key,
                ref.parent_schema, ref.parent_table, found.valid_period,
                CASE WHEN isempty(found.covered) THEN 'no period' ELSE found.covered::text END
            USING ERRCODE = 'BT403',
                  HINT = 'Record the parent first (for the whole period), or shorten the child''s valid period.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_key_reference(bitemporal.app_reference, bitemporal.app_table, anyelement, boolean) IS
    'For a reference between distributed tables (app_reference.distributed), after a write of the image''s key to written (the child when as_child, else the parent): raises BT403 unless the parent''s current versions cover every current child version concerned (as_child: the child key''s versions; else every child version naming the parent key the image holds).';

-- bitemporal_internal.check_table_references as surface.v1.sql defines it
-- (version 1, which it replaces), given the written image, for the
-- references between distributed tables too.
DROP FUNCTION bitemporal_internal.check_table_references(bitemporal.app_table);
CREATE FUNCTION bitemporal_internal.check_table_references(d bitemporal.app_table, image anyelement)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    names text;
    ref   bitemporal.app_reference;
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
             WHERE (r.child_schema, r.child_table) = (d.table_schema, d.table_name) AND NOT r.distributed
            UNION ALL
            SELECT pg_catalog.format('%I.%I', r.parent_schema, r.name || '_parent')
              FROM bitemporal.app_reference r
             WHERE (r.parent_schema, r.parent_table) = (d.table_schema, d.table_name) AND NOT r.distributed) AS t (name);
    IF names IS NOT NULL THEN
        EXECUTE 'SET CONSTRAINTS ' || names || ' IMMEDIATE';
        EXECUTE 'SET CONSTRAINTS ' || names || ' DEFERRED';
    END IF;
    -- Version 2: a reference between distributed tables has no triggers: the
    -- write's key is checked here (see this file's header).
    FOR ref IN SELECT * FROM bitemporal.app_reference r
                WHERE r.distributed
                  AND ((r.child_schema, r.child_table) = (d.table_schema, d.table_name)
                       OR (r.parent_schema, r.parent_table) = (d.table_schema, d.table_name))
                ORDER BY r.child_schema, r.child_table, r.name
    LOOP
        IF (ref.child_schema, ref.child_table) = (d.table_schema, d.table_name) THEN
            PERFORM bitemporal_internal.check_key_reference(ref, d, image, true);
        END IF;
        IF (ref.parent_schema, ref.parent_table) = (d.table_schema, d.table_name) THEN
            PERFORM bitemporal_internal.check_key_reference(ref, d, image, false);
        END IF;
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_table_references(bitemporal.app_table, anyelement) IS
    'Checks now the temporal references a write of the image''s key to an application table concerns: on one node by making the constraint triggers it queued immediate (they are deferred, so that a write''s intermediate states do not trip them); between distributed tables by checking the key (bitemporal_internal.check_key_reference). Raises BT403.';

-- bitemporal_internal.table_record as tables.v5.sql defines it, its references
-- checked with its image (version 6).
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
        -- Version 6: the references given the written key (distributed tables).
        PERFORM bitemporal_internal.check_table_references(d, image);
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_record(anyelement, timestamptz, timestamptz, timestamptz) IS
    'Records a row image (key and value columns of an application table''s row type) for [valid_from, valid_to), known from known_at (default: the transaction time): a sequenced update with the semantics of bitemporal.record; an erased version never holds the row''s values (version 2, table_erasure.v1.sql), so a row with every value column NULL is recorded over it. Usually called through the table''s generated <table>_record(). Errors: BT001, BT002, BT003, BT005, BT401, BT403; the table''s own constraints (23502 a null in a NOT NULL column, 23514 a CHECK) as PostgreSQL raises them.';

-- bitemporal_internal.table_retract as tables.v4.sql defines it (version 2), its
-- references checked with its image (version 3).
CREATE OR REPLACE FUNCTION bitemporal_internal.table_retract(
    image       anyelement,
    valid_from  timestamptz DEFAULT NULL,
    valid_to    timestamptz DEFAULT NULL,
    known_at    timestamptz DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    d      bitemporal.app_table := bitemporal.table_definition(bitemporal_internal.row_relation(pg_catalog.pg_typeof(image)));
    period tstzrange;
    t      timestamptz;
    ended  bigint[];
BEGIN
    period := bitemporal_internal.valid_period(valid_from, valid_to);
    t := bitemporal_internal.lock_table_key(d, image, known_at, false);
    ended := bitemporal_internal.table_cut(d, image, period, t);
    -- Version 2: the key's latest knowledge is advanced by the triggers of the
    -- versions ended (key_knowledge_event): closing one is a knowledge event,
    -- and one removed was written by this transaction at this very time.
    IF cardinality(ended) > 0 THEN
        -- Version 3: the references given the written key (distributed tables).
        PERFORM bitemporal_internal.check_table_references(d, image);
    END IF;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_retract(anyelement, timestamptz, timestamptz, timestamptz) IS
    'Sequenced delete of the image''s key over [valid_from, valid_to), known from known_at: the semantics of bitemporal.retract. Returns the ended version ids. Usually called through <table>_retract(). Errors: BT001, BT002, BT003, BT004, BT005, BT401, BT403.';

-- bitemporal.add_reference as surface.v1.sql defines it, for distributed
-- tables too (version 2).
CREATE OR REPLACE FUNCTION bitemporal.add_reference(child regclass, columns text[], parent regclass, name text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    c         bitemporal.app_table := bitemporal.table_definition(child);
    p         bitemporal.app_table := bitemporal.table_definition(parent);
    ref       bitemporal.app_reference;
    problem   text;
    v         bigint;
    -- Version 2: Citus's co-location groups of the two tables (NULL: not distributed).
    child_at  integer := bitemporal_internal.colocation_of(child);
    parent_at integer := bitemporal_internal.colocation_of(parent);
    image     record;
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
    -- Version 2: between distributed tables, only where each key's child
    -- versions and the parent versions they name share a shard group (see
    -- distributed_references.v1.sql).
    SELECT CASE
        WHEN child_at IS NULL AND parent_at IS NULL THEN NULL
        WHEN child_at IS NULL OR parent_at IS NULL
            THEN pg_catalog.format('%s is distributed and %s is not', CASE WHEN child_at IS NULL THEN parent ELSE child END,
                                   CASE WHEN child_at IS NULL THEN child ELSE parent END)
        WHEN child_at <> parent_at
            THEN pg_catalog.format('%s and %s are not co-located', child, parent)
        WHEN columns[1] <> c.key_columns[1]
            THEN pg_catalog.format('%s is distributed by %I, and the reference names %s.%I by %I',
                                   child, c.key_columns[1], parent, p.key_columns[1], columns[1]) END
      INTO problem;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION 'cannot add temporal reference %: %', name, problem
            USING ERRCODE = 'BT502',
                  HINT = 'On Citus both tables must be distributed (bitemporal.distribute_table), co-located, the child by the column that names the parent''s first key column; or both stay on the coordinator.';
    END IF;

    INSERT INTO bitemporal.app_reference (child_schema, child_table, name, child_columns, parent_schema, parent_table, distributed)
    VALUES (c.table_schema, c.table_name, name, columns, p.table_schema, p.table_name, child_at IS NOT NULL)
    RETURNING * INTO ref;
    -- What the parent-side check looks up: current child versions by reference.
    EXECUTE pg_catalog.format('CREATE INDEX %I ON %s (%s) WHERE upper_inf(known_period)',
                              name || '_idx', child, bitemporal_internal.column_list(columns));
    IF ref.distributed THEN
        -- No triggers: the write functions check it. Their writes wait until
        -- this transaction ends (as CREATE TRIGGER makes them wait on one
        -- node), and then see the reference; the rows already there are
        -- checked in one statement on every shard (co-located, joined on
        -- the distribution column), and a violation is reported as a write's.
        EXECUTE pg_catalog.format('LOCK TABLE %s, %s IN SHARE ROW EXCLUSIVE MODE', child, parent);
        EXECUTE pg_catalog.format(
            'SELECT c.version_id, c FROM %1$s c WHERE upper_inf(c.known_period) AND ROW(%2$s) IS NOT NULL'
            '   AND NOT coalesce((SELECT range_agg(p.valid_period) FROM %3$s p'
            '                      WHERE ROW(%4$s) = ROW(%2$s) AND upper_inf(p.known_period)), ''{}'') @> c.valid_period'
            ' ORDER BY c.version_id LIMIT 1',
            child, bitemporal_internal.column_list(columns, 'c.'), parent,
            bitemporal_internal.column_list(p.key_columns, 'p.'))
           INTO image;
        IF image.version_id IS NOT NULL THEN
            PERFORM bitemporal_internal.check_key_reference(ref, c, image.c, true);
        END IF;
        RETURN name;
    END IF;
    EXECUTE pg_catalog.format(
        'CREATE CONSTRAINT TRIGGER %I AFTER INSERT ON %s DEFERRABLE INITIALLY DEFERRED FOR EACH ROW '
        'EXECUTE FUNCTION bitemporal_internal.reference_child_check(%L)', name, child, name);
    EXECUTE pg_catalog.format(
        'CREATE CONSTRAINT TRIGGER %I AFTER UPDATE OR DELETE ON %s DEFERRABLE INITIALLY DEFERRED FOR EACH ROW '
        'EXECUTE FUNCTION bitemporal_internal.reference_parent_check(%L, %L, %L)',
        name || '_parent', parent, c.table_schema, c.table_name, name);
    -- The rows already there must satisfy it too.
    FOR v IN EXECUTE pg_catalog.format('SELECT c.version_id FROM %s c WHERE upper_inf(c.known_period) ORDER BY c.version_id', child)
    LOOP
        PERFORM bitemporal_internal.check_reference(ref, v);
    END LOOP;
    RETURN name;
END;
$$;
COMMENT ON FUNCTION bitemporal.add_reference(regclass, text[], regclass, text) IS
    'Adds a temporal reference from child columns to the key of a parent application table: at every valid time of each current child version, the parent must hold a current version of that key (nulls: no reference). Checked at the end of each write (BT403); existing rows are checked now. Returns its name (default <child>_<columns>_fkey). On Citus both tables distributed and co-located, the child distributed by the column naming the parent''s first key column (version 2). Raises BT401, BT402, BT502.';

-- bitemporal.drop_reference as surface.v1.sql defines it, for a reference
-- without triggers too (version 2).
CREATE OR REPLACE FUNCTION bitemporal.drop_reference(child regclass, name text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
    IF NOT ref.distributed THEN
        EXECUTE pg_catalog.format('DROP TRIGGER %I ON %I.%I', name || '_parent', ref.parent_schema, ref.parent_table);
        EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', name, child);
    END IF;
    EXECUTE pg_catalog.format('DROP INDEX %I.%I', c.table_schema, name || '_idx');
END;
$$;
COMMENT ON FUNCTION bitemporal.drop_reference(regclass, text) IS
    'Drops a temporal reference added by bitemporal.add_reference (a reference between distributed tables has no triggers: version 2). Raises BT401 if there is none of that name.';

-- bitemporal_internal.lock_table_key as surface.v1.sql defines it, a new key's
-- row inserted by value (version 2): on Citus the first write of a key then
-- goes to its worker alone and commits in one phase, as its later writes do
-- since tables.v5.sql.
CREATE OR REPLACE FUNCTION bitemporal_internal.lock_table_key(
    d bitemporal.app_table, image anyelement, known_at timestamptz, create_missing boolean)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
    PERFORM bitemporal_internal.check_knowledge_time(known_at);

    LOOP
        EXECUTE pg_catalog.format(
            'SELECT k.last_known_at, k.last_txid FROM %s k WHERE %s FOR UPDATE',
            keys, bitemporal_internal.key_match(d, 'k'))
           INTO last_at, last_tx USING image;
        EXIT WHEN last_at IS NOT NULL;
        IF NOT create_missing THEN
            RAISE EXCEPTION 'unknown key (%) in %.%: nothing was ever recorded for it',
                    bitemporal_internal.key_text(d, image), d.table_schema, d.table_name
                USING ERRCODE = 'BT004',
                      HINT = 'Check the key''s values.';
        END IF;
        t := coalesce(known_at, pg_catalog.transaction_timestamp());
        -- Version 2: by value, so that Citus routes it to the key's shard (an
        -- INSERT ... SELECT goes through COPY and a two-phase commit).
        EXECUTE pg_catalog.format(
            'INSERT INTO %s (%s, first_known_at, last_known_at, last_txid) VALUES (%s, $2, $2, $3) ON CONFLICT DO NOTHING',
            keys, bitemporal_internal.column_list(d.key_columns), bitemporal_internal.column_list(d.key_columns, '($1).'))
            USING image, t, pg_catalog.pg_current_xact_id();
        GET DIAGNOSTICS n = ROW_COUNT;
        IF n > 0 THEN
            RETURN t;
        END IF;
        -- Another transaction created the key first: lock its row and go on.
    END LOOP;
    RETURN bitemporal_internal.knowledge_time(known_at, last_at, last_tx,
                                     pg_catalog.format('(%s) in %I.%I', bitemporal_internal.key_text(d, image),
                                                       d.table_schema, d.table_name));
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.lock_table_key(bitemporal.app_table, anyelement, timestamptz, boolean) IS
    'Locks the key of an image in its table''s key table (creating it when asked) and returns the knowledge time to write at, by the rules of bitemporal_internal.lock_key; a new key inserted by value (version 2, distributed_references.v1.sql). Raises BT002, BT003, BT004, BT005.';
