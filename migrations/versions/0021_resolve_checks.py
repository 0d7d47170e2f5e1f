"""Faster reads (issue 15, item 2): resolve checks its question times in its own expression.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-04

``fast_reads.v2.sql``: ``bitemporal.resolve`` compares both question times with
``check_instant``'s bounds itself and calls ``check_instant`` only for a time outside
them, instead of two calls per question; same answers, same errors. The downgrade
restores the function as ``fast_reads.v1.sql`` defines it.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("fast_reads.v2.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("fast_reads.v1.sql", "bitemporal.resolve"))
    op.execute("SET LOCAL search_path TO DEFAULT")
