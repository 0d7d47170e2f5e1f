"""Citus (issue 14): application tables distributed by their first key column.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02

``distributed_tables.v1.sql``: ``bitemporal.distribute_table(relation)``, which
distributes a bitemporal application table of a distributed store by its first
key column, its key table co-located with it. The triggers of application
tables take the table they guard from their arguments when they have them (a
distributed table's run on a shard, on a worker, where the registry is not):
``table_guard`` (version 4), the new ``table_stamp_insert``, and the rules they
share, ``key_knowledge_event`` and ``erasing_row`` (``table_knowledge_event`` calls the
first; ``table_erasing``, called no more, is dropped). ``table_cut`` ends a
version, and ``table_erase`` clears versions, by key and id (one shard);
``citus_adapt_function`` gives the application tables' writes Citus's
transaction time; ``refresh_table`` keeps a distributed table's ``as_of`` in the
form Citus can plan. On plain PostgreSQL nothing changes but those filters.

On Citus the file is loaded with DDL propagation off: its functions reach the
workers from ``distribute_table``, once ``distribute()`` has adapted them.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("distributed_tables.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

LOCAL_DDL = """
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
    END IF;
END
$$
"""


def upgrade() -> None:
    op.execute(LOCAL_DDL)
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(LOCAL_DDL)
    op.execute(PINNED_PATH)
    op.execute(previous_definition("table_erasure.v1.sql", "bitemporal_internal.table_guard"))
    op.execute(previous_definition("table_erasure.v1.sql", "bitemporal_internal.table_erasing"))
    op.execute(
        previous_definition("table_knowledge.v1.sql", "bitemporal_internal.table_knowledge_event")
    )
    op.execute(previous_definition("tables.v2.sql", "bitemporal_internal.table_cut"))
    op.execute(previous_definition("table_erasure.v1.sql", "bitemporal_internal.table_erase"))
    op.execute(previous_definition("tables.v2.sql", "bitemporal.refresh_table"))
    op.execute(previous_definition("citus.v1.sql", "bitemporal_internal.citus_adapt_function"))
    op.execute(
        """
        DROP FUNCTION bitemporal.distribute_table(regclass);
        DROP FUNCTION bitemporal_internal.citus_table_as_of(bitemporal.app_table);
        DROP FUNCTION bitemporal_internal.table_stamp_insert();
        DROP FUNCTION bitemporal_internal.erasing_row(text, text[], anyelement, anyelement);
        DROP FUNCTION bitemporal_internal.key_knowledge_event(
            text, text, text[], anyelement, timestamptz, timestamptz);
        DROP FUNCTION bitemporal_internal.table_identity(regclass, text[]);
        """
    )
    op.execute("SET LOCAL search_path TO DEFAULT")
