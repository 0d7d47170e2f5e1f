-- bitemporal: bulk ingestion of fact versions (version 1).
--
-- bitemporal.record_many(batch) applies a batch of rows with exactly the
-- semantics of calling bitemporal.record for each row, in order, inside one
-- transaction (see facts_write.v1.sql), but set-based:
--   1. every row is checked without writing anything (key parts, value,
--      valid period, knowledge time against the present); if any row is bad,
--      the batch fails with SQLSTATE BT301 and the bad rows' positions and
--      reasons, and nothing is written;
--   2. every key of the batch is locked (its bitemporal.fact_key row, created
--      if missing) in one statement, in (entity, attribute) order, so that two
--      batches never deadlock and a concurrent record() of one key waits for
--      the batch or the batch for it, exactly as between two record() calls;
--   3. the rows are applied in rounds: round n holds the n-th row of every
--      key, so rows of one key are applied in batch order, and rows of
--      different keys, which never touch the same versions, are applied
--      together, each step one statement for the whole round:
--        a. the knowledge time of each row (as bitemporal.lock_key computes
--           it: the explicit known_at, checked against the key's latest
--           knowledge, or the transaction time moved just past knowledge
--           another transaction recorded), and whether the row is a no-op
--           (its value already known for the whole period: nothing written,
--           the key's knowledge time not advanced);
--        b. versions written earlier in this transaction at the same
--           knowledge time that the row supersedes are deleted (never visible
--           to anyone), and their remainders re-recorded;
--        c. the other overlapping current versions have their knowledge
--           closed, and their remainders re-recorded (multirange difference);
--        d. the new versions are inserted and the keys' knowledge advanced.
-- A row whose knowledge time is refused in a round (BT002: earlier than
-- knowledge already recorded for its key) is only found while applying: the
-- later rows of its key are then skipped (their outcome would depend on the
-- bad row), the other keys go on so that their problems are found too, and
-- the whole batch fails (BT301), undoing everything it wrote.
--
-- The caller passes the batch as an array of bitemporal.batch_row, in batch
-- order: the Python client COPYs the rows into a temporary table of its own
-- and aggregates them into the array in the same statement that calls
-- record_many, so that record_many (a SECURITY DEFINER write entry point)
-- never reads a table the caller owns.
--
-- Errors (SQLSTATE):
--   BT301 bad rows in the batch: the message names the first; the DETAIL is
--         JSON {"total": n, "rows": [[line, sqlstate, reason], ...]} with the
--         first max_errors bad rows by line (line = 1-based position in the
--         batch; sqlstate = what bitemporal.record would have raised: BT001,
--         BT002, BT003, BT005 or BT007).

CREATE TYPE bitemporal.batch_row AS (
    entity      text,
    attribute   text,
    source      text,
    value       jsonb,
    valid_from  timestamptz,
    valid_to    timestamptz,
    known_at    timestamptz,
    recorded_by text
);
COMMENT ON TYPE bitemporal.batch_row IS
    'One row of a bitemporal.record_many batch: the arguments of bitemporal.record (without idempotency key). NULL valid_from / valid_to mean open; NULL known_at means the transaction time.';

CREATE TYPE bitemporal.batch_item AS (
    line         bigint,
    round        integer,
    entity       text,
    attribute    text,
    source       text,
    value        jsonb,
    valid_period tstzrange,
    known_at     timestamptz,
    recorded_by  text,
    fresh        boolean,
    write_at     timestamptz,
    version_id   bigint,
    superseded   bigint[]
);
COMMENT ON TYPE bitemporal.batch_item IS
    'Internal to bitemporal.record_many: a checked batch row with its position (line), its round (its rank among the rows of its key), its normalised valid period, whether it is the first row of a key this batch created (no versions to look at) and, once the row is known to write, the knowledge time it is written at, the id of its new version and the versions it supersedes.';

CREATE FUNCTION bitemporal.batch_still_known()
RETURNS tstzrange
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN tstzrange('infinity', NULL, '[)');
COMMENT ON FUNCTION bitemporal.batch_still_known() IS
    'For bitemporal.record_many: [infinity, unbounded), which a known period overlaps exactly when it is still open. known_period && this is upper_inf(known_period) in a form the GiST index fact_version_no_overlap can use, so that finding a key''s current versions skips its closed ones in the index instead of in the table.';

CREATE FUNCTION bitemporal.batch_row_problem(
    entity      text,
    attribute   text,
    source      text,
    value       jsonb,
    valid_from  timestamptz,
    valid_to    timestamptz,
    known_at    timestamptz,
    present     timestamptz)
RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE
-- The checks bitemporal.record makes before it reads any version, in the same
-- order (source, value, valid period, then lock_key's entity, attribute and
-- knowledge time), as a value instead of an exception: no subtransaction per
-- row. Keep in step with check_key_part, valid_period, check_instant and
-- lock_key in facts_write.v1.sql and periods.v1.sql.
RETURN CASE
    WHEN source IS NULL OR source = '' THEN
        ARRAY['BT005', 'source must be a non-empty string']
    WHEN octet_length(source) > 1024 THEN
        ARRAY['BT005', pg_catalog.format('source is %s bytes long; the limit is 1024', octet_length(source))]
    WHEN value IS NULL OR value = 'null'::jsonb THEN
        ARRAY['BT007', 'value must not be null']
    WHEN valid_from = 'infinity' THEN
        ARRAY['BT001', 'valid period cannot start at infinity']
    WHEN valid_to = '-infinity' THEN
        ARRAY['BT001', 'valid period cannot end at -infinity']
    WHEN isfinite(valid_from)
         AND (valid_from < '0001-01-02 00:00:00+00' OR valid_from >= bitemporal.open_end_sentinel()) THEN
        ARRAY['BT001', pg_catalog.format(
            'valid period start %s is outside the supported range [0001-01-02, 9999-12-30) UTC', valid_from)]
    WHEN valid_to < '0001-01-02 00:00:00+00' THEN
        ARRAY['BT001', pg_catalog.format(
            'valid period end %s is outside the supported range [0001-01-02, 9999-12-30) UTC', valid_to)]
    WHEN valid_from > '-infinity' AND valid_to < bitemporal.open_end_sentinel() AND valid_to <= valid_from THEN
        ARRAY['BT001', pg_catalog.format('valid period [%s, %s) is %s', valid_from, valid_to,
                                         CASE WHEN valid_to = valid_from THEN 'empty' ELSE 'inverted' END)]
    WHEN entity IS NULL OR entity = '' THEN
        ARRAY['BT005', 'entity must be a non-empty string']
    WHEN octet_length(entity) > 1024 THEN
        ARRAY['BT005', pg_catalog.format('entity is %s bytes long; the limit is 1024', octet_length(entity))]
    WHEN attribute IS NULL OR attribute = '' THEN
        ARRAY['BT005', 'attribute must be a non-empty string']
    WHEN octet_length(attribute) > 1024 THEN
        ARRAY['BT005', pg_catalog.format('attribute is %s bytes long; the limit is 1024', octet_length(attribute))]
    WHEN known_at > present THEN
        ARRAY['BT003', pg_catalog.format('knowledge time %s is later than the present (%s)', known_at, present)]
    WHEN known_at = '-infinity' THEN
        ARRAY['BT001', pg_catalog.format('knowledge time must be finite, not %s', known_at)]
    WHEN known_at < '0001-01-02 00:00:00+00' THEN
        ARRAY['BT001', pg_catalog.format(
            'knowledge time %s is outside the supported range [0001-01-02, 9999-12-30) UTC', known_at)]
END;
COMMENT ON FUNCTION bitemporal.batch_row_problem(text, text, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz) IS
    'For bitemporal.record_many: the problem bitemporal.record would raise for these arguments before reading any version, as {sqlstate, message} (BT001, BT003, BT005, BT007), or NULL if there is none. present: the time knowledge may not be later than.';

CREATE FUNCTION bitemporal.raise_batch_error(total bigint, bad_rows jsonb)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION '% bad row% in the batch, nothing written; line %: %',
            total, CASE WHEN total = 1 THEN '' ELSE 's' END, bad_rows -> 0 ->> 0, bad_rows -> 0 ->> 2
        USING ERRCODE = 'BT301',
              DETAIL = jsonb_build_object('total', total, 'rows', bad_rows)::text,
              HINT = 'Fix or drop the rows listed (line = 1-based position in the batch) and send the batch again.';
END;
$$;
COMMENT ON FUNCTION bitemporal.raise_batch_error(bigint, jsonb) IS
    'For bitemporal.record_many: raises BT301 for a batch with bad rows; the DETAIL is JSON {"total": n, "rows": [[line, sqlstate, reason], ...]}.';

CREATE FUNCTION bitemporal.record_many(batch bitemporal.batch_row[], max_errors integer DEFAULT 100)
RETURNS TABLE (line bigint, version_id bigint, created boolean, superseded bigint[], known_at timestamptz)
LANGUAGE plpgsql
AS $$
-- Every statement below that runs once per round is shaped so that any plan
-- is a good one (plpgsql reuses generic plans, which guess 10 rows for an
-- unnested array): rows drive index lookups through LATERAL subqueries or
-- joins on version_id, and no two unnested arrays are joined. The statements
-- that run once per batch and join go through EXECUTE, planned every time.
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
    gone_ids      bigint[];
    gone_at       timestamptz[];
    gone_cut      tstzrange[];
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
                           bitemporal.batch_row_problem(u.entity, u.attribute, u.source, u.value,
                                                        u.valid_from, u.valid_to, u.known_at, present) AS problem
                      FROM unnest(batch) WITH ORDINALITY
                           AS u(entity, attribute, source, value, valid_from, valid_to, known_at, recorded_by, line)
                   ) q
             WHERE q.problem IS NOT NULL) p;
    IF bad_count > 0 THEN
        PERFORM bitemporal.raise_batch_error(bad_count, bad);
    END IF;

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
    -- their normalised valid periods (as bitemporal.valid_period computes
    -- them). Within a round, rows are in key order: versions inserted in
    -- index order keep the GiST index's working set small.
    EXECUTE $q$
        SELECT ARRAY(
            SELECT ROW(s.line, s.round, s.entity, s.attribute, s.source, s.value,
                       tstzrange(CASE WHEN s.valid_from = '-infinity' THEN NULL ELSE s.valid_from END,
                                 CASE WHEN s.valid_to >= bitemporal.open_end_sentinel() THEN NULL ELSE s.valid_to END,
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
        WITH a AS MATERIALIZED (
            SELECT w.line, w.round, w.entity, w.attribute, w.source, w.value, w.valid_period,
                   w.known_at, w.recorded_by, w.fresh, kt.t, h.same, h.same_id, h.gone, h.closing,
                   k.last_known_at <> kt.t OR k.last_txid <> me AS advances,
                   CASE
                   WHEN w.known_at < k.last_known_at OR (w.known_at = k.last_known_at AND k.last_txid <> me) THEN
                       pg_catalog.format('knowledge time %s is not later than knowledge already recorded for (%s, %s) at %s',
                                         w.known_at, w.entity, w.attribute, k.last_known_at)
                   WHEN NOT h.same AND h.late IS NOT NULL THEN
                       pg_catalog.format('knowledge time %s is not later than version %s (known from %s)',
                                         kt.t, h.late[1][1], h.late[1][2]::timestamptz)
                   END AS problem
              FROM unnest(cur) w
             CROSS JOIN LATERAL (
                   SELECT fk.last_known_at, fk.last_txid FROM bitemporal.fact_key fk
                    WHERE fk.entity = w.entity AND fk.attribute = w.attribute) k
             CROSS JOIN LATERAL (
                   -- bitemporal.lock_key's knowledge time.
                   SELECT CASE WHEN w.known_at IS NOT NULL THEN w.known_at
                               WHEN k.last_txid = me THEN greatest(tx_time, k.last_known_at)
                               ELSE greatest(tx_time, k.last_known_at + interval '1 microsecond')
                          END AS t) kt
             CROSS JOIN LATERAL (
                   -- bitemporal.record's no-op test, and bitemporal.cut's view of the
                   -- current versions of the key and source overlapping the period:
                   -- those to delete (written by this transaction at the same
                   -- knowledge time), to close, or that make the knowledge time late.
                   SELECT coalesce(bool_and(v.value = w.value)
                                   AND range_agg(v.valid_period * w.valid_period) = tstzmultirange(w.valid_period),
                                   false) AS same,
                          (array_agg(v.version_id ORDER BY lower(v.valid_period) NULLS FIRST))[1] AS same_id,
                          array_agg(v.version_id) FILTER (WHERE lower(v.known_period) = kt.t AND v.recorded_in = me) AS gone,
                          array_agg(v.version_id) FILTER (WHERE lower(v.known_period) < kt.t) AS closing,
                          (array_agg(ARRAY[v.version_id::text, lower(v.known_period)::text] ORDER BY v.version_id)
                               FILTER (WHERE lower(v.known_period) > kt.t
                                          OR (lower(v.known_period) = kt.t AND v.recorded_in <> me)))[1:1] AS late
                     FROM bitemporal.fact_version v
                    WHERE NOT w.fresh  -- a key created by this batch has no versions yet
                      AND v.entity = w.entity AND v.attribute = w.attribute AND v.source = w.source
                      AND upper_inf(v.known_period) AND v.known_period && bitemporal.batch_still_known()
                      AND v.valid_period && w.valid_period) h),
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
               (SELECT array_agg(g.id ORDER BY g.id) FROM x CROSS JOIN LATERAL unnest(x.gone) g(id)),
               (SELECT array_agg(x.t ORDER BY g.id) FROM x CROSS JOIN LATERAL unnest(x.gone) g(id)),
               (SELECT array_agg(x.valid_period ORDER BY g.id) FROM x CROSS JOIN LATERAL unnest(x.gone) g(id)),
               (SELECT array_agg(c.id ORDER BY c.id) FROM x CROSS JOIN LATERAL unnest(x.closing) c(id)),
               (SELECT array_agg(x.t ORDER BY c.id) FROM x CROSS JOIN LATERAL unnest(x.closing) c(id)),
               (SELECT array_agg(x.valid_period ORDER BY c.id) FROM x CROSS JOIN LATERAL unnest(x.closing) c(id)),
               (SELECT count(*) FROM x WHERE x.advances)
          INTO writes, noop_lines, noop_ids, round_bad, bad_entities, bad_attrs,
               gone_ids, gone_at, gone_cut, closing_ids, closing_at, closing_cut, n_advanced;

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
                 USING unnest(gone_ids, gone_at, gone_cut) g(id, t, cut)
                 WHERE v.version_id = g.id
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
                  FROM unnest(closing_ids, closing_at, closing_cut) c(id, t, cut)
                 WHERE v.version_id = c.id
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
        -- and the rows' results.
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
        PERFORM bitemporal.raise_batch_error(
            bad_count,
            (SELECT jsonb_agg(r.row ORDER BY (r.row ->> 0)::bigint)
               FROM (SELECT b.row FROM jsonb_array_elements(bad) b(row)
                      ORDER BY (b.row ->> 0)::bigint LIMIT report_max) r));
    END IF;
    RETURN;
END;
$$;
COMMENT ON FUNCTION bitemporal.record_many(bitemporal.batch_row[], integer) IS
    'Applies a batch of rows with exactly the semantics of bitemporal.record called for each row in order in one transaction (same-key rows in batch order, no-ops write nothing, default knowledge time = the transaction time), set-based, all or nothing. Returns one row per batch row (line = 1-based position in the batch; in no particular order): the version holding the value, whether it was created, the versions whose knowledge it ended, the knowledge time used (NULL for a no-op). Errors: BT301 with every bad row (the first max_errors, by line) and its reason in the DETAIL, as JSON.';
