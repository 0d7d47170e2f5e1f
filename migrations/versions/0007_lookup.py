"""Lookup: as-of questions about current knowledge read a btree of the current versions.

Revision ID: 0007
Revises: 0005
Create Date: 2026-11-30

Creates ``fact_version_current_valid_idx`` (a build over the whole table, under
a lock that blocks writes to ``fact_version`` meanwhile) and replaces
``bitemporal.as_of`` in place (same signature: views, functions and grants
that use it keep working). The downgrade restores version 1's definition and
comment, read from ``facts_read.v1.sql`` itself.
"""

import re

from alembic import op

from bitemporal.migrations import sql_text

revision = "0007"
down_revision = "0005"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_read.v2.sql",)

# The indexes whose COMMENT facts_read.v2.sql sets and which had none before.
COMMENTED = ("fact_version_no_overlap", "fact_version_pkey", "fact_key_pkey")


def previous_as_of() -> str:
    """Version 1's ``CREATE FUNCTION bitemporal.as_of`` and its COMMENT, as CREATE OR REPLACE."""
    v1 = sql_text("facts_read.v1.sql")
    found = re.search(
        r"^CREATE FUNCTION bitemporal\.as_of\(.*?^COMMENT ON FUNCTION bitemporal\.as_of\(.*?';$",
        v1,
        re.MULTILINE | re.DOTALL,
    )
    assert found is not None, "facts_read.v1.sql no longer defines bitemporal.as_of"
    return found[0].replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))


def downgrade() -> None:
    op.execute(previous_as_of())
    for name in COMMENTED:
        op.execute(f"COMMENT ON INDEX bitemporal.{name} IS NULL")
    op.execute("DROP INDEX bitemporal.fact_version_current_valid_idx")
