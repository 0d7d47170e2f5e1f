"""A knowledge time's microseconds inlined into their callers (issue 15).

Revision ID: 0039
Revises: 0038
Create Date: 2026-12-06

``settled.v2.sql``: ``bitemporal_internal.knowledge_micros``, which every write calls for
each knowledge time it announces, loses its redundant ``SET search_path`` (its body is a
standard one, bound when it is created) and computes the same microseconds from an
immutable expression, so the planner inlines it into its callers instead of running it as
a query of its own, planned again in each transaction. Its result is unchanged. The
downgrade restores it as ``settled.v1.sql`` defines it.

On a store distributed by Citus the function is on every node (the workers' triggers call
``announce_knowledge``), and Citus propagates both replacements to every node.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("settled.v2.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("settled.v1.sql", "bitemporal_internal.knowledge_micros"))
    op.execute("SET LOCAL search_path TO DEFAULT")
