"""An answer's question times checked without a query each (issue 15).

Revision ID: 0038
Revises: 0037
Create Date: 2026-12-06

``resolve_rules.v3.sql``: ``bitemporal_internal.answer_rules`` evaluates the range checks of
the question's times (``bitemporal_internal.check_instant``) as PL/pgSQL expressions, an
assignment each, instead of a ``PERFORM`` each, which ran as a query. Answers, errors and their order are
unchanged. The downgrade restores ``answer_rules`` as ``resolve_rules.v2.sql`` defines it.

On a store distributed by Citus ``answer_rules`` is a distributed function (the workers'
``resolve_versions`` calls it), and Citus propagates both replacements to every node.
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("resolve_rules.v3.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("resolve_rules.v2.sql", "bitemporal_internal.answer_rules"))
    op.execute("SET LOCAL search_path TO DEFAULT")
