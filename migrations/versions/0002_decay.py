"""Working memory with decay: namespaces, items, the audit log and their functions.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from alembic import op

from bitemporal.migrations import sql_text

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Frozen: a later change to any of these objects is a new versioned file
# loaded by a new migration, never an edit of this file.
FILES = ("decay.v1.sql",)


def upgrade() -> None:
    for name in FILES:
        op.execute(sql_text(name))


def downgrade() -> None:
    # Everything decay.v1.sql created, dependents first; the schema stays.
    op.execute(
        """
        DROP FUNCTION bitemporal.memory_items(text);
        DROP FUNCTION bitemporal.memory_stability(text, text);
        DROP FUNCTION bitemporal.memory_retention(text, text);
        DROP FUNCTION bitemporal.memory_item_get(text, text);
        DROP FUNCTION bitemporal.memory_working_set_size(text);
        DROP FUNCTION bitemporal.memory_is_present(text, text);
        DROP FUNCTION bitemporal.memory_turn(text);
        DROP FUNCTION bitemporal.memory_step(text);
        DROP FUNCTION bitemporal.memory_recall(text, text);
        DROP FUNCTION bitemporal.memory_register_many(text, text[], boolean, double precision);
        DROP FUNCTION bitemporal.memory_register(text, text, text, text, boolean, double precision);
        DROP FUNCTION bitemporal.memory_ensure_namespace(text, text, double precision, double precision, bigint);
        DROP FUNCTION bitemporal.memory_namespace_get(text);
        DROP FUNCTION bitemporal.memory_namespace_for_update(text, boolean);
        DROP FUNCTION bitemporal.memory_check_stability(double precision);
        DROP FUNCTION bitemporal.memory_check_name(text, text);
        DROP FUNCTION bitemporal.memory_retention_at(bitemporal.memory_namespace, bigint, double precision);
        DROP FUNCTION bitemporal.memory_crossing(bitemporal.memory_namespace, bigint, double precision);
        DROP FUNCTION bitemporal.memory_decay_crossing(bigint, double precision, double precision);
        DROP FUNCTION bitemporal.memory_decay_retention(bigint, double precision);
        DROP FUNCTION bitemporal.memory_exp_or_zero(double precision);
        DROP TABLE bitemporal.memory_log;
        DROP FUNCTION bitemporal.memory_log_guard();
        DROP TABLE bitemporal.memory_item;
        DROP SEQUENCE bitemporal.memory_registration_seq;
        DROP TABLE bitemporal.memory_namespace;
        """
    )
