"""Citus (issue 14): bitemporal.distribute() and what it needs; writes routed by entity.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01

``facts_write.v5.sql``: ``bitemporal_internal.cut`` deletes and closes a version by
entity and id (one partition, one shard) instead of by id alone.

``citus.v1.sql``: ``bitemporal.distribute()``, which turns a store on a Citus
coordinator into a distributed one (versions and keys by entity, the other
tables as reference tables, every function on every node), and its two
helpers. Nothing runs on plain PostgreSQL: the functions only exist there.
``bitemporal db upgrade --citus`` (``migrate(..., citus=True)``, ``alembic -x
citus=1``) migrates and then calls it. The downgrade drops the functions; it
does not undistribute a store (Citus's ``undistribute_table`` does that).
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_write.v5.sql", "citus.v1.sql")

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(
        """
        DROP FUNCTION bitemporal.distribute(integer);
        DROP FUNCTION bitemporal_internal.citus_adapt_function(regprocedure);
        DROP FUNCTION bitemporal_internal.record_many_by_row(bitemporal.batch_row[], integer);
        DROP FUNCTION bitemporal_internal.citus_versions(bigint[]);
        DROP FUNCTION bitemporal_internal.citus_input_versions();
        DROP FUNCTION bitemporal_internal.citus_transaction_id();
        DROP FUNCTION bitemporal_internal.citus_transaction_timestamp();
        """
    )
    op.execute(PINNED_PATH)
    op.execute(previous_definition("surface.v1.sql", "bitemporal_internal.cut"))
    op.execute("SET LOCAL search_path TO DEFAULT")
