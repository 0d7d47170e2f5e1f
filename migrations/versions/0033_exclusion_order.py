"""The exclusion constraint compares the periods before the text columns (issue 15).

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-05

``exclusion_order.v1.sql``: ``fact_version_no_overlap`` becomes ``(key_id =, known_period
&&, valid_period &&, entity =, source =)``, from ``(key_id =, entity =, source =,
valid_period &&, known_period &&)`` (the file gives the reason and the figures). The same
columns, operators, name and rule; the constraint is dropped and added again, which checks
every version once more under an exclusive lock of the version table. The downgrade runs
the same file with the earlier column order and comment. On a store distributed by Citus
both run with DDL propagation on, one connection a worker, so that every shard's
constraint changes; no function changes.
"""

from alembic import op

from bitemporal.migrations import if_distributed, sql_text

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("exclusion_order.v1.sql",)

# As 0009 loaded its files: whatever the file's bodies name is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"

# On a distributed store the constraint changes on every shard: propagation on, and one
# connection a worker, since later migrations and bitemporal.distribute() change functions
# in the same transaction, which Citus refuses after a parallel operation on a table.
PROPAGATED = if_distributed(
    "        PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'on', true);\n"
    "        PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);"
)

# What the file writes, and what the downgrade writes in its place (0031's constraint).
ORDER = (
    "'key_id WITH =, known_period WITH &&, valid_period WITH &&, entity WITH =, source WITH =)'",
    "'key_id WITH =, entity WITH =, source WITH =, valid_period WITH &&, known_period WITH &&)'",
)
COMMENT = (
    "'history and the per-key audit functions, by the key''s integer (key_id), then the periods.'",
    "'history and the per-key audit functions, by the key''s integer (key_id).'",
)


def _earlier(text: str) -> str:
    """exclusion_order.v1.sql with 0031's column order and comment in place of its own."""
    for new, old in (ORDER, COMMENT):
        if text.count(new) != 1:
            raise LookupError(f"exclusion_order.v1.sql: {new} not found once")
        text = text.replace(new, old)
    return text


def upgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(PROPAGATED)
    op.execute(sql_text("exclusion_order.v1.sql"))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(PROPAGATED)
    op.execute(_earlier(sql_text("exclusion_order.v1.sql")))
    op.execute("SET LOCAL search_path TO DEFAULT")
