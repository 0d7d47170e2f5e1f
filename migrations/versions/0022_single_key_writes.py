"""Faster single-key writes (issue 15): record and retract update the key's row once.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-04

``facts_write.v6.sql``: ``bitemporal.record`` and ``bitemporal.retract`` no longer call
``bitemporal_internal.advance_key`` after writing (the knowledge trigger of every version
they insert or close has already moved the key's latest knowledge there), and that
function is dropped. The downgrade restores it and the two functions as ``facts_write.v4.sql``
and ``surface.v1.sql`` define them.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_write.v6.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    # Created where 0001 created it, then moved as 0009 moved it.
    op.execute(previous_definition("facts_write.v1.sql", "bitemporal.advance_key"))
    op.execute(
        "ALTER FUNCTION bitemporal.advance_key(text, text, timestamptz) "
        "SET SCHEMA bitemporal_internal"
    )
    op.execute(previous_definition("facts_write.v4.sql", "bitemporal.record"))
    op.execute(previous_definition("surface.v1.sql", "bitemporal.retract"))
    op.execute("SET LOCAL search_path TO DEFAULT")
