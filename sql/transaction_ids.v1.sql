-- bitemporal: a stored transaction id is one this cluster has assigned (version 1).
--
-- Beside each key and version the store keeps the id of the transaction that
-- wrote it (fact_key.last_txid, fact_version.recorded_in, erasures.recorded_in,
-- and an application table's recorded_in and <table>_key.last_txid): the same
-- transaction may write a key twice at one knowledge time, and delete or close
-- again what it wrote itself. The write path trusts an id equal to
-- pg_current_xact_id() to be its own transaction's.
--
-- Rows copied from another cluster (a dump restored, a logical replica, a move
-- to a new major version by dump) keep that cluster's ids. A new cluster counts
-- from a few hundred; when it reaches an id a copied row holds, the transaction
-- holding that id would be taken for the row's writer, and could write at a
-- key's committed knowledge time: history rewritten. So every such column gets
-- a CHECK that its id is one this cluster has assigned: a copied row whose id is
-- ahead is refused as it arrives (pg_restore and logical replication evaluate
-- CHECK constraints row by row, before any trigger exists or fires), with
-- SQLSTATE BT503 and the remedy, and nothing is loaded.
--
-- PostgreSQL assumes a CHECK gives the same answer for the same row whenever it
-- is evaluated. This one calls a volatile function, but once true it stays
-- true (a cluster's ids only grow), so checking rows as they are written, and
-- never again, is sound.
--
-- On Citus the write path stores Citus's distributed transaction id instead
-- (bitemporal_internal.citus_transaction_id, hashed into the upper half of the
-- xid8 range), which no local id ever equals; and shards move rows between
-- nodes whose counts differ. There the check is off: on a database with the
-- citus extension no constraint is added (Citus refuses to add a CHECK that
-- calls a function of ours to a distributed table, "circular dependencies"),
-- and one restored there from a single node's dump is always true.

CREATE FUNCTION bitemporal_internal.assigned_here(txid xid8)
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- First, so that bitemporal.distribute(), which puts Citus's id in place
    -- of pg_current_xact_id() in every function of ours, changes nothing here
    -- that runs.
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        RETURN true;
    END IF;
    -- PostgreSQL's own test against the cluster's counter: "transaction ID ...
    -- is in the future" (22023) for an id not assigned yet. Not "not above this
    -- transaction's id": a transaction that began later may commit first, and
    -- this one then writes beside its id. The constraints test the common
    -- cases inline first (check_transaction_ids), so a write rarely gets here.
    BEGIN
        PERFORM pg_catalog.pg_xact_status(txid);
        RETURN true;
    EXCEPTION WHEN invalid_parameter_value THEN
        RAISE EXCEPTION 'transaction id % was not assigned by this cluster, which has reached %: these rows come from another cluster',
                        txid, pg_catalog.pg_current_xact_id()
            USING ERRCODE = 'BT503',
                  HINT = 'Before loading a dump into another cluster (or subscribing it to a publication), advance this cluster''s '
                         'transaction ids past the source''s pg_current_xact_id(): see "Backup and restore" in docs/operations.md.';
    END;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.assigned_here(xid8) IS
    'CHECK of every stored writer transaction id: true if this cluster has assigned txid (it is not ahead of the cluster''s counter); else raises BT503, naming the remedy. Always true on a database with the citus extension, where the write path stores Citus''s transaction ids.';
REVOKE ALL ON FUNCTION bitemporal_internal.assigned_here(xid8) FROM PUBLIC;

CREATE FUNCTION bitemporal_internal.check_transaction_ids(relation regclass, id_column name)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    name_of text := pg_catalog.format('%s_%s_here',
                        (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = relation), id_column);
BEGIN
    IF pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        RETURN;  -- Citus: see the top of this file
    END IF;
    -- Rows already there are checked too: a store restored into another
    -- cluster before this check existed is refused here, with the remedy.
    -- The common cases inline (the transaction's own id, or one below the first
    -- id unassigned when the snapshot was taken): the executor stops at the
    -- first true branch of an OR, so a write's rows rarely pay for the PL/pgSQL
    -- call and its subtransaction (about 2 microseconds a row without them:
    -- benchmarks/README.md, migration 0041).
    EXECUTE pg_catalog.format(
        'ALTER TABLE %1$s ADD CONSTRAINT %2$I CHECK (%3$I = pg_catalog.pg_current_xact_id()'
        ' OR %3$I < pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())'
        ' OR bitemporal_internal.assigned_here(%3$I))',
        relation, name_of, id_column);
    EXECUTE pg_catalog.format('COMMENT ON CONSTRAINT %I ON %s IS %L', name_of, relation, pg_catalog.format(
        'Every %s is a transaction id this cluster has assigned: see bitemporal_internal.assigned_here().', id_column));
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.check_transaction_ids(regclass, name) IS
    'Adds the CHECK <table>_<column>_here (the common cases inline, then bitemporal_internal.assigned_here) on a column of writer transaction ids, with its comment; validates the rows already there. Adds nothing on a database with the citus extension.';
REVOKE ALL ON FUNCTION bitemporal_internal.check_transaction_ids(regclass, name) FROM PUBLIC;

CREATE FUNCTION bitemporal_internal.app_table_check_transaction_ids()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM bitemporal_internal.check_transaction_ids(
        pg_catalog.format('%I.%I', NEW.table_schema, NEW.table_name)::regclass, 'recorded_in');
    PERFORM bitemporal_internal.check_transaction_ids(
        pg_catalog.format('%I.%I', NEW.table_schema, NEW.key_table)::regclass, 'last_txid');
    RETURN NULL;
END;
$$;
COMMENT ON FUNCTION bitemporal_internal.app_table_check_transaction_ids() IS
    'Trigger on bitemporal.app_table: a table made bitemporal (bitemporal.enable_table) gets the transaction id CHECKs on its recorded_in and its key table''s last_txid (bitemporal_internal.check_transaction_ids).';
REVOKE ALL ON FUNCTION bitemporal_internal.app_table_check_transaction_ids() FROM PUBLIC;

CREATE TRIGGER app_table_check_transaction_ids
    AFTER INSERT ON bitemporal.app_table
    FOR EACH ROW EXECUTE FUNCTION bitemporal_internal.app_table_check_transaction_ids();
COMMENT ON TRIGGER app_table_check_transaction_ids ON bitemporal.app_table IS
    'A table made bitemporal gets the transaction id CHECKs: see bitemporal_internal.app_table_check_transaction_ids().';

SELECT bitemporal_internal.check_transaction_ids('bitemporal.fact_key', 'last_txid');
SELECT bitemporal_internal.check_transaction_ids('bitemporal.fact_version', 'recorded_in');
SELECT bitemporal_internal.check_transaction_ids('bitemporal.erasures', 'recorded_in');
-- Tables made bitemporal before this file was loaded.
SELECT bitemporal_internal.check_transaction_ids(pg_catalog.format('%I.%I', a.table_schema, t.name)::regclass, t.id_column)
  FROM bitemporal.app_table a
 CROSS JOIN LATERAL (VALUES (a.table_name, 'recorded_in'::name), (a.key_table, 'last_txid'::name)) AS t (name, id_column);
