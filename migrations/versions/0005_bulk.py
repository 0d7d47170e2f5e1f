"""Bulk ingestion: bitemporal.record_many, a batch of record() calls applied set-based.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from alembic import op

from bitemporal.migrations import sql_text

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("facts_bulk.v1.sql",)

# The write entry point: SECURITY DEFINER, pinned search_path, EXECUTE for the
# writer role only (see 0004).
ENTRY_POINT = "bitemporal.record_many(bitemporal.batch_row[], integer)"


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))
    op.execute(f"SELECT bitemporal.secure_write_function('{ENTRY_POINT}'::regprocedure)")
    op.execute("SELECT bitemporal.grant_roles()")


def downgrade() -> None:
    # Dropping the entry point drops its grants too. Dependents first.
    op.execute(
        f"""
        DROP FUNCTION {ENTRY_POINT};
        DROP FUNCTION bitemporal.raise_batch_error(bigint, jsonb);
        DROP FUNCTION bitemporal.batch_still_known();
        DROP FUNCTION bitemporal.batch_row_problem(text, text, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz);
        DROP TYPE bitemporal.batch_item;
        DROP TYPE bitemporal.batch_row;
        """
    )
