-- bitemporal: the write path of the fact store (version 2).
--
-- The knowledge-time rule of bitemporal.lock_key (version 1) as two functions
-- of their own, so that the fact store and application tables
-- (tables.v1.sql) share one implementation of it; lock_key is redefined in
-- place (same signature, same errors and messages) to call them.

CREATE FUNCTION bitemporal.check_knowledge_time(known_at timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
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
    PERFORM bitemporal.check_instant('knowledge time', known_at);
END;
$$;
COMMENT ON FUNCTION bitemporal.check_knowledge_time(timestamptz) IS
    'Raises BT003 for a knowledge time later than the present, BT001 for an infinite or unsupported one (NULL passes: the transaction time).';

CREATE FUNCTION bitemporal.knowledge_time(
    requested timestamptz, last_known_at timestamptz, last_txid xid8, key text)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
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
COMMENT ON FUNCTION bitemporal.knowledge_time(timestamptz, timestamptz, xid8, text) IS
    'The knowledge time a write to a locked key uses: the requested one if not earlier than what the key recorded (BT002 otherwise), else the transaction time moved just past knowledge another transaction recorded first. Used by bitemporal.lock_key and bitemporal.lock_table_key.';

CREATE OR REPLACE FUNCTION bitemporal.lock_key(entity text, attribute text, known_at timestamptz, create_missing boolean)
RETURNS timestamptz
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    k bitemporal.fact_key;
    t timestamptz;
BEGIN
    PERFORM bitemporal.check_key_part('entity', entity);
    PERFORM bitemporal.check_key_part('attribute', attribute);
    PERFORM bitemporal.check_knowledge_time(known_at);

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
    RETURN bitemporal.knowledge_time(known_at, k.last_known_at, k.last_txid,
                                     pg_catalog.format('(%s, %s)', entity, attribute));
END;
$$;
COMMENT ON FUNCTION bitemporal.lock_key(text, text, timestamptz, boolean) IS
    'Locks a key for writing (creating it when asked) and returns the knowledge time to write at: known_at if given and valid, else the transaction time (moved just past knowledge a concurrent transaction recorded first). Raises BT002, BT003, BT004, BT005.';
