"""Every stored writer transaction id is one this cluster has assigned (a CHECK).

Revision ID: 0041
Revises: 0040
Create Date: 2026-12-07

``transaction_ids.v1.sql``: ``fact_key.last_txid``, ``fact_version.recorded_in``,
``erasures.recorded_in``, and each application table's ``recorded_in`` and
``<table>_key.last_txid`` (those made bitemporal later too, through a trigger on
``bitemporal.app_table``) get a CHECK that the id is one this cluster has assigned (inline
for the common case, else ``bitemporal_internal.assigned_here``, which asks the cluster's
counter): an id not assigned yet came from another cluster, and once this cluster reached
it, its transaction would be taken for the row's writer. Such a row is refused as it
arrives, by pg_restore or by logical replication, with ``BT503`` and the remedy. The
constraints validate the rows already there, so a store restored into another cluster
before this migration, whose ids are still ahead, stops the upgrade with ``BT503``: advance
the cluster's transaction ids as docs/operations.md says, then upgrade.

On a database with the ``citus`` extension no constraint is added, and one restored there
from a single node's dump is always true: the distributed write path stores Citus's
transaction ids, which no local id equals (and Citus refuses such a CHECK on a distributed
table). The downgrade drops the constraints, the trigger and the functions.
"""

from alembic import op

from bitemporal.migrations import citus_propagation, sql_text

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("transaction_ids.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# On a store distributed by Citus the functions and the trigger are the coordinator's alone,
# as on a store distributed after this migration.
COORDINATOR_ONLY = citus_propagation(on=False)
PROPAGATING_AGAIN = citus_propagation(on=True)


def upgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(COORDINATOR_ONLY)
    op.execute(sql_text("transaction_ids.v1.sql"))
    op.execute(PROPAGATING_AGAIN)
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(COORDINATOR_ONLY)
    # By name, on the tables the upgrade checked (on Citus it added none): a search by
    # dependency would also find the copies on a Citus coordinator's own shards.
    op.execute("""
        DO $$
        DECLARE
            r record;
        BEGIN
            FOR r IN SELECT s, t, c
                       FROM (VALUES ('bitemporal', 'fact_key', 'last_txid'),
                                    ('bitemporal', 'fact_version', 'recorded_in'),
                                    ('bitemporal', 'erasures', 'recorded_in')) AS core (s, t, c)
                     UNION ALL
                     SELECT a.table_schema, u.t, u.c FROM bitemporal.app_table a
                      CROSS JOIN LATERAL (VALUES (a.table_name, 'recorded_in'),
                                                 (a.key_table, 'last_txid')) AS u (t, c) LOOP
                EXECUTE pg_catalog.format('ALTER TABLE %I.%I DROP CONSTRAINT IF EXISTS %I',
                                          r.s, r.t, r.t || '_' || r.c || '_here');
            END LOOP;
        END
        $$""")
    op.execute("DROP TRIGGER app_table_check_transaction_ids ON bitemporal.app_table")
    op.execute("DROP FUNCTION bitemporal_internal.app_table_check_transaction_ids()")
    op.execute("DROP FUNCTION bitemporal_internal.check_transaction_ids(regclass, name)")
    op.execute("DROP FUNCTION bitemporal_internal.assigned_here(xid8)")
    op.execute(PROPAGATING_AGAIN)
    op.execute("SET LOCAL search_path TO DEFAULT")
