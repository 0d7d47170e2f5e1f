"""A single-key write is one call on the key's node (issue 14).

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-04

``facts_write.v10.sql``: ``bitemporal.record`` and ``bitemporal.retract`` announce their
knowledge time first (``bitemporal_internal.announce_write``), then do everything that reads
or writes the key in one function, ``bitemporal_internal.write_key`` (lock, knowledge
time, ``supersede``); ``lock_key`` and ``cut`` are dropped. ``citus.v5.sql``:
``distribute()`` (version 4) delegates ``write_key``, forced, to the worker holding the key:
on Citus a write is one command there, then ``COMMIT``. The downgrade restores
``distribute()`` as ``citus.v4.sql`` defines it, ``record`` and ``cut`` as
``facts_write.v9.sql`` does, ``retract`` as ``facts_write.v6.sql`` does and ``lock_key`` as
``facts_write.v3.sql`` does, then drops the new functions.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_write.v10.sql", "citus.v5.sql")

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    for file, function in (
        ("citus.v4.sql", "bitemporal.distribute"),
        ("facts_write.v3.sql", "bitemporal_internal.lock_key"),
        ("facts_write.v9.sql", "bitemporal_internal.cut"),
        ("facts_write.v9.sql", "bitemporal.record"),
        ("facts_write.v6.sql", "bitemporal.retract"),
    ):
        op.execute(previous_definition(file, function))
    op.execute(
        """
        DROP FUNCTION bitemporal_internal.citus_delegated_writes();
        DROP FUNCTION bitemporal_internal.announce_write(text, text, timestamptz);
        DROP FUNCTION bitemporal_internal.write_key(
            text, text, text, tstzrange, timestamptz, timestamptz, jsonb, text, boolean);
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
