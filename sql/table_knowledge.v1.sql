-- bitemporal: application tables' knowledge is never rewritten, by their owner either (version 1).
--
-- The rules append_only.v2.sql sets for the fact store, for every application
-- table (tables.v1.sql), through the trigger functions those tables share:
--   * every insert of a version (bitemporal_internal.fact_version_stamp_insert,
--     redefined in place) and every closing of one (bitemporal_internal.table_guard,
--     redefined in place) is a knowledge event not earlier than the key's
--     latest knowledge in <table>_key, equal to it only within the
--     transaction that recorded it, not later than the present, which becomes
--     the key's latest knowledge;
--   * every <table>_key gets bitemporal_internal.key_guard: a key's latest knowledge
--     only moves forward, keys are never deleted or truncated. Tables enabled
--     later get it from a trigger on the registry bitemporal.app_table.
-- Violations raise SQLSTATE BT006. Version rows of application tables do not
-- record their real write time (fact_version.recorded_at has no counterpart),
-- and their knowledge times are not announced to
-- bitemporal.settled_knowledge_time.

CREATE FUNCTION bitemporal_internal.table_knowledge_event(
    relation_schema text, relation_name text, image anyelement, at timestamptz, latest timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d       bitemporal.app_table;
    last_at timestamptz;
    last_tx xid8;
BEGIN
    SELECT * INTO d FROM bitemporal.app_table a
     WHERE a.table_schema = relation_schema AND a.table_name = relation_name;
    IF NOT FOUND OR at IS NULL THEN
        RETURN;  -- not (or no longer) registered; an invalid period: its CHECK says why
    END IF;
    EXECUTE pg_catalog.format('SELECT k.last_known_at, k.last_txid FROM %I.%I k WHERE %s',
                              d.table_schema, d.key_table, bitemporal_internal.key_match(d, 'k'))
       INTO last_at, last_tx USING image;
    IF last_at IS NULL THEN
        RETURN;  -- the foreign key to <table>_key refuses the row
    END IF;
    IF latest > pg_catalog.clock_timestamp()
       OR at < last_at
       OR (at = last_at AND last_tx <> pg_catalog.pg_current_xact_id()) THEN
        RAISE EXCEPTION 'version of (%) in %.% at %: knowledge of the key was already recorded at % (and the present is %); committed history cannot change',
                bitemporal_internal.key_text(d, image), d.table_schema, d.table_name, at, last_at, pg_catalog.clock_timestamp()
            USING ERRCODE = 'BT006',
                  HINT = 'Write through the table''s _record() and _retract() functions, which record at the present.';
    END IF;
    IF latest > last_at OR last_tx <> pg_catalog.pg_current_xact_id() THEN
        PERFORM bitemporal_internal.advance_table_key(d, image, latest);
    END IF;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_knowledge_event(text, text, anyelement, timestamptz, timestamptz) IS
    'For the triggers of application tables: a version of the image''s key inserted or closed at knowledge time at (and latest, the latest of its times) must not precede the key''s latest knowledge in <table>_key (equal only within the transaction that recorded it) nor follow the present (BT006); latest becomes the key''s latest knowledge.';

CREATE OR REPLACE FUNCTION bitemporal_internal.fact_version_stamp_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col name;
BEGIN
    NEW.recorded_in := pg_catalog.pg_current_xact_id();
    IF TG_TABLE_SCHEMA = 'bitemporal' AND TG_TABLE_NAME LIKE 'fact\_version%' THEN
        -- The fact store (or one of its partitions): one jsonb column; its
        -- knowledge is checked by fact_version_knowledge (append_only.v2.sql).
        PERFORM bitemporal_internal.check_json_value('value', NEW.value);
        RETURN NEW;
    END IF;
    -- An application table: each of its jsonb columns, and the knowledge event.
    FOR col IN
        SELECT a.attname FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = TG_RELID AND a.attnum > 0 AND NOT a.attisdropped
           AND a.atttypid = 'pg_catalog.jsonb'::pg_catalog.regtype
    LOOP
        PERFORM bitemporal_internal.check_json_value(pg_catalog.format('column %I', col), pg_catalog.to_jsonb(NEW) -> col);
    END LOOP;
    PERFORM bitemporal_internal.table_knowledge_event(
        TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW, lower(NEW.known_period),
        CASE WHEN upper_inf(NEW.known_period) THEN lower(NEW.known_period) ELSE upper(NEW.known_period) END);
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.fact_version_stamp_insert() IS
    'Trigger on bitemporal.fact_version and every application table: stamps a new version with the inserting top-level transaction, which the append-only rule relies on, and refuses jsonb values Python cannot read back (bitemporal_internal.check_json_value, BT007); on an application table, also a version known from before its key''s latest knowledge (bitemporal_internal.table_knowledge_event, BT006).';

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
    -- Closing is a knowledge event too (version 2).
    PERFORM bitemporal_internal.table_knowledge_event(TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW,
                                             upper(NEW.known_period), upper(NEW.known_period));
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.table_guard() IS
    'Trigger for application tables: refuses TRUNCATE, DELETE of committed versions, any UPDATE other than closing an open knowledge period once, and a closing before the key''s latest knowledge (SQLSTATE BT006).';

CREATE FUNCTION bitemporal_internal.guard_key_table(schema_name text, key_table text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    EXECUTE pg_catalog.format('CREATE TRIGGER bitemporal_append_only BEFORE INSERT OR UPDATE OR DELETE ON %I.%I '
                              'FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.key_guard()', schema_name, key_table);
    EXECUTE pg_catalog.format('CREATE TRIGGER bitemporal_no_truncate BEFORE TRUNCATE ON %I.%I '
                              'FOR EACH STATEMENT EXECUTE FUNCTION bitemporal_internal.key_guard()', schema_name, key_table);
    EXECUTE pg_catalog.format('COMMENT ON TRIGGER bitemporal_append_only ON %I.%I IS %L', schema_name, key_table,
                              'A key''s latest knowledge only moves forward and keys are never deleted: see bitemporal_internal.key_guard().');
    EXECUTE pg_catalog.format('COMMENT ON TRIGGER bitemporal_no_truncate ON %I.%I IS %L', schema_name, key_table,
                              'Keys are never truncated: see bitemporal_internal.key_guard().');
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.guard_key_table(text, text) IS
    'Puts bitemporal_internal.key_guard on an application table''s key table (triggers bitemporal_append_only and bitemporal_no_truncate, with their comments).';

CREATE FUNCTION bitemporal_internal.app_table_guard_key()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.guard_key_table(NEW.table_schema, NEW.key_table);
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.app_table_guard_key() IS
    'Trigger on bitemporal.app_table: a table made bitemporal (bitemporal.enable_table) gets bitemporal_internal.key_guard on its key table.';

CREATE TRIGGER app_table_guard_key
    AFTER INSERT ON bitemporal.app_table
    FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.app_table_guard_key();
COMMENT ON TRIGGER app_table_guard_key ON bitemporal.app_table IS
    'A table made bitemporal gets bitemporal_internal.key_guard on its key table: see bitemporal_internal.app_table_guard_key().';

-- Tables made bitemporal before this file was loaded.
SELECT bitemporal_internal.guard_key_table(a.table_schema, a.key_table) FROM bitemporal.app_table a;
