"""Operations: the psql audit surface, roles, and write functions as SECURITY DEFINER entry points.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from alembic import op

from bitemporal.migrations import sql_text

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

FILES = ("audit.v1.sql", "security.v1.sql")

# The write entry points: SECURITY DEFINER, pinned search_path, EXECUTE for the
# writer role only. Everything else they call runs with their owner's rights.
WRITE_FUNCTIONS = (
    "record", "retract",
    "memory_ensure_namespace", "memory_register", "memory_register_many", "memory_recall", "memory_step",
    "add_evidence", "set_embedding", "record_artifact", "retire_artifact",
)
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
    op.execute("SELECT bitemporal.revoke_roles()")
    op.execute(
        f"""
        DO $$
        DECLARE fn regprocedure;
        BEGIN
            FOR fn IN SELECT p.oid::regprocedure {_SELECTED} LOOP
                EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER RESET search_path', fn);
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', fn);
            END LOOP;
        END;
        $$;
        """
    )
    op.execute(
        """
        DROP FUNCTION bitemporal.revoke_roles(text, text, text);
        DROP FUNCTION bitemporal.grant_roles(text, text, text);
        DROP FUNCTION bitemporal.secure_write_function(regprocedure);
        DROP VIEW bitemporal.memory_evictions;
        DROP FUNCTION bitemporal.retrospective_diff(text, text, timestamptz, timestamptz, timestamptz);
        DROP VIEW bitemporal.conflicts_now;
        DROP VIEW bitemporal.facts_now;
        """
    )
