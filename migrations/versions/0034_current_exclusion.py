"""The exclusion constraint holds current versions only; every version in a plain GiST index (issue 15).

Revision ID: 0034
Revises: 0033
Create Date: 2026-12-05

``current_exclusion.v1.sql``: ``fact_version_no_overlap`` becomes ``(key_id =, source =,
valid_period &&, known_period &&, entity =)`` over the versions with open knowledge and
those closed by the transaction that recorded them (the file says why that is enough), and
takes the place of ``fact_version_current_idx`` (dropped) for the writes;
``fact_version_periods_idx``, a GiST index ``(key_id, known_period, valid_period)`` of every
version, serves the reads of earlier knowledge. Both are built under an exclusive lock of
the version table. The downgrade restores 0033's constraint and index. On a store
distributed by Citus both run with DDL propagation on, one connection a worker, so that
every shard changes; no function changes.
"""

from alembic import op

from bitemporal.migrations import if_distributed, sql_text

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("current_exclusion.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# As in 0033: on a distributed store every shard changes, one connection a worker.
PROPAGATED = if_distributed(
    "        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);\n"
    "        PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);"
)

# 0033's current versions' index, as integer_key.v1.sql made it, with its partitions'
# copies renamed as there; 0033's constraint comes back from its own file. One command a
# statement: Citus sends each to the shards as a statement of its own.
CURRENT_INDEX_BACK = (
    "DROP INDEX bitemporal.fact_version_periods_idx",
    """
    CREATE INDEX fact_version_current_idx ON bitemporal.fact_version
        USING gist (key_id, source, valid_period)
        WHERE upper_inf(known_period)
    """,
    """
    COMMENT ON INDEX bitemporal.fact_version_current_idx IS
        'Current versions (open knowledge) by key (its integer), source and valid period: what record() and retract() read, whatever the length of the history.'
    """,
    """
    DO $$
    DECLARE
        r record;
    BEGIN
        FOR r IN
            SELECT i.inhrelid::regclass AS child, p.relname AS parent, c.relname AS part
              FROM pg_catalog.pg_inherits i
              JOIN pg_catalog.pg_class p ON p.oid = i.inhparent
              JOIN pg_catalog.pg_index x ON x.indexrelid = i.inhrelid
              JOIN pg_catalog.pg_class c ON c.oid = x.indrelid
             WHERE p.relnamespace = 'bitemporal'::regnamespace
               AND p.relname = 'fact_version_current_idx'
        LOOP
            EXECUTE pg_catalog.format('ALTER INDEX %s RENAME TO %I', r.child,
                                      r.parent || pg_catalog.substr(r.part, pg_catalog.length('fact_version') + 1));
        END LOOP;
    END
    $$
    """,
)


def upgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(PROPAGATED)
    op.execute(sql_text("current_exclusion.v1.sql"))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(PROPAGATED)
    # exclusion_order.v1.sql replaces every copy of the constraint with 0033's.
    op.execute(sql_text("exclusion_order.v1.sql"))
    for statement in CURRENT_INDEX_BACK:
        op.execute(statement)
    op.execute("SET LOCAL search_path TO DEFAULT")
