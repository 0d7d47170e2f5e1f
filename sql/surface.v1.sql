-- bitemporal: the public SQL surface (migration 0009).
--
-- Schema bitemporal holds what users call: the documented functions (listed
-- in the README's "SQL API"), the tables, views and types. Everything the
-- functions use internally (checks, the cut and lock internals, formatting,
-- generators, partitioning internals, trigger functions) lives in schema
-- bitemporal_internal, which only its owner (the role that migrated) may use:
-- no other role is granted USAGE on it, so no other role can name its
-- functions. They are reached only
--   * from functions with SQL-standard bodies, bound to them by OID when they
--     were created, so that no name is looked up when they run (the executor
--     still checks EXECUTE, which internal functions keep for PUBLIC: each
--     runs with its caller's rights and can do nothing its caller could not);
--   * from SECURITY DEFINER functions, which run as the owner: the write
--     functions (as before) and the PL/pgSQL read functions a reader calls
--     (resolve, history, changes, explain, search_evidence, rank_versions,
--     nearest_evidence and the memory_* reads). Those read only the
--     bitemporal tables, with search_path pinned, and are not inlined by the
--     planner in any case (PL/pgSQL), so running them as the owner costs no
--     plan; a role that may call them (USAGE on schema bitemporal: the reader,
--     writer and auditor roles of bitemporal.grant_roles) reads through them
--     what they return;
--   * from invoker functions the owner or a superuser runs (enable_table and
--     the other DDL functions, enable_vector, grant_roles).
-- The read functions a reader calls that take an application table
-- (table_changes, the generated <table>_history) must keep the caller's
-- rights, since they read a table of the caller's choosing: they name
-- nothing in bitemporal_internal (tables.v2.sql).
--
-- The functions move with ALTER FUNCTION ... SET SCHEMA, which keeps their
-- OIDs, grants, comments and what depends on them (triggers, constraints,
-- standard bodies). The list below is the one list of moved functions;
-- names are unchanged, only the schema.

CREATE SCHEMA bitemporal_internal;
REVOKE ALL ON SCHEMA bitemporal_internal FROM PUBLIC;
COMMENT ON SCHEMA bitemporal_internal IS
    'Internals of bitemporal (checks, cut and lock internals, formatting, generators, partitioning internals, trigger functions): not an API, used only by the functions of schema bitemporal. No role but the owner may use it.';

ALTER FUNCTION bitemporal.open_end_sentinel() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_instant(what text, t timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.valid_period(valid_from timestamp with time zone, valid_to timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.fact_version_stamp_insert() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.fact_version_guard() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_key_part(what text, part text, errcode text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.lock_key(entity text, attribute text, known_at timestamp with time zone, create_missing boolean) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.advance_key(entity text, attribute text, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.cut(entity text, attribute text, source text, period tstzrange, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.require_key(entity text, attribute text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.distinct_values(entity text, attribute text, valid_at timestamp with time zone, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_log_guard() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_exp_or_zero(x double precision) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_decay_retention(elapsed bigint, stability double precision) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_decay_crossing(last_touched bigint, stability double precision, threshold double precision) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_crossing(ns bitemporal.memory_namespace, last_touched bigint, stability double precision) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_retention_at(ns bitemporal.memory_namespace, elapsed bigint, stability double precision) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_check_name(what text, name text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_check_stability(stability double precision) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_namespace_for_update(namespace text, exclusive boolean) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_namespace_get(namespace text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.memory_item_get(namespace text, item_id text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.iso_time(t timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.human_time(t timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.human_value(value jsonb) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.human_values(vals jsonb) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.human_period(period tstzrange) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.superseding_versions(entity text, attribute text, source text, valid_period tstzrange, closed_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.text_search_config(name text, errcode text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_question(valid_at timestamp with time zone, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_limit(lim integer) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.eligible(valid_at timestamp with time zone, known_at timestamp with time zone, entity text, attribute text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.vector_available() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.require_vector() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_embedding(embedding real[], dimensions integer) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_artifact_time(what text, t timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.fact_version_notify_closed() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.explain_version(v bitemporal.versions) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.knowledge_edges(entity text, attribute text, valid_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.answer_since(entity text, attribute text, valid_at timestamp with time zone, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.answer_corrected(entity text, attribute text, valid_at timestamp with time zone, known_at timestamp with time zone, present timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.value_run(entity text, attribute text, value jsonb, valid_at timestamp with time zone, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.secure_write_function(fn regprocedure) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.batch_still_known() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.batch_row_problem(entity text, attribute text, source text, value jsonb, valid_from timestamp with time zone, valid_to timestamp with time zone, known_at timestamp with time zone, present timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.raise_batch_error(total bigint, bad_rows jsonb) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_knowledge_time(known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.knowledge_time(requested timestamp with time zone, last_known_at timestamp with time zone, last_txid xid8, key text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.row_relation(row_type regtype) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.column_list(columns text[], prefix text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.key_match(d bitemporal.app_table, alias text, image text) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.key_text(d bitemporal.app_table, image anyelement) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.lock_table_key(d bitemporal.app_table, image anyelement, known_at timestamp with time zone, create_missing boolean) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.advance_table_key(d bitemporal.app_table, image anyelement, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.table_cut(d bitemporal.app_table, image anyelement, period tstzrange, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_table_references(d bitemporal.app_table) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.table_record(image anyelement, valid_from timestamp with time zone, valid_to timestamp with time zone, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.table_retract(image anyelement, valid_from timestamp with time zone, valid_to timestamp with time zone, known_at timestamp with time zone) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.require_table_key(image anyelement) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.table_guard() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.create_table_functions(relation regclass) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.check_reference(ref bitemporal.app_reference, child_version bigint) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.reference_child_check() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.reference_parent_check() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.drop_table_functions(d bitemporal.app_table) SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.version_reference_check() SET SCHEMA bitemporal_internal;
ALTER FUNCTION bitemporal.version_reference_delete() SET SCHEMA bitemporal_internal;

-- Every function whose body names a moved function, created again with the
-- new name, and with SET search_path = pg_catalog, pg_temp (the PL/pgSQL
-- functions and key_text, polymorphic, which cannot have a standard body).
-- Each is its latest definition (the file named before it) with only that
-- changed, plus the attributes earlier migrations gave it with ALTER FUNCTION
-- (SECURITY DEFINER, plan_cache_mode), and SECURITY DEFINER for the read
-- functions named above. CREATE OR REPLACE keeps OIDs, grants and comments.

-- bitemporal_internal.check_instant: periods.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_instant(what text, t timestamptz)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Finite times must be readable by every client: Python's datetime, for
    -- one, stops at years 1 and 9999 (in any time zone, hence the margin).
    IF isfinite(t) AND (t < '0001-01-02 00:00:00+00' OR t >= bitemporal_internal.open_end_sentinel()) THEN
        RAISE EXCEPTION '% % is outside the supported range [0001-01-02, 9999-12-30) UTC', what, t
            USING ERRCODE = 'BT001',
                  HINT = 'Use NULL (None in Python) for an open end.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_instant(text, timestamptz) IS
    'Raises BT001 for a finite time outside [0001-01-02, 9999-12-30) UTC, which clients such as Python cannot represent.';

-- bitemporal_internal.valid_period: periods.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.valid_period(valid_from timestamptz, valid_to timestamptz)
RETURNS tstzrange
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    lo timestamptz := CASE WHEN valid_from = '-infinity' THEN NULL ELSE valid_from END;
    hi timestamptz := CASE WHEN valid_to >= bitemporal_internal.open_end_sentinel() THEN NULL ELSE valid_to END;
BEGIN
    IF valid_from = 'infinity' THEN
        RAISE EXCEPTION 'valid period cannot start at infinity'
            USING ERRCODE = 'BT001',
                  HINT = 'Pass NULL (None in Python) for an open start.';
    END IF;
    IF valid_to = '-infinity' THEN
        RAISE EXCEPTION 'valid period cannot end at -infinity'
            USING ERRCODE = 'BT001',
                  HINT = 'Pass NULL (None in Python) for an open end.';
    END IF;
    PERFORM bitemporal_internal.check_instant('valid period start', lo);
    PERFORM bitemporal_internal.check_instant('valid period end', hi);
    IF lo IS NOT NULL AND hi IS NOT NULL AND hi <= lo THEN
        RAISE EXCEPTION 'valid period [%, %) is %', lo, hi,
                CASE WHEN hi = lo THEN 'empty' ELSE 'inverted' END
            USING ERRCODE = 'BT001',
                  HINT = 'A period is half-open [valid_from, valid_to): valid_to must be later than valid_from.';
    END IF;
    RETURN tstzrange(lo, hi, '[)');
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.valid_period(timestamptz, timestamptz) IS
    'Half-open valid period [valid_from, valid_to); NULL, +-infinity or 9999-12-31 mean open on that side. Raises BT001 for an empty or inverted period, or a bound outside [0001-01-02, 9999-12-30) UTC.';

-- bitemporal_internal.fact_version_stamp_insert: append_only.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_stamp_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.recorded_in := pg_catalog.pg_current_xact_id();
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.fact_version_stamp_insert() IS
    'Trigger: stamps a new fact version with the inserting top-level transaction, which the append-only rule relies on.';

-- bitemporal_internal.fact_version_guard: append_only.v1.sql
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

    -- UPDATE: only closing an open knowledge period, once.
    IF NOT upper_inf(OLD.known_period) THEN
        RAISE EXCEPTION 'version % is already closed (known %): committed history cannot change',
                OLD.version_id, OLD.known_period
            USING ERRCODE = 'BT006';
    END IF;
    IF (NEW.version_id, NEW.entity, NEW.attribute, NEW.source, NEW.value, NEW.valid_period,
        NEW.recorded_by, NEW.carried_from, NEW.recorded_in)
       IS DISTINCT FROM
       (OLD.version_id, OLD.entity, OLD.attribute, OLD.source, OLD.value, OLD.valid_period,
        OLD.recorded_by, OLD.carried_from, OLD.recorded_in)
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
COMMENT ON FUNCTION bitemporal_internal.fact_version_guard() IS
    'Trigger: refuses TRUNCATE, DELETE of committed versions and any UPDATE other than closing an open knowledge period once (SQLSTATE BT006).';

-- bitemporal_internal.check_key_part: facts_write.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_key_part(what text, part text, errcode text DEFAULT 'BT005')
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The limit keeps every name well inside a btree index entry.
    IF part IS NULL OR part = '' THEN
        RAISE EXCEPTION '% must be a non-empty string', what
            USING ERRCODE = errcode;
    END IF;
    IF octet_length(part) > 1024 THEN
        RAISE EXCEPTION '% is % bytes long; the limit is 1024', what, octet_length(part)
            USING ERRCODE = errcode,
                  HINT = 'Names say what something is about; keep long text in the value.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_key_part(text, text, text) IS
    'Raises errcode (default BT005) unless a name (entity, attribute, source, idempotency key, memory namespace or item id) is a non-empty string of at most 1024 bytes.';

-- bitemporal_internal.lock_key: facts_write.v2.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.lock_key(entity text, attribute text, known_at timestamptz, create_missing boolean)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    k bitemporal.fact_key;
    t timestamptz;
BEGIN
    PERFORM bitemporal_internal.check_key_part('entity', entity);
    PERFORM bitemporal_internal.check_key_part('attribute', attribute);
    PERFORM bitemporal_internal.check_knowledge_time(known_at);

    LOOP
        SELECT * INTO k FROM bitemporal.fact_key fk
         WHERE fk.entity = lock_key.entity AND fk.attribute = lock_key.attribute
           FOR UPDATE;
        EXIT WHEN FOUND;
        IF NOT create_missing THEN
            RAISE EXCEPTION 'unknown key (%, %): nothing was ever recorded for it', entity, attribute
                USING ERRCODE = 'BT004';
        END IF;
        t := coalesce(known_at, pg_catalog.transaction_timestamp());
        INSERT INTO bitemporal.fact_key AS fk (entity, attribute, first_known_at, last_known_at, last_txid)
        VALUES (entity, attribute, t, t, pg_catalog.pg_current_xact_id())
        ON CONFLICT ON CONSTRAINT fact_key_pkey DO NOTHING;
        IF FOUND THEN
            RETURN t;
        END IF;
        -- Another transaction created the key first: lock its row and go on.
    END LOOP;
    RETURN bitemporal_internal.knowledge_time(known_at, k.last_known_at, k.last_txid,
                                     pg_catalog.format('(%s, %s)', entity, attribute));
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.lock_key(text, text, timestamptz, boolean) IS
    'Locks a key for writing (creating it when asked) and returns the knowledge time to write at: known_at if given and valid, else the transaction time (moved just past knowledge a concurrent transaction recorded first). Raises BT002, BT003, BT004, BT005.';

-- bitemporal_internal.cut: facts_write.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.cut(entity text, attribute text, source text, period tstzrange, known_at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    me     xid8 := pg_catalog.pg_current_xact_id();
    r      bitemporal.fact_version;
    unseen boolean;
    ended  bigint[] := '{}';
BEGIN
    FOR r IN
        SELECT * FROM bitemporal.fact_version v
         WHERE v.entity = cut.entity AND v.attribute = cut.attribute AND v.source = cut.source
           AND upper_inf(v.known_period) AND v.valid_period && cut.period
         ORDER BY v.version_id
    LOOP
        unseen := lower(r.known_period) = known_at;
        IF unseen AND r.recorded_in = me THEN
            -- Written earlier in this transaction at the same knowledge time:
            -- nobody ever saw it, and closing it would leave an empty period.
            DELETE FROM bitemporal.fact_version v WHERE v.version_id = r.version_id;
        ELSIF lower(r.known_period) >= known_at THEN
            RAISE EXCEPTION 'knowledge time % is not later than version % (known from %)',
                    known_at, r.version_id, lower(r.known_period)
                USING ERRCODE = 'BT002';
        ELSE
            UPDATE bitemporal.fact_version v
               SET known_period = tstzrange(lower(v.known_period), known_at, '[)')
             WHERE v.version_id = r.version_id;
        END IF;
        ended := ended || r.version_id;

        INSERT INTO bitemporal.fact_version
               (entity, attribute, source, value, valid_period, known_period, recorded_by, carried_from)
        SELECT r.entity, r.attribute, r.source, r.value, piece, tstzrange(known_at, NULL, '[)'),
               r.recorded_by,
               CASE WHEN unseen AND r.recorded_in = me THEN r.carried_from
                    ELSE coalesce(r.carried_from, r.version_id) END
          FROM unnest(tstzmultirange(r.valid_period) - tstzmultirange(period)) AS piece
         ORDER BY lower(piece) NULLS FIRST;
    END LOOP;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.cut(text, text, text, tstzrange, timestamptz) IS
    'Ends, at known_at, the knowledge of the current versions of a key and source overlapping a valid period and re-records their remainders outside it. Returns the ended version ids. Call with the key locked (bitemporal_internal.lock_key).';

-- bitemporal.record: facts_write.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.record(
    entity          text,
    attribute       text,
    source          text,
    value           jsonb,
    valid_from      timestamptz DEFAULT NULL,
    valid_to        timestamptz DEFAULT NULL,
    known_at        timestamptz DEFAULT NULL,
    recorded_by     text        DEFAULT NULL,
    idempotency_key text        DEFAULT NULL)
RETURNS bitemporal.recorded
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    period  tstzrange;
    t       timestamptz;
    same_id bigint;
    request bitemporal.fact_request;
    result  bitemporal.recorded;
BEGIN
    PERFORM bitemporal_internal.check_key_part('source', source);
    IF value IS NULL OR value = 'null'::jsonb THEN
        RAISE EXCEPTION 'value must not be null'
            USING ERRCODE = 'BT007',
                  HINT = 'To say a value no longer applies, retract its valid period.';
    END IF;
    period := bitemporal_internal.valid_period(valid_from, valid_to);

    IF idempotency_key IS NOT NULL THEN
        PERFORM bitemporal_internal.check_key_part('idempotency key', idempotency_key);
        -- Claims the key, or waits for the transaction that claimed it and
        -- then finds its row (or, if that one rolled back, claims it now).
        INSERT INTO bitemporal.fact_request AS r
               (idempotency_key, entity, attribute, source, value, valid_period, known_at)
        VALUES (idempotency_key, entity, attribute, source, value, period, known_at)
        ON CONFLICT ON CONSTRAINT fact_request_pkey DO NOTHING;
        IF NOT FOUND THEN
            SELECT * INTO request FROM bitemporal.fact_request r WHERE r.idempotency_key = idempotency_key;
            IF (request.entity, request.attribute, request.source, request.value, request.valid_period)
               IS DISTINCT FROM (entity, attribute, source, value, period)
               OR (known_at IS NOT NULL AND request.known_at IS DISTINCT FROM known_at) THEN
                RAISE EXCEPTION 'idempotency key % was already used for a different request', idempotency_key
                    USING ERRCODE = 'BT008',
                          HINT = 'Use a new key for a new request; reuse a key only to retry the same one.';
            END IF;
            RETURN jsonb_populate_record(NULL::bitemporal.recorded, request.result);
        END IF;
    END IF;

    t := bitemporal_internal.lock_key(entity, attribute, known_at, true);

    -- Already known, with this value, for the whole period: change nothing.
    SELECT (array_agg(v.version_id ORDER BY lower(v.valid_period) NULLS FIRST))[1]
      INTO same_id
      FROM bitemporal.fact_version v
     WHERE v.entity = entity AND v.attribute = attribute AND v.source = source
       AND upper_inf(v.known_period) AND v.valid_period && period
    HAVING bool_and(v.value = value)
       AND range_agg(v.valid_period * period) = tstzmultirange(period);
    IF same_id IS NOT NULL THEN
        result := (same_id, false, '{}'::bigint[], NULL::timestamptz);
    ELSE
        result.superseded := bitemporal_internal.cut(entity, attribute, source, period, t);
        INSERT INTO bitemporal.fact_version
               (entity, attribute, source, value, valid_period, known_period, recorded_by)
        VALUES (entity, attribute, source, value, period, tstzrange(t, NULL, '[)'), recorded_by)
        RETURNING version_id INTO result.version_id;
        PERFORM bitemporal_internal.advance_key(entity, attribute, t);
        result.created := true;
        result.known_at := t;
    END IF;

    IF idempotency_key IS NOT NULL THEN
        UPDATE bitemporal.fact_request r SET result = to_jsonb(result)
         WHERE r.idempotency_key = idempotency_key;
    END IF;
    RETURN result;
END;
$$;
COMMENT ON FUNCTION bitemporal.record(text, text, text, jsonb, timestamptz, timestamptz, timestamptz, text, text) IS
    'Records that a source says value applies over [valid_from, valid_to) (NULL = open), known from known_at (default: the transaction time). A sequenced update: overlapping current versions of the same key and source are closed, their remainders re-recorded. Recording what is already known for the whole period changes nothing (created = false). With an idempotency key, a retry of the same request returns the first result and writes nothing. Errors: BT001 period, BT002/BT003 knowledge time, BT005 key, BT007 value, BT008 idempotency key reused.';

-- bitemporal.retract: facts_write.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.retract(
    entity      text,
    attribute   text,
    source      text,
    valid_from  timestamptz DEFAULT NULL,
    valid_to    timestamptz DEFAULT NULL,
    known_at    timestamptz DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    period tstzrange;
    t      timestamptz;
    ended  bigint[];
BEGIN
    PERFORM bitemporal_internal.check_key_part('source', source);
    period := bitemporal_internal.valid_period(valid_from, valid_to);
    t := bitemporal_internal.lock_key(entity, attribute, known_at, false);
    ended := bitemporal_internal.cut(entity, attribute, source, period, t);
    IF cardinality(ended) > 0 THEN
        PERFORM bitemporal_internal.advance_key(entity, attribute, t);
    END IF;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal.retract(text, text, text, timestamptz, timestamptz, timestamptz) IS
    'Sequenced delete: from known_at (default: the transaction time) the source no longer asserts any value for [valid_from, valid_to); remainders outside it are re-recorded. Returns the ended version ids (empty: nothing to retract). Errors: BT001, BT002, BT003, BT004 unknown key, BT005.';

-- bitemporal_internal.require_key: facts_read.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.require_key(entity text, attribute text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.check_key_part('entity', entity);
    PERFORM bitemporal_internal.check_key_part('attribute', attribute);
    PERFORM FROM bitemporal.fact_key k WHERE k.entity = require_key.entity AND k.attribute = require_key.attribute;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown key (%, %): nothing was ever recorded for it', entity, attribute
            USING ERRCODE = 'BT004',
                  HINT = 'Check the spelling of entity and attribute.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.require_key(text, text) IS
    'Raises BT004 if nothing was ever recorded for the key (usually a misspelt entity or attribute), BT005 if it is malformed.';

-- bitemporal.resolve: facts_read.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.resolve(
    entity    text,
    attribute text,
    valid_at  timestamptz DEFAULT NULL,
    known_at  timestamptz DEFAULT NULL,
    present   timestamptz DEFAULT NULL)
RETURNS bitemporal.answer
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    a bitemporal.answer;
BEGIN
    PERFORM bitemporal_internal.require_key(entity, attribute);
    a.present  := coalesce(present, pg_catalog.now());
    a.valid_at := coalesce(valid_at, a.present);
    a.known_at := coalesce(known_at, a.present);
    IF a.known_at > a.present THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', a.known_at, a.present
            USING ERRCODE = 'BT003',
                  HINT = 'Nobody can say today what the store will know later; ask with known_at <= present.';
    END IF;
    IF NOT (isfinite(a.valid_at) AND isfinite(a.known_at)) THEN
        RAISE EXCEPTION 'question times must be finite (valid_at %, known_at %)', a.valid_at, a.known_at
            USING ERRCODE = 'BT001';
    END IF;
    PERFORM bitemporal_internal.check_instant('valid_at', a.valid_at);
    PERFORM bitemporal_internal.check_instant('known_at', a.known_at);

    SELECT coalesce(jsonb_agg(DISTINCT v.value ORDER BY v.value), '[]'::jsonb),
           coalesce(array_agg(v.version_id ORDER BY v.version_id), '{}')
      INTO a."values", a.version_ids
      FROM bitemporal.as_of(entity, attribute, a.valid_at, a.known_at) v;

    a.status := CASE jsonb_array_length(a."values")
                    WHEN 0 THEN 'missing'
                    WHEN 1 THEN 'supported'
                    ELSE 'conflict' END;
    a.value := CASE WHEN a.status = 'supported' THEN a."values" -> 0 END;
    a.interpretation := CASE
        WHEN a.status = 'missing' THEN 'missing'
        WHEN a.valid_at > a.known_at THEN 'announced_future'
        WHEN a.valid_at = a.known_at AND a.known_at = a.present THEN 'current'
        WHEN a.valid_at = a.known_at THEN 'known_then'
        -- valid_at < known_at: did later knowledge change the answer for that time?
        WHEN a."values" = bitemporal_internal.distinct_values(entity, attribute, a.valid_at, a.valid_at)
            THEN 'historical'
        ELSE 'retrospective' END;
    RETURN a;
END;
$$;
COMMENT ON FUNCTION bitemporal.resolve(text, text, timestamptz, timestamptz, timestamptz) IS
    'Answers (valid_at, known_at) for a key (NULL = present, which defaults to now()): status missing / supported / conflict from the distinct eligible values, the value when supported, the versions it rests on and its interpretation (current, known_then, historical, retrospective, announced_future, missing). Errors: BT003 known_at after present, BT004 unknown key.';

-- bitemporal.history: facts_read.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.history(entity text, attribute text)
RETURNS SETOF bitemporal.versions
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.require_key(entity, attribute);
    RETURN QUERY
        SELECT v.* FROM bitemporal.versions v
         WHERE v.entity = history.entity AND v.attribute = history.attribute
         ORDER BY v.version_id;
END;
$$;
COMMENT ON FUNCTION bitemporal.history(text, text) IS
    'Every version of a key, superseded ones included, with both periods, ORDER BY version_id. Raises BT004 for a key never recorded.';

-- bitemporal_internal.memory_log_guard: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_log_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'bitemporal.memory_log is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'BT006',
              HINT = 'The log is the audit trail of working memory; it is never rewritten.';
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_log_guard() IS
    'Trigger: refuses UPDATE, DELETE and TRUNCATE on bitemporal.memory_log (SQLSTATE BT006).';

-- bitemporal_internal.memory_exp_or_zero: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_exp_or_zero(x double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN exp(x);
EXCEPTION WHEN numeric_value_out_of_range THEN
    -- Underflow: C (and Python) return 0.0 here.
    RETURN 0::double precision;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_exp_or_zero(double precision) IS
    'exp(x), but 0.0 where PostgreSQL would raise "value out of range: underflow" (as C and Python do). Only called near the underflow edge, where the exception block''s cost does not matter.';

-- bitemporal_internal.memory_decay_crossing: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_decay_crossing(
    last_touched bigint, stability double precision, threshold double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- stability >= 1e-300 and -ln(threshold) >= 1.1e-16: the product never underflows to 0.
    c double precision := last_touched + stability * (-ln(threshold));
    k bigint;
BEGIN
    IF c >= 4503599627370496 THEN
        -- 2^52 turns: whole turns are no longer exact; no clock gets there.
        RETURN c;
    END IF;
    -- k: the first turn at which the direct comparison says "below".
    -- Retention is monotone in the turn, and c is within rounding of the
    -- answer, so each loop runs at most a step or two.
    k := floor(c)::bigint + 1;
    WHILE k - 1 > last_touched
          AND bitemporal_internal.memory_decay_retention(k - 1 - last_touched, stability) < threshold LOOP
        k := k - 1;
    END LOOP;
    WHILE NOT bitemporal_internal.memory_decay_retention(k - last_touched, stability) < threshold LOOP
        k := k + 1;
    END LOOP;
    -- Evicted at turn T exactly when T > c: c must lie in [k - 1, k).
    IF c < k - 1 OR c >= k THEN
        c := k - 1;
    END IF;
    RETURN c;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_decay_crossing(bigint, double precision, double precision) IS
    'Crossing turn under the decay policy: last_touched + S * ln(1/threshold), snapped to a whole turn where rounding would make "turn > crossing" disagree with exp(-(turn - last_touched) / S) < threshold.';

-- bitemporal_internal.memory_check_name: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_check_name(what text, name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.check_key_part(what, name, 'BT104');
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_check_name(text, text) IS
    'Raises BT104 unless a namespace name or item id is a non-empty string of at most 1024 bytes.';

-- bitemporal_internal.memory_check_stability: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_check_stability(stability double precision)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- NaN is greater than everything in PostgreSQL: <= 1e300 excludes it.
    IF NOT (stability >= 1e-300 AND stability <= 1e300) THEN
        RAISE EXCEPTION 'stability must be a number of turns between 1e-300 and 1e300, not %', stability
            USING ERRCODE = 'BT103',
                  HINT = 'Stability is S in exp(-elapsed / S): larger means remembered longer.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_check_stability(double precision) IS
    'Raises BT103 unless a stability lies in [1e-300, 1e300] turns (so the arithmetic can neither overflow nor underflow).';

-- bitemporal_internal.memory_namespace_for_update: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_namespace_for_update(namespace text, exclusive boolean)
RETURNS bitemporal.memory_namespace
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace;
BEGIN
    PERFORM bitemporal_internal.memory_check_name('namespace', namespace);
    IF exclusive THEN
        SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace FOR UPDATE;
    ELSE
        SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace FOR KEY SHARE;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown memory namespace %', namespace
            USING ERRCODE = 'BT105',
                  HINT = 'Create it with bitemporal.memory_ensure_namespace().';
    END IF;
    RETURN ns;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_namespace_for_update(text, boolean) IS
    'Locks a namespace row and returns it: FOR UPDATE (exclusive, step) or FOR KEY SHARE (register, recall), so that a step never interleaves with changes to its namespace. Raises BT104, BT105.';

-- bitemporal_internal.memory_namespace_get: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_namespace_get(namespace text)
RETURNS bitemporal.memory_namespace
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace;
BEGIN
    PERFORM bitemporal_internal.memory_check_name('namespace', namespace);
    SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown memory namespace %', namespace
            USING ERRCODE = 'BT105',
                  HINT = 'Create it with bitemporal.memory_ensure_namespace().';
    END IF;
    RETURN ns;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_namespace_get(text) IS
    'A namespace row, unlocked, for the read functions. Raises BT104, BT105.';

-- bitemporal.memory_ensure_namespace: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.memory_ensure_namespace(
    namespace           text,
    policy              text             DEFAULT 'decay',
    threshold           double precision DEFAULT NULL,
    baseline_stability  double precision DEFAULT NULL,
    window_turns        bigint           DEFAULT NULL)
RETURNS bitemporal.memory_namespace
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace;
BEGIN
    PERFORM bitemporal_internal.memory_check_name('namespace', namespace);
    IF policy = 'decay' THEN
        threshold := coalesce(threshold, 0.20);
        baseline_stability := coalesce(baseline_stability, 8.0);
        IF window_turns IS NOT NULL THEN
            RAISE EXCEPTION 'the decay policy has no window' USING ERRCODE = 'BT101';
        END IF;
        IF NOT (threshold > 0 AND threshold < 1) THEN
            RAISE EXCEPTION 'threshold must lie strictly between 0 and 1, not %', threshold
                USING ERRCODE = 'BT101',
                      HINT = 'An item is evicted once its retention exp(-elapsed / S) falls below the threshold.';
        END IF;
        IF NOT (baseline_stability >= 1e-300 AND baseline_stability <= 1e300) THEN
            RAISE EXCEPTION 'baseline stability must be a number of turns between 1e-300 and 1e300, not %',
                    baseline_stability
                USING ERRCODE = 'BT101';
        END IF;
    ELSIF policy = 'window' THEN
        window_turns := coalesce(window_turns, 15);
        IF threshold IS NOT NULL OR baseline_stability IS NOT NULL THEN
            RAISE EXCEPTION 'the window policy has no threshold or stability' USING ERRCODE = 'BT101';
        END IF;
        IF NOT (window_turns BETWEEN 1 AND 9007199254740992) THEN
            RAISE EXCEPTION 'window must be a whole number of turns between 1 and 2^53, not %', window_turns
                USING ERRCODE = 'BT101';
        END IF;
    ELSE
        RAISE EXCEPTION 'policy must be ''decay'' or ''window'', not %', coalesce(policy, 'NULL')
            USING ERRCODE = 'BT101';
    END IF;

    INSERT INTO bitemporal.memory_namespace AS n (name, policy, threshold, baseline_stability, window_turns)
    VALUES (namespace, policy, threshold, baseline_stability, window_turns)
    ON CONFLICT ON CONSTRAINT memory_namespace_pkey DO NOTHING
    RETURNING * INTO ns;
    IF FOUND THEN
        RETURN ns;
    END IF;
    SELECT * INTO ns FROM bitemporal.memory_namespace n WHERE n.name = namespace;
    IF (ns.policy, ns.threshold, ns.baseline_stability, ns.window_turns)
       IS DISTINCT FROM (policy, threshold, baseline_stability, window_turns) THEN
        RAISE EXCEPTION 'memory namespace % exists with another policy', namespace
            USING ERRCODE = 'BT102',
                  DETAIL = format('stored: %s threshold=%s baseline_stability=%s window=%s; asked: %s threshold=%s baseline_stability=%s window=%s',
                                  ns.policy, ns.threshold, ns.baseline_stability, ns.window_turns,
                                  policy, threshold, baseline_stability, window_turns),
                  HINT = 'A namespace keeps the policy it was created with; use another namespace.';
    END IF;
    RETURN ns;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_ensure_namespace(text, text, double precision, double precision, bigint) IS
    'Creates a working-memory namespace at turn 1 with a policy (decay: threshold default 0.20, baseline_stability default 8; window: window_turns default 15), or returns the existing one if its policy is the same. Errors: BT101 invalid policy, BT102 exists with another policy, BT104 invalid name.';

-- bitemporal.memory_register: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.memory_register(
    namespace  text,
    item_id    text,
    entity     text             DEFAULT NULL,
    attribute  text             DEFAULT NULL,
    pinned     boolean          DEFAULT false,
    stability  double precision DEFAULT NULL)
RETURNS bitemporal.memory_item
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns   bitemporal.memory_namespace;
    old  bitemporal.memory_item;
    item bitemporal.memory_item;
    s    double precision;
    c    double precision;
BEGIN
    PERFORM bitemporal_internal.memory_check_name('item id', item_id);
    IF (entity IS NULL) <> (attribute IS NULL) THEN
        RAISE EXCEPTION 'a fact key needs both entity and attribute (or neither)'
            USING ERRCODE = 'BT005';
    END IF;
    IF entity IS NOT NULL THEN
        PERFORM bitemporal_internal.check_key_part('entity', entity);
        PERFORM bitemporal_internal.check_key_part('attribute', attribute);
    END IF;
    pinned := coalesce(pinned, false);
    ns := bitemporal_internal.memory_namespace_for_update(namespace, false);
    IF ns.policy = 'decay' THEN
        IF stability IS NOT NULL THEN
            PERFORM bitemporal_internal.memory_check_stability(stability);
        END IF;
        s := coalesce(stability, ns.baseline_stability);
    ELSIF stability IS NOT NULL THEN
        RAISE EXCEPTION 'the window policy has no stability; namespace % uses it', namespace
            USING ERRCODE = 'BT103';
    END IF;
    c := CASE WHEN pinned THEN NULL ELSE bitemporal_internal.memory_crossing(ns, ns.turn, s) END;

    LOOP
        SELECT * INTO old FROM bitemporal.memory_item i
         WHERE i.namespace = ns.name AND i.item_id = item_id
           FOR NO KEY UPDATE;
        IF FOUND THEN
            -- Present: reset to a fresh registration; evicted: brought back as new.
            UPDATE bitemporal.memory_item i
               SET entity = entity, attribute = attribute, pinned = pinned, state = 'present',
                   stability = s, recall_count = 1, registered_turn = ns.turn,
                   last_touched_turn = ns.turn, evicted_turn = NULL, crossing_turn = c,
                   registration_seq = nextval('bitemporal.memory_registration_seq')
             WHERE i.namespace = ns.name AND i.item_id = item_id
            RETURNING i.* INTO item;
            EXIT;
        END IF;
        INSERT INTO bitemporal.memory_item AS i
               (namespace, item_id, entity, attribute, pinned, state, stability, recall_count,
                registered_turn, last_touched_turn, evicted_turn, crossing_turn, registration_seq)
        VALUES (ns.name, item_id, entity, attribute, pinned, 'present', s, 1,
                ns.turn, ns.turn, NULL, c, nextval('bitemporal.memory_registration_seq'))
        ON CONFLICT ON CONSTRAINT memory_item_pkey DO NOTHING
        RETURNING i.* INTO item;
        EXIT WHEN FOUND;
        -- Another transaction registered it first: lock its row and reset it.
    END LOOP;

    INSERT INTO bitemporal.memory_log
           (namespace, item_id, turn, event, previous_state, pinned, recall_count,
            last_touched_turn, retention, stability_before, stability_after, crossing_turn)
    VALUES (ns.name, item_id, ns.turn, 'register', old.state, pinned, 1,
            old.last_touched_turn,
            CASE WHEN old.state = 'present'
                 THEN bitemporal_internal.memory_retention_at(ns, ns.turn - old.last_touched_turn, old.stability) END,
            old.stability, s, c);
    RETURN item;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_register(text, text, text, text, boolean, double precision) IS
    'Registers an item at the namespace''s current turn: stability = the given one or the baseline, recall_count = 1 (registration is the first use), optionally a fact key and pinned (never evicted). A present item is reset to a fresh registration, an evicted one brought back as new; either way it moves to the end of the registration order. Returns the item. Errors: BT103 stability, BT104 item id, BT105 unknown namespace, BT005 key.';

-- bitemporal.memory_register_many: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.memory_register_many(
    namespace  text,
    item_ids   text[],
    pinned     boolean          DEFAULT false,
    stability  double precision DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
-- A generic plan (index lookups per id) serves any array; re-planning the
-- statement for each call would cost more than running it.
SET plan_cache_mode = force_generic_plan
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns  bitemporal.memory_namespace;
    s   double precision;
    c   double precision;
    n   bigint;
BEGIN
    IF item_ids IS NULL THEN
        RAISE EXCEPTION 'item ids must be an array, not NULL' USING ERRCODE = 'BT104';
    END IF;
    PERFORM bitemporal_internal.memory_check_name('item id', u.id) FROM unnest(item_ids) AS u(id);
    IF (SELECT count(DISTINCT u.id) FROM unnest(item_ids) AS u(id)) <> cardinality(item_ids) THEN
        RAISE EXCEPTION 'an item id appears twice in one call'
            USING ERRCODE = 'BT104',
                  HINT = 'Register it once; a second registration would only reset the first.';
    END IF;
    pinned := coalesce(pinned, false);
    -- Exclusive, like a step: no other writer of the namespace runs meanwhile,
    -- so the rows read below are the ones overwritten (for the log).
    ns := bitemporal_internal.memory_namespace_for_update(namespace, true);
    IF ns.policy = 'decay' THEN
        IF stability IS NOT NULL THEN
            PERFORM bitemporal_internal.memory_check_stability(stability);
        END IF;
        s := coalesce(stability, ns.baseline_stability);
    ELSIF stability IS NOT NULL THEN
        RAISE EXCEPTION 'the window policy has no stability; namespace % uses it', namespace
            USING ERRCODE = 'BT103';
    END IF;
    c := CASE WHEN pinned THEN NULL ELSE bitemporal_internal.memory_crossing(ns, ns.turn, s) END;

    WITH input AS (
        SELECT u.id, u.ord FROM unnest(item_ids) WITH ORDINALITY AS u(id, ord)
    ), old AS (
        SELECT i.item_id, i.state, i.stability, i.last_touched_turn
          FROM bitemporal.memory_item i JOIN input ON i.item_id = input.id
         WHERE i.namespace = ns.name
    ), written AS (
        -- Registration order follows the array: nextval over the ordered input.
        INSERT INTO bitemporal.memory_item AS i
               (namespace, item_id, entity, attribute, pinned, state, stability, recall_count,
                registered_turn, last_touched_turn, evicted_turn, crossing_turn, registration_seq)
        SELECT ns.name, o.id, NULL, NULL, pinned, 'present', s, 1, ns.turn, ns.turn, NULL, c,
               nextval('bitemporal.memory_registration_seq')
          FROM (SELECT input.id FROM input ORDER BY input.ord) o
        ON CONFLICT ON CONSTRAINT memory_item_pkey DO UPDATE
           SET entity = NULL, attribute = NULL, pinned = excluded.pinned, state = 'present',
               stability = excluded.stability, recall_count = 1,
               registered_turn = excluded.registered_turn,
               last_touched_turn = excluded.last_touched_turn, evicted_turn = NULL,
               crossing_turn = excluded.crossing_turn,
               registration_seq = excluded.registration_seq
        RETURNING i.item_id
    ), logged AS (
        INSERT INTO bitemporal.memory_log
               (namespace, item_id, turn, event, previous_state, pinned, recall_count,
                last_touched_turn, retention, stability_before, stability_after, crossing_turn)
        SELECT ns.name, input.id, ns.turn, 'register', old.state, pinned, 1, old.last_touched_turn,
               CASE WHEN old.state = 'present'
                    THEN bitemporal_internal.memory_retention_at(ns, ns.turn - old.last_touched_turn, old.stability) END,
               old.stability, s, c
          FROM input LEFT JOIN old ON old.item_id = input.id
         ORDER BY input.ord
    )
    SELECT count(*) INTO n FROM written;
    RETURN n;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_register_many(text, text[], boolean, double precision) IS
    'Registers several items at once, exactly as memory_register would one after the other in array order (without fact keys; ids must be distinct). Takes the namespace row exclusively, like a step. Returns how many were registered. Errors: BT103, BT104 (also for a repeated id), BT105.';

-- bitemporal.memory_recall: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.memory_recall(namespace text, item_id text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns  bitemporal.memory_namespace;
    it  bitemporal.memory_item;
    rc  bigint;
    s   double precision;
    c   double precision;
BEGIN
    PERFORM bitemporal_internal.memory_check_name('item id', item_id);
    ns := bitemporal_internal.memory_namespace_for_update(namespace, false);
    -- The row lock makes the read-modify-write atomic: a concurrent recall of
    -- the same item waits here and then reads this one's result.
    SELECT * INTO it FROM bitemporal.memory_item i
     WHERE i.namespace = ns.name AND i.item_id = item_id AND i.state = 'present'
       FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        -- Unknown or evicted: not brought back (re-registering is explicit).
        RETURN false;
    END IF;
    rc := it.recall_count + 1;
    IF ns.policy = 'decay' THEN
        -- Capped at 1e300 turns so that the next product cannot overflow.
        s := least(it.stability * (1 + ln(1 + rc::double precision)), 1e300::double precision);
    END IF;
    c := CASE WHEN it.pinned THEN NULL ELSE bitemporal_internal.memory_crossing(ns, ns.turn, s) END;
    UPDATE bitemporal.memory_item i
       SET recall_count = rc, stability = s, last_touched_turn = ns.turn, crossing_turn = c
     WHERE i.namespace = ns.name AND i.item_id = item_id;
    INSERT INTO bitemporal.memory_log
           (namespace, item_id, turn, event, pinned, recall_count, last_touched_turn, retention,
            stability_before, stability_after, crossing_turn)
    VALUES (ns.name, item_id, ns.turn, 'recall', it.pinned, rc, it.last_touched_turn,
            bitemporal_internal.memory_retention_at(ns, ns.turn - it.last_touched_turn, it.stability),
            it.stability, s, c);
    RETURN true;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_recall(text, text) IS
    'Recalls a present item at the current turn: recall_count + 1, then (decay) S := S * (1 + ln(1 + recall_count)), capped at 1e300; last touched := now. Atomic under concurrency: every recall is counted. Returns false, changing nothing, for an unknown or evicted item. Errors: BT104 item id, BT105 unknown namespace.';

-- bitemporal.memory_step: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.memory_step(namespace text)
RETURNS text[]
LANGUAGE plpgsql
-- The eviction statement is planned once, for any turn: a range scan of
-- memory_item_crossing_idx (see the always-true lower bound below), rather
-- than re-planned at every step.
SET plan_cache_mode = force_generic_plan
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns      bitemporal.memory_namespace;
    evicted text[];
BEGIN
    ns := bitemporal_internal.memory_namespace_for_update(namespace, true);
    WITH gone AS (
        UPDATE bitemporal.memory_item i
           SET state = 'evicted', evicted_turn = ns.turn, crossing_turn = NULL
         WHERE i.namespace = ns.name AND i.state = 'present' AND NOT i.pinned
           AND i.crossing_turn < ns.turn
           -- Always true (crossing turns are >= 1). Bounding the range on both
           -- sides tells the planner, planning for an unknown turn, that few
           -- rows are due, so the generic plan is the range scan on
           -- memory_item_crossing_idx however large the namespace.
           AND i.crossing_turn > '-Infinity'::double precision
        RETURNING i.item_id, i.registration_seq, i.recall_count, i.last_touched_turn, i.stability
    ), logged AS (
        INSERT INTO bitemporal.memory_log
               (namespace, item_id, turn, event, pinned, recall_count, last_touched_turn, retention,
                stability_before, stability_after)
        SELECT ns.name, g.item_id, ns.turn, 'evict', false, g.recall_count, g.last_touched_turn,
               bitemporal_internal.memory_retention_at(ns, ns.turn - g.last_touched_turn, g.stability),
               g.stability, g.stability
          FROM gone g
         ORDER BY g.registration_seq
    )
    SELECT coalesce(array_agg(g.item_id ORDER BY g.registration_seq), '{}')
      INTO evicted
      FROM gone g;
    UPDATE bitemporal.memory_namespace n SET turn = n.turn + 1 WHERE n.name = ns.name;
    RETURN evicted;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_step(text) IS
    'Ends the current turn: evicts every present, unpinned item whose retention at this turn is below the threshold (window: elapsed > window), i.e. whose crossing turn is below the turn, with one range scan of memory_item_crossing_idx; then advances the clock by one. Returns the evicted ids in registration order. Serialised per namespace (FOR UPDATE on its row). Errors: BT104, BT105.';

-- bitemporal.memory_is_present: decay.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.memory_is_present(namespace text, item_id text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace := bitemporal_internal.memory_namespace_get(namespace);
BEGIN
    PERFORM bitemporal_internal.memory_check_name('item id', item_id);
    RETURN EXISTS (SELECT FROM bitemporal.memory_item i
                    WHERE i.namespace = ns.name AND i.item_id = item_id AND i.state = 'present');
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_is_present(text, text) IS
    'Whether an item is in the working set (registered and not evicted); false for an unknown id. Errors: BT104, BT105.';

-- bitemporal.memory_working_set_size: decay.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.memory_working_set_size(namespace text)
RETURNS bigint
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace := bitemporal_internal.memory_namespace_get(namespace);
BEGIN
    RETURN (SELECT count(*) FROM bitemporal.memory_item i
             WHERE i.namespace = ns.name AND i.state = 'present');
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_working_set_size(text) IS
    'How many items of the namespace are present, pinned ones included (a count: linear in the namespace''s items). Errors: BT104, BT105.';

-- bitemporal_internal.memory_item_get: decay.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.memory_item_get(namespace text, item_id text)
RETURNS bitemporal.memory_item
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    it bitemporal.memory_item;
BEGIN
    PERFORM bitemporal_internal.memory_check_name('item id', item_id);
    SELECT * INTO it FROM bitemporal.memory_item i
     WHERE i.namespace = namespace AND i.item_id = item_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown item % in memory namespace %', item_id, namespace
            USING ERRCODE = 'BT106',
                  HINT = 'Register it first with bitemporal.memory_register().';
    END IF;
    RETURN it;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.memory_item_get(text, text) IS
    'An item row, present or evicted. Errors: BT104, BT106 unknown item.';

-- bitemporal.memory_retention: decay.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.memory_retention(namespace text, item_id text)
RETURNS double precision
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ns bitemporal.memory_namespace := bitemporal_internal.memory_namespace_get(namespace);
    it bitemporal.memory_item := bitemporal_internal.memory_item_get(namespace, item_id);
BEGIN
    IF it.state = 'evicted' THEN
        RETURN 0::double precision;
    END IF;
    RETURN bitemporal_internal.memory_retention_at(ns, ns.turn - it.last_touched_turn, it.stability);
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_retention(text, text) IS
    'Retention of an item at the current turn: exp(-(turn - last_touched) / S) (decay), 1 inside / 0 outside the window (window); 0 for an evicted item. Errors: BT104, BT105, BT106 unknown item.';

-- bitemporal.memory_stability: decay.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.memory_stability(namespace text, item_id text)
RETURNS double precision
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ns bitemporal.memory_namespace := bitemporal_internal.memory_namespace_get(namespace);
BEGIN
    RETURN (bitemporal_internal.memory_item_get(ns.name, item_id)).stability;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_stability(text, text) IS
    'Stability S of an item in turns (its last value if evicted; NULL under the window policy). Errors: BT104, BT105, BT106 unknown item.';

-- bitemporal.memory_items: decay.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.memory_items(namespace text)
RETURNS SETOF bitemporal.memory_item
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    ns bitemporal.memory_namespace := bitemporal_internal.memory_namespace_get(namespace);
BEGIN
    RETURN QUERY
        SELECT i.* FROM bitemporal.memory_item i
         WHERE i.namespace = ns.name
         ORDER BY i.registration_seq;
END;
$$;
COMMENT ON FUNCTION bitemporal.memory_items(text) IS
    'Every item of a namespace, present and evicted, in registration order. Errors: BT104, BT105.';

-- bitemporal.changes: changes.v1.sql; now SECURITY DEFINER (see above)
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
               SELECT bitemporal_internal.superseding_versions(v.entity, v.attribute, v.source,
                                                      v.valid_period, upper(v.known_period)) AS by_ids) s
         WHERE NOT upper_inf(v.known_period)
           AND upper(v.known_period) >= coalesce(known_from, '-infinity')
           AND upper(v.known_period) < coalesce(known_to, 'infinity')
           AND (entity IS NULL OR v.entity = entity)
           AND (attribute IS NULL OR v.attribute = attribute)
    ) AS c (change, changed_at, version_id, entity, attribute, source, value, valid_period,
            known_period, recorded_by, carried_from, by_version_ids)
    ORDER BY c.changed_at, c.version_id, c.change;
END;
$$;
COMMENT ON FUNCTION bitemporal.changes(timestamptz, timestamptz, text, text) IS
    'What the store learned, superseded or retracted in the knowledge window [known_from, known_to) (NULL = unbounded), optionally for one entity and/or attribute, ORDER BY changed_at, version_id. A re-recorded remainder (carried_from set) is not learned. Raises BT001 for an empty or inverted window.';

-- bitemporal_internal.text_search_config: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.text_search_config(name text, errcode text)
RETURNS regconfig
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF name IS NULL OR name = '' THEN
        RAISE EXCEPTION 'text search configuration must be a non-empty name'
            USING ERRCODE = errcode;
    END IF;
    RETURN name::regconfig;
EXCEPTION WHEN undefined_object OR invalid_name OR syntax_error THEN
    RAISE EXCEPTION 'text search configuration "%" does not exist', name
        USING ERRCODE = errcode,
              HINT = 'SELECT cfgname FROM pg_ts_config lists them (english, german, simple, ...).';
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.text_search_config(text, text) IS
    'The text search configuration called name, or raises SQLSTATE errcode (BT204 when searching, BT208 when adding evidence) if there is none.';

-- bitemporal_internal.check_question: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_question(valid_at timestamptz, known_at timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF known_at > pg_catalog.now() THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', known_at, pg_catalog.now()
            USING ERRCODE = 'BT003',
                  HINT = 'Nobody can say today what the store will know later.';
    END IF;
    IF valid_at IN ('infinity', '-infinity') OR known_at = '-infinity' THEN
        RAISE EXCEPTION 'question times must be finite (valid_at %, known_at %)', valid_at, known_at
            USING ERRCODE = 'BT001';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_question(timestamptz, timestamptz) IS
    'Raises BT003 if known_at is later than now(), BT001 if a question time is infinite (NULL = now, accepted).';

-- bitemporal_internal.check_limit: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_limit(lim integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF lim < 0 THEN
        RAISE EXCEPTION 'limit must be zero or more, not %', lim
            USING ERRCODE = 'BT204', HINT = 'Pass NULL for no limit.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_limit(integer) IS
    'Raises BT204 for a negative result limit (NULL = no limit).';

-- bitemporal.search_evidence: evidence.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.search_evidence(
    query      text,
    valid_at   timestamptz DEFAULT NULL,
    known_at   timestamptz DEFAULT NULL,
    lim        integer     DEFAULT 10,
    language   text        DEFAULT NULL,
    entity     text        DEFAULT NULL,
    attribute  text        DEFAULT NULL)
RETURNS SETOF bitemporal.evidence_hit
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    config regconfig;
BEGIN
    PERFORM bitemporal_internal.check_question(valid_at, known_at);
    PERFORM bitemporal_internal.check_limit(lim);
    IF query IS NULL THEN
        RAISE EXCEPTION 'query must not be NULL' USING ERRCODE = 'BT204';
    END IF;
    IF language IS NOT NULL THEN
        config := bitemporal_internal.text_search_config(language, 'BT204');
    END IF;
    RETURN QUERY
    SELECT (pg_catalog.row_number() OVER (ORDER BY s.score DESC, s.version_id, s.evidence_id))::integer,
           s.score, s.version_id, s.entity, s.attribute, s.source, s.value, s.valid_period,
           s.known_period, s.recorded_by, s.carried_from, s.evidence_id, s.passage, s.document
      FROM (SELECT v.*, e.evidence_id, e.passage, e.document,
                   pg_catalog.ts_rank_cd(e.search_vector,
                                         pg_catalog.websearch_to_tsquery(e.language, query))::float8 AS score
              FROM bitemporal_internal.eligible(valid_at, known_at, entity, attribute) v
              JOIN bitemporal.evidence e ON e.version_id IN (v.version_id, v.carried_from)
             WHERE (config IS NULL OR e.language = config)
               AND e.search_vector @@ pg_catalog.websearch_to_tsquery(e.language, query)) s
     ORDER BY s.score DESC, s.version_id, s.evidence_id
     LIMIT lim;
END;
$$;
COMMENT ON FUNCTION bitemporal.search_evidence(text, timestamptz, timestamptz, integer, text, text, text) IS
    'Full-text retrieval that filters before it ranks: the passages of versions eligible at (valid_at, known_at) (NULL = now) matching query (web search syntax, parsed with each passage''s language, or only passages in language if given), ranked by ts_rank_cd, ties by version id then evidence id, first lim (NULL = all). Errors: BT001, BT003, BT204.';

-- bitemporal.rank_versions: evidence.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.rank_versions(
    version_ids  bigint[],
    scores       double precision[],
    valid_at     timestamptz DEFAULT NULL,
    known_at     timestamptz DEFAULT NULL,
    lim          integer     DEFAULT 10,
    entity       text        DEFAULT NULL,
    attribute    text        DEFAULT NULL)
RETURNS SETOF bitemporal.evidence_hit
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
BEGIN
    PERFORM bitemporal_internal.check_question(valid_at, known_at);
    PERFORM bitemporal_internal.check_limit(lim);
    IF version_ids IS NULL OR scores IS NULL
       OR pg_catalog.cardinality(version_ids) <> pg_catalog.cardinality(scores) THEN
        RAISE EXCEPTION 'version_ids and scores must be arrays of the same length (% and %)',
                pg_catalog.cardinality(version_ids), pg_catalog.cardinality(scores)
            USING ERRCODE = 'BT204';
    END IF;
    IF EXISTS (SELECT FROM unnest(version_ids, scores) g(id, score)
                WHERE g.id IS NULL OR g.score IS NULL
                   OR g.score IN ('NaN', 'Infinity', '-Infinity')) THEN
        RAISE EXCEPTION 'scores must be finite numbers for non-NULL version ids'
            USING ERRCODE = 'BT204',
                  HINT = 'NaN would sort above every real score.';
    END IF;
    IF (SELECT count(DISTINCT g.id) FROM unnest(version_ids) g(id)) <> pg_catalog.cardinality(version_ids) THEN
        RAISE EXCEPTION 'a version id appears more than once in version_ids'
            USING ERRCODE = 'BT204';
    END IF;
    RETURN QUERY
    WITH given AS (
        SELECT g.id, g.score FROM unnest(version_ids, scores) g(id, score)
    ), scored AS (
        -- A score given for a version applies to the remainders carried from
        -- it; one given for the remainder itself takes precedence.
        SELECT DISTINCT ON (v.version_id) v.*, g.score
          FROM bitemporal_internal.eligible(valid_at, known_at, entity, attribute) v
          JOIN given g ON g.id IN (v.version_id, v.carried_from)
         ORDER BY v.version_id, (g.id = v.version_id) DESC
    )
    SELECT (pg_catalog.row_number() OVER (ORDER BY s.score DESC, s.version_id))::integer,
           s.score, s.version_id, s.entity, s.attribute, s.source, s.value, s.valid_period,
           s.known_period, s.recorded_by, s.carried_from, p.evidence_id, p.passage, p.document
      FROM scored s
      LEFT JOIN LATERAL (
            SELECT e.evidence_id, e.passage, e.document
              FROM bitemporal.evidence e
             WHERE e.version_id IN (s.version_id, s.carried_from)
             ORDER BY (e.version_id = s.version_id) DESC, e.evidence_id
             LIMIT 1) p ON true
     ORDER BY s.score DESC, s.version_id
     LIMIT lim;
END;
$$;
COMMENT ON FUNCTION bitemporal.rank_versions(bigint[], double precision[], timestamptz, timestamptz, integer, text, text) IS
    'Caller-scored retrieval that filters before it ranks: scores[i] is the relevance of version_ids[i] from any external engine (a score for a version also applies to its remainders); keeps the versions eligible at (valid_at, known_at) (NULL = now), ranks them by score, ties by version id, first lim (NULL = all), each with its first passage if it has one. Ids of versions that do not exist are ignored. Errors: BT001, BT003, BT204.';

-- bitemporal_internal.require_vector: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.require_vector()
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema_name text;
BEGIN
    IF NOT bitemporal_internal.vector_available() THEN
        RAISE EXCEPTION 'vector similarity is unavailable: this server (PostgreSQL %) does not have the pgvector extension',
                pg_catalog.current_setting('server_version_num')::integer / 10000
            USING ERRCODE = 'BT201',
                  HINT = 'Install pgvector on the server to use embeddings; full-text search (bitemporal.search_evidence) and caller-supplied scores (bitemporal.rank_versions) work without it.';
    END IF;
    SELECT n.nspname INTO schema_name
      FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace
     WHERE x.extname = 'vector';
    IF schema_name IS NULL OR bitemporal.vector_dimensions() IS NULL THEN
        RAISE EXCEPTION 'vector retrieval is not enabled in this database'
            USING ERRCODE = 'BT202',
                  HINT = 'Run SELECT bitemporal.enable_vector(<dimensions of your embeddings>) once.';
    END IF;
    RETURN schema_name;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.require_vector() IS
    'The schema of the pgvector extension, or raises BT201 (the server lacks pgvector) or BT202 (not enabled in this database: call bitemporal.enable_vector).';

-- bitemporal_internal.check_embedding: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_embedding(embedding real[], dimensions integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF embedding IS NULL OR pg_catalog.array_ndims(embedding) IS DISTINCT FROM 1
       OR pg_catalog.cardinality(embedding) <> dimensions THEN
        RAISE EXCEPTION 'an embedding must be a one-dimensional array of % numbers, not %',
                dimensions, coalesce(pg_catalog.cardinality(embedding)::text || ' numbers', 'NULL')
            USING ERRCODE = 'BT203',
                  HINT = 'Every embedding in a database has the dimensions given to bitemporal.enable_vector.';
    END IF;
    IF EXISTS (SELECT FROM unnest(embedding) x WHERE x IS NULL OR x IN ('NaN', 'Infinity', '-Infinity')) THEN
        RAISE EXCEPTION 'an embedding must hold finite numbers only'
            USING ERRCODE = 'BT203';
    END IF;
    IF NOT EXISTS (SELECT FROM unnest(embedding) x WHERE x <> 0) THEN
        RAISE EXCEPTION 'an embedding must not be all zeros: its cosine similarity is undefined'
            USING ERRCODE = 'BT203';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_embedding(real[], integer) IS
    'Raises BT203 unless embedding is a one-dimensional array of the given number of finite numbers, not all zero.';

-- bitemporal.enable_vector: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.enable_vector(dimensions integer)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    schema_name text;
    enabled integer := bitemporal.vector_dimensions();
BEGIN
    IF dimensions IS NULL OR dimensions < 1 OR dimensions > 16000 THEN
        RAISE EXCEPTION 'embedding dimensions must be between 1 and 16000, not %', dimensions
            USING ERRCODE = 'BT203';
    END IF;
    IF enabled IS NOT NULL THEN
        IF enabled <> dimensions THEN
            RAISE EXCEPTION 'vector retrieval is already enabled with % dimensions, not %', enabled, dimensions
                USING ERRCODE = 'BT203',
                      HINT = 'One database holds embeddings of one model: re-embed with it, or use another database.';
        END IF;
        RETURN enabled;
    END IF;
    IF NOT bitemporal_internal.vector_available() THEN
        PERFORM bitemporal_internal.require_vector();  -- raises BT201
    END IF;
    SELECT n.nspname INTO schema_name
      FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace
     WHERE x.extname = 'vector';
    IF schema_name IS NULL THEN
        IF pg_catalog.to_regnamespace('public') IS NULL THEN
            RAISE EXCEPTION 'cannot create the pgvector extension: there is no schema public to create it in'
                USING ERRCODE = 'BT201',
                      HINT = 'CREATE EXTENSION vector in a schema of your choice, then call bitemporal.enable_vector again.';
        END IF;
        BEGIN
            CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'this role may not create the pgvector extension: %', SQLERRM
                USING ERRCODE = 'BT201',
                      HINT = 'Ask a superuser to run CREATE EXTENSION vector in this database, then call bitemporal.enable_vector again.';
        END;
        schema_name := 'public';
    END IF;
    EXECUTE pg_catalog.format(
        'CREATE TABLE bitemporal.evidence_embedding ('
        '    evidence_id bigint NOT NULL,'
        '    embedding %I.vector(%s) NOT NULL,'
        '    CONSTRAINT evidence_embedding_pkey PRIMARY KEY (evidence_id),'
        '    CONSTRAINT evidence_embedding_evidence_fkey FOREIGN KEY (evidence_id)'
        '        REFERENCES bitemporal.evidence (evidence_id) ON DELETE CASCADE)',
        schema_name, dimensions);
    COMMENT ON TABLE bitemporal.evidence_embedding IS
        'Embeddings of evidence passages (pgvector), created by bitemporal.enable_vector; searched exactly by bitemporal.nearest_evidence.';
    COMMENT ON TYPE bitemporal.evidence_embedding IS
        'Row type of bitemporal.evidence_embedding.';
    RETURN dimensions;
END;
$$;
COMMENT ON FUNCTION bitemporal.enable_vector(integer) IS
    'Enables vector retrieval in this database: creates the pgvector extension if needed (in schema public) and the table bitemporal.evidence_embedding for embeddings of the given dimensions. Idempotent for the same dimensions. Errors: BT201 the server lacks pgvector (or the role may not create it), BT203 other dimensions already enabled, or out of 1..16000.';

-- bitemporal.set_embedding: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.set_embedding(evidence_id bigint, embedding real[])
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    schema_name text := bitemporal_internal.require_vector();
BEGIN
    PERFORM bitemporal_internal.check_embedding(embedding, bitemporal.vector_dimensions());
    PERFORM FROM bitemporal.evidence e WHERE e.evidence_id = evidence_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown evidence %', evidence_id USING ERRCODE = 'BT208';
    END IF;
    EXECUTE pg_catalog.format(
        'INSERT INTO bitemporal.evidence_embedding (evidence_id, embedding) VALUES ($1, $2::%I.vector)'
        ' ON CONFLICT ON CONSTRAINT evidence_embedding_pkey DO UPDATE SET embedding = EXCLUDED.embedding',
        schema_name)
    USING evidence_id, embedding;
END;
$$;
COMMENT ON FUNCTION bitemporal.set_embedding(bigint, real[]) IS
    'Stores (or replaces) the embedding of a passage. Errors: BT201/BT202 vector retrieval unavailable or not enabled, BT203 wrong dimensions or non-finite numbers, BT208 unknown evidence.';

-- bitemporal.add_evidence: evidence.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.add_evidence(
    version_id   bigint,
    passage      text,
    document     text    DEFAULT NULL,
    language     text    DEFAULT 'english',
    embedding    real[]  DEFAULT NULL,
    recorded_by  text    DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    config regconfig := bitemporal_internal.text_search_config(coalesce(language, 'english'), 'BT208');
    id bigint;
BEGIN
    PERFORM FROM bitemporal.fact_version v WHERE v.version_id = add_evidence.version_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown fact version %', version_id
            USING ERRCODE = 'BT205',
                  HINT = 'Use the version_id returned by bitemporal.record.';
    END IF;
    IF passage IS NULL OR btrim(passage) = '' THEN
        RAISE EXCEPTION 'a passage must be non-blank text' USING ERRCODE = 'BT208';
    END IF;
    IF document = '' THEN
        RAISE EXCEPTION 'a document reference must be non-empty (or NULL)' USING ERRCODE = 'BT208';
    END IF;
    INSERT INTO bitemporal.evidence (version_id, passage, document, language, recorded_by)
    VALUES (version_id, passage, document, config, recorded_by)
    RETURNING evidence.evidence_id INTO id;
    IF embedding IS NOT NULL THEN
        PERFORM bitemporal.set_embedding(id, embedding);
    END IF;
    RETURN id;
END;
$$;
COMMENT ON FUNCTION bitemporal.add_evidence(bigint, text, text, text, real[], text) IS
    'Attaches a passage to a fact version: its text, the document it comes from, the text search configuration to index it with (default english) and optionally its embedding (needs bitemporal.enable_vector). Returns the evidence id. Errors: BT205 unknown version, BT208 blank passage or unknown language, BT201-BT203 for the embedding.';

-- bitemporal.nearest_evidence: evidence.v1.sql; now SECURITY DEFINER (see above)
CREATE OR REPLACE FUNCTION bitemporal.nearest_evidence(
    embedding  real[],
    valid_at   timestamptz DEFAULT NULL,
    known_at   timestamptz DEFAULT NULL,
    lim        integer     DEFAULT 10,
    entity     text        DEFAULT NULL,
    attribute  text        DEFAULT NULL)
RETURNS SETOF bitemporal.evidence_hit
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    schema_name text := bitemporal_internal.require_vector();
BEGIN
    PERFORM bitemporal_internal.check_embedding(embedding, bitemporal.vector_dimensions());
    PERFORM bitemporal_internal.check_question(valid_at, known_at);
    PERFORM bitemporal_internal.check_limit(lim);
    -- Materialized: the similarity is computed for every eligible passage and
    -- sorted, so no approximate index on the embeddings can answer the ORDER
    -- BY first and lose eligible passages to a filter applied afterwards.
    RETURN QUERY EXECUTE pg_catalog.format($q$
        WITH eligible AS MATERIALIZED (
            SELECT v.* FROM bitemporal_internal.eligible($2, $3, $5, $6) v
        ), scored AS MATERIALIZED (
            SELECT v.*, e.evidence_id, e.passage, e.document,
                   (1 - (x.embedding OPERATOR(%1$I.<=>) $1::%1$I.vector))::float8 AS score
              FROM eligible v
              JOIN bitemporal.evidence e ON e.version_id IN (v.version_id, v.carried_from)
              JOIN bitemporal.evidence_embedding x ON x.evidence_id = e.evidence_id
        )
        SELECT (pg_catalog.row_number() OVER (ORDER BY s.score DESC, s.version_id, s.evidence_id))::integer,
               s.score, s.version_id, s.entity, s.attribute, s.source, s.value, s.valid_period,
               s.known_period, s.recorded_by, s.carried_from, s.evidence_id, s.passage, s.document
          FROM scored s
         ORDER BY s.score DESC, s.version_id, s.evidence_id
         LIMIT $4
        $q$, schema_name)
    USING embedding, valid_at, known_at, lim, entity, attribute;
END;
$$;
COMMENT ON FUNCTION bitemporal.nearest_evidence(real[], timestamptz, timestamptz, integer, text, text) IS
    'Vector retrieval that filters before it ranks: the passages of versions eligible at (valid_at, known_at) (NULL = now) that have an embedding, ranked by cosine similarity to embedding (score = 1 - cosine distance), ties by version id then evidence id, first lim (NULL = all). Exact, never an approximate index scan filtered afterwards. Errors: BT201 no pgvector on this server, BT202 not enabled, BT203 embedding, BT001, BT003, BT204.';

-- bitemporal_internal.check_artifact_time: provenance.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_artifact_time(what text, t timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF t > pg_catalog.clock_timestamp() OR t IN ('infinity', '-infinity') THEN
        RAISE EXCEPTION '% time % is % the present (%)', what, t,
                CASE WHEN t = '-infinity' THEN 'not a time before' ELSE 'later than' END,
                pg_catalog.clock_timestamp()
            USING ERRCODE = 'BT003',
                  HINT = 'Omit it to use the transaction time.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_artifact_time(text, timestamptz) IS
    'Raises BT003 for a derivation or retirement time later than the present, or infinite.';

-- bitemporal.record_artifact: provenance.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.record_artifact(
    kind         text,
    ref          text,
    version_ids  bigint[]    DEFAULT '{}',
    artifact_ids bigint[]    DEFAULT '{}',
    detail       jsonb       DEFAULT NULL,
    derived_at   timestamptz DEFAULT NULL,
    recorded_by  text        DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    t        timestamptz := coalesce(derived_at, pg_catalog.now());
    id       bigint;
    bad      record;
    previous timestamptz;
BEGIN
    IF kind IS NULL OR kind = '' OR octet_length(kind) > 1024
       OR ref IS NULL OR ref = '' OR octet_length(ref) > 1024 THEN
        RAISE EXCEPTION 'an artifact needs a kind and a ref of 1 to 1024 bytes'
            USING ERRCODE = 'BT207';
    END IF;
    version_ids := coalesce(version_ids, '{}');
    artifact_ids := coalesce(artifact_ids, '{}');
    IF pg_catalog.array_position(version_ids, NULL) IS NOT NULL
       OR pg_catalog.array_position(artifact_ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'input ids must not be NULL' USING ERRCODE = 'BT207';
    END IF;
    IF pg_catalog.cardinality(version_ids) + pg_catalog.cardinality(artifact_ids) = 0 THEN
        RAISE EXCEPTION 'artifact (%, %) has no inputs: nothing could ever make it stale', kind, ref
            USING ERRCODE = 'BT207',
                  HINT = 'Name the fact versions and/or artifacts it was derived from.';
    END IF;
    PERFORM bitemporal_internal.check_artifact_time('derivation', t);

    SELECT g.id INTO bad FROM unnest(version_ids) g(id)
     WHERE NOT EXISTS (SELECT FROM bitemporal.fact_version v WHERE v.version_id = g.id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown fact version %', bad.id USING ERRCODE = 'BT205';
    END IF;
    SELECT v.version_id, lower(v.known_period) AS known_from INTO bad
      FROM bitemporal.fact_version v
     WHERE v.version_id = ANY (version_ids) AND lower(v.known_period) > t
     ORDER BY v.version_id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'artifact derived at % from version %, which the store only knew from %',
                t, bad.version_id, bad.known_from
            USING ERRCODE = 'BT207';
    END IF;
    SELECT g.id INTO bad FROM unnest(artifact_ids) g(id)
     WHERE NOT EXISTS (SELECT FROM bitemporal.artifact a WHERE a.artifact_id = g.id) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'unknown artifact %', bad.id USING ERRCODE = 'BT206';
    END IF;
    SELECT a.artifact_id, a.derived_at INTO bad
      FROM bitemporal.artifact a
     WHERE a.artifact_id = ANY (artifact_ids) AND a.derived_at > t
     ORDER BY a.artifact_id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'artifact derived at % from artifact %, which was only derived at %',
                t, bad.artifact_id, bad.derived_at
            USING ERRCODE = 'BT207';
    END IF;

    -- One writer per name at a time, so that the replaced artifact is found.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('bitemporal.artifact'),
                                             pg_catalog.hashtext(kind || '/' || ref));
    SELECT a.derived_at INTO previous FROM bitemporal.artifact a
     WHERE a.kind = kind AND a.ref = ref AND a.retired_at IS NULL;
    IF previous > t THEN
        RAISE EXCEPTION 'artifact (%, %) derived at % would replace one derived later, at %',
                kind, ref, t, previous
            USING ERRCODE = 'BT207';
    END IF;
    UPDATE bitemporal.artifact a SET retired_at = t
     WHERE a.kind = kind AND a.ref = ref AND a.retired_at IS NULL;

    INSERT INTO bitemporal.artifact (kind, ref, detail, derived_at, recorded_by)
    VALUES (kind, ref, detail, t, recorded_by)
    RETURNING artifact.artifact_id INTO id;
    INSERT INTO bitemporal.artifact_input (artifact_id, input_version)
    SELECT DISTINCT id, g.v FROM unnest(version_ids) g(v);
    INSERT INTO bitemporal.artifact_input (artifact_id, input_artifact)
    SELECT DISTINCT id, g.a FROM unnest(artifact_ids) g(a);
    RETURN id;
END;
$$;
COMMENT ON FUNCTION bitemporal.record_artifact(text, text, bigint[], bigint[], jsonb, timestamptz, text) IS
    'Records an artifact derived at derived_at (default: the transaction time) from exact fact versions and/or other artifacts, retiring the artifact previously recorded under the same (kind, ref). Returns its id. Errors: BT003 derived_at later than now, BT205 unknown version, BT206 unknown artifact, BT207 invalid (empty kind/ref, no inputs, derived before an input existed).';

-- bitemporal.retire_artifact: provenance.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.retire_artifact(artifact_id bigint, retired_at timestamptz DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    t timestamptz := coalesce(retired_at, pg_catalog.now());
    a bitemporal.artifact;
BEGIN
    PERFORM bitemporal_internal.check_artifact_time('retirement', t);
    SELECT * INTO a FROM bitemporal.artifact x WHERE x.artifact_id = artifact_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown artifact %', artifact_id USING ERRCODE = 'BT206';
    END IF;
    IF a.retired_at IS NOT NULL THEN
        RETURN false;
    END IF;
    IF t < a.derived_at THEN
        RAISE EXCEPTION 'artifact % cannot be retired at %, before it was derived (%)', artifact_id, t, a.derived_at
            USING ERRCODE = 'BT207';
    END IF;
    UPDATE bitemporal.artifact x SET retired_at = t WHERE x.artifact_id = artifact_id;
    RETURN true;
END;
$$;
COMMENT ON FUNCTION bitemporal.retire_artifact(bigint, timestamptz) IS
    'Marks an artifact as thrown away or rebuilt at retired_at (default: the transaction time), so that it leaves the stale list; returns false if it already was. Errors: BT003, BT206 unknown artifact, BT207 retired before derived.';

-- bitemporal_internal.fact_version_notify_closed: provenance.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_notify_closed()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    by_ids  bigint[];
    change  text;
    payload text;
BEGIN
    -- The rule of bitemporal_internal.superseding_versions, written out here so that
    -- PL/pgSQL keeps its plan: every closed version runs it at commit.
    SELECT coalesce(pg_catalog.array_agg(w.version_id ORDER BY w.version_id), '{}')
      INTO by_ids
      FROM bitemporal.fact_version w
     WHERE w.entity = NEW.entity AND w.attribute = NEW.attribute AND w.source = NEW.source
       AND w.valid_period OPERATOR(pg_catalog.&&) NEW.valid_period
       AND w.known_period OPERATOR(pg_catalog.@>) upper(NEW.known_period)
       AND lower(w.known_period) = upper(NEW.known_period)
       AND w.carried_from IS NULL;
    change := CASE WHEN pg_catalog.cardinality(by_ids) > 0 THEN 'superseded' ELSE 'retracted' END;
    payload := pg_catalog.jsonb_build_object(
        'entity', NEW.entity, 'attribute', NEW.attribute, 'source', NEW.source,
        'version_id', NEW.version_id, 'change', change,
        'known_at', bitemporal_internal.iso_time(upper(NEW.known_period)), 'by', pg_catalog.to_jsonb(by_ids))::text;
    IF octet_length(payload) >= 8000 THEN
        payload := pg_catalog.jsonb_build_object(
            'version_id', NEW.version_id, 'change', change,
            'known_at', bitemporal_internal.iso_time(upper(NEW.known_period)), 'by', pg_catalog.to_jsonb(by_ids),
            'truncated', true)::text;
    END IF;
    PERFORM pg_catalog.pg_notify(bitemporal.invalidation_channel(), payload);
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION bitemporal_internal.fact_version_notify_closed() FROM PUBLIC;
COMMENT ON FUNCTION bitemporal_internal.fact_version_notify_closed() IS
    'Trigger (deferred to commit): announces on bitemporal_invalidation that a version''s knowledge was closed, with its key, source, id, change (superseded or retracted), knowledge time and superseding versions, as JSON.';

-- bitemporal_internal.answer_since: explain.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.answer_since(entity text, attribute text, valid_at timestamptz, known_at timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    answer jsonb := bitemporal_internal.distinct_values(entity, attribute, valid_at, known_at);
    since  timestamptz;
    t      timestamptz;
BEGIN
    FOR t IN SELECT e FROM bitemporal_internal.knowledge_edges(entity, attribute, valid_at) e
              WHERE e <= known_at ORDER BY e DESC
    LOOP
        EXIT WHEN bitemporal_internal.distinct_values(entity, attribute, valid_at, t) <> answer;
        since := t;
    END LOOP;
    RETURN since;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.answer_since(text, text, timestamptz, timestamptz) IS
    'Since when (knowledge time) the store has given, up to known_at, the answer it gives at known_at for (entity, attribute) at valid_at; NULL if it never gave another.';

-- bitemporal_internal.answer_corrected: explain.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.answer_corrected(
    entity text, attribute text, valid_at timestamptz, known_at timestamptz, present timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
#variable_conflict use_variable
DECLARE
    answer jsonb := bitemporal_internal.distinct_values(entity, attribute, valid_at, known_at);
    t      timestamptz;
BEGIN
    FOR t IN SELECT e FROM bitemporal_internal.knowledge_edges(entity, attribute, valid_at) e
              WHERE e > known_at AND e <= present ORDER BY e
    LOOP
        IF bitemporal_internal.distinct_values(entity, attribute, valid_at, t) <> answer THEN
            RETURN t;
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.answer_corrected(text, text, timestamptz, timestamptz, timestamptz) IS
    'The first knowledge time after known_at, up to present, at which the answer for (entity, attribute) at valid_at changed; NULL if it did not.';

-- bitemporal.explain: explain.v1.sql; now SECURITY DEFINER (see above)
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
BEGIN
    a := bitemporal.resolve(entity, attribute, valid_at, known_at, present);

    SELECT coalesce(pg_catalog.jsonb_agg(bitemporal_internal.explain_version(v) ORDER BY v.version_id), '[]'),
           coalesce(pg_catalog.jsonb_agg(DISTINCT v.source ORDER BY v.source), '[]')
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
                     GROUP BY v.value) g) x;

    -- The knowledge snapshot: the latest change to the key the store knew by known_at.
    SELECT max(greatest(lower(v.known_period),
                        CASE WHEN upper(v.known_period) <= a.known_at THEN upper(v.known_period) END))
      INTO latest
      FROM bitemporal.fact_version v
     WHERE v.entity = entity AND v.attribute = attribute AND lower(v.known_period) <= a.known_at;

    IF a.status = 'missing' THEN
        SELECT max(upper(v.valid_period)) INTO prev_end
          FROM bitemporal.fact_version v
         WHERE v.entity = entity AND v.attribute = attribute
           AND v.known_period @> a.known_at AND upper(v.valid_period) <= a.valid_at;
        SELECT min(lower(v.valid_period)) INTO next_start
          FROM bitemporal.fact_version v
         WHERE v.entity = entity AND v.attribute = attribute
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
            ELSE 'conflict means the sources disagree: the values are never averaged and never settled by which was recorded later'
        END);
END;
$$;
COMMENT ON FUNCTION bitemporal.explain(text, text, timestamptz, timestamptz, timestamptz) IS
    'The answer object for an agent, as jsonb: the answer of bitemporal.resolve (NULL times = present, default now()) with its alternatives, every eligible version with source, periods and evidence, the question, the knowledge snapshot, explicit qualifications (unknown, conflict, announced, effective, followed_by, projected, corrected, as_recorded, source) and a note on what the status means. Render it with bitemporal.explain_sentence. Errors as bitemporal.resolve: BT001, BT003, BT004, BT005.';

-- bitemporal_internal.secure_write_function: security.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.secure_write_function(fn regprocedure)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Everything the write functions touch is schema-qualified, so they need
    -- nothing on the search path; pg_temp last stops temporary objects from
    -- shadowing anything.
    EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', fn);
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', fn);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.secure_write_function(regprocedure) IS
    'Makes a function a write entry point: SECURITY DEFINER with search_path pinned to pg_catalog, pg_temp, and no EXECUTE for PUBLIC (bitemporal.grant_roles gives it to the writer role).';

-- bitemporal.grant_roles: security.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.grant_roles(
    reader  text DEFAULT 'bitemporal_reader',
    writer  text DEFAULT 'bitemporal_writer',
    auditor text DEFAULT 'bitemporal_auditor')
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    role_name  text;
    may_create boolean;
    granted    text[] := '{}';
    obj        record;
BEGIN
    SELECT r.rolcreaterole OR r.rolsuper INTO may_create FROM pg_catalog.pg_roles r WHERE r.rolname = current_user;
    FOREACH role_name IN ARRAY ARRAY[reader, writer, auditor] LOOP
        CONTINUE WHEN role_name IS NULL;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name) THEN
            IF NOT may_create THEN
                RAISE NOTICE 'role % does not exist and % may not create it; skipped (grant to existing roles with bitemporal.grant_roles(reader, writer, auditor))',
                    role_name, current_user;
                CONTINUE;
            END IF;
            EXECUTE format('CREATE ROLE %I NOLOGIN', role_name);
        END IF;
        EXECUTE format('GRANT USAGE ON SCHEMA bitemporal TO %I', role_name);
        granted := granted || role_name;
    END LOOP;

    IF reader = ANY (granted) THEN
        FOR obj IN
            SELECT c.oid::regclass AS rel FROM pg_catalog.pg_class c
             WHERE c.relnamespace = 'bitemporal'::regnamespace AND c.relkind IN ('r', 'v', 'p')
               AND c.relname NOT IN ('memory_log', 'fact_request', 'alembic_version')
        LOOP
            EXECUTE format('GRANT SELECT ON %s TO %I', obj.rel, reader);
        END LOOP;
    END IF;
    IF writer = ANY (granted) THEN
        FOR obj IN
            SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = 'bitemporal'::regnamespace AND p.prosecdef
        LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', obj.fn, writer);
        END LOOP;
    END IF;
    IF auditor = ANY (granted) THEN
        EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA bitemporal TO %I', auditor);
    END IF;
    RETURN granted;
END;
$$;
COMMENT ON FUNCTION bitemporal.grant_roles(text, text, text) IS
    'Creates the reader, writer and auditor roles if missing (and allowed) and grants them their privileges; pass existing role names to grant to those instead, NULL to skip one. Idempotent. Returns the roles granted to.';

-- bitemporal.revoke_roles: security.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.revoke_roles(
    reader  text DEFAULT 'bitemporal_reader',
    writer  text DEFAULT 'bitemporal_writer',
    auditor text DEFAULT 'bitemporal_auditor')
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    role_name text;
BEGIN
    FOREACH role_name IN ARRAY ARRAY[reader, writer, auditor] LOOP
        CONTINUE WHEN role_name IS NULL
                   OR NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = role_name);
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA bitemporal FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA bitemporal FROM %I', role_name);
        EXECUTE format('REVOKE ALL ON SCHEMA bitemporal FROM %I', role_name);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal.revoke_roles(text, text, text) IS
    'Revokes what bitemporal.grant_roles granted (the roles themselves stay: they are cluster-wide and may serve other databases).';

-- bitemporal_internal.raise_batch_error: facts_bulk.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.raise_batch_error(total bigint, bad_rows jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION '% bad row% in the batch, nothing written; line %: %',
            total, CASE WHEN total = 1 THEN '' ELSE 's' END, bad_rows -> 0 ->> 0, bad_rows -> 0 ->> 2
        USING ERRCODE = 'BT301',
              DETAIL = jsonb_build_object('total', total, 'rows', bad_rows)::text,
              HINT = 'Fix or drop the rows listed (line = 1-based position in the batch) and send the batch again.';
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.raise_batch_error(bigint, jsonb) IS
    'For bitemporal.record_many: raises BT301 for a batch with bad rows; the DETAIL is JSON {"total": n, "rows": [[line, sqlstate, reason], ...]}.';

-- bitemporal.record_many: facts_bulk.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.record_many(batch bitemporal.batch_row[], max_errors integer DEFAULT 100)
RETURNS TABLE (line bigint, version_id bigint, created boolean, superseded bigint[], known_at timestamptz)
LANGUAGE plpgsql
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
                   SELECT fk.last_known_at, fk.last_txid FROM bitemporal.fact_key fk
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
COMMENT ON FUNCTION bitemporal.record_many(bitemporal.batch_row[], integer) IS
    'Applies a batch of rows with exactly the semantics of bitemporal.record called for each row in order in one transaction (same-key rows in batch order, no-ops write nothing, default knowledge time = the transaction time), set-based, all or nothing. Returns one row per batch row (line = 1-based position in the batch; in no particular order): the version holding the value, whether it was created, the versions whose knowledge it ended, the knowledge time used (NULL for a no-op). Errors: BT301 with every bad row (the first max_errors, by line) and its reason in the DETAIL, as JSON.';

-- bitemporal_internal.check_knowledge_time: facts_write.v2.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_knowledge_time(known_at timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF known_at > pg_catalog.clock_timestamp() THEN
        RAISE EXCEPTION 'knowledge time % is later than the present (%)', known_at, pg_catalog.clock_timestamp()
            USING ERRCODE = 'BT003',
                  HINT = 'The store cannot have learned something in the future; omit known_at to use the transaction time.';
    END IF;
    IF known_at IN ('infinity', '-infinity') THEN
        RAISE EXCEPTION 'knowledge time must be finite, not %', known_at
            USING ERRCODE = 'BT001';
    END IF;
    PERFORM bitemporal_internal.check_instant('knowledge time', known_at);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_knowledge_time(timestamptz) IS
    'Raises BT003 for a knowledge time later than the present, BT001 for an infinite or unsupported one (NULL passes: the transaction time).';

-- bitemporal_internal.knowledge_time: facts_write.v2.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.knowledge_time(
    requested timestamptz, last_known_at timestamptz, last_txid xid8, key text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF requested IS NULL THEN
        -- The transaction time, unless another transaction that locked the key
        -- before us recorded a later one: then just after it, so that knowledge
        -- of the key only moves forward in the serial order.
        RETURN greatest(pg_catalog.transaction_timestamp(),
                        CASE WHEN last_txid = pg_catalog.pg_current_xact_id() THEN last_known_at
                             ELSE last_known_at + interval '1 microsecond' END);
    END IF;
    IF requested < last_known_at OR (requested = last_known_at AND last_txid <> pg_catalog.pg_current_xact_id()) THEN
        RAISE EXCEPTION 'knowledge time % is not later than knowledge already recorded for % at %',
                requested, key, last_known_at
            USING ERRCODE = 'BT002',
                  HINT = 'History is never rewritten: a correction is recorded now, not in the past. Omit known_at to use the transaction time.';
    END IF;
    RETURN requested;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.knowledge_time(timestamptz, timestamptz, xid8, text) IS
    'The knowledge time a write to a locked key uses: the requested one if not earlier than what the key recorded (BT002 otherwise), else the transaction time moved just past knowledge another transaction recorded first. Used by bitemporal_internal.lock_key and bitemporal_internal.lock_table_key.';

-- bitemporal.table_definition: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.table_definition(relation regclass)
RETURNS bitemporal.app_table
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
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

-- bitemporal_internal.key_text: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.key_text(d bitemporal.app_table, image anyelement)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.string_agg(pg_catalog.format('%s=%s', c, pg_catalog.to_jsonb(image) -> c), ', ' ORDER BY i)
      FROM pg_catalog.unnest(d.key_columns) WITH ORDINALITY AS u (c, i)
$$;
COMMENT ON FUNCTION bitemporal_internal.key_text(bitemporal.app_table, anyelement) IS
    'A key as text for messages: column=value, ...';

-- bitemporal_internal.lock_table_key: tables.v1.sql
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
        EXECUTE pg_catalog.format(
            'INSERT INTO %s (%s, first_known_at, last_known_at, last_txid) SELECT %s, $2, $2, $3 ON CONFLICT DO NOTHING',
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
    'Locks the key of an image in its table''s key table (creating it when asked) and returns the knowledge time to write at, by the rules of bitemporal_internal.lock_key. Raises BT002, BT003, BT004, BT005.';

-- bitemporal_internal.advance_table_key: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.advance_table_key(d bitemporal.app_table, image anyelement, known_at timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    EXECUTE pg_catalog.format(
        'UPDATE %I.%I k SET last_known_at = $2, last_txid = pg_catalog.pg_current_xact_id() WHERE %s',
        d.table_schema, d.key_table, bitemporal_internal.key_match(d, 'k'))
        USING image, known_at;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.advance_table_key(bitemporal.app_table, anyelement, timestamptz) IS
    'Records that a key of an application table changed at a knowledge time (called with the key locked).';

-- bitemporal_internal.check_table_references: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_table_references(d bitemporal.app_table)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
COMMENT ON FUNCTION bitemporal_internal.check_table_references(bitemporal.app_table) IS
    'Checks now the temporal references a write to an application table queued (their constraint triggers are deferred, so that a write''s intermediate states do not trip them). Raises BT403.';

-- bitemporal_internal.table_record: tables.v1.sql
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
    period  tstzrange;
    t       timestamptz;
    same_id bigint;
    result  bitemporal.recorded;
BEGIN
    period := bitemporal_internal.valid_period(valid_from, valid_to);
    t := bitemporal_internal.lock_table_key(d, image, known_at, true);

    -- Already known, with these values, for the whole period: change nothing.
    EXECUTE pg_catalog.format(
        'SELECT (array_agg(v.version_id ORDER BY lower(v.valid_period) NULLS FIRST))[1] FROM %s v '
        ' WHERE %s AND upper_inf(v.known_period) AND v.valid_period && $2 '
        'HAVING bool_and(%s) AND range_agg(v.valid_period * $2) = tstzmultirange($2)',
        tab, bitemporal_internal.key_match(d, 'v'),
        CASE WHEN cardinality(d.value_columns) = 0 THEN 'true'
             ELSE pg_catalog.format('ROW(%s) IS NOT DISTINCT FROM ROW(%s)',
                                    bitemporal_internal.column_list(d.value_columns, 'v.'),
                                    bitemporal_internal.column_list(d.value_columns, '($1).')) END)
       INTO same_id USING image, period;
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
    'Records a row image (key and value columns of an application table''s row type) for [valid_from, valid_to), known from known_at (default: the transaction time): a sequenced update with the semantics of bitemporal.record. Usually called through the table''s generated <table>_record(). Errors: BT001, BT002, BT003, BT005, BT401, BT403; the table''s own constraints (23502 a null in a NOT NULL column, 23514 a CHECK) as PostgreSQL raises them.';

-- bitemporal_internal.table_retract: tables.v1.sql
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
    IF cardinality(ended) > 0 THEN
        PERFORM bitemporal_internal.advance_table_key(d, image, t);
        PERFORM bitemporal_internal.check_table_references(d);
    END IF;
    RETURN ended;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_retract(anyelement, timestamptz, timestamptz, timestamptz) IS
    'Sequenced delete of the image''s key over [valid_from, valid_to), known from known_at: the semantics of bitemporal.retract. Returns the ended version ids. Usually called through <table>_retract(). Errors: BT001, BT002, BT003, BT004, BT005, BT401, BT403.';

-- bitemporal_internal.require_table_key: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.require_table_key(image anyelement)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d     bitemporal.app_table := bitemporal.table_definition(bitemporal_internal.row_relation(pg_catalog.pg_typeof(image)));
    found boolean;
BEGIN
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT FROM %I.%I k WHERE %s)',
                              d.table_schema, d.key_table, bitemporal_internal.key_match(d, 'k'))
       INTO found USING image;
    IF NOT found THEN
        RAISE EXCEPTION 'unknown key (%) in %.%: nothing was ever recorded for it',
                bitemporal_internal.key_text(d, image), d.table_schema, d.table_name
            USING ERRCODE = 'BT004',
                  HINT = 'Check the key''s values.';
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.require_table_key(anyelement) IS
    'Raises BT004 if nothing was ever recorded for the image''s key in its application table.';

-- bitemporal_internal.table_guard: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.table_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The rule of bitemporal_internal.fact_version_guard, for any application table.
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
COMMENT ON FUNCTION bitemporal_internal.table_guard() IS
    'Trigger for application tables: refuses TRUNCATE, DELETE of committed versions and any UPDATE other than closing an open knowledge period once (SQLSTATE BT006).';

-- bitemporal_internal.check_reference: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.check_reference(ref bitemporal.app_reference, child_version bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    parent   bitemporal.app_table := bitemporal.table_definition(
                 pg_catalog.format('%I.%I', ref.parent_schema, ref.parent_table)::regclass);
    child    text := pg_catalog.format('%I.%I', ref.child_schema, ref.child_table);
    refs     text := bitemporal_internal.column_list(ref.child_columns, 'c.');
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
        parent.table_schema, parent.key_table, child, bitemporal_internal.column_list(parent.key_columns, 'k.'), refs)
        USING child_version;
    EXECUTE pg_catalog.format(
        'SELECT c.valid_period, ROW(%2$s)::text,'
        '       coalesce((SELECT range_agg(p.valid_period) FROM %3$I.%4$I p'
        '                  WHERE ROW(%5$s) = ROW(%2$s) AND upper_inf(p.known_period)), ''{}'')'
        '  FROM %1$s c WHERE c.version_id = $1',
        child, refs, parent.table_schema, parent.table_name, bitemporal_internal.column_list(parent.key_columns, 'p.'))
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
COMMENT ON FUNCTION bitemporal_internal.check_reference(bitemporal.app_reference, bigint) IS
    'Raises BT403 unless the parent table currently holds the key a current child version refers to over the version''s whole valid period.';

-- bitemporal_internal.reference_child_check: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.reference_child_check()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ref bitemporal.app_reference;
BEGIN
    SELECT * INTO STRICT ref FROM bitemporal.app_reference r
     WHERE r.child_schema = TG_TABLE_SCHEMA AND r.child_table = TG_TABLE_NAME AND r.name = TG_ARGV[0];
    PERFORM bitemporal_internal.check_reference(ref, NEW.version_id);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.reference_child_check() IS
    'Constraint trigger on a child table (argument: the reference''s name): a new version must refer to a parent key held over its valid period (BT403).';

-- bitemporal_internal.reference_parent_check: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.reference_parent_check()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
        ref.child_schema, ref.child_table, bitemporal_internal.column_list(ref.child_columns, 'c.'),
        bitemporal_internal.column_list(parent.key_columns, '($1).'), parent.table_schema, parent.table_name,
        bitemporal_internal.column_list(parent.key_columns, 'p.'))
       INTO orphan USING OLD;
    IF orphan IS NOT NULL THEN
        PERFORM bitemporal_internal.check_reference(ref, orphan);
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.reference_parent_check() IS
    'Constraint trigger on a parent table (arguments: the child''s schema, table and the reference''s name): when a parent version''s knowledge ends, current child versions of its key must still be covered (BT403).';

-- bitemporal.add_reference: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.add_reference(child regclass, columns text[], parent regclass, name text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
                              name || '_idx', child, bitemporal_internal.column_list(columns));
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
    'Adds a temporal reference from child columns to the key of a parent application table: at every valid time of each current child version, the parent must hold a current version of that key (nulls: no reference). Checked at the end of each write (BT403); existing rows are checked now. Returns its name (default <child>_<columns>_fkey). Raises BT401, BT402.';

-- bitemporal.drop_reference: tables.v1.sql
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
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %I.%I', name || '_parent', ref.parent_schema, ref.parent_table);
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', name, child);
    EXECUTE pg_catalog.format('DROP INDEX %I.%I', c.table_schema, name || '_idx');
END;
$$;
COMMENT ON FUNCTION bitemporal.drop_reference(regclass, text) IS
    'Drops a temporal reference added by bitemporal.add_reference. Raises BT401 if there is none of that name.';

-- bitemporal_internal.drop_table_functions: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.drop_table_functions(d bitemporal.app_table)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn text;
BEGIN
    FOREACH fn IN ARRAY d.functions LOOP
        EXECUTE pg_catalog.format('DROP FUNCTION %s', fn);
    END LOOP;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.drop_table_functions(bitemporal.app_table) IS
    'Drops the functions generated for an application table.';

-- bitemporal.drop_table: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.drop_table(relation regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
    PERFORM bitemporal_internal.drop_table_functions(d);
    DELETE FROM bitemporal.app_table a WHERE (a.table_schema, a.table_name) = (d.table_schema, d.table_name);
    EXECUTE pg_catalog.format('DROP TABLE %I.%I', d.table_schema, d.table_name);
    EXECUTE pg_catalog.format('DROP TABLE %I.%I', d.table_schema, d.key_table);
END;
$$;
COMMENT ON FUNCTION bitemporal.drop_table(regclass) IS
    'Drops an application table with its history, key table, generated functions and the temporal references it makes. Raises BT402 while another table refers to it.';

-- bitemporal.disable_table: tables.v1.sql
CREATE OR REPLACE FUNCTION bitemporal.disable_table(relation regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
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
    PERFORM bitemporal_internal.drop_table_functions(d);
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
                                  tab, d.old_primary_key, bitemporal_internal.column_list(d.key_columns));
    END IF;
    DELETE FROM bitemporal.app_table a WHERE (a.table_schema, a.table_name) = (d.table_schema, d.table_name);
END;
$$;
COMMENT ON FUNCTION bitemporal.disable_table(regclass) IS
    'Turns an application table made bitemporal by enable_table back into an ordinary table (restoring its primary key), provided nothing was recorded since: history is never thrown away (BT402 otherwise).';

-- bitemporal_internal.version_reference_check: partitioning.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.version_reference_check()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id bigint := (pg_catalog.to_jsonb(NEW) ->> TG_ARGV[0])::bigint;
BEGIN
    IF id IS NOT NULL AND NOT EXISTS (SELECT FROM bitemporal.fact_version v WHERE v.version_id = id) THEN
        RAISE EXCEPTION 'insert or update on table "%" violates foreign key constraint "%"', TG_TABLE_NAME, TG_NAME
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = TG_NAME,
                  SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME,
                  DETAIL = pg_catalog.format('Key (%s)=(%s) is not present in table "fact_version".', TG_ARGV[0], id);
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.version_reference_check() IS
    'Trigger on a table referencing bitemporal.fact_version when that table is partitioned: the referenced version must exist (the foreign key named by the trigger; argument: the referencing column).';

-- bitemporal_internal.version_reference_delete: partitioning.v1.sql
CREATE OR REPLACE FUNCTION bitemporal_internal.version_reference_delete()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    referenced boolean;
BEGIN
    -- TG_ARGV: referencing table, referencing column, ON DELETE action
    -- (c: cascade; a, r: no action, restrict).
    IF TG_ARGV[2] = 'c' THEN
        EXECUTE pg_catalog.format('DELETE FROM %s WHERE %I = $1', TG_ARGV[0], TG_ARGV[1]) USING OLD.version_id;
        RETURN NULL;
    END IF;
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT FROM %s WHERE %I = $1)', TG_ARGV[0], TG_ARGV[1])
        INTO referenced USING OLD.version_id;
    IF referenced THEN
        RAISE EXCEPTION 'update or delete on table "fact_version" violates foreign key constraint "%" on table %',
                TG_NAME, TG_ARGV[0]
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = TG_NAME,
                  DETAIL = pg_catalog.format('Key (version_id)=(%s) is still referenced from table %s.',
                                             OLD.version_id, TG_ARGV[0]);
    END IF;
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.version_reference_delete() IS
    'Trigger on a partitioned bitemporal.fact_version: applies the ON DELETE action of a foreign key referencing it (named by the trigger; arguments: referencing table, column, action).';

-- bitemporal.memory_turn keeps its standard body, which calls
-- bitemporal_internal.memory_namespace_get, a PL/pgSQL function that names
-- other helpers when it runs: so it runs as the owner too, like the other
-- memory reads.
ALTER FUNCTION bitemporal.memory_turn(text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
