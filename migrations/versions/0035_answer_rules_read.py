"""An answer's interpretation read by a statement of answer_rules (issue 15).

Revision ID: 0035
Revises: 0034
Create Date: 2026-12-06

``resolve_rules.v2.sql``: ``bitemporal_internal.answer_rules`` reads the values known at
``valid_at`` (to tell a historical answer from a retrospective one) with a statement of its
own, whose plan PL/pgSQL keeps, instead of calling ``bitemporal_internal.distinct_values``
inside an expression, which PostgreSQL before 18 plans again at every call. Answers are
unchanged. The downgrade restores ``answer_rules`` as ``resolve_rules.v1.sql`` defines it.

On a store distributed by Citus, ``bitemporal.distribute`` had sent ``distinct_values`` to
the workers as a callee of ``answer_rules``. Nothing the workers run calls it now, so the
upgrade leaves it on the coordinator alone, as on a store distributed after this migration
(dropped, which Citus propagates, and created again as it was, with its comment); the
downgrade distributes it again before a worker's ``answer_rules`` calls it.
"""

from alembic import op

from bitemporal.migrations import if_distributed, previous_definition, sql_text

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("resolve_rules.v2.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

DISTINCT_VALUES = "bitemporal_internal.distinct_values(text, text, timestamptz, timestamptz)"

# Its definition and comment as they are, read before the drop; its privileges are the
# defaults it was created with (no migration grants on it).
VALUES_ON_THE_COORDINATOR = if_distributed(f"""
        DECLARE
            definition  CONSTANT text := pg_catalog.pg_get_functiondef('{DISTINCT_VALUES}'::regprocedure);
            description CONSTANT text := pg_catalog.obj_description('{DISTINCT_VALUES}'::regprocedure, 'pg_proc');
        BEGIN
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
            DROP FUNCTION {DISTINCT_VALUES};
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
            EXECUTE definition;
            EXECUTE pg_catalog.format('COMMENT ON FUNCTION {DISTINCT_VALUES} IS %L', description);
            PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
        END;""")

VALUES_ON_THE_WORKERS = if_distributed(f"""
        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);
        PERFORM pg_catalog.create_distributed_function('{DISTINCT_VALUES}'::regprocedure);""")


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute(VALUES_ON_THE_COORDINATOR)
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("resolve_rules.v1.sql", "bitemporal_internal.answer_rules"))
    op.execute(VALUES_ON_THE_WORKERS)
    op.execute("SET LOCAL search_path TO DEFAULT")
