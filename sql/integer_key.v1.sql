-- bitemporal: one integer for a key in the version table's indexes (issue 15;
-- migration 0031).
--
-- Every read and write of a key's versions went through the two GiST indexes
-- of bitemporal.fact_version, both led by three text columns (entity,
-- attribute, source). Measured with the store's own triggers and functions
-- (python -m benchmarks integer-key, 2026-12-05, PostgreSQL 15 and 18), one
-- bigint in place of entity and attribute made past lookups 2.2-2.5x and
-- history 1.5-2.5x faster, an interior change 1.1-1.6x, record_many 1.4-2.6x;
-- current lookups, which read a btree, were unchanged.
--
-- The integer, key_id:
--   * bitemporal.fact_key.key_id: from the sequence
--     bitemporal.fact_key_key_id_seq for a new key. It is unique within an
--     entity, which is all the indexes need: the exclusion constraint
--     compares entity too. Keys that exist when this file runs are numbered
--     -1, -2, ... within their entity, so that the same statement numbers them
--     on one node and on Citus (where nextval() cannot run in a distributed
--     UPDATE) and they never meet a value of the sequence (positive). The
--     constraint fact_key_key_id_unique holds it unique within the entity;
--     key_guard (append_only.v2.sql) already refuses any change to a key's
--     row but its knowledge time, this column included;
--   * bitemporal.fact_version.key_id: the key's, set on INSERT by the
--     knowledge trigger from the key's row it reads anyway (forced: a value
--     written by hand is replaced), and never changed afterwards
--     (fact_version_guard refuses it). Its default, 0, is no key's: it holds
--     only for a row refused anyway, by a CHECK constraint or the foreign
--     key, so that those say why and not NOT NULL.
--
-- The indexes:
--   * fact_version_no_overlap: (key_id =, entity =, source =, valid &&,
--     known &&). entity stays: where the table is hash-partitioned
--     (bitemporal.partition_versions) or distributed by entity (Citus) the
--     constraint must compare it with =, and one shape for every layout keeps
--     one set of functions. The integer comes first so that the index
--     compares it first; measured in the store, keeping entity costs a
--     little of the gain (past lookups 2.2x instead of 2.5x);
--   * fact_version_current_idx: (key_id, source, valid_period) over current
--     versions.
--
-- Every function that read a key's versions by (entity, attribute) through
-- those indexes reads by key_id now, and still names entity, so that a
-- partitioned table is pruned to one partition and a Citus query is routed to
-- one shard. A reader left on (entity, attribute) would still be right but
-- would scan an index without its first column: at 98,000 versions the
-- closing NOTIFY trigger, left so in the benchmark's first run, made each
-- interior change ten times slower. The functions (each as its latest file
-- defines it, with that change only):
--   writes: bitemporal_internal.supersede, bitemporal.record_many,
--           bitemporal_internal.record_many_by_row (Citus),
--           bitemporal_internal.erase_versions;
--   reads:  bitemporal.as_of (its past-knowledge branch), bitemporal.history,
--           bitemporal_internal.superseding_versions (bitemporal.changes,
--           bitemporal.stale), bitemporal.changes and
--           bitemporal_internal.eligible given an entity,
--           bitemporal.explain, bitemporal_internal.knowledge_edges,
--           bitemporal_internal.value_run;
--   triggers: bitemporal_internal.fact_version_knowledge (sets key_id),
--           bitemporal_internal.fact_version_guard (refuses a change of it),
--           bitemporal_internal.fact_version_notify_closed;
--   Citus:  bitemporal.distribute (version 5), whose forms of as_of and
--           changes read by key_id too.
-- Unchanged: bitemporal_internal.current_versions and everything reading
-- current knowledge through the btree fact_version_current_valid_idx
-- (entity, attribute, ...), lookups by version_id, and
-- bitemporal.apply_retention, which reads by attribute across keys.

-- 0. Not yet on a store already distributed by Citus. Its tables' shards are on
-- the workers, and this file, run with Citus's DDL propagation off as every
-- migration is (docs/citus.md), would change the coordinator's tables only.
-- Refused before anything changes; a store distributed after this migration
-- (bitemporal.distribute) gets the columns, constraint and indexes with its shards.
DO $$
DECLARE
    distributed boolean := false;
BEGIN
    -- pg_dist_partition exists only with Citus: looked up by name, at run time.
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = $1)'
           INTO distributed USING 'bitemporal.fact_version'::regclass;
    END IF;
    IF distributed THEN
        RAISE EXCEPTION 'migration 0031 (the integer key) cannot upgrade a store already distributed on Citus; nothing was changed'
            USING ERRCODE = 'BT502',
                  HINT = 'Stay at revision 0030 (bitemporal db upgrade 0030 --citus): see docs/citus.md, "Upgrading a distributed store".';
    END IF;
END
$$;

-- 1. The keys' integers.
CREATE SEQUENCE bitemporal.fact_key_key_id_seq AS bigint;
COMMENT ON SEQUENCE bitemporal.fact_key_key_id_seq IS
    'The key_id of each new key of bitemporal.fact_key.';
ALTER TABLE bitemporal.fact_key ADD COLUMN key_id bigint;
ALTER TABLE bitemporal.fact_key DISABLE TRIGGER USER;  -- key_guard refuses any other change
UPDATE bitemporal.fact_key k
   SET key_id = -n.n
  FROM (SELECT f.entity, f.attribute,
               pg_catalog.row_number() OVER (PARTITION BY f.entity ORDER BY f.attribute) AS n
          FROM bitemporal.fact_key f) n
 WHERE n.entity = k.entity AND n.attribute = k.attribute;
ALTER TABLE bitemporal.fact_key ENABLE TRIGGER USER;
ALTER TABLE bitemporal.fact_key
    ALTER COLUMN key_id SET DEFAULT pg_catalog.nextval('bitemporal.fact_key_key_id_seq'::regclass),
    ALTER COLUMN key_id SET NOT NULL;
ALTER SEQUENCE bitemporal.fact_key_key_id_seq OWNED BY bitemporal.fact_key.key_id;
-- Enforced, not only assigned so: two keys of one entity sharing an integer
-- would read each other's versions (a row written by hand could do it). The
-- integer first: led by entity, the planner would take this index for the
-- lookups of a key by (entity, attribute) that fact_key_pkey serves.
ALTER TABLE bitemporal.fact_key
    ADD CONSTRAINT fact_key_key_id_unique UNIQUE (key_id, entity);
COMMENT ON INDEX bitemporal.fact_key_key_id_unique IS
    'A key''s integer is unique within its entity: reads of a key''s versions by (key_id, entity) read that key''s only.';
COMMENT ON COLUMN bitemporal.fact_key.key_id IS
    'The key as one integer, unique within its entity, in the version table''s indexes (bitemporal.fact_version.key_id).';

-- 2. The versions' integers, with the GiST indexes rebuilt over them. The
-- indexes go first: filling key_id writes a new version of every row, which
-- they would otherwise take one entry at a time. On a table partitioned
-- before PostgreSQL 17, each partition holds its own exclusion constraint
-- (fact_version_no_overlap_p<k>): each is replaced where it is.
ALTER TABLE bitemporal.fact_version ADD COLUMN key_id bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN bitemporal.fact_version.key_id IS
    'The key''s bitemporal.fact_key.key_id (forced by the trigger fact_version_knowledge; 0 only in a row refused anyway).';
DO $$
DECLARE
    -- Each exclusion constraint of the rule, and the table holding it.
    tbls  regclass[];
    names text[];
BEGIN
    SELECT pg_catalog.array_agg(c.conrelid::regclass ORDER BY c.oid), pg_catalog.array_agg(c.conname::text ORDER BY c.oid)
      INTO tbls, names
      FROM pg_catalog.pg_constraint c
     WHERE c.contype = 'x' AND c.conislocal
       AND c.conname OPERATOR(pg_catalog.~~) 'fact_version_no_overlap%'
       AND (c.conrelid = 'bitemporal.fact_version'::regclass
            OR c.conrelid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i
                               WHERE i.inhparent = 'bitemporal.fact_version'::regclass));
    FOR i IN 1 .. pg_catalog.cardinality(names) LOOP
        EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', tbls[i], names[i]);
    END LOOP;
    DROP INDEX bitemporal.fact_version_current_idx;
    ALTER TABLE bitemporal.fact_version DISABLE TRIGGER USER;  -- the append-only guard
    UPDATE bitemporal.fact_version v
       SET key_id = k.key_id
      FROM bitemporal.fact_key k
     WHERE k.entity = v.entity AND k.attribute = v.attribute;
    ALTER TABLE bitemporal.fact_version ENABLE TRIGGER USER;
    FOR i IN 1 .. pg_catalog.cardinality(names) LOOP
        EXECUTE pg_catalog.format(
            'ALTER TABLE %s ADD CONSTRAINT %I EXCLUDE USING gist ('
            'key_id WITH =, entity WITH =, source WITH =, valid_period WITH &&, known_period WITH &&)',
            tbls[i], names[i]);
        EXECUTE pg_catalog.format(
            'COMMENT ON INDEX bitemporal.%I IS %L', names[i],
            'Enforces that one source never holds two overlapping valid periods for a key within one '
            'knowledge period; serves as-of lookups for an earlier knowledge time (bitemporal.as_of), '
            'history and the per-key audit functions, by the key''s integer (key_id).');
    END LOOP;
END
$$;
CREATE INDEX fact_version_current_idx ON bitemporal.fact_version
    USING gist (key_id, source, valid_period)
    WHERE upper_inf(known_period);
COMMENT ON INDEX bitemporal.fact_version_current_idx IS
    'Current versions (open knowledge) by key (its integer), source and valid period: what record() and retract() read, whatever the length of the history.';

-- On a partitioned table the partitions' copies of the two indexes keep the
-- names bitemporal.partition_versions gives them, <index>_p<k>
-- (partitioning.v2.sql): from PostgreSQL 17 the constraint added to the
-- partitioned table above, and the index, make copies named by PostgreSQL.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT i.inhrelid::regclass AS child, p.relname AS parent, c.relname AS part
          FROM pg_catalog.pg_inherits i
          JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
          JOIN pg_catalog.pg_index x ON x.indexrelid = i.inhrelid
          JOIN pg_catalog.pg_class c ON c.oid = x.indrelid
         WHERE p.relnamespace = 'bitemporal'::regnamespace
           AND p.relname IN ('fact_version_no_overlap', 'fact_version_current_idx')
    LOOP
        -- Renaming an index renames the constraint it backs.
        EXECUTE pg_catalog.format('ALTER INDEX %s RENAME TO %I', r.child,
                                  r.parent || pg_catalog.substr(r.part, pg_catalog.length('fact_version') + 1));
    END LOOP;
END
$$;

-- 3. The functions.

-- bitemporal_internal.fact_version_knowledge, as append_only.v2.sql defines it,
-- setting the new version's key_id from the key's row it reads.
CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_knowledge()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    at     timestamptz;  -- the event's time
    latest timestamptz;  -- the key's latest knowledge after it
    k      record;
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.recorded_at := pg_catalog.transaction_timestamp();
        NEW.closed_at := CASE WHEN NOT upper_inf(NEW.known_period) THEN pg_catalog.transaction_timestamp() END;
        at := lower(NEW.known_period);
        -- A version inserted closed is two events.
        latest := CASE WHEN upper_inf(NEW.known_period) THEN at ELSE upper(NEW.known_period) END;
    ELSIF upper_inf(OLD.known_period) AND NOT upper_inf(NEW.known_period) THEN
        -- fact_version_append_only (version 1) does not know these columns.
        NEW.recorded_at := OLD.recorded_at;
        NEW.closed_at := pg_catalog.transaction_timestamp();
        at := upper(NEW.known_period);
        latest := at;
    ELSE
        -- Any other UPDATE is refused by fact_version_append_only.
        RETURN NEW;
    END IF;
    IF at IS NULL THEN
        RETURN NEW;  -- an invalid period: the CHECK constraints say why
    END IF;
    -- Also for a hand-written row: announced to bitemporal.settled_knowledge_time,
    -- and refused (BT002) at or before the settled knowledge time.
    PERFORM bitemporal_internal.announce_knowledge(at, false);
    SELECT fk.last_known_at, fk.last_txid, fk.key_id INTO k
      FROM bitemporal.fact_key fk
     WHERE fk.entity = NEW.entity AND fk.attribute = NEW.attribute;
    IF NOT FOUND THEN
        RETURN NEW;  -- the foreign key refuses the row
    END IF;
    IF TG_OP = 'INSERT' THEN
        NEW.key_id := k.key_id;  -- forced, as recorded_at is
    END IF;
    IF latest > pg_catalog.clock_timestamp()
       OR at < k.last_known_at
       OR (at = k.last_known_at AND k.last_txid <> pg_catalog.pg_current_xact_id()) THEN
        RAISE EXCEPTION 'version of (%, %) % at %: knowledge of the key was already recorded at % (and the present is %); committed history cannot change',
                NEW.entity, NEW.attribute, CASE TG_OP WHEN 'INSERT' THEN 'known from' ELSE 'closed' END,
                at, k.last_known_at, pg_catalog.clock_timestamp()
            USING ERRCODE = 'BT006',
                  HINT = 'Write through bitemporal.record() or bitemporal.retract(), which record at the present.';
    END IF;
    IF latest > k.last_known_at OR k.last_txid <> pg_catalog.pg_current_xact_id() THEN
        -- key_guard refuses this if a concurrent writer moved the key
        -- past it meanwhile.
        UPDATE bitemporal.fact_key fk
           SET last_known_at = latest, last_txid = pg_catalog.pg_current_xact_id()
         WHERE fk.entity = NEW.entity AND fk.attribute = NEW.attribute;
    END IF;
    RETURN NEW;
END;
$$;

-- bitemporal_internal.fact_version_guard, as erasure.v1.sql defines it, with
-- key_id among the columns no UPDATE may change.
CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'bitemporal.fact_version is append-only: TRUNCATE is not allowed'
            USING ERRCODE = 'BT006';
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.recorded_in = pg_catalog.pg_current_xact_id() THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'bitemporal.fact_version is append-only: version % cannot be deleted', OLD.version_id
            USING ERRCODE = 'BT006',
                  HINT = 'Retract the valid period with bitemporal.retract(); history stays.';
    END IF;

    -- UPDATE that erases: the value cleared, the erasure named, nothing else
    -- changed, and the erasure recorded by this transaction for this version.
    IF OLD.erasure_id IS NULL AND (NEW.erasure_id IS NOT NULL OR NEW.value IS NULL) THEN
        IF NEW.value IS NOT NULL OR NEW.erasure_id IS NULL
           OR (NEW.version_id, NEW.key_id, NEW.entity, NEW.attribute, NEW.source, NEW.valid_period, NEW.known_period,
               NEW.recorded_by, NEW.carried_from, NEW.recorded_in, NEW.recorded_at, NEW.closed_at)
              IS DISTINCT FROM
              (OLD.version_id, OLD.key_id, OLD.entity, OLD.attribute, OLD.source, OLD.valid_period, OLD.known_period,
               OLD.recorded_by, OLD.carried_from, OLD.recorded_in, OLD.recorded_at, OLD.closed_at)
           OR NOT EXISTS (
               SELECT FROM bitemporal.erasures e
                WHERE e.erasure_id = NEW.erasure_id
                  AND e.scope = 'fact'
                  AND e.recorded_in = pg_catalog.pg_current_xact_id()
                  AND e.erased_at = NEW.erased_at
                  AND e.entity = OLD.entity
                  AND (e.attribute IS NULL OR e.attribute = OLD.attribute)
                  AND OLD.version_id = ANY (e.version_ids)) THEN
            RAISE EXCEPTION 'version % can only have its value erased, by bitemporal.erase(), which records the erasure',
                    OLD.version_id
                USING ERRCODE = 'BT006',
                      HINT = 'Erase with bitemporal.erase() or bitemporal.erase_entity() (role bitemporal_eraser).';
        END IF;
        RETURN NEW;
    END IF;

    -- UPDATE: only closing an open knowledge period, once.
    IF NOT upper_inf(OLD.known_period) THEN
        RAISE EXCEPTION 'version % is already closed (known %): committed history cannot change',
                OLD.version_id, OLD.known_period
            USING ERRCODE = 'BT006';
    END IF;
    IF (NEW.version_id, NEW.key_id, NEW.entity, NEW.attribute, NEW.source, NEW.value, NEW.valid_period,
        NEW.recorded_by, NEW.carried_from, NEW.recorded_in, NEW.erasure_id, NEW.erased_at)
       IS DISTINCT FROM
       (OLD.version_id, OLD.key_id, OLD.entity, OLD.attribute, OLD.source, OLD.value, OLD.valid_period,
        OLD.recorded_by, OLD.carried_from, OLD.recorded_in, OLD.erasure_id, OLD.erased_at)
       OR lower(NEW.known_period) IS DISTINCT FROM lower(OLD.known_period)
       OR upper_inf(NEW.known_period)
       OR upper(NEW.known_period) > pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'version % can only have its open knowledge period closed, at a time not later than now',
                OLD.version_id
            USING ERRCODE = 'BT006',
                  HINT = 'Write through bitemporal.record() or bitemporal.retract().';
    END IF;
    RETURN NEW;
END;
$$;

-- bitemporal_internal.supersede, as facts_write.v9.sql defines it, reading the
-- current versions it cuts by key_id.
CREATE OR REPLACE FUNCTION bitemporal_internal.supersede(
    entity      text,
    attribute   text,
    source      text,
    period      tstzrange,
    known_at    timestamptz,
    value       jsonb,
    recorded_by text,
    OUT same_id    bigint,
    OUT ended      bigint[],
    OUT version_id bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    me       xid8 := pg_catalog.pg_current_xact_id();
    r        record;
    unseen   boolean;
    carried  bigint;
    piece    tstzrange;
    -- The rows to insert, in order: the remainders, then the new version.
    periods  tstzrange[] := '{}';
    vals     jsonb[] := '{}';
    bys      text[] := '{}';
    carrieds bigint[] := '{}';
    done     integer := 0;  -- rows inserted so far
    batch    integer;
BEGIN
    ended := '{}';
    FOR r IN
        SELECT v.version_id, v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
               v.recorded_by, v.carried_from, v.recorded_in,
               -- The no-op test over all the overlapping versions. An erased
               -- version (value NULL) never holds the value.
               bool_and(v.value IS NOT DISTINCT FROM supersede.value) OVER every AS same_value,
               range_agg(v.valid_period * supersede.period) OVER every AS covered,
               first_value(v.version_id) OVER (every ORDER BY lower(v.valid_period) NULLS FIRST
                                               ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS first_id
          FROM bitemporal.fact_version v
         WHERE v.key_id = (SELECT fk.key_id FROM bitemporal.fact_key fk
                           WHERE fk.entity = supersede.entity AND fk.attribute = supersede.attribute)
           AND v.entity = supersede.entity AND v.source = supersede.source
           AND upper_inf(v.known_period) AND v.valid_period && supersede.period
        WINDOW every AS ()
         ORDER BY v.version_id
    LOOP
        IF supersede.value IS NOT NULL AND r.same_value AND r.covered = tstzmultirange(supersede.period) THEN
            -- Already known, with this value, for the whole period.
            same_id := r.first_id;
            RETURN;
        END IF;
        unseen := lower(r.known_period) = known_at;
        IF unseen AND r.recorded_in = me THEN
            -- Written earlier in this transaction at the same knowledge time:
            -- nobody ever saw it, and closing it would leave an empty period.
            DELETE FROM bitemporal.fact_version v
             WHERE v.entity = r.entity AND v.version_id = r.version_id;
            carried := r.carried_from;
        ELSIF lower(r.known_period) >= known_at THEN
            RAISE EXCEPTION 'knowledge time % is not later than version % (known from %)',
                    known_at, r.version_id, lower(r.known_period)
                USING ERRCODE = 'BT002';
        ELSE
            UPDATE bitemporal.fact_version v
               SET known_period = tstzrange(lower(v.known_period), known_at, '[)')
             WHERE v.entity = r.entity AND v.version_id = r.version_id;
            carried := coalesce(r.carried_from, r.version_id);
        END IF;
        ended := ended || r.version_id;
        -- A multirange's ranges come in order, the one open below first.
        FOREACH piece IN ARRAY ARRAY(SELECT p FROM unnest(tstzmultirange(r.valid_period) - tstzmultirange(period)) AS p)
        LOOP
            periods := periods || piece;
            vals := vals || r.value;
            bys := bys || r.recorded_by;
            carrieds := carrieds || carried;
        END LOOP;
    END LOOP;
    IF value IS NOT NULL THEN
        periods := periods || period;
        vals := vals || value;
        bys := bys || recorded_by;
        carrieds := carrieds || NULL::bigint;
    END IF;

    -- Three rows a statement at most: one statement for an interior change
    -- (two remainders and the new version), the common worst case. Each
    -- names its rows' values, so Citus routes it to the key's shard. Only the
    -- new version has no carried_from.
    WHILE done < cardinality(periods) LOOP
        batch := least(cardinality(periods) - done, 3);
        IF batch = 3 THEN
            FOR r IN
                INSERT INTO bitemporal.fact_version AS v
                       (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
                VALUES (entity, attribute, source, vals[done + 1], periods[done + 1], tstzrange(known_at, NULL, '[)'), bys[done + 1], carrieds[done + 1]),
                       (entity, attribute, source, vals[done + 2], periods[done + 2], tstzrange(known_at, NULL, '[)'), bys[done + 2], carrieds[done + 2]),
                       (entity, attribute, source, vals[done + 3], periods[done + 3], tstzrange(known_at, NULL, '[)'), bys[done + 3], carrieds[done + 3])
                RETURNING v.version_id, v.carried_from
            LOOP
                IF r.carried_from IS NULL THEN
                    version_id := r.version_id;
                END IF;
            END LOOP;
        ELSIF batch = 2 THEN
            FOR r IN
                INSERT INTO bitemporal.fact_version AS v
                       (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
                VALUES (entity, attribute, source, vals[done + 1], periods[done + 1], tstzrange(known_at, NULL, '[)'), bys[done + 1], carrieds[done + 1]),
                       (entity, attribute, source, vals[done + 2], periods[done + 2], tstzrange(known_at, NULL, '[)'), bys[done + 2], carrieds[done + 2])
                RETURNING v.version_id, v.carried_from
            LOOP
                IF r.carried_from IS NULL THEN
                    version_id := r.version_id;
                END IF;
            END LOOP;
        ELSE
            INSERT INTO bitemporal.fact_version AS v
                   (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
            VALUES (entity, attribute, source, vals[done + 1], periods[done + 1], tstzrange(known_at, NULL, '[)'), bys[done + 1], carrieds[done + 1])
            RETURNING CASE WHEN v.carried_from IS NULL THEN v.version_id ELSE supersede.version_id END
                 INTO version_id;
        END IF;
        done := done + batch;
    END LOOP;
END;
$$;

-- bitemporal.record_many, as facts_bulk.v3.sql defines it, reading the current
-- versions a row cuts by key_id (from the key's row it reads anyway).
CREATE OR REPLACE FUNCTION bitemporal.record_many(batch bitemporal.batch_row[], max_errors integer DEFAULT 100)
RETURNS TABLE (line bigint, version_id bigint, created boolean, superseded bigint[], known_at timestamptz)
LANGUAGE plpgsql
-- A write entry point, as migration 0005 made version 1 (CREATE OR REPLACE
-- keeps the privileges, not SECURITY DEFINER).
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
                   SELECT fk.last_known_at, fk.last_txid, fk.key_id FROM bitemporal.fact_key fk
                    WHERE fk.entity = w.entity AND fk.attribute = w.attribute) k
             CROSS JOIN LATERAL (
                   -- bitemporal_internal.lock_key's knowledge time.
                   SELECT CASE WHEN w.known_at IS NOT NULL THEN w.known_at
                               WHEN k.last_txid = me THEN greatest(tx_time, k.last_known_at)
                               ELSE greatest(tx_time, k.last_known_at + interval '1 microsecond')
                          END AS t) kt
             CROSS JOIN LATERAL (
                   -- bitemporal.record's no-op test, and bitemporal_internal.cut's view of the
                   -- current versions of the key and source overlapping the period:
                   -- those to delete (written by this transaction at the same
                   -- knowledge time), to close, or that make the knowledge time late.
                   SELECT coalesce(bool_and(v.value IS NOT DISTINCT FROM w.value)
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
                      AND v.key_id = k.key_id AND v.entity = w.entity AND v.source = w.source
                      AND upper_inf(v.known_period) AND v.known_period && bitemporal_internal.batch_still_known()
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
        PERFORM bitemporal_internal.raise_batch_error(
            bad_count,
            (SELECT jsonb_agg(r.row ORDER BY (r.row ->> 0)::bigint)
               FROM (SELECT b.row FROM jsonb_array_elements(bad) b(row)
                      ORDER BY (b.row ->> 0)::bigint LIMIT report_max) r));
    END IF;
    RETURN;
END;
$$;

-- bitemporal_internal.record_many_by_row, as citus_bulk.v1.sql defines it
-- (record_many on Citus), reading the current versions a row cuts by key_id:
-- the round's rows joined with the keys and the versions on entity, which
-- Citus runs on the shards.
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
              FROM w JOIN bitemporal.fact_key fk
                ON fk.entity = w.entity AND fk.attribute = w.attribute
              JOIN bitemporal.fact_version v
                ON v.entity = fk.entity AND v.key_id = fk.key_id AND v.source = w.source
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

-- bitemporal_internal.erase_versions, as erasure.v1.sql defines it, reading
-- the versions to erase by the integers of the keys it locks.
CREATE OR REPLACE FUNCTION bitemporal_internal.erase_versions(
    entity text, attribute text, reason text, only_versions bigint[] DEFAULT NULL, policy text DEFAULT NULL)
RETURNS SETOF bitemporal.erasures
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ids  bigint[];
    keys bigint[];
    e    bitemporal.erasures;
    id   bigint;
BEGIN
    PERFORM bitemporal_internal.check_key_part('entity', entity);
    IF attribute IS NOT NULL THEN
        PERFORM bitemporal_internal.check_key_part('attribute', attribute);
    END IF;
    IF reason IS NULL OR pg_catalog.btrim(reason) = '' THEN
        RAISE EXCEPTION 'an erasure needs a reason'
            USING ERRCODE = 'BT009',
                  HINT = 'Say why: the request or the legal ground; the reason stays in bitemporal.erasures.';
    END IF;
    -- The keys' row locks, as the write functions take them (an entity's keys
    -- in attribute order): a write to the key in flight finishes first, and
    -- the versions read below include it; a later write waits for this one.
    PERFORM FROM bitemporal.fact_key k
      WHERE k.entity = entity AND (attribute IS NULL OR k.attribute = attribute)
      ORDER BY k.attribute
        FOR UPDATE;
    IF NOT FOUND THEN
        IF attribute IS NULL THEN
            RAISE EXCEPTION 'unknown entity %: nothing was ever recorded for it', entity
                USING ERRCODE = 'BT004',
                      HINT = 'Check the spelling of the entity.';
        END IF;
        RAISE EXCEPTION 'unknown key (%, %): nothing was ever recorded for it', entity, attribute
            USING ERRCODE = 'BT004',
                  HINT = 'Check the spelling of entity and attribute.';
    END IF;

    keys := ARRAY(SELECT k.key_id FROM bitemporal.fact_key k
                   WHERE k.entity = entity AND (attribute IS NULL OR k.attribute = attribute));
    SELECT coalesce(pg_catalog.array_agg(v.version_id ORDER BY v.version_id), '{}') INTO ids
      FROM bitemporal.fact_version v
     WHERE v.entity = entity AND v.key_id = ANY (keys)
       AND (only_versions IS NULL OR v.version_id = ANY (only_versions))
       AND v.erasure_id IS NULL;
    IF pg_catalog.cardinality(ids) = 0 THEN
        RETURN;  -- already erased: nothing new to record
    END IF;

    INSERT INTO bitemporal.erasures (scope, entity, attribute, reason, version_ids, policy)
    VALUES ('fact', entity, attribute, reason, ids, policy)
    RETURNING * INTO e;
    UPDATE bitemporal.fact_version v
       SET value = NULL, erasure_id = e.erasure_id, erased_at = e.erased_at
     WHERE v.entity = entity AND v.version_id = ANY (ids);
    -- Passages quote the value; their embeddings go with them (ON DELETE CASCADE).
    DELETE FROM bitemporal.evidence x WHERE x.version_id = ANY (ids);
    -- The idempotency records of the key(s); of some versions, those of the
    -- requests that wrote them.
    UPDATE bitemporal.fact_request r SET value = NULL
     WHERE r.entity = entity AND (attribute IS NULL OR r.attribute = attribute) AND r.value IS NOT NULL
       AND (only_versions IS NULL OR (r.result ->> 'version_id')::bigint = ANY (ids));
    FOREACH id IN ARRAY ids LOOP
        PERFORM pg_catalog.pg_notify(
            bitemporal_internal.invalidation_channel(),
            pg_catalog.jsonb_build_object(
                'version_id', id, 'change', 'erased',
                'known_at', bitemporal_internal.iso_time(e.erased_at), 'by', '[]'::jsonb)::text);
    END LOOP;
    RETURN NEXT e;
END;
$$;

-- bitemporal.as_of, as fast_reads.v1.sql defines it, its past-knowledge
-- branch reading by the key's integer from the key's row it joins anyway.
CREATE OR REPLACE FUNCTION bitemporal.as_of(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE PARALLEL SAFE
-- A single SQL statement, so the planner can inline it into the caller's
-- query. Both branches select exactly the versions whose valid period
-- contains valid_at and whose known period contains known_at; the first
-- only runs when, by the invariant above, no closed version can qualify.
BEGIN ATOMIC
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.fact_key k
     CROSS JOIN LATERAL (
        -- Current knowledge: the btree.
        SELECT c.version_id, c.entity, c.attribute, c.source, c.value,
               c.valid_period, c.known_period, c.recorded_by, c.carried_from
          FROM bitemporal_internal.current_versions(
                   as_of.entity, as_of.attribute,
                   coalesce(as_of.valid_at, pg_catalog.now()),
                   coalesce(as_of.known_at, pg_catalog.now())) c
         WHERE k.last_known_at <= coalesce(as_of.known_at, pg_catalog.now())
        UNION ALL
        -- An earlier knowledge time: the GiST index of the exclusion constraint.
        SELECT p.version_id, p.entity, p.attribute, p.source, p.value,
               p.valid_period, p.known_period, p.recorded_by, p.carried_from
          FROM bitemporal.fact_version p
         WHERE k.last_known_at > coalesce(as_of.known_at, pg_catalog.now())
           AND p.key_id = k.key_id
           AND p.entity = as_of.entity
           AND p.valid_period @> coalesce(as_of.valid_at, pg_catalog.now())
           AND p.known_period @> coalesce(as_of.known_at, pg_catalog.now())
     ) v
     WHERE k.entity = as_of.entity
       AND k.attribute = as_of.attribute
     ORDER BY v.version_id;
END;

-- bitemporal.history, as erasure.v1.sql defines it, reading by key_id.
CREATE OR REPLACE FUNCTION bitemporal.history(entity text, attribute text)
RETURNS SETOF bitemporal.history_version
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.require_key(entity, attribute);
    RETURN QUERY
        SELECT v.version_id, v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
               v.recorded_by, v.carried_from, v.recorded_at, v.closed_at, v.erased_at, v.erasure_id
          FROM bitemporal.fact_version v
         WHERE v.key_id = (SELECT k.key_id FROM bitemporal.fact_key k
                           WHERE k.entity = history.entity AND k.attribute = history.attribute)
           AND v.entity = history.entity
         ORDER BY v.version_id;
END;
$$;

-- bitemporal_internal.superseding_versions, as search_path.v1.sql defines it,
-- reading by key_id.
CREATE OR REPLACE FUNCTION bitemporal_internal.superseding_versions(
    entity text, attribute text, source text, valid_period tstzrange, closed_at timestamptz)
RETURNS bigint[]
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}')
      FROM bitemporal.fact_version w
     WHERE w.key_id = (SELECT k.key_id FROM bitemporal.fact_key k
                        WHERE k.entity = superseding_versions.entity
                          AND k.attribute = superseding_versions.attribute)
       AND w.entity = superseding_versions.entity
       AND w.source = superseding_versions.source
       AND w.valid_period && superseding_versions.valid_period
       AND w.known_period @> superseding_versions.closed_at
       AND lower(w.known_period) = superseding_versions.closed_at
       AND w.carried_from IS NULL;
END;

-- bitemporal_internal.eligible, as search_path.v1.sql defines it: given an
-- entity, it reads that entity's keys' versions by their integers.
CREATE OR REPLACE FUNCTION bitemporal_internal.eligible(
    valid_at   timestamptz DEFAULT NULL,
    known_at   timestamptz DEFAULT NULL,
    entity     text        DEFAULT NULL,
    attribute  text        DEFAULT NULL)
RETURNS SETOF bitemporal.versions
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT v.version_id, v.entity, v.attribute, v.source, v.value,
           v.valid_period, v.known_period, v.recorded_by, v.carried_from
      FROM bitemporal.fact_version v
     WHERE v.valid_period @> coalesce(eligible.valid_at, pg_catalog.now())
       AND v.known_period @> coalesce(eligible.known_at, pg_catalog.now())
       AND (eligible.entity IS NULL
            OR (v.entity = eligible.entity
                AND v.key_id = ANY (ARRAY(SELECT k.key_id FROM bitemporal.fact_key k
                                           WHERE k.entity = eligible.entity
                                             AND (eligible.attribute IS NULL OR k.attribute = eligible.attribute)))))
       AND (eligible.attribute IS NULL OR v.attribute = eligible.attribute);
END;

-- bitemporal.changes, as surface.v1.sql defines it: given an entity, it reads
-- that entity's keys' versions by their integers.
CREATE OR REPLACE FUNCTION bitemporal.changes(
    known_from  timestamptz DEFAULT NULL,
    known_to    timestamptz DEFAULT NULL,
    entity      text        DEFAULT NULL,
    attribute   text        DEFAULT NULL)
RETURNS SETOF bitemporal.change
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
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
           AND (entity IS NULL
                OR (v.entity = entity
                    AND v.key_id = ANY (ARRAY(SELECT k.key_id FROM bitemporal.fact_key k
                                               WHERE k.entity = entity
                                                 AND (attribute IS NULL OR k.attribute = attribute)))))
           AND (attribute IS NULL OR v.attribute = attribute)
        UNION ALL
        SELECT CASE WHEN pg_catalog.cardinality(s.by_ids) > 0 THEN 'superseded'
                    ELSE 'retracted' END::bitemporal.change_kind,
               upper(v.known_period), v.version_id,
               v.entity, v.attribute, v.source, v.value, v.valid_period, v.known_period,
               v.recorded_by, v.carried_from, s.by_ids
          FROM bitemporal.fact_version v
         CROSS JOIN LATERAL (
               SELECT bitemporal_internal.superseding_versions(v.entity, v.attribute, v.source,
                                                      v.valid_period, upper(v.known_period)) AS by_ids) s
         WHERE NOT upper_inf(v.known_period)
           AND upper(v.known_period) >= coalesce(known_from, '-infinity')
           AND upper(v.known_period) < coalesce(known_to, 'infinity')
           AND (entity IS NULL
                OR (v.entity = entity
                    AND v.key_id = ANY (ARRAY(SELECT k.key_id FROM bitemporal.fact_key k
                                               WHERE k.entity = entity
                                                 AND (attribute IS NULL OR k.attribute = attribute)))))
           AND (attribute IS NULL OR v.attribute = attribute)
    ) AS c (change, changed_at, version_id, entity, attribute, source, value, valid_period,
            known_period, recorded_by, carried_from, by_version_ids)
    ORDER BY c.changed_at, c.version_id, c.change;
END;
$$;

-- bitemporal.explain, as erasure.v1.sql defines it, reading the key's
-- versions by key_id.
CREATE OR REPLACE FUNCTION bitemporal.explain(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    a            bitemporal.answer;
    versions     jsonb;
    sources      jsonb;
    alternatives jsonb;
    quals        jsonb := '[]';
    run          tstzrange;
    since        timestamptz;
    changed      timestamptz;
    vals         jsonb;
    latest       timestamptz;
    prev_end     timestamptz;
    next_start   timestamptz;
    t            text;
    erased_on    timestamptz;
    this_key     bigint;  -- the key's integer (resolve refuses an unknown key)
BEGIN
    a := bitemporal.resolve(entity, attribute, valid_at, known_at, present);
    this_key := (SELECT k.key_id FROM bitemporal.fact_key k
                  WHERE k.entity = explain.entity AND k.attribute = explain.attribute);

    -- Every eligible version (an erased one without its value); the sources
    -- of those the status rests on: the versions not erased, or, for the
    -- status erased, the erased ones.
    SELECT coalesce(pg_catalog.jsonb_agg(bitemporal_internal.explain_version(v) ORDER BY v.version_id), '[]'),
           coalesce(pg_catalog.jsonb_agg(DISTINCT v.source ORDER BY v.source)
                        FILTER (WHERE (v.value IS NULL) = (a.status = 'erased')), '[]')
      INTO versions, sources
      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;

    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'value', x.value,
               'valid_from', bitemporal_internal.iso_time(lower(x.run)),
               'valid_to', bitemporal_internal.iso_time(upper(x.run)),
               'sources', x.sources,
               'version_ids', x.ids) ORDER BY x.value), '[]')
      INTO alternatives
      FROM (SELECT g.value, g.sources, g.ids,
                   bitemporal_internal.value_run(entity, attribute, g.value, a.valid_at, a.known_at) AS run
              FROM (SELECT v.value,
                           pg_catalog.jsonb_agg(DISTINCT v.source ORDER BY v.source) AS sources,
                           pg_catalog.jsonb_agg(v.version_id ORDER BY v.version_id) AS ids
                      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v
                     WHERE v.value IS NOT NULL
                     GROUP BY v.value) g) x;

    -- The knowledge snapshot: the latest change to the key the store knew by known_at.
    SELECT max(greatest(lower(v.known_period),
                        CASE WHEN upper(v.known_period) <= a.known_at THEN upper(v.known_period) END))
      INTO latest
      FROM bitemporal.fact_version v
     WHERE v.entity = entity AND v.key_id = this_key AND lower(v.known_period) <= a.known_at;

    IF a.status = 'missing' THEN
        SELECT max(upper(v.valid_period)) INTO prev_end
          FROM bitemporal.fact_version v
         WHERE v.entity = entity AND v.key_id = this_key
           AND v.known_period @> a.known_at AND upper(v.valid_period) <= a.valid_at;
        SELECT min(lower(v.valid_period)) INTO next_start
          FROM bitemporal.fact_version v
         WHERE v.entity = entity AND v.key_id = this_key
           AND v.known_period @> a.known_at AND lower(v.valid_period) > a.valid_at;
        t := pg_catalog.format('nothing recorded for %s: unknown, not zero', bitemporal_internal.human_time(a.valid_at));
        IF prev_end IS NOT NULL OR next_start IS NOT NULL THEN
            t := t || ' (' || pg_catalog.concat_ws(' and ',
                     'the last recorded value applied until ' || bitemporal_internal.human_time(prev_end),
                     'values are recorded from ' || bitemporal_internal.human_time(next_start)) || ')';
        END IF;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'unknown', 'text', t,
            'recorded_until', bitemporal_internal.iso_time(prev_end),
            'recorded_from', bitemporal_internal.iso_time(next_start)));

    ELSIF a.status = 'conflict' THEN
        SELECT 'sources disagree, none is preferred: ' || pg_catalog.string_agg(pg_catalog.format('%s says %s (%s)',
                   (SELECT pg_catalog.string_agg(s, ' and ' ORDER BY n)
                      FROM pg_catalog.jsonb_array_elements_text(x.alt -> 'sources') WITH ORDINALITY AS y(s, n)),
                   bitemporal_internal.human_value(x.alt -> 'value'),
                   bitemporal_internal.human_period(pg_catalog.tstzrange((x.alt ->> 'valid_from')::timestamptz,
                                                               (x.alt ->> 'valid_to')::timestamptz, '[)'))),
                   ', ' ORDER BY x.n)
          INTO t
          FROM pg_catalog.jsonb_array_elements(alternatives) WITH ORDINALITY AS x(alt, n);
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'conflict', 'text', t, 'values', a."values", 'sources', sources));

    ELSIF a.status = 'erased' THEN
        SELECT max(w.erased_at) INTO erased_on
          FROM bitemporal.fact_version w
         WHERE w.entity = entity AND w.attribute = attribute AND w.version_id = ANY (a.version_ids);
        t := pg_catalog.format('erased on %s: a value was recorded for %s and has been erased; what it was is not kept',
                 bitemporal_internal.human_time(erased_on), bitemporal_internal.human_time(a.valid_at));
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'erased', 'text', t, 'erased_on', bitemporal_internal.iso_time(erased_on)));

    ELSE
        run := bitemporal_internal.value_run(entity, attribute, a.value, a.valid_at, a.known_at);
        IF lower(run) > a.known_at THEN
            since := bitemporal_internal.answer_since(entity, attribute, a.valid_at, a.known_at);
            t := pg_catalog.format('announced, in force %s (not yet in force on %s; recorded on %s)',
                     bitemporal_internal.human_period(run), bitemporal_internal.human_time(a.known_at),
                     bitemporal_internal.human_time(since));
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'announced', 'text', t,
                'valid_from', bitemporal_internal.iso_time(lower(run)), 'valid_to', bitemporal_internal.iso_time(upper(run)),
                'recorded_on', bitemporal_internal.iso_time(since)));
        ELSE
            t := CASE WHEN upper(run) <= a.known_at THEN 'applied ' ELSE 'in force ' END
                 || bitemporal_internal.human_period(run);
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'effective', 'text', t,
                'valid_from', bitemporal_internal.iso_time(lower(run)), 'valid_to', bitemporal_internal.iso_time(upper(run))));
        END IF;

        IF NOT upper_inf(run) THEN
            vals := bitemporal_internal.distinct_values(entity, attribute, upper(run), a.known_at);
            t := CASE pg_catalog.jsonb_array_length(vals)
                     WHEN 0 THEN pg_catalog.format('nothing recorded from %s', bitemporal_internal.human_time(upper(run)))
                     WHEN 1 THEN pg_catalog.format('followed by %s from %s', bitemporal_internal.human_values(vals),
                                                   bitemporal_internal.human_time(upper(run)))
                     ELSE pg_catalog.format('followed by %s (sources disagree) from %s',
                                            bitemporal_internal.human_values(vals), bitemporal_internal.human_time(upper(run)))
                 END;
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'followed_by', 'text', t,
                'from', bitemporal_internal.iso_time(upper(run)), 'values', vals));
        END IF;

        IF a.valid_at > a.known_at AND NOT coalesce(lower(run) > a.known_at, false) THEN
            t := pg_catalog.format('projected: as known on %s, nothing recorded changes it before %s',
                     bitemporal_internal.human_time(a.known_at), bitemporal_internal.human_time(a.valid_at));
            quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                'code', 'projected', 'text', t));
        END IF;
    END IF;

    IF a.interpretation = 'retrospective' THEN
        vals := bitemporal_internal.distinct_values(entity, attribute, a.valid_at, a.valid_at);
        since := bitemporal_internal.answer_since(entity, attribute, a.valid_at, a.known_at);
        t := CASE WHEN pg_catalog.jsonb_array_length(vals) = 0
                  THEN pg_catalog.format('learned later, on %s: on %s the store had nothing recorded for that time',
                           bitemporal_internal.human_time(since), bitemporal_internal.human_time(a.valid_at))
                  ELSE pg_catalog.format('corrected on %s: on %s the store said %s',
                           bitemporal_internal.human_time(since), bitemporal_internal.human_time(a.valid_at),
                           bitemporal_internal.human_values(vals)) END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'corrected', 'text', t,
            'corrected_on', bitemporal_internal.iso_time(since), 'then_values', vals));
    END IF;

    IF a.known_at < a.present THEN
        changed := bitemporal_internal.answer_corrected(entity, attribute, a.valid_at, a.known_at, a.present);
        vals := bitemporal_internal.distinct_values(entity, attribute, a.valid_at, a.present);
        t := pg_catalog.format('as recorded on %s', bitemporal_internal.human_time(a.known_at))
             || CASE WHEN changed IS NULL
                     THEN pg_catalog.format(', unchanged as of %s', bitemporal_internal.human_time(a.present))
                     ELSE pg_catalog.format('; corrected on %s (as of %s: %s)',
                              bitemporal_internal.human_time(changed), bitemporal_internal.human_time(a.present),
                              CASE WHEN pg_catalog.jsonb_array_length(vals) = 0 THEN 'nothing recorded'
                                   ELSE bitemporal_internal.human_values(vals) END) END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'as_recorded', 'text', t,
            'recorded_on', bitemporal_internal.iso_time(a.known_at),
            'corrected_on', bitemporal_internal.iso_time(changed), 'now_values', vals));
    END IF;

    IF a.status = 'supported' THEN
        t := CASE WHEN pg_catalog.jsonb_array_length(sources) = 1 THEN 'source: ' || (sources ->> 0)
                  ELSE 'sources: ' || (SELECT pg_catalog.string_agg(s, ', ' ORDER BY n)
                                         FROM pg_catalog.jsonb_array_elements_text(sources) WITH ORDINALITY AS y(s, n))
                       || ' (they agree, which is not certification)' END;
        quals := quals || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
            'code', 'source', 'text', t, 'sources', sources));
    END IF;

    RETURN pg_catalog.jsonb_build_object(
        'entity', entity,
        'attribute', attribute,
        'status', a.status,
        'interpretation', a.interpretation,
        'value', a.value,
        'alternatives', alternatives,
        'valid_at', bitemporal_internal.iso_time(a.valid_at),
        'known_at', bitemporal_internal.iso_time(a.known_at),
        'now', bitemporal_internal.iso_time(a.present),
        'snapshot', pg_catalog.jsonb_build_object(
            'known_at', bitemporal_internal.iso_time(a.known_at),
            'latest_change', bitemporal_internal.iso_time(latest)),
        'sources', sources,
        'versions', versions,
        'qualifications', quals,
        'status_note', CASE a.status
            WHEN 'supported' THEN 'supported means the available sources agree on this value; it does not certify that the value is true, and copies of one source are not independent confirmation'
            WHEN 'missing' THEN 'missing means nothing eligible is recorded: unknown, which is not zero, false or "does not apply"'
            WHEN 'erased' THEN 'erased means a value was recorded here and has been erased (bitemporal.erasures): the store knew and was made to forget; it is not missing, and not zero'
            ELSE 'conflict means the sources disagree: the values are never averaged and never settled by which was recorded later'
        END);
END;
$$;

-- bitemporal_internal.knowledge_edges, as search_path.v1.sql defines it,
-- reading by key_id.
CREATE OR REPLACE FUNCTION bitemporal_internal.knowledge_edges(entity text, attribute text, valid_at timestamptz)
RETURNS SETOF timestamptz
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT DISTINCT b.t
      FROM bitemporal.fact_version v
     CROSS JOIN LATERAL (VALUES (lower(v.known_period)), (upper(v.known_period))) AS b(t)
     WHERE v.key_id = (SELECT k.key_id FROM bitemporal.fact_key k
                        WHERE k.entity = knowledge_edges.entity AND k.attribute = knowledge_edges.attribute)
       AND v.entity = knowledge_edges.entity
       AND v.valid_period @> knowledge_edges.valid_at AND b.t IS NOT NULL
     ORDER BY b.t;
END;

-- bitemporal_internal.value_run, as search_path.v1.sql defines it, reading by
-- key_id.
CREATE OR REPLACE FUNCTION bitemporal_internal.value_run(
    entity text, attribute text, value jsonb, valid_at timestamptz, known_at timestamptz)
RETURNS tstzrange
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT r
      FROM unnest((SELECT pg_catalog.range_agg(v.valid_period)
                     FROM bitemporal.fact_version v
                    WHERE v.key_id = (SELECT k.key_id FROM bitemporal.fact_key k
                                       WHERE k.entity = value_run.entity AND k.attribute = value_run.attribute)
                      AND v.entity = value_run.entity
                      AND v.known_period @> value_run.known_at AND v.value = value_run.value)) AS r
     WHERE r @> value_run.valid_at;
END;

-- bitemporal_internal.fact_version_notify_closed, as provenance.v2.sql defines
-- it, reading the versions that superseded a closed one by key_id.
CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_notify_closed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    by_ids bigint[];
BEGIN
    -- The rule of bitemporal_internal.superseding_versions, written out here so that
    -- PL/pgSQL keeps its plan: every closed version runs it at commit.
    SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}')
      INTO by_ids
      FROM bitemporal.fact_version w
     WHERE w.key_id = NEW.key_id AND w.entity = NEW.entity AND w.source = NEW.source
       AND w.valid_period OPERATOR(pg_catalog.&&) NEW.valid_period
       AND w.known_period OPERATOR(pg_catalog.@>) upper(NEW.known_period)
       AND lower(w.known_period) = upper(NEW.known_period)
       AND w.carried_from IS NULL;
    PERFORM pg_catalog.pg_notify(
        bitemporal_internal.invalidation_channel(),
        pg_catalog.jsonb_build_object(
            'version_id', NEW.version_id,
            'change', CASE WHEN pg_catalog.cardinality(by_ids) > 0 THEN 'superseded' ELSE 'retracted' END,
            'known_at', bitemporal_internal.iso_time(upper(NEW.known_period)),
            'by', pg_catalog.to_jsonb(by_ids))::text);
    RETURN NULL;
END;
$$;

-- bitemporal.distribute, as citus.v5.sql defines it (version 4), whose Citus
-- forms of bitemporal.as_of (its past-knowledge branch) and bitemporal.changes
-- (the versions that superseded a closed one) read by key_id (version 5).
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
               AND p.key_id = k.key_id
               AND p.entity = as_of.entity
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
                    WHERE w.key_id = v.key_id AND w.entity = v.entity AND w.source = v.source
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
