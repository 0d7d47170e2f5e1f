"""Faster reads (issue 15, item 2): range checks of instants without a function call each.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04

``instant_checks.v1.sql``: ``bitemporal_internal.check_instant`` becomes a SQL function
the planner inlines into its callers (``resolve``, the writes), calling
``bitemporal_internal.instant_out_of_range`` (new) only for a time outside the range;
same errors. The downgrade restores check_instant as ``surface.v1.sql`` defines it and
drops the new function.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("instant_checks.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("surface.v1.sql", "bitemporal_internal.check_instant"))
    op.execute(
        "DROP FUNCTION bitemporal_internal.instant_out_of_range(text, timestamp with time zone)"
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
