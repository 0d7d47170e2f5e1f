"""Citus (issue 14): answers at a settled knowledge time never change there either.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02

``citus.v3.sql``: ``bitemporal_internal.citus_adapt_function`` (version 3) makes a
PL/pgSQL body read current knowledge through ``bitemporal.as_of`` rather than
``bitemporal_internal.current_versions``. On Citus, ``resolve`` read the key's
``last_known_at`` and then its open versions in two statements, each with a snapshot of
its own on the worker: a write committed between them could leave a version known at
``known_at`` out of the answer (the load test's "past answers changed"). As_of takes
both from one snapshot. ``bitemporal.distribute()``, which the upgrade runs on a Citus
coordinator, re-creates ``resolve`` with it. Nothing changes on plain PostgreSQL. The
downgrade restores the function as ``distributed_tables.v1.sql`` defines it.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("citus.v3.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(
        previous_definition(
            "distributed_tables.v1.sql", "bitemporal_internal.citus_adapt_function"
        )
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
