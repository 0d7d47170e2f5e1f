"""Lookup: as-of questions about current knowledge read a btree of the current versions.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30

Creates ``fact_version_current_valid_idx`` (a build over the whole table, under
a lock that blocks writes to ``fact_version`` meanwhile) and replaces
``bitemporal.as_of`` in place (same signature: views, functions and grants
that use it keep working). The downgrade restores version 1's definition and
comment, read from ``facts_read.v1.sql`` itself.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_read.v2.sql",)

# The indexes whose COMMENT facts_read.v2.sql sets and which had none before.
COMMENTED = ("fact_version_no_overlap", "fact_version_pkey", "fact_key_pkey")


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))


def downgrade() -> None:
    op.execute(previous_definition("facts_read.v1.sql", "bitemporal.as_of"))
    for name in COMMENTED:
        op.execute(f"COMMENT ON INDEX bitemporal.{name} IS NULL")
    op.execute("DROP INDEX bitemporal.fact_version_current_valid_idx")
