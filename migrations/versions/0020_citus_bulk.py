"""Citus (issue 14): ``record_many`` set-based on Citus too.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03

``citus_bulk.v1.sql``: ``bitemporal_internal.record_many_by_row``, which
``bitemporal.distribute()`` makes ``record_many`` call on Citus, becomes
``record_many``'s own steps and statements, its lookups of the keys and of their current
versions written as joins on the distribution column (Citus cannot plan the LATERAL
subqueries of ``record_many``'s form over distributed tables), instead of a call of
``record`` per row. ``distribute()``, which every upgrade of a Citus coordinator runs,
gives it Citus's transaction id and time. Nothing changes on plain PostgreSQL. The
downgrade restores the function as ``citus.v1.sql`` defines it.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("citus_bulk.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("citus.v1.sql", "bitemporal_internal.record_many_by_row"))
    op.execute("SET LOCAL search_path TO DEFAULT")
