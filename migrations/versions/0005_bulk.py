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
WRITE_FUNCTIONS = ("record_many",)
_SELECTED = (
    "FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'bitemporal'::regnamespace "
    f"AND p.proname IN ({', '.join(repr(name) for name in WRITE_FUNCTIONS)})"
)


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))
    op.execute(f"SELECT bitemporal.secure_write_function(p.oid::regprocedure) {_SELECTED}")
    op.execute("SELECT bitemporal.grant_roles()")


def downgrade() -> None:
    # Undo what upgrade did to the entry point (as 0004 does for its own), then
    # drop everything facts_bulk.v1.sql created, dependents first.
    op.execute(
        f"""
        DO $$
        DECLARE fn regprocedure; role_name text;
        BEGIN
            FOR fn IN SELECT p.oid::regprocedure {_SELECTED} LOOP
                FOR role_name IN SELECT r.rolname FROM pg_catalog.pg_roles r
                                  WHERE r.rolname IN ('bitemporal_reader', 'bitemporal_writer', 'bitemporal_auditor')
                LOOP
                    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', fn, role_name);
                END LOOP;
                EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER RESET search_path', fn);
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', fn);
            END LOOP;
        END;
        $$;
        """
    )
    op.execute(
        """
        DROP FUNCTION bitemporal.record_many(bitemporal.batch_row[], integer);
        DROP FUNCTION bitemporal.raise_batch_error(bigint, jsonb);
        DROP FUNCTION bitemporal.batch_still_known();
        DROP FUNCTION bitemporal.batch_row_problem(text, text, text, jsonb, timestamptz, timestamptz, timestamptz, timestamptz);
        DROP TYPE bitemporal.batch_item;
        DROP TYPE bitemporal.batch_row;
        """
    )
