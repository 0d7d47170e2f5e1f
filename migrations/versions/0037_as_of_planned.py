"""as_of for statements that are not prepared (issue 15).

Revision ID: 0037
Revises: 0036
Create Date: 2026-12-06

``as_of_planned.v1.sql``: ``bitemporal.as_of_planned`` returns what ``bitemporal.as_of``
returns, from a PL/pgSQL function whose plan the session keeps; the Python API asks it on
connections that never prepare (a pooler in transaction mode), which planned ``as_of``'s
inlined body at every call. ``citus.v6.sql``: ``distribute()`` delegates it to the worker
holding the key, as ``as_of`` (``bitemporal_internal.citus_delegated_reads``, version 2).
The downgrade restores that list as ``citus.v4.sql`` defines it and drops the function.

On a store distributed by Citus the list is the coordinator's alone (``distribute()`` reads
it there), so both directions replace it with Citus's DDL propagation off, as a store
distributed after this migration has it; the function itself is created and dropped on
every node, and ``distribute()``, which the upgrade runs next, delegates it.
"""

from alembic import op

from bitemporal.migrations import if_distributed, previous_definition, sql_text

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("as_of_planned.v1.sql", "citus.v6.sql")
FUNCTION_FILE, LIST_FILE = FILES

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# With propagation on, Citus would make the replaced list a distributed object.
COORDINATOR_ONLY = if_distributed(
    "        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);"
)
PROPAGATING_AGAIN = if_distributed(
    "        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);"
)


def upgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(sql_text(FUNCTION_FILE))
    op.execute(COORDINATOR_ONLY)
    op.execute(sql_text(LIST_FILE))
    op.execute(PROPAGATING_AGAIN)
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(COORDINATOR_ONLY)
    op.execute(previous_definition("citus.v4.sql", "bitemporal_internal.citus_delegated_reads"))
    op.execute(PROPAGATING_AGAIN)
    op.execute(
        "DROP FUNCTION bitemporal.as_of_planned(text, text, timestamptz, timestamptz)"
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
