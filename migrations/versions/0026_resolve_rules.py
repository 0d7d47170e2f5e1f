"""resolve_versions reads the versions once; an answer's rules in one place (issue 15).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-04

``resolve_rules.v1.sql``: ``bitemporal_internal.answer_rules`` holds what ``resolve``
computed after reading the versions (the checks of the question, status, value,
interpretation); ``bitemporal.resolve`` calls it, and so does ``bitemporal.resolve_versions``,
which now reads the eligible versions once instead of in ``resolve`` and again in
``as_of``. The downgrade restores ``resolve`` as ``fast_reads.v1.sql`` defines it and
``resolve_versions`` as ``resolve_versions.v1.sql`` does, then drops ``answer_rules``.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("resolve_rules.v1.sql",)

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
    op.execute(previous_definition("resolve_versions.v1.sql", "bitemporal.resolve_versions"))
    op.execute(
        "DROP FUNCTION bitemporal_internal.answer_rules"
        "(bitemporal.answer, text, text, timestamptz, boolean)"
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
