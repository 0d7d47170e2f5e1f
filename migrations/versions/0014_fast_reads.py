"""Faster reads (issue 15, items 2 and 4): bitemporal.resolve with fewer, cheaper queries.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01

``fast_reads.v1.sql``: ``bitemporal.resolve`` looks the key up once, reads the
versions of current knowledge without a GiST scan in its plan
(``bitemporal_internal.current_versions``, the first branch of
``bitemporal.as_of``, which now reads it too) and asks the store about the valid
time itself (for the interpretation) only when the key's knowledge changed after
it; same answers, same errors. The downgrade restores erasure.v1.sql's resolve and
search_path.v1.sql's as_of, and drops the helper.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text, standard_body_definition

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("fast_reads.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"
PREVIOUS = "erasure.v1.sql"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition(PREVIOUS, "bitemporal.resolve"))
    op.execute(standard_body_definition("search_path.v1.sql", "bitemporal.as_of"))
    op.execute(
        "DROP FUNCTION bitemporal_internal.current_versions(text, text, timestamptz, timestamptz)"
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
