"""record reads the versions it may cut once (issues 14 and 15).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04

``facts_write.v8.sql``: ``bitemporal.record``'s no-op test and its cut are one query, in
``bitemporal_internal.supersede``; ``bitemporal_internal.cut`` (what ``retract`` calls)
is ``supersede`` without a value. One query fewer per write, one command fewer sent to the
key's worker on Citus. The downgrade restores ``record`` and ``cut`` as
``facts_write.v6.sql`` and ``facts_write.v7.sql`` define them and drops ``supersede``.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_write.v8.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("facts_write.v6.sql", "bitemporal.record"))
    op.execute(previous_definition("facts_write.v7.sql", "bitemporal_internal.cut"))
    op.execute(
        "DROP FUNCTION bitemporal_internal.supersede"
        "(text, text, text, tstzrange, timestamptz, jsonb)"
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
