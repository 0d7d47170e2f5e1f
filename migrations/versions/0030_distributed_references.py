"""Temporal references between distributed application tables (issue 14).

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-04

``distributed_references.v1.sql``: on Citus, ``bitemporal.add_reference`` (version 2)
takes a reference between two co-located distributed tables whose child is distributed by
the column naming the parent's first key column (``BT502`` for any other shape, or a
distributed table and one on the coordinator). Such a reference has no triggers
(``bitemporal.app_reference.distributed``): ``table_record`` and ``table_retract`` pass
their image to ``check_table_references`` (version 2), which checks the written key with
queries routed to its worker. ``lock_table_key`` (version 2) inserts a new key's row by
value, so that on Citus a key's first write commits in one phase too. On one node nothing
changes. The downgrade refuses while a reference between distributed tables exists, and
restores the functions as ``surface.v1.sql``, ``tables.v4.sql`` and ``tables.v5.sql``
define them. A store distributed by Citus is refused, before anything changes.
"""

from alembic import op

from bitemporal.migrations import if_distributed, previous_definition, sql_text

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("distributed_references.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


# The downgrades of the migrations up to this one do not know what bitemporal.distribute
# made of the store (the Citus forms of functions, the workers' copies of them): on a
# distributed store they would leave it half in one shape, half in the other. Refused
# before anything changes (the whole downgrade is one transaction); 0031's and 0032's
# downgrades take a distributed store back to this revision.
NOT_DISTRIBUTED = if_distributed(
    """
        RAISE EXCEPTION 'cannot downgrade a store distributed by Citus below revision 0030; nothing was changed'
            USING ERRCODE = 'BT502',
                  HINT = 'Revision 0030 is as far down as a distributed store goes (bitemporal db downgrade 0030): see docs/citus.md.';"""
)


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(NOT_DISTRIBUTED)
    op.execute(
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT FROM bitemporal.app_reference r WHERE r.distributed) THEN
                RAISE EXCEPTION 'cannot downgrade below 0030: temporal references between distributed tables exist'
                    USING ERRCODE = 'BT502',
                          HINT = 'Drop them first (bitemporal.drop_reference).';
            END IF;
        END
        $$;
        """
    )
    op.execute(previous_definition("surface.v1.sql", "bitemporal_internal.check_table_references"))
    op.execute(previous_definition("tables.v5.sql", "bitemporal_internal.table_record"))
    op.execute(previous_definition("tables.v4.sql", "bitemporal_internal.table_retract"))
    op.execute(previous_definition("surface.v1.sql", "bitemporal.add_reference"))
    op.execute(previous_definition("surface.v1.sql", "bitemporal.drop_reference"))
    op.execute(previous_definition("surface.v1.sql", "bitemporal_internal.lock_table_key"))
    op.execute(
        """
        DROP FUNCTION bitemporal_internal.check_table_references(bitemporal.app_table, anyelement);
        DROP FUNCTION bitemporal_internal.check_key_reference(
            bitemporal.app_reference, bitemporal.app_table, anyelement, boolean);
        DROP FUNCTION bitemporal_internal.colocation_of(regclass);
        ALTER TABLE bitemporal.app_reference DROP COLUMN distributed;
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
