"""An answer with the versions it rests on, in one call (issues 14 and 15).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04

``resolve_versions.v1.sql``: ``bitemporal.resolve_versions`` answers as ``resolve`` does
and returns the versions the answer rests on with it, which the Python API's ``resolve``
asked for by joining ``as_of`` in its statement. ``citus.v4.sql``: ``distribute()``
(version 3) takes the reads it delegates from ``bitemporal_internal.citus_delegated_reads()``,
which adds ``resolve_versions``: on Citus the Python API's ``resolve`` is one command on the
key's worker, where it was three. The downgrade restores ``distribute()`` as
``citus.v2.sql`` defines it and drops both new functions.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("resolve_versions.v1.sql", "citus.v4.sql")

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("citus.v2.sql", "bitemporal.distribute"))
    op.execute(
        """
        DROP FUNCTION bitemporal_internal.citus_delegated_reads();
        DROP FUNCTION bitemporal.resolve_versions(text, text, timestamptz, timestamptz, timestamptz);
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
