"""An infinite knowledge time written into the version table directly, refused clearly.

Revision ID: 0040
Revises: 0039
Create Date: 2026-12-07

``settled.v3.sql``: ``bitemporal_internal.announce_knowledge``, which the version table's
trigger calls for each row, raises BT001 ("knowledge time must be finite, not infinity")
for an infinite knowledge time, as the write functions do, instead of failing on
PostgreSQL's "cannot subtract infinite timestamps" (22008; "cannot convert infinity to
bigint", 0A000, from PostgreSQL 17). Only the owner can write such
a row (directly, not through the functions); it was refused before too. The downgrade
restores the function as ``settled.v1.sql`` defines it.

On a store distributed by Citus the function is on every node (the workers' triggers call
it), and Citus propagates both replacements to every node. It creates the function anew
there, without the coordinator's ``REVOKE`` from ``PUBLIC``: ``citus_function_acls.v1.sql``,
run here and by the ``distribute()`` that follows every upgrade of a Citus database,
takes it back.
"""

from alembic import op

from bitemporal.migrations import is_distributed, previous_definition, sql_text

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("settled.v3.sql", "citus_function_acls.v1.sql")

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(sql_text("settled.v3.sql"))
    _keep_public_out_on_the_workers()
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("settled.v1.sql", "bitemporal_internal.announce_knowledge"))
    _keep_public_out_on_the_workers()
    op.execute("SET LOCAL search_path TO DEFAULT")


def _keep_public_out_on_the_workers() -> None:
    """On a distributed store, Citus has just created the function anew on each worker,
    with PUBLIC's default EXECUTE (citus_function_acls.v1.sql says why); after an upgrade,
    the distribute() that follows does the same again."""
    if not op.get_context().as_sql and is_distributed(op.get_bind()):
        op.execute(sql_text("citus_function_acls.v1.sql"))
