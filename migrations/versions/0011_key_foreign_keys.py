"""enable_table names the key table when an ordinary table's foreign key stops it.

A table that an ordinary table references by a foreign key cannot be made
bitemporal (a key repeats across versions); the refusal (BT402) now names the fix
that keeps the reference: a foreign key to the ``<table>_key`` table, which holds
each key once (``op.create_key_foreign_key``). tables.v3.sql; the downgrade
restores tables.v2.sql's definition.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from alembic import op

from bitemporal.migrations import previous_definition, sql_text

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

# Frozen: a later change to enable_table is a new versioned file loaded by a new migration.
FILES = ("tables.v3.sql",)

# As migration 0009 loaded tables.v2.sql: the DDL enable_table runs is bound to pg_catalog.
PINNED_PATH = "SET LOCAL search_path = pg_catalog, pg_temp"


def upgrade() -> None:
    op.execute(PINNED_PATH)
    for name in FILES:
        op.execute(sql_text(name))
    op.execute("SET LOCAL search_path TO DEFAULT")


def downgrade() -> None:
    op.execute(PINNED_PATH)
    op.execute(previous_definition("tables.v2.sql", "bitemporal.enable_table"))
    op.execute("SET LOCAL search_path TO DEFAULT")
