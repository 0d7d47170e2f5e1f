"""Single-key writes commit in one phase on Citus (issue 14): remainders inserted by value.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04

``facts_write.v7.sql``: ``bitemporal_internal.cut`` re-records the remainders of the
versions it ends with one ``INSERT ... VALUES`` each instead of one ``INSERT ... SELECT``,
which Citus sent to the shard by ``COPY`` and committed with two-phase commit.
``tables.v5.sql``: the same for application tables, in ``table_cut`` and in
``table_record``'s insert of the new version. The downgrade restores the three functions
as ``facts_write.v5.sql`` and ``tables.v4.sql`` define them.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_write.v7.sql", "tables.v5.sql")

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("facts_write.v5.sql", "bitemporal_internal.cut"))
    op.execute(previous_definition("tables.v4.sql", "bitemporal_internal.table_record"))
    op.execute(previous_definition("tables.v4.sql", "bitemporal_internal.table_cut"))
    op.execute("SET LOCAL search_path TO DEFAULT")
