-- bitemporal: the write path of the fact store (version 3).
--
-- bitemporal_internal.lock_key (version 2 in facts_write.v2.sql) redefined in place
-- (same signature, same errors) so that the knowledge time it returns is
-- announced to bitemporal.settled_knowledge_time (settled.v1.sql) before
-- anything is written at it: the transaction time moves just past the
-- settled floor, an explicit known_at at or before it is refused (BT002).

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
        t := bitemporal_internal.announce_knowledge(coalesce(known_at, pg_catalog.transaction_timestamp()), known_at IS NULL);
        INSERT INTO bitemporal.fact_key AS fk (entity, attribute, first_known_at, last_known_at, last_txid)
        VALUES (entity, attribute, t, t, pg_catalog.pg_current_xact_id())
        ON CONFLICT ON CONSTRAINT fact_key_pkey DO NOTHING;
        IF FOUND THEN
            RETURN t;
        END IF;
        -- Another transaction created the key first: lock its row and go on.
    END LOOP;
    RETURN bitemporal_internal.announce_knowledge(
        bitemporal_internal.knowledge_time(known_at, k.last_known_at, k.last_txid,
                                  pg_catalog.format('(%s, %s)', entity, attribute)),
        known_at IS NULL);
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.lock_key(text, text, timestamptz, boolean) IS
    'Locks a key for writing (creating it when asked) and returns the knowledge time to write at, announced to bitemporal.settled_knowledge_time: known_at if given and valid, else the transaction time (moved just past knowledge a concurrent transaction recorded first, and past the settled knowledge time). Raises BT002, BT003, BT004, BT005.';
