-- bitemporal on Citus: record_many set-based there too (migration 0020,
-- issue 14).
--
-- On Citus, bitemporal.distribute() makes bitemporal.record_many call
-- bitemporal_internal.record_many_by_row, which citus.v1.sql wrote to call
-- bitemporal.record for each row: record_many's statements read the version
-- table through LATERAL subqueries driven by the batch's rows, which Citus
-- cannot plan over a distributed table ("complex joins are only supported
-- when all distributed tables are co-located and joined on their
-- distribution columns"). A row then cost record's several round trips to
-- its worker and a subtransaction: 0.04-0.12x plain PostgreSQL's rate.
--
-- Here record_many_by_row (still called by that name, which distribute()
-- names) is record_many as facts_bulk.v3.sql defines it, the same steps and
-- the same statements, but for step 3a: it reads the keys and their current
-- versions with plain joins of the round's rows with fact_key and
-- fact_version on the distribution column, each a statement Citus runs on
-- every shard at once with the rows sent along (naming only what the workers
-- have: not bitemporal_internal.batch_still_known(), the shards' partial
-- indexes of current versions serve upper_inf), and decides each row on the
-- coordinator from what they return, by line. Every other statement of
-- record_many already runs on Citus as it is: the inserts from the batch
-- (Citus inserts through the coordinator), the updates and deletes joined
-- with arrays of version ids (here with their entities too: every update
-- and delete the write functions issue names the key). Nothing
-- changes on one node, where record_many keeps its form (its LATERAL lookups
-- make every generic plan a good one).
--
-- Step 3d checks the values it inserts before the insert (see there).
--
-- One difference on Citus: record_many locks a batch's keys in key order,
-- so that two batches never deadlock; on Citus each worker locks its own
-- keys in that order, in parallel, and two batches that share keys on
-- several workers can deadlock across them. Citus's distributed deadlock
-- detection then cancels one (a DeadlockError, transient: retry it).

CREATE OR REPLACE FUNCTION bitemporal_internal.record_many_by_row(batch bitemporal.batch_row[], max_errors integer DEFAULT 100)
RETURNS TABLE (line bigint, version_id bigint, created boolean, superseded bigint[], known_at timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- bitemporal.record_many (facts_bulk.v3.sql) but for step 3a: see the head of
-- this file. Written with pg_current_xact_id() and transaction_timestamp(),
-- which bitemporal.distribute() turns into Citus's transaction id and stamp.
#variable_conflict use_column
DECLARE
    me            xid8 := pg_catalog.pg_current_xact_id();
    tx_time       timestamptz := pg_catalog.transaction_timestamp();
    present       timestamptz := pg_catalog.clock_timestamp();
    ids           regclass := pg_catalog.pg_get_serial_sequence('bitemporal.fact_version', 'version_id')::regclass;
    report_max    integer := greatest(coalesce(max_errors, 100), 1);
    bad           jsonb := '[]';      -- [[line, sqlstate, reason], ...]
    bad_count     bigint := 0;
    new_entities  text[];
    new_attrs     text[];
    items         bitemporal.batch_item[];
    sizes         integer[];
    next_item     integer := 1;
    cur           bitemporal.batch_item[];
    writes        bitemporal.batch_item[];
    noop_lines    bigint[];
    noop_ids      bigint[];
    round_bad     jsonb;
    bad_entities  text[];
    bad_attrs     text[];
    failed_e      text[];
    failed_a      text[];
    gone_e        text[];
    gone_ids      bigint[];
    gone_at       timestamptz[];
    gone_cut      tstzrange[];
    closing_e     text[];
    closing_ids   bigint[];
    closing_at    timestamptz[];
    closing_cut   tstzrange[];
    n_advanced    bigint;
    n_done        bigint;
BEGIN
    IF batch IS NULL OR cardinality(batch) = 0 THEN
        RETURN;
    END IF;

    -- 1. Problems record() would raise before reading any version.
    SELECT count(*),
           coalesce(jsonb_agg(jsonb_build_array(p.line, p.problem[1], p.problem[2]) ORDER BY p.line)
                        FILTER (WHERE p.rank <= report_max), '[]')
      INTO bad_count, bad
      FROM (SELECT q.line, q.problem, row_number() OVER (ORDER BY q.line) AS rank
              FROM (SELECT u.line,
                           bitemporal_internal.batch_row_problem(u.entity, u.attribute, u.source, u.value,
                                                        u.valid_from, u.valid_to, u.known_at, present) AS problem
                      FROM unnest(batch) WITH ORDINALITY
                           AS u(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by, line)
                   ) q
             WHERE q.problem IS NOT NULL) p;
    IF bad_count > 0 THEN
        PERFORM bitemporal_internal.raise_batch_error(bad_count, bad);
    END IF;

    -- Announced to bitemporal.settled_knowledge_time before anything is
    -- written: the transaction time (moved past the settled floor), and the
    -- earliest explicit knowledge time, which covers the batch's others.
    tx_time := bitemporal_internal.announce_knowledge(tx_time, true);
    PERFORM bitemporal_internal.announce_knowledge(pg_catalog.min(u.known_at), false)
       FROM unnest(batch) AS u(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by)
      HAVING pg_catalog.min(u.known_at) IS NOT NULL;

    -- 2. Lock every key, creating the missing ones, in (entity, attribute)
    -- order, so that batches never deadlock. A new key is created as lock_key
    -- creates it, known from its first row's knowledge time (that row always
    -- writes: the key has no versions). ON CONFLICT ... DO UPDATE ... WHERE
    -- false locks an existing key's row (waiting for its current writer)
    -- without changing it; RETURNING returns the keys created.
    WITH created AS (
        INSERT INTO bitemporal.fact_key AS fk (entity, attribute, first_known_at, last_known_at, last_txid)
        SELECT DISTINCT ON (u.entity, u.attribute)
               u.entity, u.attribute, coalesce(u.known_at, tx_time), coalesce(u.known_at, tx_time), me
          FROM unnest(batch) WITH ORDINALITY
               AS u(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by, line)
         ORDER BY u.entity, u.attribute, u.line
        ON CONFLICT ON CONSTRAINT fact_key_pkey DO UPDATE SET last_txid = fk.last_txid WHERE false
        RETURNING fk.entity, fk.attribute)
    SELECT coalesce(array_agg(c.entity), '{}'), coalesce(array_agg(c.attribute), '{}')
      INTO new_entities, new_attrs
      FROM created c;

    -- The rows in round order (round n: the n-th row of every key), with
    -- their normalised valid periods (as bitemporal_internal.valid_period computes
    -- them). Within a round, rows are in key order: versions inserted in
    -- index order keep the GiST index's working set small.
    EXECUTE $q$
        SELECT ARRAY(
            SELECT ROW(s.line, s.round, s.entity, s.attribute, s.source, s.value,
                       tstzrange(CASE WHEN s.valid_from = '-infinity' THEN NULL ELSE s.valid_from END,
                                 CASE WHEN s.valid_to >= bitemporal_internal.open_end_sentinel() THEN NULL ELSE s.valid_to END,
                                 '[)'),
                       s.known_at, s.recorded_by, s.round = 1 AND n.e IS NOT NULL, NULL, NULL, NULL
                   )::bitemporal.batch_item
              FROM (SELECT u.*, row_number() OVER (PARTITION BY u.entity, u.attribute ORDER BY u.line)::integer AS round
                      FROM unnest($1) WITH ORDINALITY
                           AS u(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by, line)) s
              LEFT JOIN unnest($2, $3) n(e, a) ON n.e = s.entity AND n.a = s.attribute
             ORDER BY s.round, s.entity, s.attribute)
    $q$ INTO items USING batch, new_entities, new_attrs;
    sizes := ARRAY(SELECT count(*)::integer FROM unnest(items) i GROUP BY i.round ORDER BY i.round);

    -- 3. The rounds.
    FOR n IN 1 .. cardinality(sizes) LOOP
        cur := items[next_item : next_item + sizes[n] - 1];
        next_item := next_item + sizes[n];
        IF failed_e IS NOT NULL THEN
            -- Rows after a bad row of the same key are not applied.
            cur := ARRAY(SELECT w FROM unnest(cur) w
                          WHERE NOT EXISTS (SELECT FROM unnest(failed_e, failed_a) f(e, a)
                                             WHERE f.e = w.entity AND f.a = w.attribute));
            CONTINUE WHEN cardinality(cur) = 0;
        END IF;

        -- a. Each row's knowledge time, whether it is a no-op or refused, and
        -- which versions its write deletes and closes; the writes get their
        -- version ids.
        WITH w AS MATERIALIZED (
            SELECT * FROM unnest(cur)),
        -- Read from the shards: each a join of the round's rows with a
        -- distributed table on its distribution column, which Citus plans
        -- (it sends the rows to the workers).
        k AS MATERIALIZED (
            SELECT w.line, fk.last_known_at, fk.last_txid
              FROM w JOIN bitemporal.fact_key fk
                ON fk.entity = w.entity AND fk.attribute = w.attribute),
        cv AS MATERIALIZED (
            -- The current versions of each row's key and source that overlap its
            -- period (a key created by this batch has no versions yet).
            SELECT w.line, v.version_id, v.value, v.valid_period,
                   lower(v.known_period) AS known_from, v.recorded_in
              FROM w JOIN bitemporal.fact_version v
                ON v.entity = w.entity AND v.attribute = w.attribute AND v.source = w.source
             WHERE NOT w.fresh
               AND upper_inf(v.known_period)
               AND v.valid_period && w.valid_period),
        -- Then decided on the coordinator, by line, as record_many decides.
        kt AS MATERIALIZED (
            -- bitemporal_internal.lock_key's knowledge time.
            SELECT w.line, k.last_known_at, k.last_txid,
                   CASE WHEN w.known_at IS NOT NULL THEN w.known_at
                        WHEN k.last_txid = me THEN greatest(tx_time, k.last_known_at)
                        ELSE greatest(tx_time, k.last_known_at + interval '1 microsecond')
                   END AS t
              FROM w JOIN k ON k.line = w.line),
        h AS MATERIALIZED (
            -- bitemporal.record's no-op test, and bitemporal_internal.cut's view of the
            -- current versions of the key and source overlapping the period:
            -- those to delete (written by this transaction at the same
            -- knowledge time), to close, or that make the knowledge time late.
            -- (range_agg of the row's one period is that period, as a multirange.)
            SELECT v.line,
                   bool_and(v.value IS NOT DISTINCT FROM w.value)
                       AND range_agg(v.valid_period * w.valid_period) = range_agg(w.valid_period) AS same,
                   (array_agg(v.version_id ORDER BY lower(v.valid_period) NULLS FIRST))[1] AS same_id,
                   array_agg(v.version_id) FILTER (WHERE v.known_from = kt.t AND v.recorded_in = me) AS gone,
                   array_agg(v.version_id) FILTER (WHERE v.known_from < kt.t) AS closing,
                   (array_agg(ARRAY[v.version_id::text, v.known_from::text] ORDER BY v.version_id)
                        FILTER (WHERE v.known_from > kt.t
                                   OR (v.known_from = kt.t AND v.recorded_in <> me)))[1:1] AS late
              FROM cv v
              JOIN w ON w.line = v.line
              JOIN kt ON kt.line = v.line
             GROUP BY v.line),
        a AS MATERIALIZED (
            SELECT w.line, w.round, w.entity, w.attribute, w.source, w.value, w.valid_period,
                   w.known_at, w.recorded_by, w.fresh, kt.t, coalesce(h.same, false) AS same,
                   h.same_id, h.gone, h.closing,
                   kt.last_known_at <> kt.t OR kt.last_txid <> me AS advances,
                   CASE
                   WHEN w.known_at < kt.last_known_at OR (w.known_at = kt.last_known_at AND kt.last_txid <> me) THEN
                       pg_catalog.format('knowledge time %s is not later than knowledge already recorded for (%s, %s) at %s',
                                         w.known_at, w.entity, w.attribute, kt.last_known_at)
                   WHEN NOT coalesce(h.same, false) AND h.late IS NOT NULL THEN
                       pg_catalog.format('knowledge time %s is not later than version %s (known from %s)',
                                         kt.t, h.late[1][1], h.late[1][2]::timestamptz)
                   END AS problem
              FROM w
              JOIN kt ON kt.line = w.line
              LEFT JOIN h ON h.line = w.line),
        x AS MATERIALIZED (
            SELECT a.*, pg_catalog.nextval(ids) AS new_id,
                   ARRAY(SELECT e.id FROM unnest(coalesce(a.gone, '{}') || coalesce(a.closing, '{}')) e(id)
                          ORDER BY e.id) AS ended
              FROM a WHERE a.problem IS NULL AND NOT a.same)
        SELECT (SELECT coalesce(array_agg(ROW(x.line, x.round, x.entity, x.attribute, x.source, x.value,
                                              x.valid_period, x.known_at, x.recorded_by, x.fresh, x.t,
                                              x.new_id, x.ended)::bitemporal.batch_item
                                          ORDER BY x.entity, x.attribute), '{}') FROM x),
               (SELECT array_agg(a.line ORDER BY a.line) FROM a WHERE a.problem IS NULL AND a.same),
               (SELECT array_agg(a.same_id ORDER BY a.line) FROM a WHERE a.problem IS NULL AND a.same),
               (SELECT coalesce(jsonb_agg(jsonb_build_array(a.line, 'BT002', a.problem)), '[]')
                  FROM a WHERE a.problem IS NOT NULL),
               (SELECT array_agg(a.entity ORDER BY a.line) FROM a WHERE a.problem IS NOT NULL),
               (SELECT array_agg(a.attribute ORDER BY a.line) FROM a WHERE a.problem IS NOT NULL),
               (SELECT array_agg(x.entity ORDER BY g.id) FROM x CROSS JOIN LATERAL unnest(x.gone) g(id)),
               (SELECT array_agg(g.id ORDER BY g.id) FROM x CROSS JOIN LATERAL unnest(x.gone) g(id)),
               (SELECT array_agg(x.t ORDER BY g.id) FROM x CROSS JOIN LATERAL unnest(x.gone) g(id)),
               (SELECT array_agg(x.valid_period ORDER BY g.id) FROM x CROSS JOIN LATERAL unnest(x.gone) g(id)),
               (SELECT array_agg(x.entity ORDER BY c.id) FROM x CROSS JOIN LATERAL unnest(x.closing) c(id)),
               (SELECT array_agg(c.id ORDER BY c.id) FROM x CROSS JOIN LATERAL unnest(x.closing) c(id)),
               (SELECT array_agg(x.t ORDER BY c.id) FROM x CROSS JOIN LATERAL unnest(x.closing) c(id)),
               (SELECT array_agg(x.valid_period ORDER BY c.id) FROM x CROSS JOIN LATERAL unnest(x.closing) c(id)),
               (SELECT count(*) FROM x WHERE x.advances)
          INTO writes, noop_lines, noop_ids, round_bad, bad_entities, bad_attrs,
               gone_e, gone_ids, gone_at, gone_cut, closing_e, closing_ids, closing_at, closing_cut, n_advanced;

        IF round_bad <> '[]' THEN
            bad := bad || round_bad;
            bad_count := bad_count + jsonb_array_length(round_bad);
            failed_e := coalesce(failed_e, '{}') || bad_entities;
            failed_a := coalesce(failed_a, '{}') || bad_attrs;
        END IF;

        IF noop_lines IS NOT NULL THEN
            RETURN QUERY SELECT o.l, o.id, false, '{}'::bigint[], NULL::timestamptz
                           FROM unnest(noop_lines, noop_ids) o(l, id);
        END IF;
        CONTINUE WHEN cardinality(writes) = 0;

        -- b. Versions this transaction wrote at the same knowledge time were
        -- never visible: delete them instead of closing them (an empty known
        -- period), and re-record their remainders as they were.
        IF gone_ids IS NOT NULL THEN
            WITH gone AS (
                DELETE FROM bitemporal.fact_version v
                 USING unnest(gone_e, gone_ids, gone_at, gone_cut) g(e, id, t, cut)
                 WHERE v.entity = g.e AND v.version_id = g.id
                RETURNING g.t AS t, g.cut AS cut, v.entity AS e, v.attribute AS a, v.source AS s,
                          v.value AS val, v.valid_period AS valid, v.recorded_by AS by, v.carried_from AS carried),
            pieces AS (
                INSERT INTO bitemporal.fact_version
                       (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
                SELECT g.e, g.a, g.s, g.val, p.piece, tstzrange(g.t, NULL, '[)'), g.by, g.carried
                  FROM gone g
                 CROSS JOIN LATERAL unnest(tstzmultirange(g.valid) - tstzmultirange(g.cut)) AS p(piece))
            SELECT count(*) INTO n_done FROM gone;
            IF n_done <> cardinality(gone_ids) THEN
                RAISE EXCEPTION 'bitemporal.record_many: % versions to delete, % deleted', cardinality(gone_ids), n_done;
            END IF;
        END IF;

        -- c. Close the knowledge of the other overlapping current versions and
        -- re-record their remainders, carrying the original assertion.
        IF closing_ids IS NOT NULL THEN
            WITH closed AS (
                UPDATE bitemporal.fact_version v
                   SET known_period = tstzrange(lower(v.known_period), c.t, '[)')
                  FROM unnest(closing_e, closing_ids, closing_at, closing_cut) c(e, id, t, cut)
                 WHERE v.entity = c.e AND v.version_id = c.id
                RETURNING c.t AS t, c.cut AS cut, v.version_id AS id, v.entity AS e, v.attribute AS a,
                          v.source AS s, v.value AS val, v.valid_period AS valid, v.recorded_by AS by,
                          v.carried_from AS carried),
            pieces AS (
                INSERT INTO bitemporal.fact_version
                       (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
                SELECT c.e, c.a, c.s, c.val, p.piece, tstzrange(c.t, NULL, '[)'), c.by, coalesce(c.carried, c.id)
                  FROM closed c
                 CROSS JOIN LATERAL unnest(tstzmultirange(c.valid) - tstzmultirange(c.cut)) AS p(piece))
            SELECT count(*) INTO n_done FROM closed;
            IF n_done <> cardinality(closing_ids) THEN
                RAISE EXCEPTION 'bitemporal.record_many: % versions to close, % closed', cardinality(closing_ids), n_done;
            END IF;
        END IF;

        -- d. The new versions (with the ids drawn above), the keys' knowledge,
        -- and the rows' results. Their values are checked here first, as the
        -- insert's trigger checks them on the shards (BT007): Citus inserts
        -- through the coordinator, and an error a worker raises in that copy
        -- reaches the caller without its SQLSTATE (XX000).
        PERFORM bitemporal_internal.check_json_value('value', w.value) FROM unnest(writes) w;
        INSERT INTO bitemporal.fact_version
               (version_id, entity, attribute, source, value, valid_period, known_period, recorded_by)
        OVERRIDING SYSTEM VALUE
        SELECT w.version_id, w.entity, w.attribute, w.source, w.value, w.valid_period,
               tstzrange(w.write_at, NULL, '[)'), w.recorded_by
          FROM unnest(writes) w;
        IF n_advanced > 0 THEN
            UPDATE bitemporal.fact_key k
               SET last_known_at = w.write_at, last_txid = me
              FROM unnest(writes) w
             WHERE k.entity = w.entity AND k.attribute = w.attribute
               AND (k.last_known_at <> w.write_at OR k.last_txid <> me);
        END IF;
        RETURN QUERY SELECT w.line, w.version_id, true, w.superseded, w.write_at FROM unnest(writes) w;
    END LOOP;

    IF bad_count > 0 THEN
        PERFORM bitemporal_internal.raise_batch_error(
            bad_count,
            (SELECT jsonb_agg(r.row ORDER BY (r.row ->> 0)::bigint)
               FROM (SELECT b.row FROM jsonb_array_elements(bad) b(row)
                      ORDER BY (b.row ->> 0)::bigint LIMIT report_max) r));
    END IF;
    RETURN;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.record_many_by_row(bitemporal.batch_row[], integer) IS
    'bitemporal.record_many on Citus (bitemporal.distribute() makes it call this, by this name, from its first version, which recorded row by row): record_many''s steps and statements, set-based, its lookups of keys and current versions written as joins on the distribution column, which Citus plans. Same checks, results and errors (BT301 with every bad row, nothing written).';
