-- bitemporal: knowledge is never rewritten, by the table owner either (version 2).
--
-- Version 1 (append_only.v1.sql) keeps committed rows from changing, but a
-- role with INSERT and UPDATE on the tables (the owner) could still rewrite
-- what the store knew, with rows every version-1 rule accepts: close an open
-- version back-dated to its start, insert a version known from long ago, or
-- move a key's latest knowledge (fact_key.last_known_at) back so that the
-- write functions accept an old known_at again. Here:
--   * a knowledge event is the insert of a version (at the start of its
--     known period) or the closing of one (at the end): its time is never
--     earlier than the key's latest knowledge, equal to it only within the
--     transaction that recorded it, never later than the present, and it
--     becomes the key's latest knowledge: the same rule as bitemporal_internal.lock_key
--     applies to the write functions, now for every INSERT and UPDATE;
--   * a key's row in bitemporal.fact_key is never known from later than
--     the present, keeps its key and first knowledge, its latest knowledge
--     only moves forward (to at most the present), and it is never deleted
--     or truncated;
--   * every version records when it was really written (recorded_at: the
--     start of the inserting transaction) and when its knowledge was really
--     closed (closed_at: the start of the closing transaction), both forced,
--     beside the knowledge times its writers chose, so an audit tells
--     back-dated knowledge from live.
-- Violations raise SQLSTATE BT006 (BT002 for an event at or before the
-- settled knowledge time, settled.v1.sql). What is still trusted: a role that may
-- disable triggers (the owner: ALTER TABLE ... DISABLE TRIGGER) or a
-- superuser (who may also set session_replication_role = replica).

ALTER TABLE bitemporal.fact_version ADD COLUMN recorded_at timestamptz, ADD COLUMN closed_at timestamptz;
COMMENT ON COLUMN bitemporal.fact_version.recorded_at IS
    'When the version was really written: the start of the inserting transaction, forced by a trigger (NULL: written before migration 0010). lower(known_period) < recorded_at: the writer back-dated the knowledge.';
COMMENT ON COLUMN bitemporal.fact_version.closed_at IS
    'When the version''s knowledge was really closed: the start of the closing transaction, forced by a trigger (NULL: still open, or closed before migration 0010). upper(known_period) < closed_at: the writer back-dated the closing.';

CREATE FUNCTION bitemporal_internal.key_guard()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- Any key table: bitemporal.fact_key, or an application table's
    -- <table>_key (table_knowledge.v1.sql).
    IF TG_OP IN ('TRUNCATE', 'DELETE') THEN
        RAISE EXCEPTION '%.% is append-only: % is not allowed', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP
            USING ERRCODE = 'BT006';
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.last_known_at > pg_catalog.clock_timestamp() THEN
            RAISE EXCEPTION 'a key of %.% cannot be known from % (later than the present)',
                    TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW.last_known_at
                USING ERRCODE = 'BT006';
        END IF;
        RETURN NEW;
    END IF;
    IF pg_catalog.to_jsonb(NEW) - 'last_known_at' - 'last_txid' IS DISTINCT FROM
       pg_catalog.to_jsonb(OLD) - 'last_known_at' - 'last_txid' THEN
        RAISE EXCEPTION 'a key of %.% cannot change, nor its first knowledge time', TG_TABLE_SCHEMA, TG_TABLE_NAME
            USING ERRCODE = 'BT006';
    END IF;
    -- Only moved forward, by the transaction that writes at the new time:
    -- anything else would let a later write back-date knowledge again.
    IF NEW.last_known_at < OLD.last_known_at
       OR NEW.last_known_at > pg_catalog.clock_timestamp()
       OR (NEW.last_txid IS DISTINCT FROM OLD.last_txid
           AND (NEW.last_txid <> pg_catalog.pg_current_xact_id() OR NEW.last_known_at = OLD.last_known_at))
    THEN
        RAISE EXCEPTION 'a key''s latest knowledge time in %.% (%) only moves forward, to the present at most, with a write',
                TG_TABLE_SCHEMA, TG_TABLE_NAME, OLD.last_known_at
            USING ERRCODE = 'BT006',
                  HINT = 'Write through the write functions (bitemporal.record(), bitemporal.retract(), <table>_record(), <table>_retract()).';
    END IF;
    RETURN NEW;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.key_guard() IS
    'Trigger on a key table (bitemporal.fact_key, an application table''s <table>_key): refuses DELETE and TRUNCATE, a new key known from later than the present, and any UPDATE other than moving a key''s latest knowledge time forward (to at most the present) by the writing transaction (SQLSTATE BT006).';

CREATE TRIGGER fact_key_append_only
    BEFORE INSERT OR UPDATE OR DELETE ON bitemporal.fact_key
    FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.key_guard();
CREATE TRIGGER fact_key_no_truncate
    BEFORE TRUNCATE ON bitemporal.fact_key
    FOR EACH STATEMENT EXECUTE FUNCTION bitemporal_internal.key_guard();
COMMENT ON TRIGGER fact_key_append_only ON bitemporal.fact_key IS
    'A key''s latest knowledge only moves forward and keys are never deleted: see bitemporal_internal.key_guard().';
COMMENT ON TRIGGER fact_key_no_truncate ON bitemporal.fact_key IS
    'Keys are never truncated: see bitemporal_internal.key_guard().';

CREATE FUNCTION bitemporal_internal.fact_version_knowledge()
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
    SELECT fk.last_known_at, fk.last_txid INTO k
      FROM bitemporal.fact_key fk
     WHERE fk.entity = NEW.entity AND fk.attribute = NEW.attribute;
    IF NOT FOUND THEN
        RETURN NEW;  -- the foreign key refuses the row
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
COMMENT ON FUNCTION bitemporal_internal.fact_version_knowledge() IS
    'Trigger: stamps recorded_at on insert and closed_at on closing (forced), and makes every insert and every closing of a version a knowledge event at a time not earlier than the key''s latest knowledge (equal only within the transaction that recorded it), not later than the present, which becomes the key''s latest knowledge (SQLSTATE BT006).';

CREATE TRIGGER fact_version_knowledge
    BEFORE INSERT OR UPDATE ON bitemporal.fact_version
    FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.fact_version_knowledge();
COMMENT ON TRIGGER fact_version_knowledge ON bitemporal.fact_version IS
    'Knowledge of a key only moves forward, whoever writes: see bitemporal_internal.fact_version_knowledge().';
