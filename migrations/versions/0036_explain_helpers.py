"""The explain functions' helpers that read versions, as PL/pgSQL (issue 15).

Revision ID: 0036
Revises: 0035
Create Date: 2026-12-06

``explain_helpers.v1.sql``: ``bitemporal_internal.distinct_values``, ``value_run`` and
``explain_version``, which ``bitemporal.explain`` and its helpers call, become PL/pgSQL
functions with the same queries, whose plans the session keeps: PostgreSQL before 18 plans a
``LANGUAGE sql`` function's body again in every query or transaction that calls it. Answers
are unchanged. The downgrade restores them as ``erasure.v1.sql`` (``distinct_values``,
``explain_version``) and ``integer_key.v1.sql`` (``value_run``) define them.

On a store distributed by Citus the three are the coordinator's alone (``explain`` runs
there; nothing a worker runs calls them), so both directions change them with Citus's DDL
propagation off, as on a store distributed after this migration. There
``bitemporal.distribute`` had already made them PL/pgSQL, as it makes every SQL-standard
body that reads our tables (``bitemporal_internal.citus_adapt_function``): the downgrade
adapts the restored definitions the same way, as a store distributed at 0035 has them.
"""

from alembic import op

from bitemporal.migrations import if_distributed, sql_text, standard_body_definition

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("explain_helpers.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# (file, function, arguments) as each one was before explain_helpers.v1.sql.
PREVIOUS = (
    (
        "erasure.v1.sql",
        "bitemporal_internal.distinct_values",
        "text, text, timestamptz, timestamptz",
    ),
    (
        "integer_key.v1.sql",
        "bitemporal_internal.value_run",
        "text, text, jsonb, timestamptz, timestamptz",
    ),
    ("erasure.v1.sql", "bitemporal_internal.explain_version", "bitemporal.versions"),
)

# With propagation on, Citus would make each replaced function a distributed object.
COORDINATOR_ONLY = if_distributed(
    "        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);"
)
# The restored SQL-standard bodies in the form distribute() gives them.
ADAPTED = if_distributed(
    "        PERFORM bitemporal_internal.citus_adapt_function(f.f)\n"
    "           FROM pg_catalog.unnest(ARRAY["
    + ", ".join(f"'{function}({arguments})'" for _, function, arguments in PREVIOUS)
    + "]::pg_catalog.regprocedure[]) AS f (f);"
)
PROPAGATING_AGAIN = if_distributed(
    "        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);"
)


def upgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(COORDINATOR_ONLY)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute(PROPAGATING_AGAIN)
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(COORDINATOR_ONLY)
    for filename, function, _ in PREVIOUS:
        op.execute(standard_body_definition(filename, function))
    op.execute(ADAPTED)
    op.execute(PROPAGATING_AGAIN)
    op.execute("SET LOCAL search_path TO DEFAULT")
