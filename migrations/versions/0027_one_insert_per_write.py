"""A write inserts its versions in one statement (issues 14 and 15).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-04

``facts_write.v9.sql``: ``bitemporal_internal.supersede`` (version 2) inserts the
remainders of the versions it ends and ``bitemporal.record``'s new version together, up to
three rows an ``INSERT ... VALUES``: an interior change is one statement instead of three,
two commands fewer sent to the key's worker on Citus. ``bitemporal_internal.cut`` calls
version 2. The downgrade restores ``supersede``, ``cut`` and ``record`` as
``facts_write.v8.sql`` defines them and drops version 2.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_write.v9.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    for function in (
        "bitemporal_internal.supersede",
        "bitemporal_internal.cut",
        "bitemporal.record",
    ):
        op.execute(previous_definition("facts_write.v8.sql", function))
    op.execute(
        "DROP FUNCTION bitemporal_internal.supersede"
        "(text, text, text, tstzrange, timestamptz, jsonb, text)"
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
